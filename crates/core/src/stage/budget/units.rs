//! Where a text block may be cut: the units of its final form, and how a
//! run of them is written back as a block of the same form.
//!
//! - **TOON table** (what adaptive TOON emits: a root table, or an object
//!   whose one table sits among scalar members — TOON v4 §9.3): the rows.
//!   A run of rows is written with the header line kept and its `[N]`
//!   rewritten to the rows shown (§6: the declared length must equal the
//!   rows that follow), the members around the table and the marker or
//!   fence unchanged — so every page decodes on its own.
//! - **JSON**: a root array's elements; an object whose largest member is an
//!   array holding at least half the text (a paged envelope): that array's
//!   elements, the other members repeated on every page; another object:
//!   its members. Each run is valid JSON of the same shape (RFC 8259). A
//!   marker line before the JSON (a Python literal read as JSON,
//!   `crate::marker::python_line`) heads every page.
//! - **Text**: lines, each with its line end, so pages are exact slices and
//!   concatenate to the original; a line longer than a page is split at
//!   character boundaries.

use std::ops::Range;

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::marker::MARKER_PREFIX;
use crate::mcp::Edits;
use crate::stage::clean::{split_framed, TextKind};

/// What one unit is, for the notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnitKind {
    Rows,
    Items,
    Members,
    Lines,
}

impl UnitKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            UnitKind::Rows => "rows",
            UnitKind::Items => "items",
            UnitKind::Members => "members",
            UnitKind::Lines => "lines",
        }
    }
}

#[derive(Debug, Clone)]
enum Form<'a> {
    /// `head` + `before` + header line (`count` replaced) + rows + `after` +
    /// `tail`: `head`/`tail` are the marker or fence lines.
    Toon {
        head: &'a str,
        before: &'a str,
        header_pre: &'a str,
        header_post: &'a str,
        after: &'a str,
        tail: &'a str,
    },
    /// `open` + elements joined by `,` + `close`.
    Json { open: &'a str, close: &'a str },
    /// Exact slices.
    Text,
}

/// A block's text cut into units.
#[derive(Debug, Clone)]
pub(crate) struct Units<'a> {
    text: &'a str,
    pub(crate) kind: UnitKind,
    form: Form<'a>,
    /// Byte ranges of the units in `text`, in order. TOON rows and JSON
    /// elements exclude separators; text lines include their line end.
    spans: Vec<Range<usize>>,
}

impl<'a> Units<'a> {
    /// The structured units of a block (TOON or JSON); `None` when the text
    /// is neither a table nor a JSON array or object with units.
    pub(crate) fn structured(text: &'a str, framing: TextKind) -> Option<Self> {
        match framing {
            TextKind::Toon(_) => toon(text, framing),
            TextKind::Text => json(text),
        }
    }

    /// Lines of `text`; a line longer than `max_bytes` is split at the last
    /// character boundary within it.
    pub(crate) fn lines(text: &'a str, max_bytes: usize) -> Self {
        let max = max_bytes.max(4);
        let mut spans = Vec::new();
        let mut at = 0;
        for line in text.split_inclusive('\n') {
            let end = at + line.len();
            let mut start = at;
            while end - start > max {
                let mut cut = start + max;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                spans.push(start..cut);
                start = cut;
            }
            spans.push(start..end);
            at = end;
        }
        Units {
            text,
            kind: UnitKind::Lines,
            form: Form::Text,
            spans,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }

    /// The text of unit `i` (a TOON row with its indentation, a JSON
    /// element, a line with its line end).
    pub(crate) fn unit(&self, i: usize) -> &'a str {
        self.spans
            .get(i)
            .and_then(|r| self.text.get(r.clone()))
            .unwrap_or("")
    }

    /// What every page of this block carries besides its units: header,
    /// marker, envelope; empty for text (pages are bare slices).
    pub(crate) fn overhead(&self) -> String {
        self.render(0..0)
    }

    /// Units `range` written as a block of the same form.
    pub(crate) fn render(&self, range: Range<usize>) -> String {
        let units = self.spans.get(range.clone()).unwrap_or_default();
        let slice = |r: &Range<usize>| self.text.get(r.clone()).unwrap_or("");
        match &self.form {
            Form::Text => match (units.first(), units.last()) {
                (Some(a), Some(b)) => self.text.get(a.start..b.end).unwrap_or("").to_string(),
                _ => String::new(),
            },
            Form::Json { open, close } => {
                let mut out = String::with_capacity(
                    open.len() + close.len() + units.iter().map(|r| r.len() + 1).sum::<usize>(),
                );
                out.push_str(open);
                for (i, r) in units.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(slice(r));
                }
                out.push_str(close);
                out
            }
            Form::Toon {
                head,
                before,
                header_pre,
                header_post,
                after,
                tail,
            } => {
                let count = units.len().to_string();
                let mut out = String::with_capacity(
                    head.len()
                        + before.len()
                        + header_pre.len()
                        + count.len()
                        + header_post.len()
                        + units.iter().map(|r| r.len() + 1).sum::<usize>()
                        + after.len()
                        + tail.len(),
                );
                out.push_str(head);
                out.push_str(before);
                out.push_str(header_pre);
                out.push_str(&count);
                out.push_str(header_post);
                for r in units {
                    out.push('\n');
                    out.push_str(slice(r));
                }
                out.push_str(after);
                out.push_str(tail);
                out
            }
        }
    }

    /// Bytes a unit adds to a page beyond its own text.
    pub(crate) fn separator_bytes(&self) -> usize {
        match self.form {
            Form::Text => 0,
            Form::Json { .. } | Form::Toon { .. } => 1,
        }
    }
}

/// A TOON emission with one table: its rows.
fn toon(text: &str, framing: TextKind) -> Option<Units<'_>> {
    let parts = split_framed(text, framing)?;
    let body = parts.body;
    let base = parts.head.len();
    // Lines with their byte offsets in `body`.
    let mut lines: Vec<Range<usize>> = Vec::new();
    let mut at = 0;
    for line in body.split('\n') {
        lines.push(at..at + line.len());
        at += line.len() + 1;
    }
    let line = |i: usize| lines.get(i).and_then(|r| body.get(r.clone())).unwrap_or("");
    // The first line at the top level that opens a table.
    let (h, n) = (0..lines.len()).find_map(|i| {
        let l = line(i);
        if l.starts_with(' ') {
            return None;
        }
        table_count(l).map(|c| (i, c))
    })?;
    let header = lines.get(h)?.clone();
    let count_range = count_span(line(h))?;
    if n == 0 {
        return None;
    }
    // TOON v4 §12: rows sit one indent level (two spaces) deeper; what
    // follows the table is back at the header's level.
    let mut spans = Vec::with_capacity(n);
    for i in h + 1..=h + n {
        let l = line(i);
        let r = lines.get(i)?;
        if !l.starts_with("  ") || l.starts_with("   ") || l.len() <= 2 {
            return None;
        }
        spans.push(base + r.start..base + r.end);
    }
    for i in h + n + 1..lines.len() {
        let l = line(i);
        if l.starts_with(' ') || l.is_empty() {
            return None;
        }
    }
    let last_row_end = lines.get(h + n)?.end;
    let header_line = body.get(header.clone())?;
    Some(Units {
        text,
        kind: UnitKind::Rows,
        form: Form::Toon {
            head: parts.head,
            before: body.get(..header.start)?,
            header_pre: header_line.get(..count_range.start)?,
            header_post: header_line.get(count_range.end..)?,
            after: body.get(last_row_end..)?,
            tail: parts.tail,
        },
        spans,
    })
}

/// The declared length of a tabular header line (`key[N]{f,g}:` or
/// `[N]{f,g}:`, TOON v4 §6), or `None` for any other line.
fn table_count(line: &str) -> Option<usize> {
    let span = count_span(line)?;
    let rest = line.get(span.end..)?;
    // `]` possibly after a delimiter symbol, then the field list.
    let rest = rest
        .strip_prefix(']')
        .or_else(|| rest.strip_prefix("|]"))
        .or_else(|| rest.strip_prefix("\t]"))?;
    if !(rest.starts_with('{') && rest.ends_with("}:")) {
        return None;
    }
    line.get(span)?.parse().ok()
}

/// The digits of `[N` in a header line: after a quoted key (with its
/// escapes) or an unquoted one, which cannot contain `[`.
fn count_span(line: &str) -> Option<Range<usize>> {
    let open = if line.starts_with('"') {
        let mut escaped = false;
        let mut close = None;
        for (i, b) in line.bytes().enumerate().skip(1) {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => {
                    close = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let after = close? + 1;
        (line.as_bytes().get(after) == Some(&b'[')).then_some(after)?
    } else {
        line.find('[')?
    };
    let digits = line
        .get(open + 1..)?
        .bytes()
        .take_while(u8::is_ascii_digit)
        .count();
    (digits > 0).then(|| open + 1..open + 1 + digits)
}

/// Collects an object's member values in order, duplicates included.
struct MemberValues<'a>(Vec<&'a RawValue>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for MemberValues<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = MemberValues<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut out = Vec::new();
                while let Some(IgnoredAny) = map.next_key()? {
                    out.push(map.next_value::<&'de RawValue>()?);
                }
                Ok(MemberValues(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

fn json(text: &str) -> Option<Units<'_>> {
    // A block read from a Python literal and left as JSON: the marker's
    // line, then the JSON. The line is part of what opens every page.
    let head = match text.strip_prefix(MARKER_PREFIX) {
        Some(rest) => text.len() - rest.len() + rest.find('\n')? + 1,
        None => 0,
    };
    let body = text.get(head..)?;
    let trimmed = body.trim_start();
    let lead = text.len() - trimmed.len();
    if trimmed.starts_with('[') {
        let elements: Vec<&RawValue> = serde_json::from_str(body).ok()?;
        return array_units(text, lead, text.trim_end().len(), &elements);
    }
    if !trimmed.starts_with('{') {
        return None;
    }
    let MemberValues(values) = serde_json::from_str(body).ok()?;
    let spans: Vec<Range<usize>> = values
        .iter()
        .map(|v| Edits::span_of(text, v))
        .collect::<Option<_>>()?;
    // A paged envelope: one array member holds most of the text.
    let largest = spans
        .iter()
        .zip(&values)
        .filter(|(_, v)| v.get().starts_with('['))
        .max_by_key(|(r, _)| r.len());
    if let Some((r, v)) = largest {
        if r.len() * 2 >= body.len() {
            let elements: Vec<&RawValue> = serde_json::from_str(v.get()).ok()?;
            if !elements.is_empty() {
                return array_units(text, r.start, r.end, &elements);
            }
        }
    }
    if values.len() < 2 {
        return None;
    }
    // Members: from the key's opening quote to the end of its value. What
    // lies between one value's end and the next value is `, "key" :`.
    let mut members = Vec::with_capacity(spans.len());
    let mut prev = lead; // the `{`
    for r in &spans {
        let between = text.get(prev + 1..r.start)?;
        let key_start = prev + 1 + (between.len() - between.trim_start().len());
        members.push(key_start..r.end);
        prev = r.end + (text.get(r.end..)?.len() - text.get(r.end..)?.trim_start().len());
    }
    let close_at = text.trim_end().len().checked_sub(1)?;
    Some(Units {
        text,
        kind: UnitKind::Members,
        form: Form::Json {
            open: text.get(..lead + 1)?,
            close: text.get(close_at..)?,
        },
        spans: members,
    })
}

/// Elements of the array spanning `array_start..array_end` (brackets
/// included) in `text`.
fn array_units<'a>(
    text: &'a str,
    array_start: usize,
    array_end: usize,
    elements: &[&RawValue],
) -> Option<Units<'a>> {
    if elements.is_empty() {
        return None;
    }
    let spans: Vec<Range<usize>> = elements
        .iter()
        .map(|e| Edits::span_of(text, e))
        .collect::<Option<_>>()?;
    Some(Units {
        text,
        kind: UnitKind::Items,
        form: Form::Json {
            open: text.get(..array_start + 1)?,
            close: text.get(array_end.checked_sub(1)?..)?,
        },
        spans,
    })
}
