//! When TOON carries a JSON number exactly: the rule the generic and the
//! fast encoder share.
//!
//! The generic path turns a literal into toon-format's `Number` the way
//! `JsonValue::from(serde_json::Value)` does (`as_i64`, then `as_u64`, then
//! a finite `as_f64`, which under `arbitrary_precision` are `str::parse` of
//! the literal) and writes it with `format_canonical_number` (TOON v4 §2:
//! no exponent, no trailing zeros, `-0` as `0`). The number survives when
//! that canonical form has exactly the literal's decimal value.

use toon_format::types::Number as ToonNumber;
use toon_format::utils::format_canonical_number;

use crate::json::Decimal;

/// The canonical TOON form of a JSON number literal when it has exactly
/// the literal's decimal value; `None` when TOON cannot carry the number.
pub(crate) fn exact_form(raw: &str) -> Option<String> {
    let exact = Decimal::parse(raw)?;
    let number = if let Ok(i) = raw.parse::<i64>() {
        ToonNumber::from(i)
    } else if let Ok(u) = raw.parse::<u64>() {
        ToonNumber::from(u)
    } else {
        let f = raw.parse::<f64>().ok().filter(|f| f.is_finite())?;
        // A double can have two equally short spellings (7000002000000783e-1
        // is both …078.2 and …078.3): Rust's `Display` and ryu, which
        // serde_json writes with, break that tie differently. A reader that
        // takes the TOON number as a double and writes it back must get the
        // literal's value, so both spellings have to be exact; the generic
        // path's verify (decode, then serde_json) refuses the same numbers.
        let written = serde_json::Number::from_f64(f)?.to_string();
        if Decimal::parse(&written).as_ref() != Some(&exact) {
            return None;
        }
        ToonNumber::from_f64(f)?
    };
    let canonical = format_canonical_number(&number);
    match Decimal::parse(&canonical) {
        Some(b) if b == exact => Some(canonical),
        _ => None,
    }
}
