//! Is a JSON value a table TOON shrinks?
//!
//! TOON v4 §9.3 writes an array of objects whose values are primitives (or,
//! §9.4, nested objects of one shape: "field groups") as one header and a
//! line per row. That is the only shape where it reliably beats JSON, so
//! adaptive mode only tries:
//! - an array of at least `min_rows` objects, each key of the union present
//!   in at least `key_presence_pct` % of rows, every column all primitives or
//!   all objects of one key set (recursively), never arrays;
//! - an object whose one array member is such a table and whose other
//!   members are primitives (a paged envelope: `{"total":120,"items":[...]}`).
//!
//! The size comparison is the backstop: a table the encoder cannot write in
//! tabular form comes out larger and passes through.

use indexmap::IndexMap;
use serde_json::{Map, Value};

/// Nested field groups deeper than this are not worth a header.
const MAX_GROUP_DEPTH: usize = 8;

/// Why a value is not a table; kept for the debug log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotTable {
    NotArrayOrEnvelope,
    TooFewRows,
    RowNotObject,
    SparseKey,
    NonUniformColumn,
}

/// Accepts a table or a paged envelope around one.
pub fn classify(value: &Value, min_rows: usize, key_presence_pct: u64) -> Result<(), NotTable> {
    match value {
        Value::Array(rows) => table(rows, min_rows, key_presence_pct),
        Value::Object(members) => {
            let mut arrays = members.values().filter(|v| v.is_array());
            let (Some(Value::Array(rows)), None) = (arrays.next(), arrays.next()) else {
                return Err(NotTable::NotArrayOrEnvelope);
            };
            if members.values().any(|v| v.is_object()) {
                return Err(NotTable::NotArrayOrEnvelope);
            }
            table(rows, min_rows, key_presence_pct)
        }
        _ => Err(NotTable::NotArrayOrEnvelope),
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
