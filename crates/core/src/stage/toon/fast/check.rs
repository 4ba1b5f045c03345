//! The generic path's gates — [`super::super::classify`] and
//! [`super::super::exact`] — answered on the borrowed tree. Each gives the
//! same yes/no as its generic twin (the differential tests compare whole
//! `encode` results, refusals included); they differ only in cost: rows
//! that list their keys in one order are handled by position, and the
//! exactness checks are flat scans of the arenas instead of a tree walk.

use indexmap::IndexMap;

use super::number;
use super::tree::{key_eq, Doc, Lookup, Member, Node};
use crate::outcome::Reason;

/// Nested field groups deeper than this are not worth a header (the same
/// bound as the generic classifier).
const MAX_GROUP_DEPTH: usize = 8;

/// [`super::super::classify`]: a table anywhere in the value. Rows that do
/// not all list one key sequence are weighed by key presence as the
/// generic classifier weighs them (TOON then writes them in list form,
/// which the fast encoder leaves to the generic one).
///
/// Every value of the tree is looked at once — the root, array items and
/// member values, which hold every container exactly once — and an array's
/// own check reads its rows and their objects down to the next array,
/// never into it (a column holding an array is no column, §9.3), so the
/// search is linear in the tree, whatever its nesting.
pub(super) fn classify(doc: &Doc<'_>, min_rows: usize, key_presence_pct: u64) -> Option<bool> {
    for value in doc.all_values() {
        let found = match value {
            Node::Arr { .. } => table(doc, doc.items(value), min_rows, key_presence_pct)?,
            // Flat rows with one key sequence: every key in every row.
            Node::Table(_) => {
                let (t, _) = doc.table(value)?;
                t.rows >= min_rows && key_presence_pct <= 100
            }
            _ => false,
        };
        if found {
            return Some(true);
        }
    }
    Some(false)
}

fn table(doc: &Doc<'_>, rows: &[Node<'_>], min_rows: usize, key_presence_pct: u64) -> Option<bool> {
    if rows.len() < min_rows || rows.is_empty() {
        return Some(false);
    }
    let mut objects: Vec<&[Member<'_>]> = Vec::with_capacity(rows.len());
    for row in rows {
        match doc.object(row) {
            Some(o) if !o.is_empty() => objects.push(o),
            _ => return Some(false),
        }
    }
    let Some(first) = one_key_order(&objects) else {
        return Some(by_presence(doc, &objects, key_presence_pct));
    };
    // Every row has every key: each key's presence is 100 %.
    if key_presence_pct > 100 {
        return Some(false);
    }
    Some((0..first.len()).all(|j| {
        let cells: Vec<&Node<'_>> = objects
            .iter()
            .filter_map(|o| o.get(j).map(|m| &m.value))
            .collect();
        column(doc, &cells, 0)
    }))
}

/// The generic classifier's table rule for rows with different key lists:
/// every key of their union (in first-seen order) present in at least
/// `key_presence_pct` % of rows, and each key's cells a column.
fn by_presence(doc: &Doc<'_>, objects: &[&[Member<'_>]], key_presence_pct: u64) -> bool {
    let mut presence: IndexMap<&str, u64> = IndexMap::new();
    for o in objects {
        for m in o.iter() {
            *presence.entry(m.key.as_ref()).or_insert(0) += 1;
        }
    }
    let n = objects.len() as u64;
    if presence.values().any(|&c| c * 100 < key_presence_pct * n) {
        return false;
    }
    let mut lookups: Vec<Lookup<'_, '_>> = objects.iter().map(|o| Lookup::new(o)).collect();
    presence.keys().enumerate().all(|(j, key)| {
        let cells: Vec<&Node<'_>> = lookups.iter_mut().filter_map(|l| l.get(key, j)).collect();
        column(doc, &cells, 0)
    })
}

/// The first object's members when every object lists the same keys in
/// the same order.
fn one_key_order<'m, 'a>(objects: &[&'m [Member<'a>]]) -> Option<&'m [Member<'a>]> {
    let first = *objects.first()?;
    objects
        .iter()
        .all(|o| same_keys_in_order(o, first))
        .then_some(first)
}

fn same_keys_in_order(a: &[Member<'_>], b: &[Member<'_>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| key_eq(&x.key, &y.key))
}

/// `a` has exactly `b`'s keys, in any order.
fn same_key_set(a: &[Member<'_>], b: &[Member<'_>]) -> bool {
    a.len() == b.len()
        && (same_keys_in_order(a, b) || {
            let mut a = Lookup::new(a);
            b.iter()
                .enumerate()
                .all(|(j, m)| a.get(&m.key, j).is_some())
        })
}

/// A column is all primitives, or all non-empty objects with one key set
/// whose own columns qualify (a §9.4 field group).
fn column(doc: &Doc<'_>, cells: &[&Node<'_>], depth: usize) -> bool {
    if cells.iter().all(|v| v.is_primitive()) {
        return true;
    }
    if depth >= MAX_GROUP_DEPTH {
        return false;
    }
    let mut groups: Vec<&[Member<'_>]> = Vec::with_capacity(cells.len());
    for v in cells {
        match doc.object(v) {
            Some(o) if !o.is_empty() => groups.push(o),
            _ => return false,
        }
    }
    let Some(first) = groups.first().copied() else {
        return true;
    };
    if !groups.iter().all(|g| same_key_set(g, first)) {
        return false;
    }
    let mut lookups: Vec<Lookup<'_, '_>> = groups.iter().map(|g| Lookup::new(g)).collect();
    first.iter().enumerate().all(|(j, m)| {
        let sub: Vec<&Node<'_>> = lookups
            .iter_mut()
            .filter_map(|g| g.get(&m.key, j))
            .collect();
        column(doc, &sub, depth + 1)
    })
}

/// [`super::super::exact`]: every number survives, then every group of
/// sibling objects with one key set lists it in one order.
pub(super) fn exact(doc: &Doc<'_>) -> Result<(), Reason> {
    let lossy = |v: &Node<'_>| matches!(v, Node::Num(raw) if number::canonical(raw).is_none());
    let root = doc.root.as_ref();
    if root.is_some_and(lossy)
        || doc.nodes.iter().any(lossy)
        || doc.members.iter().any(|m| lossy(&m.value))
    {
        return Err(Reason::LossyNumber);
    }
    // Every container appears once among all values; its children are
    // siblings.
    let uniform = |v: &Node<'_>| match v {
        Node::Arr { .. } => siblings_uniform(doc, doc.items(v).iter()),
        Node::Obj { .. } => {
            siblings_uniform(doc, doc.object(v).unwrap_or(&[]).iter().map(|m| &m.value))
        }
        _ => true,
    };
    if !root.is_none_or(uniform)
        || !doc.nodes.iter().all(uniform)
        || !doc.members.iter().all(|m| uniform(&m.value))
    {
        return Err(Reason::KeyOrder);
    }
    Ok(())
}

/// False when the children are at least two objects, all with one key set
/// but not all in one order.
fn siblings_uniform<'d, 'a: 'd>(
    doc: &'d Doc<'a>,
    children: impl Iterator<Item = &'d Node<'a>>,
) -> bool {
    let mut objects: Vec<&[Member<'_>]> = Vec::new();
    for c in children {
        match doc.object(c) {
            Some(o) => objects.push(o),
            None => return true,
        }
    }
    if objects.len() < 2 || one_key_order(&objects).is_some() {
        return true;
    }
    let Some(first) = objects.first().copied() else {
        return true;
    };
    !objects.iter().all(|o| same_key_set(o, first))
}
