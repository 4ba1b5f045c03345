//! A borrowed JSON parser (RFC 8259) into [`Doc`].
//!
//! It is never more lenient than `serde_json::from_str` (what it accepts,
//! serde_json accepts with the same value), and it refuses — so the caller
//! falls back to the generic path, which then decides — everything that
//! takes judgement: lone surrogate escapes, nesting past
//! [`MAX_NESTING`] (serde_json stops at 128), and duplicate keys (a
//! `serde_json::Value` keeps one of them; the generic path refuses the
//! block, counted as such).

use indexmap::IndexMap;
use std::borrow::Cow;

use super::tree::{key_eq, Doc, Member, Node};

/// Arrays and objects nested deeper than this are left to serde_json.
const MAX_NESTING: usize = 100;

/// The bytes that end a run of plain string content: `"`, `\\` and the
/// C0 controls (RFC 8259 §7).
static STRING_STOP: [bool; 256] = string_stop();

// Indexing in a constant initialiser: an index out of range fails the
// build, never the plugin.
#[allow(clippy::indexing_slicing)]
const fn string_stop() -> [bool; 256] {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = b < 0x20 || b == b'"' as usize || b == b'\\' as usize;
        b += 1;
    }
    table
}

/// Some byte of `word` may be a `"`, a `\\` or a C0 control (exact for
/// "none is").
pub(super) fn may_stop(word: u64) -> bool {
    crate::json::literal::stops(word) != 0
}

/// How many distinct key lists the duplicate check remembers.
const RECENT: usize = 8;

/// Parses exactly one JSON value surrounded by optional whitespace.
pub(super) fn parse(text: &str) -> Option<Doc<'_>> {
    let mut p = Parser::new(text);
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
    let root = p.value()?;
    p.skip_ws();
    if p.pos != p.bytes.len() {
        return None;
    }
    p.doc.root = Some(root);
    Some(p.doc)
}

/// Keys an object may have for [`certainly_not_tabular`] to check it for
/// duplicates itself (pairwise); an object with more leaves the text to
/// the tree path.
const SKIM_KEYS: usize = 16;

/// Whether `text` is certainly no table, found without building its tree:
/// `true` only when the stage's answer is `NotTabular`. The root and the
/// first row decide that — a root that is neither an array nor an object
/// of primitive fields around exactly one array, or a first row that is no
/// non-empty object or holds an array at any depth (its column is then
/// neither primitives nor a field group, §9.3–§9.4) — and the rest of the
/// text is only checked as [`parse`] checks it (grammar, nesting bound,
/// escapes), so that serde_json reads it too. Duplicate keys are looked
/// for only where they could change that decision: in the root object and
/// the first row. Elsewhere [`parse`] refuses them and the generic path,
/// whose `Value` keeps one of each, finds the same root and first row, so
/// no table either. Any other text stops at its first row with `false`,
/// and the tree path decides as before.
///
/// A JSON document that is no table is the commonest tool result after
/// prose, and the tree path built its whole tree only to refuse it: on the
/// bench's 64 KB non-tabular result, natively, the tree parse took 58.8M
/// instructions per 50 exchanges (half of the request's), this 38.5M.
pub(super) fn certainly_not_tabular(text: &str) -> bool {
    let mut p = Parser::new(text);
    p.skip_ws();
    let no_table = match p.peek() {
        Some(b'[') => p.skim_rows(),
        Some(b'{') => p.skim_envelope(),
        Some(_) => p.skim(false).map(|_| true),
        None => None,
    };
    if no_table != Some(true) {
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
        let start = self.p.pos;
        out.clear();
        let read = self.p.row_of(keys, out);
        if read.is_none() {
            self.p.pos = start;
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

    /// Moves the cursor past a row [`super::row`] read.
    pub(super) fn skip_to(&mut self, pos: usize) {
        self.p.pos = pos;
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

/// A table key's literal `"key"` (no escape in it), held as two
/// little-endian words and their masks when it fits in sixteen bytes: a
/// row's key is then confirmed by two word comparisons rather than a call
/// that compares bytes, once per cell of every row.
pub(super) struct KeyLiteral<'a> {
    key: &'a str,
    words: Option<([u64; 2], [u64; 2])>,
}

impl<'a> KeyLiteral<'a> {
    pub(super) fn new(key: &'a str) -> Self {
        let len = key.len() + 2;
        let words = (len <= 16).then(|| {
            let mut bytes = [0u8; 16];
            for (slot, b) in bytes.iter_mut().zip(
                std::iter::once(b'"')
                    .chain(key.bytes())
                    .chain(std::iter::once(b'"')),
            ) {
                *slot = b;
            }
            let (lo, hi) = bytes.split_at(8);
            // The low `n` bytes of a word.
            let mask = |n: usize| match n {
                0 => 0,
                8.. => u64::MAX,
                n => (1u64 << (8 * n)) - 1,
            };
            (
                [le_word(lo), le_word(hi)],
                [mask(len.min(8)), mask(len.saturating_sub(8))],
            )
        });
        Self { key, words }
    }
}

impl KeyLiteral<'_> {
    /// Where the text goes on after this key's literal, when `b` holds it
    /// at `at`.
    pub(super) fn after(&self, b: &[u8], at: usize) -> Option<usize> {
        let end = at + self.key.len() + 2;
        let same = match (&self.words, b.get(at..at + 16)) {
            (Some((words, masks)), Some(next)) => {
                let (lo, hi) = next.split_at(8);
                le_word(lo) & masks[0] == words[0] && le_word(hi) & masks[1] == words[1]
            }
            _ => {
                b.get(at) == Some(&b'"')
                    && b.get(at + 1..end - 1) == Some(self.key.as_bytes())
                    && b.get(end - 1) == Some(&b'"')
            }
        };
        same.then_some(end)
    }
}

/// Eight bytes as a little-endian word (0 for any other length).
fn le_word(b: &[u8]) -> u64 {
    <[u8; 8]>::try_from(b).map_or(0, u64::from_le_bytes)
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
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\t' | b'\r')) {
            self.pos += 1;
        }
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
        match self.peek()? {
            b'{' => self.object(),
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
    /// flag (exact, see [`crate::json::literal::stops`]), byte by byte
    /// only in the last few bytes of the text. Finding it by a byte loop
    /// over the flagged word cost more than the word scan on short strings
    /// (with [`Parser::skip_string`], the skim of the bench's 64 KB
    /// non-tabular document went 52.2M → 38.5M instructions per 50
    /// exchanges natively).
    fn skip_to_special(&mut self) -> Option<u8> {
        let mut at = self.pos;
        while let Some(word) = self.bytes.get(at..at + 8) {
            let found = crate::json::literal::stops(le_word(word));
            if found != 0 {
                at += (found.trailing_zeros() / 8) as usize;
                self.pos = at;
                return self.bytes.get(at).copied();
            }
            at += 8;
        }
        let tail = self.bytes.get(at..)?;
        let n = tail
            .iter()
            .position(|&b| STRING_STOP.get(usize::from(b)).copied().unwrap_or(true))?;
        self.pos = at + n;
        tail.get(n).copied()
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

    /// The array at `pos` read as a table's rows: `Some(true)` when its
    /// first row already rules a table out, the whole array then checked;
    /// `Some(false)` when it does not (the cursor stops there); `None` when
    /// [`parse`] would refuse it.
    fn skim_rows(&mut self) -> Option<bool> {
        self.enter()?;
        self.pos += 1;
        self.skip_ws();
        if self.eat(b']').is_none() {
            let first_rules_out = match self.peek()? {
                b'{' => {
                    let (arrays, empty) = self.skim_object(true)?;
                    arrays || empty
                }
                _ => self.skim(false).map(|_| true)?,
            };
            if !first_rules_out {
                return Some(false);
            }
            self.skim_items(false)?;
        }
        self.depth -= 1;
        Some(true)
    }

    /// A root object read as a paged envelope (primitive fields around one
    /// array of rows), answered as [`Parser::skim_rows`].
    fn skim_envelope(&mut self) -> Option<bool> {
        self.enter()?;
        self.pos += 1;
        let mark = self.skim_keys.len();
        let mut arrays = 0;
        let mut ruled_out = false;
        self.skip_ws();
        if self.eat(b'}').is_none() {
            loop {
                self.skim_key(mark, true)?;
                match self.peek()? {
                    b'[' if arrays == 0 && !ruled_out => {
                        arrays += 1;
                        if !self.skim_rows()? {
                            return Some(false);
                        }
                        ruled_out = true;
                    }
                    b'[' => {
                        arrays += 1;
                        self.skim(false)?;
                        ruled_out = true;
                    }
                    b'{' => {
                        self.skim(false)?;
                        ruled_out = true;
                    }
                    _ => {
                        self.skim(false)?;
                    }
                }
                if !self.skim_next(b'}')? {
                    break;
                }
            }
        }
        self.skim_keys.truncate(mark);
        self.depth -= 1;
        Some(ruled_out || arrays == 0)
    }

    /// One value checked as [`Parser::value`] checks it, nothing kept,
    /// its objects' keys checked for duplicates when `checked`: whether it
    /// is or holds an array.
    fn skim(&mut self, checked: bool) -> Option<bool> {
        match self.peek()? {
            b'{' => self.skim_object(checked).map(|(arrays, _)| arrays),
            b'[' => {
                self.enter()?;
                self.pos += 1;
                self.skip_ws();
                if self.eat(b']').is_none() {
                    self.skim(checked)?;
                    self.skim_items(checked)?;
                }
                self.depth -= 1;
                Some(true)
            }
            b'"' => self.skip_string().map(|_| false),
            b't' => self.literal(b"true", Node::Null).map(|_| false),
            b'f' => self.literal(b"false", Node::Null).map(|_| false),
            b'n' => self.literal(b"null", Node::Null).map(|_| false),
            b'-' | b'0'..=b'9' => self.number().map(|_| false),
            _ => None,
        }
    }

    /// The items after an array's first, through its closing bracket.
    fn skim_items(&mut self, checked: bool) -> Option<()> {
        while self.skim_next(b']')? {
            self.skim(checked)?;
        }
        Some(())
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

    /// An object checked as [`Parser::skim`] checks a value: whether it
    /// holds an array at any depth, and whether it is empty.
    fn skim_object(&mut self, checked: bool) -> Option<(bool, bool)> {
        self.enter()?;
        self.pos += 1;
        let mark = self.skim_keys.len();
        let mut arrays = false;
        self.skip_ws();
        let empty = self.eat(b'}').is_some();
        if !empty {
            loop {
                self.skim_key(mark, checked)?;
                arrays |= self.skim(checked)?;
                if !self.skim_next(b'}')? {
                    break;
                }
            }
        }
        self.skim_keys.truncate(mark);
        self.depth -= 1;
        Some((arrays, empty))
    }

    /// A member's key and colon; when `checked`, `None` for a key the
    /// object already has or past [`SKIM_KEYS`] keys.
    fn skim_key(&mut self, mark: usize, checked: bool) -> Option<()> {
        self.skip_ws();
        if self.peek()? != b'"' {
            return None;
        }
        if !checked {
            self.skip_string()?;
        } else {
            let key = self.string()?;
            let earlier = self.skim_keys.get(mark..)?;
            if earlier.len() >= SKIM_KEYS || earlier.contains(&key) {
                return None;
            }
            self.skim_keys.push(key);
        }
        self.skip_ws();
        self.eat(b':')?;
        self.skip_ws();
        Some(())
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_NESTING).then_some(())
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
                self.skip_ws();
                match self.peek()? {
                    b',' => self.pos += 1,
                    b']' => {
                        self.pos += 1;
                        break;
                    }
                    _ => return None,
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
                        followed += 1;
                        Cow::Borrowed(k)
                    }
                    None => self.string()?,
                };
                self.skip_ws();
                self.eat(b':')?;
                self.skip_ws();
                let value = self.value()?;
                self.member_scratch.push(Member { key, value });
                self.skip_ws();
                match self.peek()? {
                    b',' => self.pos += 1,
                    b'}' => {
                        self.pos += 1;
                        break;
                    }
                    _ => return None,
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

/// Runs only for the first object with a given key list (see `recent`).
/// A few keys are compared pairwise, which costs less than building a map
/// (a table's first row usually has a handful); more go through a map, the
/// type the classifier already uses, so the module carries no second hash
/// table, and very many keys never cost the square of their number.
fn has_duplicates(members: &[Member<'_>]) -> bool {
    const PAIRWISE: usize = 16;
    if members.len() <= PAIRWISE {
        return members.iter().enumerate().any(|(i, m)| {
            members
                .get(..i)
                .unwrap_or_default()
                .iter()
                .any(|earlier| earlier.key == m.key)
        });
    }
    let mut seen: IndexMap<&str, u64> = IndexMap::with_capacity(members.len());
    members.iter().any(|m| {
        let count = seen.entry(m.key.as_ref()).or_insert(0);
        *count += 1;
        *count > 1
    })
}
