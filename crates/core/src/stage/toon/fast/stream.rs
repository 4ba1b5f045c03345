//! The commonest table, written as it is read: a root array of flat rows
//! that all list one key sequence, or an object of primitive fields around
//! one such array (a paged envelope). These are most tabular tool results
//! (SQL rows, list endpoints), and the tree path ([`super::parse`] into
//! [`super::tree::Doc`]) holds every member of every row at once — about
//! 56 bytes per cell, several times the text (issue 14: peak memory per
//! stream at most 3× the body). Here each row is parsed, checked, written
//! and verified, then forgotten; the tree holds the first row (whose keys
//! the others must repeat) and the row at hand.
//!
//! The answers are the tree path's. For these shapes its gates reduce to
//! what is checked row by row: every row a non-empty object with the first
//! row's keys in the first row's order (so every key is present in every
//! row and siblings share one order, §9.3), every value a primitive, every
//! number one TOON carries (§2), at least `min_rows` rows; and its emission
//! to the header `key[N]{fields}:` and one line of cells per row, which
//! [`super::emit`] writes with the same helpers. Anything else —
//! a nested value, a row with other keys or another order, a lossy number,
//! too few rows, duplicate keys, the fence header — is left to the tree
//! path ([`Streamed::Other`]), which then decides from the start; a shape
//! found late costs a second parse, never a different answer. The
//! differential tests hold the two paths to identical results.
//!
//! With `verify`, each line is decoded as it is written, by the strict
//! decoder's own rules ([`super::decode`]: line form, header, row tokens,
//! primitives compared with the JSON values), so the check needs no tree
//! either.

use std::borrow::Cow;
use std::fmt::Write as _;

use toon_format::types::{Delimiter, EncodeOptions, Indent};

use super::decode;
use super::emit::{push_key, push_primitive};
use super::key::KeyLiteral;
use super::number;
use super::parse::Cursor;
use super::row;
use super::tree::{key_eq, Member, Node};
use super::{Emission, Sizes};
use crate::config::{Mode, ToonSettings};
use crate::json::literal::literal_len;
use crate::marker::Header;
use crate::outcome::Reason;

#[cfg(test)]
thread_local! {
    /// Rows [`Writer::take_row`] took on this thread: the tests check the
    /// short way is the one that runs.
    pub(super) static TAKEN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// What the streamed path made of a block.
#[derive(Debug, PartialEq)]
pub(super) enum Streamed {
    /// The tree path's answer.
    Done(Result<Emission, Reason>),
    /// Not this shape (or not provably so): the tree path decides.
    Other,
}

/// The block's emission, marker included, or why it stays; `marker` is
/// the marker line for [`Header::Marker`].
///
/// `sizes: None` measures the text as its compact form, from what the
/// cursor and the rows counted as they were read ([`super::counts::Counts`]).
pub(super) fn encode(
    text: &str,
    sizes: Option<Sizes>,
    s: &ToonSettings,
    options: &EncodeOptions,
) -> Streamed {
    encode_rows(text, sizes, s, options, true)
}

/// [`encode`]; `quick_rows: false` reads every row the general way.
pub(super) fn encode_rows(
    text: &str,
    sizes: Option<Sizes>,
    s: &ToonSettings,
    options: &EncodeOptions,
    quick_rows: bool,
) -> Streamed {
    let Indent::Spaces(indent) = options.indent;
    let Ok(delim) = u8::try_from(options.delimiter.as_char()) else {
        return Streamed::Other;
    };
    // The fence's length depends on every backtick run in the text, so it
    // could only be written once the text is; it is rare enough to leave.
    if indent == 0 || s.header == Header::Fence || s.key_presence_pct > 100 {
        return Streamed::Other;
    }
    let adaptive = s.mode == Mode::Adaptive;
    let prefix = match s.header {
        Header::Marker => s.marker.len() + 1,
        _ => 0,
    };
    // In adaptive mode an emission longer than this is refused anyway: past
    // it only the gates are checked, so the reason stays the tree path's.
    // (Measured as the compact form, the text is the bound: longer.)
    let bound = sizes.map_or(text.len(), |z| z.len);
    let limit = if adaptive {
        let keep = u128::from(100 - s.min_savings_pct.min(100));
        usize::try_from((bound as u128) * keep / 100).unwrap_or(usize::MAX)
    } else {
        usize::MAX
    };
    let mut w = Writer {
        out: String::with_capacity(prefix + 64),
        reserve: limit.min(bound).saturating_add(prefix + 64),
        limit,
        over: false,
        lines: 0,
        indent,
        delim,
        delimiter: options.delimiter,
        verify: s.verify,
        min_rows: s.min_rows,
        escapes: 0,
        quick_rows: quick_rows && row::takes(delim),
    };
    if s.header == Header::Marker {
        w.out.push_str(&s.marker);
        w.out.push('\n');
        w.escapes += escapes_in(&s.marker) + 1;
    }
    let mut c = Cursor::new(text);
    if w.document(&mut c).is_none() {
        return Streamed::Other;
    }
    let sizes = match sizes {
        Some(sizes) => sizes,
        None => match c.counts().sizes(text) {
            // The dispatcher checks a given size before the fast path runs.
            Some(sizes) if adaptive && sizes.len < s.min_bytes => {
                return Streamed::Done(Err(Reason::BelowMinBytes))
            }
            Some(sizes) => sizes,
            None => return Streamed::Other,
        },
    };
    if w.over {
        return Streamed::Done(Err(Reason::BelowThreshold));
    }
    let mut emission = w.out;
    // Reserved for the largest emission that could pass; the rest goes back.
    emission.shrink_to_fit();
    if adaptive && !super::super::smaller_enough(sizes.len, emission.len(), s.min_savings_pct) {
        return Streamed::Done(Err(Reason::BelowThreshold));
    }
    let wire = 2 + emission.len() + w.escapes;
    if adaptive && wire > sizes.wire {
        return Streamed::Done(Err(Reason::BelowThreshold));
    }
    Streamed::Done(Ok(Emission {
        text: emission,
        wire,
        replaced: sizes,
    }))
}

struct Writer {
    out: String,
    /// What `out` is sized for once a first row shows a table: the largest
    /// emission that could pass (a text that is no table never pays it).
    reserve: usize,
    /// The size past which the emission is refused.
    limit: usize,
    /// The emission passed `limit`: nothing more is written.
    over: bool,
    /// TOON lines written (the header counts from when its place is kept).
    lines: usize,
    indent: usize,
    delim: u8,
    delimiter: Delimiter,
    verify: bool,
    min_rows: usize,
    /// What escaping adds to `out` as a JSON string literal (`\n` for each
    /// line break, `\"` for each quote, …), counted as it is written: the
    /// emission's size on the wire, which adaptive mode holds to the
    /// block's and the pipeline sizes its write by, then needs no pass of
    /// its own over the emission.
    escapes: usize,
    /// Plain rows after the first are taken the short way ([`super::row`]);
    /// the tests turn it off to hold the two ways to the same bytes.
    quick_rows: bool,
}

impl Writer {
    /// The root: a table, or an object of primitive fields and one table.
    fn document<'a>(&mut self, c: &mut Cursor<'a>) -> Option<()> {
        c.skip_ws();
        match c.peek()? {
            b'[' => self.table(c, None)?,
            b'{' => self.envelope(c)?,
            _ => return None,
        }
        c.skip_ws();
        c.at_end().then_some(())
    }

    /// `{ primitive fields…, key: [rows], primitive fields… }`: the fields
    /// in order (§8), the table under its key (§9.3).
    fn envelope<'a>(&mut self, c: &mut Cursor<'a>) -> Option<()> {
        c.open(b'{')?;
        let mut keys: Vec<Cow<'a, str>> = Vec::new();
        let mut table = false;
        c.skip_ws();
        if c.eat(b'}').is_some() {
            return None;
        }
        loop {
            c.skip_ws();
            let key = c.string()?;
            c.skip_ws();
            c.eat(b':')?;
            c.skip_ws();
            match c.peek()? {
                // A second array, or any object, is no envelope (the
                // classifier's rule).
                b'[' if !table => {
                    table = true;
                    self.table(c, Some(&key))?;
                }
                b'[' | b'{' => return None,
                _ => {
                    let value = c.value()?;
                    self.field(&key, &value)?;
                }
            }
            keys.push(key);
            c.skip_ws();
            match c.peek()? {
                b',' => {
                    c.eat(b',')?;
                }
                b'}' => {
                    c.eat(b'}')?;
                    break;
                }
                _ => return None,
            }
        }
        c.close();
        if !table {
            return None;
        }
        // Duplicate keys are the generic path's to count. A set, not a
        // scan of the keys before each: an object of very many members
        // would cost the square of their number (issue 13).
        let mut seen = std::collections::HashSet::with_capacity(keys.len());
        keys.iter().all(|k| seen.insert(k.as_ref())).then_some(())
    }

    /// Starts a line at `depth`; where its content starts.
    fn line(&mut self, depth: usize) -> usize {
        if self.lines > 0 {
            self.out.push('\n');
            self.escapes += 1;
        }
        self.lines += 1;
        for _ in 0..depth * self.indent {
            self.out.push(' ');
        }
        self.out.len()
    }

    /// Whether the emission has passed its limit; the first time, what was
    /// written is dropped and nothing more is.
    fn over_limit(&mut self) -> bool {
        if !self.over && self.out.len() > self.limit {
            self.over = true;
            self.out = String::new();
        }
        self.over
    }

    /// `key: value` at depth 0.
    fn field(&mut self, key: &str, value: &Node<'_>) -> Option<()> {
        if !value.is_primitive() {
            return None;
        }
        if self.over_limit() {
            return lossless(value);
        }
        let start = self.line(0);
        push_key(&mut self.out, key);
        self.out.push_str(": ");
        push_primitive(&mut self.out, value, char::from(self.delim))?;
        self.escapes += escapes_in(self.out.get(start..)?);
        if self.verify {
            let content = self.out.get(start..)?;
            let (k, rest) = decode::key_token(content)?;
            if !decode::content_ok(content) || !key_eq(&k, key) {
                return None;
            }
            decode::primitive_is(rest.strip_prefix(": ")?, self.delim, value)?;
        }
        Some(())
    }

    /// An array of flat rows with one key sequence: its header (written
    /// once the rows are counted) and one line per row at depth 1.
    fn table<'a>(&mut self, c: &mut Cursor<'a>, key: Option<&str>) -> Option<()> {
        c.open(b'[')?;
        // The header's line: its place is kept and filled once `N` is known.
        let header_newline = self.lines > 0;
        let header_at = self.out.len();
        self.lines += 1;
        c.skip_ws();
        if c.eat(b']').is_some() {
            return None;
        }
        let base = c.doc().members.len();
        let Node::Obj { start, len } = c.value()? else {
            return None;
        };
        if len == 0 || start != base {
            return None;
        }
        let first_len = len;
        let keep = start + len;
        self.row(c, start, len, start)?;
        self.out
            .reserve(self.reserve.saturating_sub(self.out.len()));
        // The first row's keys, when none was escaped: rows that spell them
        // so are read without the general object parse (Cursor::row_of).
        let keys: Option<Vec<KeyLiteral<'a>>> = c
            .doc()
            .members
            .get(start..keep)?
            .iter()
            .map(|m| match m.key {
                Cow::Borrowed(k) => Some(KeyLiteral::new(k)),
                Cow::Owned(_) => None,
            })
            .collect();
        let mut cells: Vec<Member<'a>> = Vec::with_capacity(first_len);
        let mut taken: Vec<Node<'a>> = vec![Node::Null; first_len];
        let mut n: usize = 1;
        loop {
            c.skip_ws();
            match c.peek()? {
                b',' => {
                    c.eat(b',')?;
                    c.skip_ws();
                }
                b']' => {
                    c.eat(b']')?;
                    break;
                }
                _ => return None,
            }
            if let Some(keys) = &keys {
                if self.take_row(c, keys, &mut taken) {
                    n += 1;
                    continue;
                }
                if c.row_of(keys, &mut cells).is_some() {
                    self.cells(&cells)?;
                    n += 1;
                    continue;
                }
            }
            let Node::Obj { start, len } = c.value()? else {
                return None;
            };
            if len != first_len {
                return None;
            }
            self.row(c, start, len, base)?;
            c.forget_after(keep);
            n += 1;
        }
        c.close();
        if n < self.min_rows {
            return None;
        }
        if self.over {
            return Some(());
        }
        let keys = c.doc().members.get(base..keep)?;
        let mut header =
            String::with_capacity(16 + keys.iter().map(|m| m.key.len() + 1).sum::<usize>());
        if header_newline {
            header.push('\n');
        }
        let content_at = header.len();
        if let Some(key) = key {
            push_key(&mut header, key);
        }
        header.push('[');
        let _ = write!(header, "{n}");
        if self.delimiter != Delimiter::Comma {
            header.push(char::from(self.delim));
        }
        header.push_str("]{");
        for (j, m) in keys.iter().enumerate() {
            if j > 0 {
                header.push(char::from(self.delim));
            }
            push_key(&mut header, &m.key);
        }
        header.push_str("}:");
        if self.verify {
            self.header_reads_back(header.get(content_at..)?, key, n, keys)?;
        }
        if header_at > self.out.len() {
            return None;
        }
        self.escapes += escapes_in(&header);
        self.out.insert_str(header_at, &header);
        // The header may take the emission over its limit.
        self.over_limit();
        Some(())
    }

    /// A plain row read, written and verified the short way
    /// ([`super::row`]); `false`, with nothing written and the cursor
    /// where it was, for the general way to read it.
    fn take_row<'a>(
        &mut self,
        c: &mut Cursor<'a>,
        keys: &[KeyLiteral<'a>],
        cells: &mut [Node<'a>],
    ) -> bool {
        // Past the limit the general way stops writing.
        if !self.quick_rows || self.over || self.out.len() > self.limit {
            return false;
        }
        let (len, lines, escapes) = (self.out.len(), self.lines, self.escapes);
        let at = self.line(1);
        let (text, pos) = c.text_at();
        let taken = row::take(text, pos, keys, self.delim, &mut self.out, cells)
            .filter(|_| !self.verify || self.values_read_back(at, cells).is_some());
        match taken {
            Some(t) => {
                c.skip_to(t.end, t.counts);
                self.escapes += t.escapes;
                #[cfg(test)]
                TAKEN.with(|n| n.set(n.get() + 1));
                true
            }
            None => {
                self.out.truncate(len);
                self.lines = lines;
                self.escapes = escapes;
                false
            }
        }
    }

    /// [`Writer::row_reads_back`] for the values [`super::row`] read.
    fn values_read_back(&self, at: usize, values: &[Node<'_>]) -> Option<()> {
        let content = self.out.get(at..)?;
        if !decode::content_ok(content) {
            return None;
        }
        decode::values_are(content, self.delim, values)
    }

    /// One row: its members (at `start`, `len` of them) are the first
    /// row's keys (at `first`) in the same order, each value a primitive;
    /// its line of cells, verified.
    fn row(&mut self, c: &Cursor<'_>, start: usize, len: usize, first: usize) -> Option<()> {
        let members = c.doc().members.get(start..start + len)?;
        if start != first {
            let keys = c.doc().members.get(first..first + len)?;
            if !members
                .iter()
                .zip(keys)
                .all(|(m, k)| key_eq(&m.key, &k.key))
            {
                return None;
            }
        }
        self.cells(members)
    }

    /// A row's line of cells (its keys checked already), verified.
    fn cells(&mut self, members: &[Member<'_>]) -> Option<()> {
        if self.over_limit() {
            return members.iter().try_for_each(|m| lossless(&m.value));
        }
        let at = self.line(1);
        for (j, m) in members.iter().enumerate() {
            if !m.value.is_primitive() {
                return None;
            }
            if j > 0 {
                self.out.push(char::from(self.delim));
            }
            let cell = self.out.len();
            push_primitive(&mut self.out, &m.value, char::from(self.delim))?;
            // A bare token holds none of the bytes JSON escapes: §7.2
            // quotes every string with a quote, a backslash or a control
            // character (`emit::needs_quotes`), and numbers and literals
            // are plain. Only a quoted one is looked at again.
            if self.out.as_bytes().get(cell) == Some(&b'"') {
                self.escapes += escapes_in(self.out.get(cell..)?);
            }
        }
        // The tab delimiter is a control character JSON escapes (`\t`).
        if self.delim == b'\t' {
            self.escapes += members.len().saturating_sub(1);
        }
        if self.verify {
            self.row_reads_back(at, members)?;
        }
        Some(())
    }

    /// The row's line decodes (§9.3, §11.2) to exactly its members' values.
    fn row_reads_back(&self, at: usize, members: &[Member<'_>]) -> Option<()> {
        let content = self.out.get(at..)?;
        if !decode::content_ok(content) {
            return None;
        }
        decode::cells_are(content, self.delim, members)
    }

    /// The header line decodes (§6) to `key`, `n` rows and the keys as
    /// leaf fields, with nothing after its colon.
    fn header_reads_back(
        &self,
        content: &str,
        key: Option<&str>,
        n: usize,
        keys: &[Member<'_>],
    ) -> Option<()> {
        if !decode::content_ok(content) {
            return None;
        }
        let rest = match key {
            Some(key) => {
                let (k, rest) = decode::key_token(content)?;
                if !key_eq(&k, key) {
                    return None;
                }
                rest
            }
            None => content,
        };
        let header = decode::header(rest, self.delim)?;
        let fields = header.fields?;
        let same = header.len == n
            && !header.keyed
            && header.after.is_empty()
            && fields.len() == keys.len()
            && fields
                .iter()
                .zip(keys)
                .all(|(f, m)| f.children.is_none() && key_eq(&f.name, &m.key));
        same.then_some(())
    }
}

/// What escaping adds to `s` in a JSON string literal.
fn escapes_in(s: &str) -> usize {
    literal_len(s) - 2 - s.len()
}

/// A value the emission could write: a primitive, and a number TOON
/// carries exactly.
fn lossless(v: &Node<'_>) -> Option<()> {
    match v {
        Node::Num(raw) => number::canonical(raw).map(|_| ()),
        v if v.is_primitive() => Some(()),
        _ => None,
    }
}
