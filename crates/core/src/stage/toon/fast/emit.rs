//! TOON emission from the borrowed tree, byte for byte what
//! `toon_format::encode` (0.7, `encode/mod.rs` and `encode/tabular.rs`)
//! writes:
//! - the root: an array, or an object (keyed tabular at the root, §9.5);
//! - object fields (§8): `key: value`, `key:` over a nested object, and
//!   keyed tabular objects `key[N:]{fields}:` (§9.5);
//! - arrays (§9): `key: []` / `[]` when empty (§9.1), inline primitive
//!   arrays `key[N]: a,b`, tabular arrays `key[N]{fields}:` with one row per
//!   line, nested field groups `{a,b{c,d}}` included (§9.3, §9.4), a table
//!   the parser kept as its lines ([`super::tree::Table`]) alike;
//! - list forms: arrays of primitive arrays as `- [M]: a,b` items (§9.2),
//!   any other array as `key[N]:` over one `- ` item per element (§9.4),
//!   an object item with its first field on the hyphen line and the rest
//!   one level in (§10; a tabular or keyed first field has its rows two
//!   levels in), an empty object item as a bare `-`.
//!
//! Root primitives are rare and small: for those `emit` answers `None` and
//! the caller uses the generic encoder. Strings, keys and
//! numbers go through toon-format's own public helpers (`needs_quoting`,
//! `quote_string`, `is_valid_unquoted_key`, `format_canonical_number`), so
//! the quoting and number rules cannot drift from the encoder's. Where a
//! one-pass shortcut answers first ([`needs_quotes`], `push_quoted`,
//! `number::canonical`), it answers only what the rule it stands for makes
//! certain, defers to the helper otherwise, and is tested against it.

use std::fmt::Write as _;

use toon_format::types::{Delimiter, EncodeOptions};
use toon_format::utils::{is_valid_unquoted_key, needs_quoting, quote_string};

use super::number;
use super::tree::{key_eq, Doc, Lookup, Member, Node};

/// toon-format's `MAX_DEPTH`: its encoder refuses deeper values, and its
/// field-group detection stops there.
const MAX_DEPTH: usize = 256;

/// A header field (§9.3): a leaf column, or a nested group (§9.4).
struct Field<'d> {
    name: &'d str,
    children: Option<Vec<Field<'d>>>,
}

/// A keyed table's entry objects and header fields.
type KeyedTable<'e, 'a> = (Vec<&'e [Member<'a>]>, Vec<Field<'e>>);

/// The TOON text for the document, or `None` when it needs a form this
/// module does not write (or the encoder would refuse it).
pub(super) fn emit(doc: &Doc<'_>, options: &EncodeOptions) -> Option<String> {
    let indent = match options.indent {
        toon_format::types::Indent::Spaces(n) if n > 0 => n,
        _ => return None,
    };
    let mut e = Emitter {
        doc,
        out: String::new(),
        lines: 0,
        indent,
        delimiter: options.delimiter,
        delim: options.delimiter.as_char(),
    };
    let root = doc.root.as_ref()?;
    // TOON is smaller than the JSON it replaces, and the marker is short.
    e.out
        .reserve(doc.nodes.len() * 8 + doc.members.len() * 8 + 64);
    match root {
        Node::Arr { .. } => e.array(None, doc.items(root), 0)?,
        Node::Table(_) => e.lines_table(None, root, 0, 1)?,
        Node::Obj { .. } => {
            let members = doc.object(root)?;
            match e.keyed_fields(members) {
                Some((entries, fields)) => e.table(None, &entries, &fields, Some(members), 0)?,
                None => e.fields(members, 0)?,
            }
        }
        _ => return None,
    }
    Some(e.out)
}

struct Emitter<'e, 'a> {
    doc: &'e Doc<'a>,
    out: String,
    lines: usize,
    indent: usize,
    delimiter: Delimiter,
    delim: char,
}

impl<'e, 'a> Emitter<'e, 'a> {
    /// Starts a line at `depth`: lines are joined with `\n`, none trails.
    fn line(&mut self, depth: usize) {
        if self.lines > 0 {
            self.out.push('\n');
        }
        self.lines += 1;
        for _ in 0..depth * self.indent {
            self.out.push(' ');
        }
    }

    fn key(&mut self, key: &str) {
        push_key(&mut self.out, key);
    }

    fn primitive(&mut self, v: &Node<'_>) -> Option<()> {
        push_primitive(&mut self.out, v, self.delim)
    }

    /// `key[N<:?><delim?>]{fields}:` (§6, §11.1: comma is declared by
    /// omission).
    fn header(&mut self, len: usize, key: Option<&str>, fields: Option<&[Field<'_>]>, keyed: bool) {
        if let Some(key) = key {
            self.key(key);
        }
        self.out.push('[');
        let _ = write!(self.out, "{len}");
        if keyed {
            self.out.push(':');
        }
        if self.delimiter != Delimiter::Comma {
            self.out.push(self.delim);
        }
        self.out.push(']');
        if let Some(fields) = fields {
            self.out.push('{');
            self.field_segment(fields);
            self.out.push('}');
        }
        self.out.push(':');
    }

    fn field_segment(&mut self, fields: &[Field<'_>]) {
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                self.out.push(self.delim);
            }
            self.key(f.name);
            if let Some(children) = &f.children {
                self.out.push('{');
                self.field_segment(children);
                self.out.push('}');
            }
        }
    }

    /// Object fields (§8), one or more lines each.
    fn fields(&mut self, members: &'e [Member<'a>], depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        for m in members {
            self.member(&m.key, &m.value, depth)?;
        }
        Some(())
    }

    fn member(&mut self, key: &str, value: &'e Node<'a>, depth: usize) -> Option<()> {
        match value {
            Node::Arr { .. } => self.array(Some(key), self.doc.items(value), depth),
            Node::Table(_) => self.lines_table(Some(key), value, depth, depth + 1),
            Node::Obj { .. } => {
                let members = self.doc.object(value)?;
                if let Some((entries, fields)) = self.keyed_fields(members) {
                    return self.table(Some(key), &entries, &fields, Some(members), depth);
                }
                self.line(depth);
                self.key(key);
                self.out.push(':');
                if members.is_empty() {
                    return Some(());
                }
                self.fields(members, depth + 1)
            }
            _ => {
                self.line(depth);
                self.key(key);
                self.out.push_str(": ");
                self.primitive(value)
            }
        }
    }

    /// Arrays (§9) in the forms without list items.
    fn array(&mut self, key: Option<&str>, items: &'e [Node<'a>], depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        if items.is_empty() {
            self.line(depth);
            match key {
                Some(key) => {
                    self.key(key);
                    self.out.push_str(": []");
                }
                None => self.out.push_str("[]"),
            }
            return Some(());
        }
        if items.iter().all(Node::is_primitive) {
            self.line(depth);
            return self.inline(key, items);
        }
        // §9.2: an array of primitive arrays, one inline array per item.
        let inner_primitive = |v: &Node<'a>| {
            matches!(v, Node::Arr { .. }) && self.doc.items(v).iter().all(Node::is_primitive)
        };
        if items.iter().all(inner_primitive) {
            self.line(depth);
            self.header(items.len(), key, None, false);
            for v in items {
                self.line(depth + 1);
                self.out.push_str("- ");
                self.inline(None, self.doc.items(v))?;
            }
            return Some(());
        }
        if items.iter().all(|v| matches!(v, Node::Obj { .. })) {
            let mut rows = Vec::with_capacity(items.len());
            for v in items {
                rows.push(self.doc.object(v)?);
            }
            if let Some(fields) = self.extract_fields(&rows, 0) {
                return self.table(key, &rows, &fields, None, depth);
            }
        }
        // §9.4: anything else, one list item per element.
        self.line(depth);
        self.header(items.len(), key, None, false);
        for v in items {
            self.list_item(v, depth + 1)?;
        }
        Some(())
    }

    /// An inline primitive array's header and cells, on the current line:
    /// `key[N]: a,b`, or `[0]:` for an empty one (only an item meets
    /// that: a field's or the root's empty array is `key: []` / `[]`).
    fn inline(&mut self, key: Option<&str>, items: &[Node<'_>]) -> Option<()> {
        self.header(items.len(), key, None, false);
        if items.is_empty() {
            return Some(());
        }
        self.out.push(' ');
        self.cells(items)
    }

    /// One element of a list-form array at `depth` (§9.4, §10):
    /// `- value`, `- [M]: …` over its own items, or an object item.
    fn list_item(&mut self, value: &'e Node<'a>, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match value {
            Node::Arr { .. } => {
                let items = self.doc.items(value);
                self.line(depth);
                self.out.push_str("- ");
                if items.iter().all(Node::is_primitive) {
                    return self.inline(None, items);
                }
                // A keyless header with fields is the root's alone (§9.4):
                // an item's array of objects is a list too.
                self.header(items.len(), None, None, false);
                for v in items {
                    self.list_item(v, depth + 1)?;
                }
                Some(())
            }
            Node::Obj { .. } => self.object_item(self.doc.object(value)?, depth),
            // The parser keeps no array item as a table.
            Node::Table(_) => None,
            _ => {
                self.line(depth);
                self.out.push_str("- ");
                self.primitive(value)
            }
        }
    }

    /// An object as a list item (§10): a bare `-` when empty; else its
    /// first field on the hyphen line, whatever is under that field two
    /// levels in (a table's rows, a keyed table's entries, a list's
    /// items, a nested object's fields), and the other fields one level in.
    fn object_item(&mut self, members: &'e [Member<'a>], depth: usize) -> Option<()> {
        let Some((first, rest)) = members.split_first() else {
            self.line(depth);
            self.out.push('-');
            return Some(());
        };
        let key = first.key.as_ref();
        let value = &first.value;
        match value {
            Node::Table(_) => {
                self.line(depth);
                self.out.push_str("- ");
                self.lines_table_header(Some(key), value)?;
                self.table_lines(value, depth + 2)?;
            }
            Node::Arr { .. } => {
                let items = self.doc.items(value);
                let rows: Option<Vec<&'e [Member<'a>]>> = if items.is_empty() {
                    None
                } else {
                    items.iter().map(|v| self.doc.object(v)).collect()
                };
                let tabular = rows.and_then(|rows| {
                    let fields = self.extract_fields(&rows, 0)?;
                    Some((rows, fields))
                });
                self.line(depth);
                self.out.push_str("- ");
                if let Some((rows, fields)) = tabular {
                    self.header(rows.len(), Some(key), Some(&fields), false);
                    self.rows(&rows, &fields, None, depth + 2)?;
                } else if items.is_empty() {
                    self.key(key);
                    self.out.push_str(": []");
                } else if items.iter().all(Node::is_primitive) {
                    self.inline(Some(key), items)?;
                } else {
                    self.header(items.len(), Some(key), None, false);
                    for v in items {
                        self.list_item(v, depth + 2)?;
                    }
                }
            }
            Node::Obj { .. } => {
                let nested = self.doc.object(value)?;
                self.line(depth);
                self.out.push_str("- ");
                if let Some((entries, fields)) = self.keyed_fields(nested) {
                    self.header(entries.len(), Some(key), Some(&fields), true);
                    self.rows(&entries, &fields, Some(nested), depth + 2)?;
                } else {
                    self.key(key);
                    self.out.push(':');
                    if !nested.is_empty() {
                        self.fields(nested, depth + 2)?;
                    }
                }
            }
            _ => {
                self.line(depth);
                self.out.push_str("- ");
                self.key(key);
                self.out.push_str(": ");
                self.primitive(value)?;
            }
        }
        for m in rest {
            self.member(&m.key, &m.value, depth + 1)?;
        }
        Some(())
    }

    /// A table kept as its lines ([`super::tree::Table`]): its header at
    /// `depth` (§9.3: `key[N]{fields}:`, every field a leaf), its lines at
    /// `rows_depth`.
    fn lines_table(
        &mut self,
        key: Option<&str>,
        node: &Node<'a>,
        depth: usize,
        rows_depth: usize,
    ) -> Option<()> {
        self.line(depth);
        self.lines_table_header(key, node)?;
        self.table_lines(node, rows_depth)
    }

    fn lines_table_header(&mut self, key: Option<&str>, node: &Node<'a>) -> Option<()> {
        let (table, keys) = self.doc.table(node)?;
        let fields: Vec<Field<'_>> = keys
            .iter()
            .map(|m| Field {
                name: m.key.as_ref(),
                children: None,
            })
            .collect();
        self.header(table.rows, key, Some(&fields), false);
        Some(())
    }

    fn table_lines(&mut self, node: &Node<'a>, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let (table, _) = self.doc.table(node)?;
        for line in self.doc.lines_of(table) {
            self.line(depth);
            self.out.push_str(line);
        }
        Some(())
    }

    /// A header and one line of cells per row: tabular arrays (§9.3), or
    /// keyed tabular objects (§9.5) whose lines start `entry: ` with the
    /// keys of `entries`.
    fn table(
        &mut self,
        key: Option<&str>,
        rows: &[&'e [Member<'a>]],
        fields: &[Field<'_>],
        entries: Option<&[Member<'_>]>,
        depth: usize,
    ) -> Option<()> {
        self.line(depth);
        self.header(rows.len(), key, Some(fields), entries.is_some());
        self.rows(rows, fields, entries, depth + 1)
    }

    /// A table's rows at `depth`, one line each, `entry: ` first on a
    /// keyed table's (§9.5).
    fn rows(
        &mut self,
        rows: &[&'e [Member<'a>]],
        fields: &[Field<'_>],
        entries: Option<&[Member<'_>]>,
        depth: usize,
    ) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        for (i, row) in rows.iter().enumerate() {
            self.line(depth);
            if let Some(entries) = entries {
                self.key(&entries.get(i)?.key);
                self.out.push_str(": ");
            }
            self.row(row, fields)?;
        }
        Some(())
    }

    fn cells(&mut self, values: &[Node<'_>]) -> Option<()> {
        for (i, v) in values.iter().enumerate() {
            if i > 0 {
                self.out.push(self.delim);
            }
            self.primitive(v)?;
        }
        Some(())
    }

    /// One row's leaf cells, depth first in header order (§9.3, §9.4),
    /// looked up by name as the encoder does.
    fn row(&mut self, row: &[Member<'_>], fields: &[Field<'_>]) -> Option<()> {
        let mut first = true;
        self.row_cells(row, fields, &mut first)
    }

    fn row_cells(
        &mut self,
        row: &[Member<'_>],
        fields: &[Field<'_>],
        first: &mut bool,
    ) -> Option<()> {
        let mut row = Lookup::new(row);
        for (j, f) in fields.iter().enumerate() {
            let value = row.get(f.name, j)?;
            match &f.children {
                Some(children) => {
                    let nested = self.doc.object(value)?;
                    self.row_cells(nested, children, first)?;
                }
                None => {
                    if !*first {
                        self.out.push(self.delim);
                    }
                    *first = false;
                    self.primitive(value)?;
                }
            }
        }
        Some(())
    }

    /// `extract_keyed_tabular_fields`: at least two entries, each a
    /// non-empty object, with uniform columns; the entries' objects and
    /// the fields.
    fn keyed_fields(&self, members: &'e [Member<'a>]) -> Option<KeyedTable<'e, 'a>> {
        if members.len() < 2 {
            return None;
        }
        let mut entries = Vec::with_capacity(members.len());
        for m in members {
            entries.push(self.doc.object(&m.value).filter(|o| !o.is_empty())?);
        }
        let fields = self.extract_fields(&entries, 0)?;
        Some((entries, fields))
    }

    /// `extract_fields_from_objects`: the first object's keys, present in
    /// every object (the same count, any order), each column classified.
    fn extract_fields(&self, objects: &[&'e [Member<'a>]], depth: usize) -> Option<Vec<Field<'e>>> {
        let first = *objects.first()?;
        if first.is_empty() {
            return None;
        }
        let mut lookups = Vec::with_capacity(objects.len());
        for o in objects {
            if o.len() != first.len() {
                return None;
            }
            let same_order = o.iter().zip(first).all(|(a, b)| key_eq(&a.key, &b.key));
            let mut lookup = Lookup::new(o);
            if !same_order
                && !first
                    .iter()
                    .enumerate()
                    .all(|(j, m)| lookup.get(&m.key, j).is_some())
            {
                return None;
            }
            lookups.push(lookup);
        }
        let mut fields = Vec::with_capacity(first.len());
        for (j, m) in first.iter().enumerate() {
            let mut values = Vec::with_capacity(objects.len());
            for o in &mut lookups {
                values.push(o.get(&m.key, j)?);
            }
            fields.push(self.classify_column(&m.key, &values, depth)?);
        }
        Some(fields)
    }

    /// `classify_column`: a leaf when every value is a primitive, a nested
    /// group when every value is a non-empty object with uniform columns.
    fn classify_column(
        &self,
        name: &'e str,
        values: &[&'e Node<'a>],
        depth: usize,
    ) -> Option<Field<'e>> {
        if values.iter().all(|v| v.is_primitive()) {
            return Some(Field {
                name,
                children: None,
            });
        }
        if depth >= MAX_DEPTH {
            return None;
        }
        let mut objects = Vec::with_capacity(values.len());
        for v in values {
            objects.push(self.doc.object(v).filter(|o| !o.is_empty())?);
        }
        let children = self.extract_fields(&objects, depth + 1)?;
        Some(Field {
            name,
            children: Some(children),
        })
    }
}

/// A key or field name (§7.3): bare when it is a valid unquoted key,
/// else quoted.
pub(super) fn push_key(out: &mut String, key: &str) {
    if is_valid_unquoted_key(key) {
        out.push_str(key);
    } else {
        push_quoted(out, key);
    }
}

/// A primitive token (§4, §7); `None` for a container, or a number TOON
/// cannot carry.
pub(super) fn push_primitive(out: &mut String, v: &Node<'_>, delim: char) -> Option<()> {
    match v {
        Node::Null => out.push_str("null"),
        Node::Bool(true) => out.push_str("true"),
        Node::Bool(false) => out.push_str("false"),
        // Numbers that do not survive were refused before emission; the
        // generic encoder would write `null` or a rounded value.
        Node::Num(raw) => out.push_str(&number::canonical(raw)?),
        Node::Str(s) => {
            if !needs_quotes(s, delim) {
                out.push_str(s);
            } else {
                push_quoted(out, s);
            }
        }
        Node::Arr { .. } | Node::Obj { .. } | Node::Table(_) => return None,
    }
    Some(())
}

/// `needs_quoting(s, delim)` (§7.2), answered in one pass over the bytes
/// where that is certain, else by `needs_quoting` itself. §7.2 quotes a
/// string that is empty, has leading or trailing whitespace, looks like a
/// keyword or a number (`is_literal_like`), holds `: " \\ [ ] { }`, a
/// control character or the delimiter, or starts with `-` or `#`. So a
/// string holding one of those characters needs quotes whatever else holds,
/// and one that holds none, starts with a letter, `_`, `.` or a non-ASCII
/// byte (numeric-like strings start with a digit or a sign), does not end
/// in a space and is no keyword needs none.
pub(super) fn needs_quotes(s: &str, delim: char) -> bool {
    let Some(table) = special_bytes_of(delim) else {
        return needs_quoting(s, delim);
    };
    if first_special(s.as_bytes(), table, delim) < s.len() {
        return true;
    }
    needs_quotes_plain(s, delim)
}

const ONES: u64 = 0x0101_0101_0101_0101;

/// The index of the first byte of `b` that `table` (one of
/// [`special_bytes_of`]'s, for `delim`) flags, or `b.len()`: eight bytes at
/// a time, where a byte loop over short cells was most of writing and
/// checking a row (issue 14). Each test flags its bytes with the lowest
/// flag exact (`json::lex::stops`), so their union's lowest flag is
/// exact too: `"`, `\` and the controls; `:`; the delimiter; and `[ ]`
/// and `{ }` at once, as `{ }` once bit 5 is set in every byte (no other
/// byte turns into either).
pub(super) fn first_special(b: &[u8], table: &[bool; 256], delim: char) -> usize {
    use crate::json::lex::{equal_bytes, stops};
    let d = u8::try_from(delim).unwrap_or(b',');
    let mut at = 0;
    while let Some(word) = b.get(at..at + 8) {
        let w = <[u8; 8]>::try_from(word).map_or(0, u64::from_le_bytes);
        let braces = w | (ONES * 0x20);
        let flags = stops(w)
            | equal_bytes(w, b':')
            | equal_bytes(w, d)
            | equal_bytes(braces, b'{')
            | equal_bytes(braces, b'}');
        if flags != 0 {
            return at + (flags.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    let tail = b.get(at..).unwrap_or(&[]);
    at + tail
        .iter()
        .position(|&c| table.get(usize::from(c)).copied().unwrap_or(true))
        .unwrap_or(tail.len())
}

/// [`needs_quotes`] for a string known to hold none of the bytes its
/// delimiter's [`special_bytes_of`] table flags.
pub(super) fn needs_quotes_plain(s: &str, delim: char) -> bool {
    let bytes = s.as_bytes();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return true;
    };
    let plain_start =
        first.is_ascii_alphabetic() || first == b'_' || first == b'.' || first >= 0x80;
    if plain_start && last != b' ' && !is_keyword(s) {
        return false;
    }
    needs_quoting(s, delim)
}

/// The bytes that make a string need quotes whatever else it holds
/// (§7.2), for the delimiters that have a table; `None` for any other.
pub(super) fn special_bytes_of(delim: char) -> Option<&'static [bool; 256]> {
    match delim {
        ',' => Some(&SPECIAL_COMMA),
        '|' => Some(&SPECIAL_PIPE),
        '\t' => Some(&SPECIAL_TAB),
        _ => None,
    }
}

/// Byte classes for [`needs_quotes`]: `: " \\ [ ] { }` and the C0
/// controls, plus the delimiter of each table.
static SPECIAL_COMMA: [bool; 256] = special_bytes(b',');
static SPECIAL_PIPE: [bool; 256] = special_bytes(b'|');
static SPECIAL_TAB: [bool; 256] = special_bytes(b'\t');

// Indexing in a constant initialiser: an index out of range fails the
// build, never the plugin.
#[allow(clippy::indexing_slicing)]
const fn special_bytes(delim: u8) -> [bool; 256] {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    let chars = *b":\"\\[]{}";
    let mut i = 0;
    while i < chars.len() {
        table[chars[i] as usize] = true;
        i += 1;
    }
    table[delim as usize] = true;
    table
}

/// `true`, `false`, `null` (§7.2: literal-like).
pub(super) fn is_keyword(s: &str) -> bool {
    matches!(s, "true" | "false" | "null")
}

/// `quote_string` (§7.1), written in place: a string with nothing to
/// escape is copied between quotes, anything else goes through
/// toon-format's escaping.
fn push_quoted(out: &mut String, s: &str) {
    if s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push_str(&quote_string(s));
    } else {
        out.push('"');
        out.push_str(s);
        out.push('"');
    }
}
