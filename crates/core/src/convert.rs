//! Plain JSON ⇄ TOON conversion of one whole text, outside any MCP message:
//! what the CLI's `encode` / `decode` and the component's `toon-encode` /
//! `toon-decode` offer. The same checks as the TOON stage, minus the size
//! and shape thresholds: the conversion is refused rather than lossy.

use std::fmt;

use serde_json::Value;
use toon_format::DecodeOptions;

use crate::json::{self, StrictError};
use crate::marker;
use crate::marker::Header;
use crate::outcome::Reason;
use crate::stage::toon;

/// Why a text was not converted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConvertError {
    /// The input is not exactly one JSON value; serde_json's message.
    NotJson(String),
    /// Some object has the same key twice: one TOON key cannot keep both.
    DuplicateKeys,
    /// TOON cannot carry the value exactly (see [`toon::exact`]).
    Inexact(Reason),
    /// The TOON encoder refused the value, or its output did not decode back
    /// to the same value.
    Encode,
    /// The input is not valid TOON (strict mode, spec §14); the decoder's
    /// message with line and column.
    NotToon(String),
}

impl fmt::Display for ConvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotJson(m) => write!(f, "input is not one JSON value: {m}"),
            Self::DuplicateKeys => {
                f.write_str("input has an object with the same key twice; TOON would keep only one")
            }
            Self::Inexact(Reason::LossyNumber) => f.write_str(
                "input has a number TOON cannot carry exactly (beyond 2^64, -0, or more digits than a double holds)",
            ),
            Self::Inexact(Reason::KeyOrder) => f.write_str(
                "input has rows listing the same keys in different orders; one TOON header cannot keep them",
            ),
            Self::Inexact(r) => write!(f, "input cannot be carried exactly in TOON: {}", r.as_str()),
            Self::Encode => {
                f.write_str("the TOON encoder could not encode the input without changing it")
            }
            Self::NotToon(m) => write!(f, "input is not valid TOON: {m}"),
        }
    }
}

impl std::error::Error for ConvertError {}

/// Encodes a JSON text as bare TOON (no header), verified to decode back to
/// exactly the input value.
pub fn json_to_toon(text: &str) -> Result<String, ConvertError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| ConvertError::NotJson(e.to_string()))?;
    if let Err(StrictError::DuplicateKey) = json::parse_strict(text) {
        return Err(ConvertError::DuplicateKeys);
    }
    toon::exact(&value).map_err(ConvertError::Inexact)?;
    let out = toon::to_toon(&value).ok_or(ConvertError::Encode)?;
    match toon::from_toon(&out) {
        Some(back) if json::same_value(&back, &value) => Ok(out),
        _ => Err(ConvertError::Encode),
    }
}

/// Decodes a TOON text to compact JSON. The text may carry the plugin's
/// header (marker line, or marker line and fence) or be bare TOON; line
/// breaks at its end are ignored.
pub fn toon_to_json(text: &str) -> Result<String, ConvertError> {
    let value = decode_value(text)?;
    serde_json::to_string(&value).map_err(|e| ConvertError::NotToon(e.to_string()))
}

/// Decodes a TOON text (with or without header) to a JSON value.
pub fn decode_value(text: &str) -> Result<Value, ConvertError> {
    let text = text.trim_end_matches(['\n', '\r']);
    let body = marker::unwrap(text, Header::Fence)
        .or_else(|| marker::unwrap(text, Header::Marker))
        .unwrap_or(text);
    toon_format::decode::<Value>(body, &DecodeOptions::default())
        .map_err(|e| ConvertError::NotToon(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_value_and_order() {
        let input =
            r#"{"z":1,"a":[{"id":1,"name":"é"},{"id":2,"name":"x,y"}],"big":18446744073709551615}"#;
        let toon = json_to_toon(input).unwrap();
        assert_eq!(toon_to_json(&toon).unwrap(), input);
    }

    #[test]
    fn decode_accepts_every_header_form() {
        let toon = json_to_toon(r#"[{"a":1},{"a":2}]"#).unwrap();
        for header in [Header::None, Header::Marker, Header::Fence] {
            let wrapped = marker::wrap(&toon, header, "[mcp-toon/v1] x");
            assert_eq!(
                toon_to_json(&format!("{wrapped}\n")).unwrap(),
                r#"[{"a":1},{"a":2}]"#,
                "{header:?}"
            );
        }
    }

    #[test]
    fn refusals_say_why() {
        let cases = [
            ("{", "not one JSON value"),
            (r#"{"a":1,"a":2}"#, "same key twice"),
            ("[1e400]", "cannot carry exactly"),
            (r#"[{"a":1,"b":2},{"b":3,"a":4}]"#, "different orders"),
        ];
        for (input, needle) in cases {
            let e = json_to_toon(input).unwrap_err().to_string();
            assert!(e.contains(needle), "{input}: {e}");
        }
        let e = toon_to_json("items[3]: a,b").unwrap_err().to_string();
        assert!(e.starts_with("input is not valid TOON"), "{e}");
    }
}
