//! JSON helpers the stages share: exact number comparison, value identity
//! (key order included), a strict parse and in-place object reads that
//! refuse duplicate keys, where a streamed body's JSON value ends, and the
//! Python literals read as JSON ([`python`]) with the printable characters
//! both they and compact JSON write as themselves ([`printable`]).
//!
//! `serde_json` is built with `arbitrary_precision`, so a parsed
//! [`serde_json::Number`] keeps the exact spelling from the source; these
//! helpers compare numbers by exact decimal value, never through `f64`.

mod decimal;
mod end;
pub(crate) mod lex;
pub mod literal;
mod object;
pub mod printable;
pub mod python;
mod strict;

pub(crate) use decimal::Decimal;
pub use end::{EndScanner, Progress};
pub use object::{members, object};
pub(crate) use strict::NUMBER_TOKEN;
pub(crate) use strict::{parse_strict, StrictError};

use serde_json::Value;

/// True when `a` and `b` are the same JSON value: same types, numbers equal
/// as exact decimals (the sign of zero included), strings equal, arrays equal
/// element by element, objects with the same keys in the same order.
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => same_number(x, y),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_value(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ka == kb && same_value(va, vb))
        }
        _ => false,
    }
}

/// Exact decimal equality of two JSON numbers (`1.50` equals `1.5`, `1e2`
/// equals `100`, `-0` does not equal `0`).
pub(crate) fn same_number(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    match (
        Decimal::parse(&a.to_string()),
        Decimal::parse(&b.to_string()),
    ) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// Calls `f` on every number in `v`, depth first; stops at the first `false`.
pub(crate) fn all_numbers(v: &Value, f: &mut impl FnMut(&serde_json::Number) -> bool) -> bool {
    match v {
        Value::Number(n) => f(n),
        Value::Array(a) => a.iter().all(|x| all_numbers(x, f)),
        Value::Object(o) => o.values().all(|x| all_numbers(x, f)),
        _ => true,
    }
}

#[cfg(test)]
mod tests;
