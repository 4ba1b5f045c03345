//! A borrowed JSON parser (RFC 8259) into [`Doc`].
//!
//! It is never more lenient than `serde_json::from_str` (what it accepts,
//! serde_json accepts with the same value), and it refuses — so the caller
//! falls back to the generic path, which then decides — everything that
//! takes judgement: lone surrogate escapes, nesting past
//! [`MAX_NESTING`] (serde_json stops at 128), and duplicate keys (a
//! `serde_json::Value` keeps one of them; the generic path refuses the
//! block, counted as such).
//!
//! Asked to ([`parse_with`]), it keeps an array of flat rows where TOON
//! writes tables as its rows' lines ([`Table`]), and it counts what the
//! text holds besides the tokens of its compact form ([`Counts`]).

use indexmap::IndexMap;
use std::borrow::Cow;

use super::counts::Counts;
use super::key::KeyLiteral;
use super::lines::Rows;
use super::tree::{key_eq, Doc, Member, Node, Table};

/// Arrays and objects nested deeper than this are left to serde_json.
const MAX_NESTING: usize = 100;

/// Some byte of `word` may be a `"`, a `\\` or a C0 control (exact for
/// "none is").
pub(super) fn may_stop(word: u64) -> bool {
    crate::json::lex::stops(word) != 0
}

/// How many distinct key lists the duplicate check remembers.
const RECENT: usize = 8;

/// Parses exactly one JSON value surrounded by optional whitespace.
#[cfg(test)]
pub(super) fn parse(text: &str) -> Option<Doc<'_>> {
    parse_with(text, None).map(|(doc, _)| doc)
}

/// [`parse`], keeping the tables of flat rows it meets where TOON writes
/// tables as their lines, written by `rows` ([`super::tree::Table`]);
/// with what it counted of the text's layout.
pub(super) fn parse_with(text: &str, rows: Option<Rows>) -> Option<(Doc<'_>, Counts)> {
    let mut p = Parser::new(text);
    p.rows = rows;
    // Tabular JSON holds about one member per 12 bytes. Reserving that much
    // up front saves regrowth copies on small blocks; on large ones the
    // reservation is capped (about 1.2 MB), since a block that turns out
    // not to be a table (one long string, say) would otherwise grow the
    // module's memory by several times its size for nothing.
    p.skip_ws();
    // Only for a text that may be a container: prose passes through here
    // too, and would hold the reservation for nothing.
    if matches!(p.peek(), Some(b'[' | b'{')) {
        p.doc.members.reserve(text.len().min(1 << 18) / 12);
    }
    let root = p.value_at(true)?;
    p.skip_ws();
    if p.pos != p.bytes.len() {
        return None;
    }
    p.doc.root = Some(root);
    Some((p.doc, p.counts))
}

/// Whether `text` is certainly no table, found without building its tree:
/// `true` only when the stage's answer is `NotTabular`. A table is an
/// array of at least `min_rows` non-empty objects anywhere in the value
/// (§9.3; the classifier's rule), and a row that is or holds an array, at
/// any depth, rules its array out (its column is then neither primitives
/// nor a field group, §9.3–§9.4). So one pass that finds no array whose
/// items are `min_rows` or more non-empty objects holding no array finds
/// no table, and the rest of the text is only checked as [`parse`] checks
/// it (grammar, nesting bound, escapes), so that serde_json reads it too.
/// Duplicate keys matter only in an object that holds an array: the
/// generic path's `Value` keeps one member of each key, so such an object
/// may hold none there; the skim then leaves the text to the tree path.
/// It stops, leaving the text to the tree path, at the first array whose
/// first `min_rows` items (one at least) are such objects: a likely table,
/// which the tree path reads anyway.
///
/// A JSON document that is no table is the commonest tool result after
/// prose, and the tree path built its whole tree only to refuse it: on the
/// bench's 64 KB non-tabular result, natively, the tree parse took 58.8M
/// instructions per 50 exchanges (half of the request's), the skim 38.5M.
pub(super) fn certainly_not_tabular(text: &str, min_rows: usize) -> bool {
    let mut p = Parser::new(text);
    p.skip_ws();
    if p.skim(min_rows.max(1)).is_none() {
        return false;
    }
    p.skip_ws();
    p.pos == p.bytes.len()
}

/// The parser one value at a time, for [`super::stream`], which reads a
/// table row by row and forgets each row once it is written: the tree
/// then never holds more than the first row and the row at hand.
pub(super) struct Cursor<'a> {
    p: Parser<'a>,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Self {
            p: Parser::new(text),
        }
    }

    pub(super) fn skip_ws(&mut self) {
        self.p.skip_ws();
    }

    pub(super) fn peek(&self) -> Option<u8> {
        self.p.peek()
    }

    /// Takes `b` when it is next.
    pub(super) fn eat(&mut self, b: u8) -> Option<()> {
        self.p.eat(b)
    }

    /// One value, its containers committed to [`Cursor::doc`].
    pub(super) fn value(&mut self) -> Option<Node<'a>> {
        self.p.value()
    }

    /// A table row that spells `keys` (none of them escaped) in order,
    /// every value a primitive: its members, appended to `out` (cleared
    /// first) with the keys borrowed from `keys`. `None`, the cursor where
    /// it was, for any other value, which [`Cursor::value`] then reads: a
    /// row that follows the first row's keys needs no key scan, no member
    /// list in the doc and no duplicate check (the first row had none).
    pub(super) fn row_of(
        &mut self,
        keys: &[KeyLiteral<'a>],
        out: &mut Vec<Member<'a>>,
    ) -> Option<()> {
        let (start, counts) = (self.p.pos, self.p.counts);
        out.clear();
        let read = self.p.row_of(keys, out);
        if read.is_none() {
            self.p.pos = start;
            self.p.counts = counts;
        }
        read
    }

    /// A string literal at the cursor.
    pub(super) fn string(&mut self) -> Option<Cow<'a, str>> {
        if self.peek()? != b'"' {
            return None;
        }
        self.p.string()
    }

    /// Enters an array or object whose opening bracket is next, counted
    /// against the nesting bound like any other.
    pub(super) fn open(&mut self, bracket: u8) -> Option<()> {
        self.eat(bracket)?;
        self.p.enter()
    }

    pub(super) fn close(&mut self) {
        self.p.depth = self.p.depth.saturating_sub(1);
    }

    pub(super) fn doc(&self) -> &Doc<'a> {
        &self.p.doc
    }

    pub(super) fn at_end(&self) -> bool {
        self.p.pos == self.p.bytes.len()
    }

    /// The text and where the cursor is in it, for [`super::row`], which
    /// reads a plain row from there itself.
    pub(super) fn text_at(&self) -> (&'a str, usize) {
        (self.p.text, self.p.pos)
    }

    /// Moves the cursor past a row [`super::row`] read, with what it
    /// counted.
    pub(super) fn skip_to(&mut self, pos: usize, counts: Counts) {
        self.p.pos = pos;
        self.p.counts.add(counts);
    }

    /// What the cursor counted of the text's layout so far.
    pub(super) fn counts(&self) -> Counts {
        self.p.counts
    }

    /// Forgets every member committed past the first `members` (and every
    /// node), with the key lists remembered there.
    pub(super) fn forget_after(&mut self, members: usize) {
        self.p.doc.members.truncate(members);
        self.p.doc.nodes.clear();
        for slot in &mut self.p.recent {
            if slot.0.saturating_add(slot.1) > members {
                *slot = (0, 0);
            }
        }
    }
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
    doc: Doc<'a>,
    item_scratch: Vec<Node<'a>>,
    member_scratch: Vec<Member<'a>>,
    /// Member ranges of the last few distinct key lists found free of
    /// duplicates: the next row of a table (and each of its field groups)
    /// usually repeats one, which one comparison confirms.
    recent: [(usize, usize); RECENT],
    next_recent: usize,
    /// The keys of the objects [`certainly_not_tabular`] is inside.
    skim_keys: Vec<Cow<'a, str>>,
    counts: Counts,
    /// Tables of flat rows are kept as their lines, written so
    /// ([`Parser::flat_table`]); `None`: as any other array.
    rows: Option<Rows>,
    /// A flat table's later row read the general way.
    row_scratch: Vec<Member<'a>>,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            depth: 0,
            doc: Doc::default(),
            item_scratch: Vec::new(),
            member_scratch: Vec::new(),
            recent: [(0, 0); RECENT],
            next_recent: 0,
            skim_keys: Vec::new(),
            counts: Counts::default(),
            rows: None,
            row_scratch: Vec::new(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        let start = self.pos;
        self.pos = crate::json::lex::skip_ws(self.bytes, self.pos);
        self.counts.spaces += self.pos - start;
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        if self.peek() == Some(b) {
            self.pos += 1;
            Some(())
        } else {
            None
        }
    }

    fn value(&mut self) -> Option<Node<'a>> {
        self.value_at(false)
    }

    /// A value; `field`: where TOON writes an array of objects as a table
    /// (a member's value, the root; never an array's item, §9.4), so that
    /// a table of flat rows may be kept as its lines.
    fn value_at(&mut self, field: bool) -> Option<Node<'a>> {
        match self.peek()? {
            b'{' => self.object(),
            b'[' if field && self.rows.is_some() => self.table_or_array(),
            b'[' => self.array(),
            b'"' => self.string().map(Node::Str),
            b't' => self.literal(b"true", Node::Bool(true)),
            b'f' => self.literal(b"false", Node::Bool(false)),
            b'n' => self.literal(b"null", Node::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// `word` next; its length a constant, so that the comparison is
    /// inlined rather than a call (in wasm, to compiler-builtins' memcmp).
    fn literal<const N: usize>(&mut self, word: &[u8; N], node: Node<'a>) -> Option<Node<'a>> {
        let end = self.pos.checked_add(N)?;
        if self.bytes.get(self.pos..end)? != word {
            return None;
        }
        self.pos = end;
        Some(node)
    }

    /// RFC 8259 §6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Option<Node<'a>> {
        let start = self.pos;
        let _ = self.eat(b'-');
        match self.peek()? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.eat(b'.').is_some() {
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        self.text.get(start..self.pos).map(Node::Num)
    }

    fn digits(&mut self) {
        let rest = self.bytes.get(self.pos..).unwrap_or(&[]);
        self.pos += rest
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(rest.len());
    }

    /// Moves to the next quote, backslash or control character: eight
    /// bytes at a time, the first such byte found from the word's lowest
    /// flag (exact, see [`crate::json::lex::stops`]), byte by byte
    /// only in the last few bytes of the text. Finding it by a byte loop
    /// over the flagged word cost more than the word scan on short strings
    /// (with [`Parser::skip_string`], the skim of the bench's 64 KB
    /// non-tabular document went 52.2M → 38.5M instructions per 50
    /// exchanges natively).
    fn skip_to_special(&mut self) -> Option<u8> {
        let at = crate::json::lex::to_stop(self.bytes, self.pos)?;
        self.pos = at;
        self.bytes.get(at).copied()
    }

    /// Past the string literal at `pos` (its opening quote), checked as
    /// [`Parser::string`] checks it, nothing kept.
    fn skip_string(&mut self) -> Option<()> {
        self.pos += 1;
        loop {
            match self.skip_to_special()? {
                b'"' => {
                    self.pos += 1;
                    return Some(());
                }
                b'\\' => {
                    self.escape()?;
                }
                _ => return None,
            }
        }
    }

    /// A string literal (RFC 8259 §7), the opening quote at `pos`.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.pos += 1;
        self.counts.quoted += 2;
        let start = self.pos;
        match self.skip_to_special()? {
            b'"' => {
                let s = self.text.get(start..self.pos)?;
                self.pos += 1;
                return Some(Cow::Borrowed(s));
            }
            b'\\' => {}
            _ => return None,
        }
        let mut out = String::with_capacity(self.pos - start + 16);
        out.push_str(self.text.get(start..self.pos)?);
        loop {
            let run = self.pos;
            if self.skip_to_special()? < 0x20 {
                return None;
            }
            out.push_str(self.text.get(run..self.pos)?);
            if self.eat(b'"').is_some() {
                return Some(Cow::Owned(out));
            }
            out.push(self.escape()?);
        }
    }

    /// The escape at `pos` (its backslash), decoded (RFC 8259 §7).
    fn escape(&mut self) -> Option<char> {
        self.pos += 1; // the backslash
        let esc = self.peek()?;
        self.pos += 1;
        self.counts.quoted += 1 + usize::from(matches!(esc, b'"' | b'\\'));
        match esc {
            b'"' => Some('"'),
            b'\\' => Some('\\'),
            b'/' => Some('/'),
            b'b' => Some('\u{8}'),
            b'f' => Some('\u{c}'),
            b'n' => Some('\n'),
            b'r' => Some('\r'),
            b't' => Some('\t'),
            b'u' => {
                let unit = self.hex4()?;
                // A control character stays escaped in any compact
                // spelling (RFC 8259 §7); another character may not.
                self.counts.respelled |= unit >= 0x20;
                let code = match unit {
                    0xD800..=0xDBFF => {
                        // A high surrogate must be followed by an escaped
                        // low one; anything else is left to serde_json's
                        // judgement.
                        self.eat(b'\\')?;
                        self.eat(b'u')?;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => unit,
                };
                char::from_u32(code)
            }
            _ => None,
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let end = self.pos.checked_add(4)?;
        let digits = self.bytes.get(self.pos..end)?;
        let mut v = 0u32;
        for &d in digits {
            v = v * 16 + char::from(d).to_digit(16)?;
        }
        self.pos = end;
        Some(v)
    }

    /// See [`Cursor::row_of`].
    fn row_of(&mut self, keys: &[KeyLiteral<'a>], out: &mut Vec<Member<'a>>) -> Option<()> {
        self.eat(b'{')?;
        for (j, literal) in keys.iter().enumerate() {
            self.skip_ws();
            if j > 0 {
                self.eat(b',')?;
                self.skip_ws();
            }
            let key = literal.key;
            self.pos = literal.after(self.bytes, self.pos)?;
            self.counts.quoted += 2;
            self.skip_ws();
            self.eat(b':')?;
            self.skip_ws();
            if matches!(self.peek()?, b'{' | b'[') {
                return None;
            }
            let value = self.value()?;
            out.push(Member {
                key: Cow::Borrowed(key),
                value,
            });
        }
        self.skip_ws();
        self.eat(b'}')
    }

    /// The key of member `index` when the text at `pos` is exactly that
    /// key's string literal. Only borrowed keys qualify: they hold no
    /// escape, quote or control character, so equal bytes between quotes
    /// are the same string.
    fn key_ahead(&self, index: usize) -> Option<&'a str> {
        let Cow::Borrowed(key) = self.doc.members.get(index)?.key else {
            return None;
        };
        self.literal_ahead(key).then_some(key)
    }

    /// The text at `pos` is `key`'s literal with no escape in it, byte for
    /// byte (an unescaped key has exactly one such spelling).
    fn literal_ahead(&self, key: &str) -> bool {
        let start = self.pos + 1;
        let end = start + key.len();
        self.bytes.get(self.pos) == Some(&b'"')
            && self.bytes.get(start..end) == Some(key.as_bytes())
            && self.bytes.get(end) == Some(&b'"')
    }

    /// One value checked as [`Parser::value`] checks it, nothing kept
    /// (see [`certainly_not_tabular`]): whether it is or holds an array;
    /// `None` where [`parse`] would refuse it, where an object that holds
    /// an array has a key twice, and at a likely table (`rows` items).
    fn skim(&mut self, rows: usize) -> Option<bool> {
        match self.peek()? {
            b'{' => self.skim_object(rows).map(|(arrays, _)| arrays),
            b'[' => self.skim_array(rows),
            b'"' => self.skip_string().map(|_| false),
            b't' => self.literal(b"true", Node::Null).map(|_| false),
            b'f' => self.literal(b"false", Node::Null).map(|_| false),
            b'n' => self.literal(b"null", Node::Null).map(|_| false),
            b'-' | b'0'..=b'9' => self.number().map(|_| false),
            _ => None,
        }
    }

    /// An array; `None` once its first `rows` items are non-empty objects
    /// holding no array.
    fn skim_array(&mut self, rows: usize) -> Option<bool> {
        self.enter()?;
        self.pos += 1;
        let (mut items, mut plain) = (0usize, true);
        self.skip_ws();
        if self.eat(b']').is_none() {
            loop {
                if self.peek()? == b'{' {
                    let (arrays, empty) = self.skim_object(rows)?;
                    plain &= !empty && !arrays;
                } else {
                    plain = false;
                    self.skim(rows)?;
                }
                items += 1;
                if plain && items >= rows {
                    return None;
                }
                if !self.skim_next(b']')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        Some(true)
    }

    /// After a value in a container: `Some(true)` past a comma (the next
    /// value's start), `Some(false)` past the closing `close`.
    fn skim_next(&mut self, close: u8) -> Option<bool> {
        self.skip_ws();
        let b = self.peek()?;
        self.pos += 1;
        if b == b',' {
            self.skip_ws();
            Some(true)
        } else {
            (b == close).then_some(false)
        }
    }

    /// An object: whether it holds an array, and whether it is empty.
    fn skim_object(&mut self, rows: usize) -> Option<(bool, bool)> {
        self.enter()?;
        self.pos += 1;
        let mark = self.skim_keys.len();
        let mut arrays = false;
        self.skip_ws();
        let empty = self.eat(b'}').is_some();
        if !empty {
            loop {
                self.skip_ws();
                if self.peek()? != b'"' {
                    return None;
                }
                let key = self.string()?;
                self.skim_keys.push(key);
                self.skip_ws();
                self.eat(b':')?;
                self.skip_ws();
                arrays |= self.skim(rows)?;
                if !self.skim_next(b'}')? {
                    break;
                }
            }
        }
        let keys = self.skim_keys.get(mark..)?;
        if arrays && any_duplicate(keys, |k| k.as_ref()) {
            return None;
        }
        self.skim_keys.truncate(mark);
        self.depth -= 1;
        Some((arrays, empty))
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_NESTING).then_some(())
    }

    /// An array where TOON writes tables: a table of flat rows, kept as
    /// its lines ([`Parser::flat_table`]), or else any array, read again
    /// from its bracket. The first reading stops at the first value that
    /// is no flat row (or at the first row, for an array of anything
    /// else) and never enters a nested container, so no byte is read more
    /// than twice, however deep the arrays nest.
    fn table_or_array(&mut self) -> Option<Node<'a>> {
        let mark = (self.pos, self.depth, self.counts);
        let kept = (
            self.doc.members.len(),
            self.doc.lines.len(),
            self.doc.tables.len(),
            self.member_scratch.len(),
        );
        if let Some(table) = self.flat_table() {
            return Some(table);
        }
        (self.pos, self.depth, self.counts) = mark;
        self.doc.members.truncate(kept.0);
        self.doc.lines.truncate(kept.1);
        self.doc.tables.truncate(kept.2);
        self.member_scratch.truncate(kept.3);
        self.array()
    }

    /// The array at `pos` as a table of flat rows ([`Table`]): its first
    /// row a non-empty object of primitives without duplicate keys, every
    /// later row the same keys in the same order (however spelled), each
    /// row's line written as it is read (plain rows the short way,
    /// [`super::row`]); `None` at the first value that is not such a row
    /// or whose line cannot be written.
    fn flat_table(&mut self) -> Option<Node<'a>> {
        let rows = self.rows?;
        self.enter()?;
        self.pos += 1;
        self.skip_ws();
        if self.peek()? != b'{' {
            return None;
        }
        let start = self.doc.members.len();
        let len = self.flat_row()?;
        if len == 0 {
            return None;
        }
        self.doc.members.extend(
            self.member_scratch
                .drain(start_of(&self.member_scratch, len)?..),
        );
        let keys_at = start..start + len;
        let lines_from = self.doc.lines.len();
        {
            let Doc { members, lines, .. } = &mut self.doc;
            rows.cells(lines, members.get(keys_at.clone())?)?;
        }
        // The first row's keys, when none was escaped: later rows that
        // spell them so are read the short way, or without a key scan.
        let literals: Option<Vec<KeyLiteral<'a>>> = self
            .doc
            .members
            .get(keys_at.clone())?
            .iter()
            .map(|m| match m.key {
                Cow::Borrowed(k) => Some(KeyLiteral::new(k)),
                Cow::Owned(_) => None,
            })
            .collect();
        let mut cells: Vec<Node<'a>> = vec![Node::Null; len];
        let mut n: usize = 1;
        loop {
            self.skip_ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.skip_ws();
                }
                b']' => {
                    self.pos += 1;
                    break;
                }
                _ => return None,
            }
            n += 1;
            if let Some(literals) = &literals {
                if let Some(t) = rows.take(
                    self.text,
                    self.pos,
                    literals,
                    &mut self.doc.lines,
                    &mut cells,
                ) {
                    self.pos = t.end;
                    self.counts.add(t.counts);
                    continue;
                }
                let (at, counts) = (self.pos, self.counts);
                let mut read = std::mem::take(&mut self.row_scratch);
                read.clear();
                let found = self.row_of(literals, &mut read);
                let written = found.and_then(|()| rows.cells(&mut self.doc.lines, &read));
                self.row_scratch = read;
                if written.is_some() {
                    continue;
                }
                if found.is_some() {
                    // Read, but not writable: no table.
                    return None;
                }
                (self.pos, self.counts) = (at, counts);
            }
            // Any other spelling of a flat row: its keys must be the
            // first row's, in order.
            let from = self.member_scratch.len();
            let read = self.flat_row()?;
            let fresh = self.member_scratch.get(from..)?;
            let first = self.doc.members.get(keys_at.clone())?;
            if read != len || !fresh.iter().zip(first).all(|(a, b)| key_eq(&a.key, &b.key)) {
                return None;
            }
            rows.cells(&mut self.doc.lines, fresh)?;
            self.member_scratch.truncate(from);
        }
        self.depth -= 1;
        self.doc.tables.push(Table {
            keys: keys_at,
            rows: n,
            lines: lines_from..self.doc.lines.len(),
        });
        Some(Node::Table(self.doc.tables.len() - 1))
    }

    /// An object at `pos` whose values are all primitives, its members
    /// pushed onto `member_scratch`: how many; `None` for any other value,
    /// or duplicate keys (left to the general parse, which refuses them).
    fn flat_row(&mut self) -> Option<usize> {
        self.enter()?;
        self.pos += 1;
        let mark = self.member_scratch.len();
        self.skip_ws();
        if self.eat(b'}').is_none() {
            loop {
                self.skip_ws();
                if self.peek()? != b'"' {
                    return None;
                }
                let key = self.string()?;
                self.skip_ws();
                self.eat(b':')?;
                self.skip_ws();
                if matches!(self.peek()?, b'{' | b'[') {
                    return None;
                }
                let value = self.value()?;
                self.member_scratch.push(Member { key, value });
                if !self.after_entry(b'}')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        let fresh = self.member_scratch.get(mark..)?;
        if has_duplicates(fresh) {
            return None;
        }
        Some(fresh.len())
    }

    /// After an object member or an array item: past a `,` (`Some(true)`:
    /// another follows) or past `close` (`Some(false)`: the container
    /// ends); anything else is not JSON (RFC 8259 §4, §5).
    #[inline]
    fn after_entry(&mut self, close: u8) -> Option<bool> {
        self.skip_ws();
        let c = self.peek()?;
        self.pos += 1;
        if c == b',' {
            Some(true)
        } else if c == close {
            Some(false)
        } else {
            None
        }
    }

    fn array(&mut self) -> Option<Node<'a>> {
        self.enter()?;
        self.pos += 1;
        let mark = self.item_scratch.len();
        self.skip_ws();
        if self.eat(b']').is_none() {
            loop {
                self.skip_ws();
                let v = self.value()?;
                self.item_scratch.push(v);
                if !self.after_entry(b']')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        let start = self.doc.nodes.len();
        let len = self.item_scratch.len().checked_sub(mark)?;
        self.doc.nodes.extend(self.item_scratch.drain(mark..));
        Some(Node::Arr { start, len })
    }

    fn object(&mut self) -> Option<Node<'a>> {
        self.enter()?;
        self.pos += 1;
        let mark = self.member_scratch.len();
        // A known key list this object's keys follow so far, and how many
        // did: a table's rows repeat one, so most keys are confirmed by one
        // comparison with the text instead of being scanned.
        let mut guide: Option<(usize, usize)> = None;
        let mut followed = 0;
        self.skip_ws();
        if self.eat(b'}').is_none() {
            loop {
                self.skip_ws();
                if self.peek()? != b'"' {
                    return None;
                }
                let i = self.member_scratch.len() - mark;
                if i == 0 {
                    guide = self
                        .recent
                        .iter()
                        .copied()
                        .find(|&(s, l)| l > 0 && self.key_ahead(s).is_some());
                }
                let predicted = guide
                    .filter(|&(_, l)| i < l && followed == i)
                    .and_then(|(s, _)| self.key_ahead(s + i));
                let key = match predicted {
                    Some(k) => {
                        self.pos += k.len() + 2;
                        self.counts.quoted += 2;
                        followed += 1;
                        Cow::Borrowed(k)
                    }
                    None => self.string()?,
                };
                self.skip_ws();
                self.eat(b':')?;
                self.skip_ws();
                let value = self.value_at(true)?;
                self.member_scratch.push(Member { key, value });
                if !self.after_entry(b'}')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        let fresh = self.member_scratch.get(mark..)?;
        let start = self.doc.members.len();
        let len = fresh.len();
        let all_followed = followed == len && guide.is_some_and(|(_, l)| l == len);
        if len > 0 && !all_followed {
            let known = self.recent.iter().find_map(|&(s, l)| {
                if l != len {
                    return None;
                }
                let k = self.doc.members.get(s..s + l)?;
                k.iter()
                    .zip(fresh)
                    .all(|(a, b)| key_eq(&a.key, &b.key))
                    .then_some(k)
            });
            if let Some(known) = known {
                // Share the known keys' slices: later comparisons of these
                // rows' keys then end at the pointer.
                if let Some(fresh) = self.member_scratch.get_mut(mark..) {
                    for (f, k) in fresh.iter_mut().zip(known) {
                        if let Cow::Borrowed(s) = k.key {
                            f.key = Cow::Borrowed(s);
                        }
                    }
                }
            } else {
                if has_duplicates(fresh) {
                    return None;
                }
                if let Some(slot) = self.recent.get_mut(self.next_recent % RECENT) {
                    *slot = (start, len);
                }
                self.next_recent += 1;
            }
        }
        self.doc.members.extend(self.member_scratch.drain(mark..));
        Some(Node::Obj { start, len })
    }
}

/// Where the last `len` members of `scratch` start.
fn start_of(scratch: &[Member<'_>], len: usize) -> Option<usize> {
    scratch.len().checked_sub(len)
}

/// Runs only for the first object with a given key list (see `recent`).
fn has_duplicates(members: &[Member<'_>]) -> bool {
    any_duplicate(members, |m| m.key.as_ref())
}

/// Whether two of `items` have the same key. A few keys are compared
/// pairwise, which costs less than building a map (a table's first row
/// usually has a handful); more go through a map, the type the classifier
/// already uses, so the module carries no second hash table, and very many
/// keys never cost the square of their number.
fn any_duplicate<T>(items: &[T], key: impl Fn(&T) -> &str) -> bool {
    const PAIRWISE: usize = 16;
    if items.len() <= PAIRWISE {
        return items.iter().enumerate().any(|(i, m)| {
            items
                .get(..i)
                .unwrap_or_default()
                .iter()
                .any(|earlier| key(earlier) == key(m))
        });
    }
    let mut seen: IndexMap<&str, u64> = IndexMap::with_capacity(items.len());
    items.iter().any(|m| {
        let count = seen.entry(key(m)).or_insert(0);
        *count += 1;
        *count > 1
    })
}
