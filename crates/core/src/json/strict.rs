//! A parse that refuses what a lossless rewrite cannot keep: duplicate
//! object keys. RFC 8259 §4 leaves their meaning to the receiver, and a
//! `serde_json::Value` keeps only one of them, so a text that has them is
//! never rewritten.

use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// Why a text is not one strict JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StrictError {
    /// Not one JSON value (syntax, trailing text, nesting past serde_json's
    /// recursion limit of 128).
    Syntax,
    /// Some object has the same key twice.
    DuplicateKey,
}

/// Parses exactly one JSON value, refusing duplicate keys at any depth.
pub(crate) fn parse_strict(text: &str) -> Result<Value, StrictError> {
    let value: Value = serde_json::from_str(text).map_err(|_| StrictError::Syntax)?;
    if has_duplicate_keys(text) {
        return Err(StrictError::DuplicateKey);
    }
    Ok(value)
}

/// Second pass over a text already known to parse: cheap (no values are
/// built) and only run on blocks that are about to change.
fn has_duplicate_keys(text: &str) -> bool {
    let mut de = serde_json::Deserializer::from_str(text);
    DupCheck.deserialize(&mut de).is_err()
}

/// serde_json's `arbitrary_precision` feature hands numbers to visitors as a
/// one-entry map under this key.
pub(crate) const NUMBER_TOKEN: &str = "$serde_json::private::Number";

#[derive(Clone, Copy)]
struct DupCheck;

impl<'de> DeserializeSeed<'de> for DupCheck {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DupCheck {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value without duplicate keys")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(DupCheck)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen: HashSet<String> = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == NUMBER_TOKEN {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            if !seen.insert(key) {
                return Err(serde::de::Error::custom("duplicate key"));
            }
            map.next_value_seed(DupCheck)?;
        }
        Ok(())
    }
}
