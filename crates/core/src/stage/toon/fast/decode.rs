//! A strict TOON decoder for the forms [`super::emit`] writes, that reads
//! the text against the parsed JSON tree: every value it decodes is compared
//! on the spot with the JSON value in the same place, so verification costs
//! one pass and no second tree.
//!
//! It reads the text on its own terms: lines and indentation (§12),
//! headers `key[N<:?><delim?>]{fields}:` with nested field groups (§6, §9.3,
//! §9.4), tabular rows and keyed entry rows counted against `N` (§9.3, §9.5,
//! §14), inline arrays, `key: []`, `key:` over a nested object or an empty
//! one (§8), list items counted against `N` (§9.2, §9.4): `- value`,
//! `- [M]: …`, a bare `-` for an empty object, an object item's first field
//! on its hyphen line with what is under that field two levels in and the
//! other fields one level in (§10), and primitive tokens (§4, §7). A table
//! the parser kept as its lines ([`super::tree::Table`]) is read as its
//! header and exactly those lines, each verified against its row when it
//! was written. The JSON tree only says what
//! each decoded value must equal — same type, same key in the same place,
//! same count, numbers equal as exact decimals, strings equal — and that
//! nothing is left over on either side. Anything outside those forms is
//! refused rather than guessed at (comments, blank lines, tabs
//! or odd indentation, a delimiter other than the configured one), and so is
//! every token a conforming encoder would not write bare: an unquoted token
//! `needs_quoting` flags (it could read differently elsewhere), a number
//! that is not canonical (`-0`, `1.50`, `1e5`), or one toon-format's decoder
//! would not read as exactly itself (an `f64` reading that is not the
//! literal). A refusal makes the caller fall back to the generic path,
//! whose `toon_format::decode` has the final word.
//!
//! Duplicate keys (§14) need no separate check: keys are matched in order
//! against a JSON object that has none.

use std::borrow::Cow;

use toon_format::types::{EncodeOptions, Indent, Number as ToonNumber};
use toon_format::utils::{format_canonical_number, unescape_string};

use super::emit::{first_special, is_keyword, needs_quotes, needs_quotes_plain, special_bytes_of};
use super::tree::{key_eq, same_number, short_eq, Doc, Member, Node, Table};

/// Field groups nested deeper than toon-format's own bound are refused.
const MAX_DEPTH: usize = 256;

struct Line<'t> {
    depth: usize,
    content: &'t str,
}

/// A header field: a leaf, or a nested group.
pub(super) struct Field<'t> {
    pub(crate) name: Cow<'t, str>,
    pub(crate) children: Option<Vec<Field<'t>>>,
}

fn leaf_count(fields: &[Field<'_>]) -> usize {
    fields
        .iter()
        .map(|f| f.children.as_deref().map_or(1, leaf_count))
        .sum()
}

/// A parsed header: the text after its colon, and what it declares.
pub(super) struct Header<'t> {
    pub(crate) len: usize,
    pub(crate) keyed: bool,
    pub(crate) fields: Option<Vec<Field<'t>>>,
    pub(crate) after: &'t str,
}

/// True when `text` decodes, in the forms described above, to the root of
/// `json`.
pub(super) fn decodes_to(text: &str, options: &EncodeOptions, json: &Doc<'_>) -> bool {
    let Indent::Spaces(indent) = options.indent;
    let (Some(root), Ok(delim)) = (&json.root, u8::try_from(options.delimiter.as_char())) else {
        return false;
    };
    if indent == 0 {
        return false;
    }
    let Some(lines) = lines(text, indent) else {
        return false;
    };
    let mut d = Decoder {
        lines,
        pos: 0,
        delim,
        json,
        tokens: Vec::new(),
    };
    d.document(root).is_some() && d.pos == d.lines.len()
}

/// Splits the text into lines with their depth (§12, strict): spaces only,
/// in whole indent units; no blank, comment, CR or trailing-space lines. (A
/// leading byte-order mark, which decoders drop, starts no key, header or
/// bare token this decoder accepts, so it is refused too.)
fn lines(text: &str, indent: usize) -> Option<Vec<Line<'_>>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    let mut out = Vec::with_capacity(text.len() / 32 + 1);
    for raw in text.split('\n') {
        let spaces = raw.bytes().take_while(|&b| b == b' ').count();
        let content = raw.get(spaces..)?;
        if !content_ok(content) {
            return None;
        }
        if spaces % indent != 0 {
            return None;
        }
        out.push(Line {
            depth: spaces / indent,
            content,
        });
    }
    Some(out)
}

/// A line's content after its indentation, as [`lines`] accepts it:
/// not empty, not starting with a tab or `#`, not ending in a space, tab
/// or CR. ([`lines`] takes every leading space as indentation, so content
/// never starts with one.)
pub(super) fn content_ok(content: &str) -> bool {
    let (Some(&first), Some(&last)) = (content.as_bytes().first(), content.as_bytes().last())
    else {
        return false;
    };
    !(matches!(first, b'\t' | b'#' | b' ') || matches!(last, b' ' | b'\t' | b'\r'))
}

struct Decoder<'t, 'd, 'j> {
    lines: Vec<Line<'t>>,
    pos: usize,
    delim: u8,
    json: &'d Doc<'j>,
    /// One row's cell tokens, reused from row to row.
    tokens: Vec<&'t str>,
}

impl<'t, 'd, 'j> Decoder<'t, 'd, 'j> {
    fn peek_depth(&self) -> Option<usize> {
        self.lines.get(self.pos).map(|l| l.depth)
    }

    fn object_of(&self, v: &Node<'j>) -> Option<&'d [Member<'j>]> {
        self.json.object(v)
    }

    fn items_of(&self, v: &Node<'j>) -> Option<&'d [Node<'j>]> {
        matches!(v, Node::Arr { .. }).then(|| self.json.items(v))
    }

    /// §5: `[]`, a keyless header, or the root object's fields.
    fn document(&mut self, expected: &'d Node<'j>) -> Option<()> {
        let Some(first) = self.lines.first() else {
            return self.object_of(expected)?.is_empty().then_some(());
        };
        let (depth, content) = (first.depth, first.content);
        if depth != 0 {
            return None;
        }
        if content == "[]" {
            self.pos = 1;
            return self.items_of(expected)?.is_empty().then_some(());
        }
        if content.starts_with('[') {
            self.pos = 1;
            let header = self.header(content)?;
            return self.announced(header, 1, expected);
        }
        self.object(0, self.object_of(expected)?)
    }

    /// The fields of an object whose lines sit at `depth` (§8), one per
    /// expected member, in order, and no more.
    fn object(&mut self, depth: usize, members: &'d [Member<'j>]) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let mut expected = members.iter();
        while let Some(line) = self.lines.get(self.pos) {
            if line.depth < depth {
                break;
            }
            if line.depth > depth {
                return None;
            }
            let content = line.content;
            self.pos += 1;
            self.field(content, depth + 1, expected.next()?)?;
        }
        expected.next().is_none().then_some(())
    }

    /// One field line and whatever lines belong to it, which sit at
    /// `under` (one level in for an object's field, two for a list
    /// item's first field, §10).
    fn field(&mut self, content: &'t str, under: usize, member: &'d Member<'j>) -> Option<()> {
        let (key, rest) = key_token(content)?;
        if !key_eq(&key, &member.key) {
            return None;
        }
        let expected = &member.value;
        if rest.starts_with('[') {
            let header = self.header(rest)?;
            return self.announced(header, under, expected);
        }
        if rest == ":" {
            // A nested object (§8), or an empty one when nothing deeper
            // follows.
            let members = self.object_of(expected)?;
            return match self.peek_depth() {
                Some(d) if d == under => self.object(under, members),
                Some(d) if d > under => None,
                _ => members.is_empty().then_some(()),
            };
        }
        if rest == ": []" {
            return self.items_of(expected)?.is_empty().then_some(());
        }
        primitive_is(rest.strip_prefix(": ")?, self.delim, expected)
    }

    fn header(&self, text: &'t str) -> Option<Header<'t>> {
        header(text, self.delim)
    }

    /// The value a header announces, with its rows or items, which sit
    /// at `under`, when it has any.
    fn announced(
        &mut self,
        header: Header<'t>,
        under: usize,
        expected: &'d Node<'j>,
    ) -> Option<()> {
        match (header.fields, header.keyed) {
            (Some(fields), keyed) => {
                if !header.after.is_empty() {
                    return None;
                }
                if let Some((table, keys)) = self.json.table(expected) {
                    return (!keyed)
                        .then_some(())
                        .and_then(|()| self.table_lines(header.len, &fields, under, table, keys));
                }
                let (rows, entries) = if keyed {
                    (&[][..], Some(self.object_of(expected)?))
                } else {
                    (self.items_of(expected)?, None)
                };
                self.rows(header.len, &fields, under, rows, entries)
            }
            (None, true) => None,
            (None, false) if header.after.is_empty() => {
                // A list (§9.2, §9.4): one item per element, or none for
                // an empty inline array (`[0]:`).
                let items = self.items_of(expected)?;
                if items.len() != header.len {
                    return None;
                }
                for item in items {
                    self.list_item(under, item)?;
                }
                if self.peek_depth().is_some_and(|d| d >= under) {
                    return None;
                }
                Some(())
            }
            (None, false) => {
                // An inline primitive array (the encoder writes `key: []`
                // for an empty one).
                let items = self.items_of(expected)?;
                if header.len == 0 || items.len() != header.len {
                    return None;
                }
                let values = header.after.strip_prefix(' ')?;
                let mut tokens = std::mem::take(&mut self.tokens);
                tokens.clear();
                tokens_of(values, self.delim, &mut tokens)?;
                let ok = tokens.len() == items.len()
                    && tokens
                        .iter()
                        .zip(items)
                        .all(|(t, v)| primitive_is(t, self.delim, v).is_some());
                self.tokens = tokens;
                ok.then_some(())
            }
        }
    }

    /// One list item at `depth` (§9.4, §10): `- value`, `- [M]: …` over
    /// its own items one level in, a bare `-` for an empty object, or an
    /// object's first field on the hyphen line and its other fields one
    /// level in.
    fn list_item(&mut self, depth: usize, expected: &'d Node<'j>) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let line = self.lines.get(self.pos).filter(|l| l.depth == depth)?;
        let content = line.content;
        self.pos += 1;
        if content == "-" {
            return self.object_of(expected)?.is_empty().then_some(());
        }
        let rest = content.strip_prefix("- ")?;
        match expected {
            Node::Obj { .. } => {
                let (first, others) = self.object_of(expected)?.split_first()?;
                self.field(rest, depth + 2, first)?;
                self.object(depth + 1, others)
            }
            Node::Arr { .. } => {
                let header = self.header(rest)?;
                if header.fields.is_some() || header.keyed {
                    return None;
                }
                self.announced(header, depth + 1, expected)
            }
            Node::Table(_) => None,
            _ => primitive_is(rest, self.delim, expected),
        }
    }

    /// A table kept as its lines: the header declares its row count and
    /// its keys as leaf fields, and the next `n` lines at `depth` are its
    /// lines, byte for byte (each was decoded against its row when it was
    /// written), then nothing at that depth or deeper.
    fn table_lines(
        &mut self,
        n: usize,
        fields: &[Field<'t>],
        depth: usize,
        table: &'d Table,
        keys: &'d [Member<'j>],
    ) -> Option<()> {
        let same_header = table.rows == n
            && fields.len() == keys.len()
            && fields
                .iter()
                .zip(keys)
                .all(|(f, k)| f.children.is_none() && key_eq(&f.name, &k.key));
        if !same_header {
            return None;
        }
        let mut read = 0;
        for expected in self.json.lines_of(table) {
            let line = self.lines.get(self.pos).filter(|l| l.depth == depth)?;
            if line.content != expected {
                return None;
            }
            self.pos += 1;
            read += 1;
        }
        if read != n || self.peek_depth().is_some_and(|d| d >= depth) {
            return None;
        }
        Some(())
    }

    /// Exactly `n` rows at `depth`, then nothing deeper than the header:
    /// tabular rows (§9.3), one per item of `rows`, or keyed entry rows
    /// `key: cells` (§9.5), one per member of `entries`.
    fn rows(
        &mut self,
        n: usize,
        fields: &[Field<'t>],
        depth: usize,
        rows: &'d [Node<'j>],
        entries: Option<&'d [Member<'j>]>,
    ) -> Option<()> {
        if entries.map_or(rows.len(), <[_]>::len) != n {
            return None;
        }
        let leaves = leaf_count(fields);
        let mut tokens = std::mem::take(&mut self.tokens);
        for i in 0..n {
            let line = self.lines.get(self.pos).filter(|l| l.depth == depth)?;
            let mut content = line.content;
            self.pos += 1;
            let expected = match entries {
                Some(entries) => {
                    let entry = entries.get(i)?;
                    let (key, rest) = key_token(content)?;
                    if !key_eq(&key, &entry.key) {
                        return None;
                    }
                    content = rest.strip_prefix(": ")?;
                    &entry.value
                }
                None => rows.get(i)?,
            };
            tokens.clear();
            tokens_of(content, self.delim, &mut tokens)?;
            if tokens.len() != leaves {
                return None;
            }
            let mut cells = tokens.iter().copied();
            self.row_is(fields, &mut cells, self.object_of(expected)?, 0)?;
        }
        self.tokens = tokens;
        if self.peek_depth().is_some_and(|d| d >= depth) {
            return None;
        }
        Some(())
    }

    /// One row's object as the header lays it out — leaf cells in header
    /// order, nested groups as nested objects (§9.4) — is `members`.
    fn row_is(
        &self,
        fields: &[Field<'t>],
        cells: &mut impl Iterator<Item = &'t str>,
        members: &'d [Member<'j>],
        depth: usize,
    ) -> Option<()> {
        if depth > MAX_DEPTH || fields.len() != members.len() {
            return None;
        }
        for (f, m) in fields.iter().zip(members) {
            if !key_eq(&f.name, &m.key) {
                return None;
            }
            match &f.children {
                Some(children) => {
                    self.row_is(children, cells, self.object_of(&m.value)?, depth + 1)?;
                }
                None => primitive_is(cells.next()?, self.delim, &m.value)?,
            }
        }
        Some(())
    }
}

/// `[N<:?><delim?>]{fields}:` (§6), `text` starting at the bracket.
pub(super) fn header(text: &str, delim: u8) -> Option<Header<'_>> {
    let rest = text.strip_prefix('[')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (n, mut rest) = rest.split_at_checked(digits)?;
    if n.is_empty() || (n.len() > 1 && n.starts_with('0')) {
        return None;
    }
    let len = n.bytes().try_fold(0usize, |acc, d| {
        acc.checked_mul(10)?.checked_add(usize::from(d - b'0'))
    })?;
    let keyed = match rest.strip_prefix(':') {
        Some(r) => {
            rest = r;
            true
        }
        None => false,
    };
    if delim != b',' {
        rest = rest.strip_prefix(char::from(delim))?;
    }
    rest = rest.strip_prefix(']')?;
    let fields = match rest.strip_prefix('{') {
        Some(r) => {
            let (fields, r) = field_list(r, 0, delim)?;
            rest = r;
            Some(fields)
        }
        None => None,
    };
    let after = rest.strip_prefix(':')?;
    Some(Header {
        len,
        keyed,
        fields,
        after,
    })
}

/// A field list after its `{`, through the matching `}` (§6, §9.4).
fn field_list(mut text: &str, depth: usize, delim: u8) -> Option<(Vec<Field<'_>>, &str)> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut fields = Vec::new();
    loop {
        let (name, rest) = name_token(text)?;
        let (children, rest) = match rest.strip_prefix('{') {
            Some(r) => {
                let (c, r) = field_list(r, depth + 1, delim)?;
                (Some(c), r)
            }
            None => (None, rest),
        };
        fields.push(Field { name, children });
        if let Some(r) = rest.strip_prefix(char::from(delim)) {
            text = r;
        } else {
            return Some((fields, rest.strip_prefix('}')?));
        }
    }
}

/// A key (§7.3): a quoted string, or a bare `[A-Za-z_][A-Za-z0-9_.]*`
/// followed by `:` or `[`. Returns the key and the rest of the line.
pub(super) fn key_token(content: &str) -> Option<(Cow<'_, str>, &str)> {
    let (key, rest) = name_token(content)?;
    matches!(rest.as_bytes().first(), Some(b':' | b'[')).then_some((key, rest))
}

/// A key or field name and the text after it.
fn name_token(text: &str) -> Option<(Cow<'_, str>, &str)> {
    if text.starts_with('"') {
        let end = closing_quote(text)?;
        let inner = text.get(1..end)?;
        let rest = text.get(end + 1..)?;
        return Some((unescape(inner)?, rest));
    }
    let len = text
        .bytes()
        .take_while(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
        .count();
    let (name, rest) = text.split_at_checked(len)?;
    let first = *name.as_bytes().first()?;
    (first.is_ascii_alphabetic() || first == b'_').then_some((Cow::Borrowed(name), rest))
}

/// The index of the quote closing the one at 0, escapes skipped.
fn closing_quote(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// A quoted string's content, unescaped (§7.1); borrowed when it has no
/// escapes.
fn unescape(inner: &str) -> Option<Cow<'_, str>> {
    if inner.contains('\\') {
        unescape_string(inner).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

/// Splits a delimited row (§11.2) into its tokens, appended to `out`.
pub(super) fn tokens_of<'t>(text: &'t str, delim: u8, out: &mut Vec<&'t str>) -> Option<()> {
    each_token(text, delim, |token| {
        out.push(token);
        Some(())
    })
}

/// The delimited row `text` (§11.2) is exactly the values of `members`,
/// token by token and no more: [`tokens_of`] and [`primitive_is`] without
/// collecting the tokens.
///
/// A bare token is found and classed in one scan: it runs to the first byte
/// that §7.2 quotes a string for (the delimiter is one), so a token that
/// reaches its delimiter, or the row's end, that way holds none of them.
pub(super) fn cells_are(text: &str, delim: u8, members: &[Member<'_>]) -> Option<()> {
    tokens_are(text, delim, members.iter().map(|m| &m.value))
}

/// [`cells_are`] for a row's values.
pub(super) fn values_are(text: &str, delim: u8, values: &[Node<'_>]) -> Option<()> {
    tokens_are(text, delim, values.iter())
}

fn tokens_are<'n, 'j: 'n>(
    text: &str,
    delim: u8,
    mut expected: impl Iterator<Item = &'n Node<'j>>,
) -> Option<()> {
    let Some(special) = special_bytes_of(char::from(delim)) else {
        each_token(text, delim, |token| {
            primitive_is(token, delim, expected.next()?)
        })?;
        return expected.next().is_none().then_some(());
    };
    let mut rest = text;
    loop {
        let value = expected.next()?;
        let plain = first_special(rest.as_bytes(), special, char::from(delim));
        let ends_bare = plain > 0 && rest.as_bytes().get(plain).is_none_or(|&b| b == delim);
        let after = if ends_bare {
            let (token, after) = rest.split_at_checked(plain)?;
            bare_is(token, delim, value)?;
            after
        } else {
            let len = token_len(rest, delim)?;
            let (token, after) = rest.split_at_checked(len)?;
            primitive_is(token, delim, value)?;
            after
        };
        if after.is_empty() {
            return expected.next().is_none().then_some(());
        }
        rest = after.strip_prefix(char::from(delim))?;
    }
}

/// The length of the token that starts `rest` (§11.2): a quoted token runs
/// to its closing quote, any other to the next delimiter.
fn token_len(rest: &str, delim: u8) -> Option<usize> {
    if rest.starts_with('"') {
        Some(closing_quote(rest)? + 1)
    } else {
        Some(rest.bytes().position(|b| b == delim).unwrap_or(rest.len()))
    }
}

/// Hands each token of a delimited row (§11.2) to `f`, in order: a quoted
/// token runs to its closing quote, any other to the next delimiter.
fn each_token<'t>(
    text: &'t str,
    delim: u8,
    mut f: impl FnMut(&'t str) -> Option<()>,
) -> Option<()> {
    let mut rest = text;
    loop {
        let (token, after) = rest.split_at_checked(token_len(rest, delim)?)?;
        f(token)?;
        if after.is_empty() {
            return Some(());
        }
        rest = after.strip_prefix(char::from(delim))?;
    }
}

/// The token decodes to the primitive `expected`.
pub(super) fn primitive_is(token: &str, delim: u8, expected: &Node<'_>) -> Option<()> {
    let same = match (primitive(token, delim)?, expected) {
        (Node::Null, Node::Null) => true,
        (Node::Bool(p), Node::Bool(q)) => p == *q,
        (Node::Num(p), Node::Num(q)) => same_number(p, q),
        (Node::Str(p), Node::Str(q)) => short_eq(&p, q),
        _ => false,
    };
    same.then_some(())
}

/// One primitive token (§4): a quoted string, a literal, a canonical
/// number, or a bare string that no encoder would have quoted.
fn primitive(token: &str, delim: u8) -> Option<Node<'_>> {
    if token.starts_with('"') {
        let end = closing_quote(token)?;
        if end + 1 != token.len() {
            return None;
        }
        return unescape(token.get(1..end)?).map(Node::Str);
    }
    bare(token, delim)
}

/// [`bare`] with [`needs_quotes_plain`], compared with `expected` without
/// building the decoded node: the token's form decides its type (§4), so
/// each expected type needs only the checks that could make it that type.
#[inline]
fn bare_is(token: &str, delim: u8, expected: &Node<'_>) -> Option<()> {
    let same = match expected {
        Node::Null => token == "null",
        // Each against a constant, so that the comparison is inlined.
        Node::Bool(true) => token == "true",
        Node::Bool(false) => token == "false",
        Node::Num(raw) => number(token)? && same_as_canonical(token, raw),
        Node::Str(s) => {
            // A number token starts with a digit or a sign: most strings
            // are known not to be one without reading on.
            let may_be_number = token
                .as_bytes()
                .first()
                .is_some_and(|&b| b == b'-' || b.is_ascii_digit());
            short_eq(token, s)
                && !is_keyword(token)
                && (!may_be_number || number(token).is_none())
                && !needs_quotes_plain(token, char::from(delim))
        }
        Node::Arr { .. } | Node::Obj { .. } | Node::Table(_) => false,
    };
    same.then_some(())
}

/// [`same_number`] for a canonical token ([`number`]) and a JSON number
/// literal: the literal is most often the token itself, or the token with
/// trailing fraction zeros (`4.0`, `3.50`), which the encoder drops (§2);
/// neither needs arithmetic.
fn same_as_canonical(token: &str, raw: &str) -> bool {
    if let Some(rest) = raw.strip_prefix(token) {
        if rest.is_empty() {
            return true;
        }
        let zeros = if token.contains('.') {
            Some(rest)
        } else {
            rest.strip_prefix('.')
        };
        if zeros.is_some_and(|z| !z.is_empty() && z.bytes().all(|b| b == b'0')) {
            return true;
        }
    }
    same_number(token, raw)
}

/// An unquoted token (§4): a literal, a canonical number, or a string that
/// no encoder would have quoted.
fn bare(token: &str, delim: u8) -> Option<Node<'_>> {
    if is_keyword(token) {
        return Some(match token {
            "true" => Node::Bool(true),
            "false" => Node::Bool(false),
            _ => Node::Null,
        });
    }
    match number(token) {
        Some(true) => Some(Node::Num(token)),
        Some(false) => None,
        None if needs_quotes(token, char::from(delim)) => None,
        None => Some(Node::Str(Cow::Borrowed(token))),
    }
}

/// `None` unless the token is a canonical number
/// `-?(0|[1-9][0-9]*)(.[0-9]*[1-9])?` other than `-0`; then whether
/// toon-format reads it as exactly itself. Other numeric-looking tokens
/// (`05`, `1e5`, `1.50`, `-0`) fall to the bare-string rule, which refuses
/// them since an encoder quotes numeric-like strings.
fn number(token: &str) -> Option<bool> {
    let bytes = token.as_bytes();
    let negative = bytes.first() == Some(&b'-');
    let digits = bytes.get(usize::from(negative)..)?;
    // One pass over the digits (a cell's token is read once per row): the
    // integer part, then the fraction's length, its last digit and the
    // zeros that lead it.
    let mut int_len = 0;
    while digits.get(int_len).is_some_and(u8::is_ascii_digit) {
        int_len += 1;
    }
    let first = *digits.first()?;
    if int_len == 0 || (int_len > 1 && first == b'0') {
        return None;
    }
    let Some(&after) = digits.get(int_len) else {
        if negative && first == b'0' {
            return None;
        }
        // Eighteen digits always fit an i64: no need to parse those.
        if int_len <= 18 || token.parse::<i64>().is_ok() || token.parse::<u64>().is_ok() {
            return Some(true);
        }
        // Past u64, toon-format reads an integer as a double, and keeps it
        // a number only when the token is that double's canonical form.
        return Some(reads_as_itself(token));
    };
    if after != b'.' {
        return None;
    }
    let frac = digits.get(int_len + 1..)?;
    let mut lead = 0;
    let mut seen_nonzero = false;
    for &b in frac {
        if !b.is_ascii_digit() {
            return None;
        }
        if b != b'0' {
            seen_nonzero = true;
        } else if !seen_nonzero {
            lead += 1;
        }
    }
    if frac.last().is_none_or(|&b| b == b'0') {
        return None;
    }
    // toon-format reads a fraction as the nearest f64. With at most 15
    // significant digits, well away from the subnormals, that double's
    // shortest spelling is the token itself; past that, check.
    let (significant, lead) = if int_len == 1 && first == b'0' {
        (frac.len() - lead, lead)
    } else {
        (int_len + frac.len(), 0)
    };
    if significant <= 15 && lead <= 290 {
        return Some(true);
    }
    Some(reads_as_itself(token))
}

/// The token is the canonical form of the double nearest to it.
fn reads_as_itself(token: &str) -> bool {
    let reads_as = token
        .parse::<f64>()
        .ok()
        .and_then(ToonNumber::from_f64)
        .map(|n| format_canonical_number(&n));
    reads_as.as_deref() == Some(token)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::Rng;
    use proptest::test_runner::{RngAlgorithm, TestRng};

    use super::{number, reads_as_itself};

    /// `None` unless the token is `-?(0|[1-9][0-9]*)(.[0-9]*[1-9])?` other
    /// than `-0`; then whether toon-format reads it as exactly itself,
    /// computed every time (no shortcut).
    fn reference(token: &str) -> Option<bool> {
        let digits = token.strip_prefix('-').unwrap_or(token);
        let (int, frac) = match digits.split_once('.') {
            Some((int, frac)) => (int, Some(frac)),
            None => (digits, None),
        };
        let int_ok = !int.is_empty()
            && int.bytes().all(|b| b.is_ascii_digit())
            && (int == "0" || !int.starts_with('0'));
        let frac_ok = frac.is_none_or(|f| {
            !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) && !f.ends_with('0')
        });
        if !int_ok || !frac_ok || token == "-0" {
            return None;
        }
        if frac.is_none() && (token.parse::<i64>().is_ok() || token.parse::<u64>().is_ok()) {
            return Some(true);
        }
        Some(reads_as_itself(token))
    }

    /// Generated tokens over the characters a number is spelt with: the
    /// one-pass reading against the grammar and toon-format's reading.
    #[test]
    fn number_tokens_read_as_the_grammar_and_toon_format_read_them() {
        let alphabet = b"-0001234567899..e";
        let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[11; 32]);
        let mut next = |n: u64| rng.next_u64() % n;
        let mut found = [0usize; 3];
        for _ in 0..200_000 {
            let len = 1 + next(22);
            let token: String = (0..len)
                .map(|_| char::from(alphabet[next(alphabet.len() as u64) as usize]))
                .collect();
            let read = number(&token);
            assert_eq!(read, reference(&token), "{token:?}");
            found[match read {
                None => 0,
                Some(true) => 1,
                Some(false) => 2,
            }] += 1;
        }
        for token in [
            "0",
            "-1",
            "10",
            "0.5",
            "-0.25",
            "0.0001",
            "12345678901234567890",
        ] {
            assert_eq!(number(token), reference(token), "{token:?}");
            assert_eq!(number(token), Some(true), "{token:?}");
        }
        for token in ["-0", "05", "1.50", "1.", ".5", "1e5", "-", "", "1.2.3"] {
            assert_eq!(number(token), None, "{token:?}");
        }
        // Long fractions toon-format does not read back as themselves.
        assert_eq!(number("0.1000000000000000055511151231257827"), Some(false));
        assert!(found.iter().all(|&n| n > 0), "{found:?}");
    }
}
