//! A strict TOON decoder for the forms [`super::emit`] writes, into the
//! same [`Doc`] the JSON parser builds, so the verifier compares what the
//! text says with what the JSON said.
//!
//! It reads the text on its own: lines and indentation (§12), headers
//! `key[N<:?><delim?>]{fields}:` with nested field groups (§6, §9.3, §9.4),
//! tabular rows and keyed entry rows counted against `N` (§9.3, §9.5,
//! §14), inline arrays, `key: []`, `key:` over a nested object or an empty
//! one (§8), and primitive tokens (§4, §7). Anything outside those forms is
//! refused rather than guessed at — list items, comments, blank lines, tabs
//! or odd indentation, a delimiter other than the configured one — and so is
//! every token a conforming encoder would not write bare: an unquoted token
//! `needs_quoting` flags (it could read differently elsewhere), a number
//! that is not canonical (`-0`, `1.50`, `1e5`), an integer beyond `u64`, or a
//! fraction whose `f64` reading (what toon-format's decoder returns) is not
//! the literal itself. A refusal makes the caller fall back to the generic
//! path, whose `toon_format::decode` has the final word.
//!
//! Duplicate keys (§14) are not looked for: the decoded tree is compared key
//! by key with a JSON tree that has none, so any duplicate fails that
//! comparison anyway.

use std::borrow::Cow;

use toon_format::types::{EncodeOptions, Indent, Number as ToonNumber};
use toon_format::utils::{format_canonical_number, unescape_string};

use super::emit::{is_keyword, needs_quotes};
use super::tree::{Doc, Member, Node};

/// Field groups nested deeper than toon-format's own bound are refused.
const MAX_DEPTH: usize = 256;

struct Line<'t> {
    depth: usize,
    content: &'t str,
}

/// A header field: a leaf, or a nested group.
struct Field<'t> {
    name: Cow<'t, str>,
    children: Option<Vec<Field<'t>>>,
}

fn leaf_count(fields: &[Field<'_>]) -> usize {
    fields
        .iter()
        .map(|f| f.children.as_deref().map_or(1, leaf_count))
        .sum()
}

/// A parsed header: the text after its colon, and what it declares.
struct Header<'t> {
    len: usize,
    keyed: bool,
    fields: Option<Vec<Field<'t>>>,
    after: &'t str,
}

/// Decodes `text`, or `None` when it is not in the forms described above.
pub(super) fn decode<'t>(text: &'t str, options: &EncodeOptions) -> Option<Doc<'t>> {
    let Indent::Spaces(indent) = options.indent;
    if indent == 0 {
        return None;
    }
    let mut d = Decoder {
        lines: lines(text, indent)?,
        pos: 0,
        delim: u8::try_from(options.delimiter.as_char()).ok()?,
        doc: Doc::default(),
        member_scratch: Vec::new(),
        cells: Vec::new(),
    };
    d.doc.members.reserve(text.len() / 4);
    let root = d.document()?;
    if d.pos != d.lines.len() {
        return None;
    }
    d.doc.root = Some(root);
    Some(d.doc)
}

/// Splits the text into lines with their depth (§12, strict): spaces only,
/// in whole indent units; no blank, comment, CR or trailing-space lines, no
/// byte-order mark.
fn lines(text: &str, indent: usize) -> Option<Vec<Line<'_>>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    if text.starts_with('\u{FEFF}') {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() / 32 + 1);
    for raw in text.split('\n') {
        let spaces = raw.bytes().take_while(|&b| b == b' ').count();
        let content = raw.get(spaces..)?;
        let first = *content.as_bytes().first()?;
        let last = *content.as_bytes().last()?;
        if matches!(first, b'\t' | b'#') || matches!(last, b' ' | b'\t' | b'\r') {
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

struct Decoder<'t> {
    lines: Vec<Line<'t>>,
    pos: usize,
    delim: u8,
    doc: Doc<'t>,
    member_scratch: Vec<Member<'t>>,
    cells: Vec<Node<'t>>,
}

impl<'t> Decoder<'t> {
    fn peek_depth(&self) -> Option<usize> {
        self.lines.get(self.pos).map(|l| l.depth)
    }

    /// §5: `[]`, a keyless header, or the root object's fields.
    fn document(&mut self) -> Option<Node<'t>> {
        let Some(first) = self.lines.first() else {
            return Some(self.commit_object(0));
        };
        let (depth, content) = (first.depth, first.content);
        if depth != 0 {
            return None;
        }
        if content == "[]" {
            self.pos = 1;
            return Some(self.commit_array(Vec::new()));
        }
        if content.starts_with('[') {
            self.pos = 1;
            let header = self.header(content)?;
            return self.announced(header, 0);
        }
        self.object(0)
    }

    /// The fields of an object whose lines sit at `depth` (§8).
    fn object(&mut self, depth: usize) -> Option<Node<'t>> {
        if depth > MAX_DEPTH {
            return None;
        }
        let mark = self.member_scratch.len();
        while let Some(line) = self.lines.get(self.pos) {
            if line.depth < depth {
                break;
            }
            if line.depth > depth {
                return None;
            }
            let content = line.content;
            self.pos += 1;
            let member = self.field(content, depth)?;
            self.member_scratch.push(member);
        }
        Some(self.commit_object(mark))
    }

    /// One field line and whatever lines belong to it.
    fn field(&mut self, content: &'t str, depth: usize) -> Option<Member<'t>> {
        let (key, rest) = key_token(content)?;
        let value = if rest.starts_with('[') {
            let header = self.header(rest)?;
            self.announced(header, depth)?
        } else if rest == ":" {
            // A nested object (§8), or an empty one when nothing deeper
            // follows.
            match self.peek_depth() {
                Some(d) if d == depth + 1 => self.object(depth + 1)?,
                Some(d) if d > depth + 1 => return None,
                _ => self.commit_object(self.member_scratch.len()),
            }
        } else if rest == ": []" {
            self.commit_array(Vec::new())
        } else {
            primitive(rest.strip_prefix(": ")?, self.delim)?
        };
        Some(Member { key, value })
    }

    /// `[N<:?><delim?>]{fields}:` (§6), `text` starting at the bracket.
    fn header(&self, text: &'t str) -> Option<Header<'t>> {
        let rest = text.strip_prefix('[')?;
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (n, mut rest) = rest.split_at_checked(digits)?;
        if n.is_empty() || (n.len() > 1 && n.starts_with('0')) {
            return None;
        }
        let len: usize = n.parse().ok()?;
        let keyed = match rest.strip_prefix(':') {
            Some(r) => {
                rest = r;
                true
            }
            None => false,
        };
        if self.delim != b',' {
            rest = rest.strip_prefix(char::from(self.delim))?;
        }
        rest = rest.strip_prefix(']')?;
        let fields = match rest.strip_prefix('{') {
            Some(r) => {
                let (fields, r) = self.field_list(r, 0)?;
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
    fn field_list(&self, mut text: &'t str, depth: usize) -> Option<(Vec<Field<'t>>, &'t str)> {
        if depth > MAX_DEPTH {
            return None;
        }
        let mut fields = Vec::new();
        loop {
            let (name, rest) = name_token(text)?;
            let (children, rest) = match rest.strip_prefix('{') {
                Some(r) => {
                    let (c, r) = self.field_list(r, depth + 1)?;
                    (Some(c), r)
                }
                None => (None, rest),
            };
            fields.push(Field { name, children });
            if let Some(r) = rest.strip_prefix(char::from(self.delim)) {
                text = r;
            } else {
                return Some((fields, rest.strip_prefix('}')?));
            }
        }
    }

    /// The value a header announces, with its rows when it has any.
    fn announced(&mut self, header: Header<'t>, depth: usize) -> Option<Node<'t>> {
        match (header.fields, header.keyed) {
            (Some(fields), true) => {
                if !header.after.is_empty() {
                    return None;
                }
                self.keyed_rows(header.len, &fields, depth + 1)
            }
            (Some(fields), false) => {
                if !header.after.is_empty() {
                    return None;
                }
                self.tabular_rows(header.len, &fields, depth + 1)
            }
            (None, true) => None,
            (None, false) => {
                // An inline primitive array (the encoder writes `key: []`
                // for an empty one).
                let values = header.after.strip_prefix(' ')?;
                let mut items = Vec::with_capacity(header.len);
                cells(values, self.delim, &mut items)?;
                if items.len() != header.len || items.is_empty() {
                    return None;
                }
                Some(self.commit_array(items))
            }
        }
    }

    /// Exactly `n` rows at `depth`, then nothing deeper than the header.
    fn tabular_rows(&mut self, n: usize, fields: &[Field<'t>], depth: usize) -> Option<Node<'t>> {
        let leaves = leaf_count(fields);
        let mut rows = Vec::with_capacity(n.min(self.lines.len()));
        let mut cells_buf = std::mem::take(&mut self.cells);
        for _ in 0..n {
            let line = self.lines.get(self.pos).filter(|l| l.depth == depth)?;
            let content = line.content;
            self.pos += 1;
            cells_buf.clear();
            cells(content, self.delim, &mut cells_buf)?;
            if cells_buf.len() != leaves {
                return None;
            }
            let mut it = cells_buf.drain(..);
            let row = self.build(fields, &mut it, 0)?;
            drop(it);
            rows.push(row);
        }
        self.cells = cells_buf;
        if self.peek_depth().is_some_and(|d| d >= depth) {
            return None;
        }
        Some(self.commit_array(rows))
    }

    /// Exactly `n` entry rows `key: cells` at `depth` (§9.5).
    fn keyed_rows(&mut self, n: usize, fields: &[Field<'t>], depth: usize) -> Option<Node<'t>> {
        let leaves = leaf_count(fields);
        let mark = self.member_scratch.len();
        let mut cells_buf = std::mem::take(&mut self.cells);
        for _ in 0..n {
            let line = self.lines.get(self.pos).filter(|l| l.depth == depth)?;
            let content = line.content;
            self.pos += 1;
            let (key, rest) = key_token(content)?;
            cells_buf.clear();
            cells(rest.strip_prefix(": ")?, self.delim, &mut cells_buf)?;
            if cells_buf.len() != leaves {
                return None;
            }
            let mut it = cells_buf.drain(..);
            let value = self.build(fields, &mut it, 0)?;
            drop(it);
            self.member_scratch.push(Member { key, value });
        }
        self.cells = cells_buf;
        if self.peek_depth().is_some_and(|d| d >= depth) {
            return None;
        }
        Some(self.commit_object(mark))
    }

    /// One row's object: leaf cells in header order, nested groups as
    /// nested objects (§9.4).
    fn build(
        &mut self,
        fields: &[Field<'t>],
        cells: &mut impl Iterator<Item = Node<'t>>,
        depth: usize,
    ) -> Option<Node<'t>> {
        if depth > MAX_DEPTH {
            return None;
        }
        let mark = self.member_scratch.len();
        for f in fields {
            let value = match &f.children {
                Some(children) => self.build(children, cells, depth + 1)?,
                None => cells.next()?,
            };
            self.member_scratch.push(Member {
                key: f.name.clone(),
                value,
            });
        }
        Some(self.commit_object(mark))
    }

    fn commit_object(&mut self, mark: usize) -> Node<'t> {
        let start = self.doc.members.len();
        let len = self.member_scratch.len().saturating_sub(mark);
        self.doc.members.extend(
            self.member_scratch
                .drain(mark.min(self.member_scratch.len())..),
        );
        Node::Obj { start, len }
    }

    fn commit_array(&mut self, items: Vec<Node<'t>>) -> Node<'t> {
        let start = self.doc.nodes.len();
        let len = items.len();
        self.doc.nodes.extend(items);
        Node::Arr { start, len }
    }
}

/// A key (§7.3): a quoted string, or a bare `[A-Za-z_][A-Za-z0-9_.]*`
/// followed by `:` or `[`. Returns the key and the rest of the line.
fn key_token(content: &str) -> Option<(Cow<'_, str>, &str)> {
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

/// Splits a delimited row (§11.2) into primitives, appended to `out`.
fn cells<'t>(text: &'t str, delim: u8, out: &mut Vec<Node<'t>>) -> Option<()> {
    let mut rest = text;
    loop {
        let len = if rest.starts_with('"') {
            closing_quote(rest)? + 1
        } else {
            rest.bytes().position(|b| b == delim).unwrap_or(rest.len())
        };
        let (token, after) = rest.split_at_checked(len)?;
        out.push(primitive(token, delim)?);
        if after.is_empty() {
            return Some(());
        }
        rest = after.strip_prefix(char::from(delim))?;
    }
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
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    let first = *digits.first()?;
    let int_len = digits.iter().take_while(|b| b.is_ascii_digit()).count();
    if int_len == 0 || (int_len > 1 && first == b'0') {
        return None;
    }
    let (int, rest) = digits.split_at_checked(int_len)?;
    if rest.is_empty() {
        if token == "-0" {
            return None;
        }
        if token.parse::<i64>().is_ok() || token.parse::<u64>().is_ok() {
            return Some(true);
        }
        // Past u64, toon-format reads an integer as a double, and keeps it
        // a number only when the token is that double's canonical form.
        return Some(reads_as_itself(token));
    }
    let frac = rest.strip_prefix(b".")?;
    if frac.is_empty() || !frac.iter().all(u8::is_ascii_digit) || frac.last() == Some(&b'0') {
        return None;
    }
    // toon-format reads a fraction as the nearest f64. With at most 15
    // significant digits, well away from the subnormals, that double's
    // shortest spelling is the token itself; past that, check.
    let lead = if int == b"0" {
        frac.iter().take_while(|&&b| b == b'0').count()
    } else {
        0
    };
    let significant = if int == b"0" {
        frac.len() - lead
    } else {
        int.len() + frac.len()
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
