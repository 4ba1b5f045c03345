//! `compact_json`: a JSON text re-emitted without the whitespace between its
//! tokens (the rewrite pass with nothing replaced), whenever that is
//! smaller. Lossless by construction (see
//! [`super::rewrite`]: every token keeps its bytes — key order, duplicate
//! keys, number spellings, string escapes), and checked: the compact text
//! must parse to the same value.

use serde_json::Value;

use crate::json;

/// Whether `compacted`, the compact form of `original`, replaces it: it is
/// smaller and parses to the same value. Lossless, so any saving counts.
pub fn accept(original: &str, compacted: &str) -> bool {
    if compacted.len() >= original.len() {
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

/// Whether the JSON text `text` has whitespace between its tokens (RFC
/// 8259 §2), which is all compaction takes out. Exact for one valid JSON
/// value (a string holds no raw tab or line break, §7, and its spaces are
/// data); on other text the answer does not matter, as compaction leaves
/// it alone. One pass, strings skipped to their next quote or backslash.
pub fn has_layout(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        i += 1;
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => return true,
            b'"' => loop {
                let Some(k) = b
                    .get(i..)
                    .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
                else {
                    return false;
                };
                i += k + 1;
                if b.get(i - 1) == Some(&b'"') {
                    break;
                }
                // The byte after a backslash is escaped.
                i += 1;
            },
            _ => {}
        }
    }
    false
}

/// Texts whose layout is easy to get wrong (spaces, escapes and quotes
/// inside strings), for the tests of each reader that answers it.
#[cfg(test)]
pub(crate) const LAYOUT_CASES: &[&str] = &[
    r#"{"a":[1,2]}"#,
    r#"{"a b":"c d","e":"\\","f":"\" ","g":"\\\" \\"}"#,
    r#""  ""#,
    r#"["\u0020 ",true,null,-1.5e3]"#,
    "{\"a\":1 }",
    "[1,\n2]",
    " [1]",
    "[1]\t",
    r#"{"a":"\\" ,"b":1}"#,
    r#"{"a":"x\"y" }"#,
];

#[cfg(test)]
// A failed unwrap here is a failed test.
#[allow(clippy::unwrap_used)]
mod tests {
    use super::accept;
    use crate::stage::clean::rewrite::rewrite;

    /// The compact form of `text` when `accept` takes it.
    fn compact(text: &str) -> Option<String> {
        serde_json::from_str::<serde::de::IgnoredAny>(text).ok()?;
        let out = rewrite(text, false, &mut |_| None)?.text;
        accept(text, &out).then_some(out)
    }

    #[test]
    fn keeps_every_token_byte_for_byte() {
        let text = "{\n  \"z\": 12345678901234567890123,\n  \"a\": [1.50, 1e400, -0, 1E+2],\n  \"s\": \"a  b\\n \\u00e9 \\\" }\",\n  \"é\": \"😀\"\n}";
        assert_eq!(
            compact(text).as_deref(),
            Some("{\"z\":12345678901234567890123,\"a\":[1.50,1e400,-0,1E+2],\"s\":\"a  b\\n \\u00e9 \\\" }\",\"é\":\"😀\"}")
        );
    }

    #[test]
    fn keeps_duplicate_keys() {
        let text = "{\n  \"a\": 1,\n  \"a\": 2\n}";
        assert_eq!(compact(text).as_deref(), Some("{\"a\":1,\"a\":2}"));
    }

    #[test]
    fn any_saving_is_taken() {
        // `", "` and `": "` separators: 16 → 13 bytes, one space of it
        // would do.
        let text = "{\"a\": 1, \"b\": 2}";
        assert_eq!(compact(text).as_deref(), Some("{\"a\":1,\"b\":2}"));
        assert_eq!(compact("[1 ]").as_deref(), Some("[1]"));
    }

    #[test]
    fn refuses_what_is_not_one_json_value() {
        assert_eq!(compact("{\"a\": 1} {\"b\": 2}"), None);
        assert_eq!(compact("not json   at all"), None);
        assert_eq!(compact("[1, 2"), None);
    }

    /// `has_layout` answers what a compaction pass finds, on texts with
    /// spaces, escapes and quotes inside strings.
    #[test]
    fn layout_is_whitespace_outside_strings() {
        for &text in super::LAYOUT_CASES {
            let compact = rewrite(text, false, &mut |_| None).unwrap().text;
            assert_eq!(
                super::has_layout(text),
                compact.len() < text.len(),
                "{text}"
            );
        }
    }

    #[test]
    fn already_compact_is_left_alone() {
        assert_eq!(compact("{\"a\":[1,2]}"), None);
    }
}
