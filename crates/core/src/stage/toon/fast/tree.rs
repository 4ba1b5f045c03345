//! A borrowed JSON tree in two flat arenas.
//!
//! Strings borrow from the text they were read from unless they held escapes;
//! numbers stay the exact slice of their literal. The children of an array
//! sit contiguously in `nodes`, the members of an object contiguously in
//! `members`, so a whole document costs two vectors instead of one
//! allocation per row. The JSON parser builds it; the gates, the emitter
//! and the verifying decoder read it.
//!
//! A table of flat rows the parser met where TOON writes tables (a member's
//! value, the root) is kept as its rows' TOON lines instead ([`Table`]):
//! written and verified as they were read, the way the streamed path
//! writes a root table, so a table below an envelope costs the tree its
//! first row and the lines, not a member per cell.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use crate::json::Decimal;

/// One JSON value. Containers are ranges into the document's arenas.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node<'a> {
    Null,
    Bool(bool),
    /// The literal as written (RFC 8259 §6 grammar for JSON, the TOON §4
    /// canonical grammar for decoded TOON).
    Num(&'a str),
    Str(Cow<'a, str>),
    /// `len` items starting at `start` in [`Doc::nodes`].
    Arr {
        start: usize,
        len: usize,
    },
    /// `len` members starting at `start` in [`Doc::members`].
    Obj {
        start: usize,
        len: usize,
    },
    /// An array of flat rows, the table at this index of [`Doc::tables`].
    Table(usize),
}

impl Node<'_> {
    pub(super) fn is_primitive(&self) -> bool {
        !matches!(self, Node::Arr { .. } | Node::Obj { .. } | Node::Table(_))
    }
}

/// An array of at least one row, each a non-empty object whose members
/// are the first row's keys in its order (no duplicates) with primitive
/// values TOON carries (§2), kept as the lines of its tabular form (§9.3):
/// one line of cells per row, in [`Doc::lines`], each ended by a line
/// feed and verified against its row when it was written (with `verify`).
/// Its header (`key[N]{fields}:`) and the lines' indentation depend on
/// where it sits, which the emitter decides.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Table {
    /// The first row's members, in [`Doc::members`]: the header's fields.
    pub(crate) keys: Range<usize>,
    /// How many rows.
    pub(crate) rows: usize,
    /// The rows' lines, in [`Doc::lines`].
    pub(crate) lines: Range<usize>,
}

/// One object member.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Member<'a> {
    pub(crate) key: Cow<'a, str>,
    pub(crate) value: Node<'a>,
}

/// A parsed document: the root and the arenas its containers point into.
#[derive(Debug, Default)]
pub(super) struct Doc<'a> {
    pub(crate) nodes: Vec<Node<'a>>,
    pub(crate) members: Vec<Member<'a>>,
    pub(crate) root: Option<Node<'a>>,
    /// The tables [`Node::Table`] points to.
    pub(crate) tables: Vec<Table>,
    /// Their lines.
    pub(crate) lines: String,
}

impl<'a> Doc<'a> {
    /// The items of an array node (empty for anything else).
    pub(super) fn items(&self, node: &Node<'a>) -> &[Node<'a>] {
        match *node {
            Node::Arr { start, len } => self
                .nodes
                .get(start..start.saturating_add(len))
                .unwrap_or(&[]),
            _ => &[],
        }
    }

    /// The members of an object node (empty for anything else).
    pub(super) fn object(&self, node: &Node<'a>) -> Option<&[Member<'a>]> {
        match *node {
            Node::Obj { start, len } => self.members.get(start..start.saturating_add(len)),
            _ => None,
        }
    }

    /// The table of a [`Node::Table`] and its first row's members.
    pub(super) fn table(&self, node: &Node<'a>) -> Option<(&Table, &[Member<'a>])> {
        let Node::Table(i) = *node else {
            return None;
        };
        let table = self.tables.get(i)?;
        Some((table, self.members.get(table.keys.clone())?))
    }

    /// A table's lines, in order, without their line feeds.
    pub(super) fn lines_of(&self, table: &Table) -> impl Iterator<Item = &str> {
        self.lines
            .get(table.lines.clone())
            .unwrap_or_default()
            .split_terminator('\n')
    }

    /// Every value in the document: the root, array items and member
    /// values. Each appears exactly once, since a container's children are
    /// committed to an arena only when the container itself is.
    pub(super) fn all_values(&self) -> impl Iterator<Item = &Node<'a>> {
        self.root
            .iter()
            .chain(self.nodes.iter())
            .chain(self.members.iter().map(|m| &m.value))
    }
}

/// Key equality, cheapest first: the parser makes the keys of rows that
/// repeat a key list share one slice, so most comparisons end at the
/// pointer.
pub(super) fn key_eq(a: &str, b: &str) -> bool {
    a.len() == b.len() && (std::ptr::eq(a.as_ptr(), b.as_ptr()) || short_eq(a, b))
}

/// Byte equality without a library call for the short strings keys and
/// cells usually are.
pub(super) fn short_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    if a.len() > 16 {
        return a == b;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Finds the members of one object by name, usually in the order of
/// another object's keys: at the position asked first (the rows of a table
/// usually list their keys in one order), else through a map of the
/// object's keys, built at the first miss. A scan per miss would cost
/// `keys²` for every object whose order differs (issue 13).
pub(super) struct Lookup<'m, 'a> {
    members: &'m [Member<'a>],
    by_key: Option<HashMap<&'m str, &'m Node<'a>>>,
}

impl<'m, 'a> Lookup<'m, 'a> {
    pub(super) fn new(members: &'m [Member<'a>]) -> Self {
        Self {
            members,
            by_key: None,
        }
    }

    /// The member named `key`, looked for first at `hint`. With duplicate
    /// keys (which the parser refuses) the first one.
    pub(super) fn get(&mut self, key: &str, hint: usize) -> Option<&'m Node<'a>> {
        if let Some(m) = self.members.get(hint).filter(|m| key_eq(&m.key, key)) {
            return Some(&m.value);
        }
        let members = self.members;
        let by_key = self.by_key.get_or_insert_with(|| {
            let mut map = HashMap::with_capacity(members.len());
            for m in members {
                map.entry(m.key.as_ref()).or_insert(&m.value);
            }
            map
        });
        by_key.get(key).copied()
    }
}

/// Exact decimal equality of two number literals; identical spellings need
/// no arithmetic.
pub(super) fn same_number(p: &str, q: &str) -> bool {
    if p == q {
        return true;
    }
    match (Decimal::parse(p), Decimal::parse(q)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}
