//! `compact_json`: a pretty-printed JSON text re-emitted without the
//! whitespace between its tokens (the rewrite pass with nothing replaced),
//! when that saves the configured share. Lossless by construction (see
//! [`super::rewrite`]: every token keeps its bytes — key order, duplicate
//! keys, number spellings, string escapes), and checked: the compact text
//! must parse to the same value.

use serde_json::Value;

use crate::json;
use crate::stage::toon::smaller_enough;

/// Whether `compacted`, the compact form of `original`, replaces it: it
/// saves at least `pct` % and parses to the same value.
pub fn accept(original: &str, compacted: &str, pct: u64) -> bool {
    if !smaller_enough(original.len(), compacted.len(), pct) {
        return false;
    }
    match (
        serde_json::from_str::<Value>(original),
        serde_json::from_str::<Value>(compacted),
    ) {
        (Ok(a), Ok(b)) => json::same_value(&a, &b),
        _ => false,
    }
}

#[cfg(test)]
// A failed unwrap here is a failed test.
#[allow(clippy::unwrap_used)]
mod tests {
    use super::accept;
    use crate::stage::clean::rewrite::rewrite;

    /// The compact form of `text` when `accept` takes it.
    fn compact(text: &str, pct: u64) -> Option<String> {
        serde_json::from_str::<serde::de::IgnoredAny>(text).ok()?;
        let out = rewrite(text, false, &mut |_| None)?.text;
        accept(text, &out, pct).then_some(out)
    }

    #[test]
    fn keeps_every_token_byte_for_byte() {
        let text = "{\n  \"z\": 12345678901234567890123,\n  \"a\": [1.50, 1e400, -0, 1E+2],\n  \"s\": \"a  b\\n \\u00e9 \\\" }\",\n  \"é\": \"😀\"\n}";
        assert_eq!(
            compact(text, 1).as_deref(),
            Some("{\"z\":12345678901234567890123,\"a\":[1.50,1e400,-0,1E+2],\"s\":\"a  b\\n \\u00e9 \\\" }\",\"é\":\"😀\"}")
        );
    }

    #[test]
    fn keeps_duplicate_keys() {
        let text = "{\n  \"a\": 1,\n  \"a\": 2\n}";
        assert_eq!(compact(text, 1).as_deref(), Some("{\"a\":1,\"a\":2}"));
    }

    #[test]
    fn needs_the_configured_saving() {
        // 16 → 13 bytes: an 18.75 % saving.
        let text = "{\"a\": 1, \"b\": 2}";
        assert_eq!(compact(text, 19), None);
        assert_eq!(compact(text, 18).as_deref(), Some("{\"a\":1,\"b\":2}"));
    }

    #[test]
    fn refuses_what_is_not_one_json_value() {
        assert_eq!(compact("{\"a\": 1} {\"b\": 2}", 1), None);
        assert_eq!(compact("not json   at all", 1), None);
        assert_eq!(compact("[1, 2", 1), None);
    }

    #[test]
    fn already_compact_is_left_alone() {
        assert_eq!(compact("{\"a\":[1,2]}", 1), None);
    }
}
