//! Reading JSON objects in place, with one rule for a key written twice.
//!
//! RFC 8259 §4: the names within an object SHOULD be unique; when they are
//! not, "the behavior of software that receives such an object is
//! unpredictable" — some readers take the first value, some the last. The
//! plugin never picks one: an object with a key it reads written twice is
//! not understood, and whatever holds it goes on unchanged.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// The fields of `T` read from an object, borrowed where `T` borrows.
/// `None` when `raw` is not an object, or when a field `T` reads appears
/// twice (serde's derive refuses a duplicate field).
pub fn object<'a, T: Deserialize<'a>>(raw: &'a RawValue) -> Option<T> {
    if raw.get().starts_with('{') {
        serde_json::from_str(raw.get()).ok()
    } else {
        None
    }
}

/// Every member of an object, in order, values as written. `None` when
/// `raw` is not an object or names a key twice (compared after unescaping:
/// `"a"` and `"\u0061"` are the same name).
pub fn members(raw: &RawValue) -> Option<Vec<(String, &RawValue)>> {
    object::<Members>(raw).map(|m| m.0)
}

struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Each;
        impl<'de> Visitor<'de> for Each {
            type Value = Members<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut seen = HashSet::new();
                let mut out = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if !seen.insert(key.clone()) {
                        return Err(de::Error::custom("a key written twice"));
                    }
                    out.push((key, map.next_value::<&RawValue>()?));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(Each)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> &RawValue {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn members_keep_order_and_value_text() {
        let m = members(raw(r#"{"b": 1.50, "a":[1, 2]}"#)).unwrap();
        let got: Vec<(&str, &str)> = m.iter().map(|(k, v)| (k.as_str(), v.get())).collect();
        assert_eq!(got, vec![("b", "1.50"), ("a", "[1, 2]")]);
    }

    #[test]
    fn a_key_twice_is_not_understood() {
        assert!(members(raw(r#"{"a":1,"a":2}"#)).is_none());
        assert!(members(raw(r#"{"a":1,"\u0061":2}"#)).is_none());
        assert!(members(raw("[1]")).is_none());
        #[derive(serde::Deserialize)]
        struct Id {
            #[allow(dead_code)]
            id: u8,
        }
        assert!(object::<Id>(raw(r#"{"id":1,"id":2}"#)).is_none());
        // A key the reader ignores may repeat: it reads nothing from it.
        assert!(object::<Id>(raw(r#"{"id":1,"x":2,"x":3}"#)).is_some());
    }
}
