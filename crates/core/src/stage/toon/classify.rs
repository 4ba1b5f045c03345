//! Is a JSON value a table TOON shrinks?
//!
//! TOON v4 §9.3 writes an array of objects whose values are primitives (or,
//! §9.4, nested objects of one shape: "field groups") as one header and a
//! line per row. That is the only shape where it reliably beats JSON, so
//! adaptive mode only tries a value that holds, anywhere, an array of at
//! least `min_rows` objects, each key of the union present in at least
//! `key_presence_pct` % of rows, every column all primitives or all objects
//! of one key set (recursively), never arrays. The array may be the value
//! itself, or sit below envelopes and beside other fields (a database
//! result's `{"data":{"rows":[...]}}`, a paged `{"total":120,"items":[...]}`,
//! several tables in one object): TOON writes objects as fields (§8) and a
//! table in a field as a tabular array (§9.3), so the rest of the value
//! costs about what it costs in JSON, and the rows are where TOON saves.
//!
//! The size comparison is the backstop: a value whose tables are a small
//! part of it, or a table the encoder cannot write in tabular form, comes
//! out not smaller enough and passes through.

use indexmap::IndexMap;
use serde_json::{Map, Value};

/// Nested field groups deeper than this are not worth a header.
const MAX_GROUP_DEPTH: usize = 8;

/// Why a value is not a table; kept for the debug log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotTable {
    NotArrayOrEnvelope,
    TooFewRows,
    RowNotObject,
    SparseKey,
    NonUniformColumn,
}

/// Accepts a value that holds a table anywhere; else why the value itself
/// is none (`NotArrayOrEnvelope` for any value but an array: an object
/// holds no table, a primitive is none).
pub(crate) fn classify(
    value: &Value,
    min_rows: usize,
    key_presence_pct: u64,
) -> Result<(), NotTable> {
    let own = match value {
        Value::Array(rows) => table(rows, min_rows, key_presence_pct),
        _ => Err(NotTable::NotArrayOrEnvelope),
    };
    if own.is_err() && holds_table(value, min_rows, key_presence_pct, 0) {
        return Ok(());
    }
    own
}

/// Whether an array below `value` is a table. Each array's check reads
/// its rows and their objects down to the next array, never into it (a
/// column holding an array is no column), so the search is linear;
/// serde_json refuses nesting past 128 while parsing, so the depth bound
/// only guards against a value built another way.
fn holds_table(value: &Value, min_rows: usize, key_presence_pct: u64, depth: usize) -> bool {
    if depth > 256 {
        return false;
    }
    let found = |child: &Value| {
        matches!(child, Value::Array(rows) if table(rows, min_rows, key_presence_pct).is_ok())
            || holds_table(child, min_rows, key_presence_pct, depth + 1)
    };
    match value {
        Value::Array(items) => items.iter().any(found),
        Value::Object(members) => members.values().any(found),
        _ => false,
    }
}

fn table(rows: &[Value], min_rows: usize, key_presence_pct: u64) -> Result<(), NotTable> {
    if rows.len() < min_rows || rows.is_empty() {
        return Err(NotTable::TooFewRows);
    }
    let mut objects: Vec<&Map<String, Value>> = Vec::with_capacity(rows.len());
    for row in rows {
        match row {
            Value::Object(o) if !o.is_empty() => objects.push(o),
            _ => return Err(NotTable::RowNotObject),
        }
    }
    // Union of keys in first-seen order, with how many rows carry each.
    let mut presence: IndexMap<&str, u64> = IndexMap::new();
    for o in &objects {
        for k in o.keys() {
            *presence.entry(k.as_str()).or_insert(0) += 1;
        }
    }
    let n = objects.len() as u64;
    if presence.values().any(|&c| c * 100 < key_presence_pct * n) {
        return Err(NotTable::SparseKey);
    }
    for key in presence.keys() {
        let cells: Vec<&Value> = objects.iter().filter_map(|o| o.get(*key)).collect();
        column(&cells, 0)?;
    }
    Ok(())
}

/// A column is all primitives, or all non-empty objects with one key set
/// whose own columns qualify (a §9.4 field group).
fn column(cells: &[&Value], depth: usize) -> Result<(), NotTable> {
    if cells.iter().all(|v| !v.is_array() && !v.is_object()) {
        return Ok(());
    }
    if depth >= MAX_GROUP_DEPTH {
        return Err(NotTable::NonUniformColumn);
    }
    let mut groups: Vec<&Map<String, Value>> = Vec::with_capacity(cells.len());
    for v in cells {
        match v {
            Value::Object(o) if !o.is_empty() => groups.push(o),
            _ => return Err(NotTable::NonUniformColumn),
        }
    }
    let Some(first) = groups.first() else {
        return Ok(());
    };
    for g in &groups {
        if g.len() != first.len() || !first.keys().all(|k| g.contains_key(k)) {
            return Err(NotTable::NonUniformColumn);
        }
    }
    for key in first.keys() {
        let sub: Vec<&Value> = groups.iter().filter_map(|g| g.get(key)).collect();
        column(&sub, depth + 1)?;
    }
    Ok(())
}
