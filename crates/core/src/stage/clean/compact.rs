//! `compact_json`: a JSON text re-emitted without the whitespace between its
//! tokens (the rewrite pass with nothing replaced), whenever that is
//! smaller. Lossless by construction (see
//! [`super::rewrite`]: every token keeps its bytes — key order, duplicate
//! keys, number spellings, string escapes — but one kind of escape, below),
//! and checked: the compact text must parse to the same value.
//!
//! A `\uXXXX` escape of a character JSON does not require escaped is written
//! as the character itself ([`write_characters`]): `"M\u00fcller"` becomes
//! `"Müller"`, six bytes and several tokens for one letter (servers that
//! write JSON with Python's `json.dumps` default, `ensure_ascii`, or Go's
//! HTML-safe `\u003c`, send every non-ASCII letter so). RFC 8259 §7: any
//! character may stand for itself in a string but `"`, `\` and the
//! controls U+0000–U+001F, which must be escaped; those escapes stay. So do
//! escapes of the characters that are not printable (Python's
//! `str.isprintable`, [`crate::json::printable`]: other controls, format
//! characters such as U+200B or the bidirectional overrides, U+2028 and
//! U+2029, private use, unassigned): written raw they are invisible, and
//! U+2028/U+2029 raw in a string are no JavaScript before ES2019, where
//! JSON texts are often pasted; escaped, an agent sees them. A lone
//! surrogate (`\ud800` with no pair) stays as it is; serde_json refuses
//! such a text before compaction sees it anyway.

use serde_json::Value;

use crate::json;
use crate::json::printable::is_printable;

/// Whether `compacted`, the compact form of `original`, replaces it: it is
/// smaller and parses to the same value. Lossless, so any saving counts.
pub(crate) fn accept(original: &str, compacted: &str) -> bool {
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
pub(crate) fn has_layout(text: &str) -> bool {
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

/// The character a `\uXXXX` escape at the start of `b` (its backslash)
/// stands for, a UTF-16 pair read as one, with the escape's length; `None`
/// for no `\u` escape, or a lone surrogate.
fn unicode_escape(b: &[u8]) -> Option<(char, usize)> {
    let unit = hex4(b.get(..6)?.strip_prefix(b"\\u")?)?;
    if (0xd800..0xdc00).contains(&unit) {
        let low = hex4(b.get(6..12)?.strip_prefix(b"\\u")?)?;
        if !(0xdc00..0xe000).contains(&low) {
            return None;
        }
        let cp = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
        return char::from_u32(cp).map(|c| (c, 12));
    }
    char::from_u32(unit).map(|c| (c, 6))
}

fn hex4(b: &[u8]) -> Option<u32> {
    let mut v = 0u32;
    for &d in b {
        v = v * 16 + char::from(d).to_digit(16)?;
    }
    Some(v)
}

/// Whether an escaped character is written as itself: printable, and none
/// of those JSON requires escaped.
fn written_raw(c: char) -> bool {
    c != '"' && c != '\\' && is_printable(c)
}

/// Where the next backslash at or after `from` is: eight bytes at a time
/// (most texts have none, and wasm32 has no SIMD for `memchr` to use).
fn next_backslash(b: &[u8], mut from: usize) -> Option<usize> {
    while let Some(word) = b.get(from..from + 8) {
        let w = <[u8; 8]>::try_from(word).map_or(0, u64::from_le_bytes);
        let found = json::lex::equal_bytes(w, b'\\');
        if found != 0 {
            return Some(from + (found.trailing_zeros() / 8) as usize);
        }
        from += 8;
    }
    b.get(from..)?
        .iter()
        .position(|&c| c == b'\\')
        .map(|k| from + k)
}

/// Each escape of the JSON text `b` in order, with its place and length:
/// the character of a `\uXXXX` escape (a UTF-16 pair read as one; `None`
/// for a lone surrogate) or `None` for another. In a valid text a
/// backslash is always an escape's start (outside strings there is none),
/// and each escape is skipped whole; on other text the answer does not
/// matter, as compaction leaves it alone.
fn escapes(b: &[u8]) -> impl Iterator<Item = (usize, usize, Option<char>)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        let at = next_backslash(b, i)?;
        let found = b.get(at..).and_then(unicode_escape);
        let len = match found {
            Some((_, len)) => len,
            None if b.get(at + 1) == Some(&b'u') => 6,
            None => 2,
        };
        i = at + len;
        Some((at, len, found.map(|(c, _)| c)))
    })
}

/// Whether the JSON text `text` has a `\uXXXX` escape that
/// [`write_characters`] writes as its character.
pub(crate) fn has_character_escape(text: &str) -> bool {
    escapes(text.as_bytes()).any(|(_, _, c)| c.is_some_and(written_raw))
}

/// `json` (one valid JSON text, compact or not) with each `\uXXXX` escape
/// of a printable character other than `"` and `\` written as the
/// character (see the module docs); every other byte as it was.
pub(crate) fn write_characters(json: String) -> String {
    if !has_character_escape(&json) {
        return json;
    }
    let mut out = String::with_capacity(json.len());
    let mut copied = 0;
    for (at, len, c) in escapes(json.as_bytes()) {
        if let Some(c) = c.filter(|&c| written_raw(c)) {
            out.push_str(json.get(copied..at).unwrap_or(""));
            out.push(c);
            copied = at + len;
        }
    }
    out.push_str(json.get(copied..).unwrap_or(""));
    out
}

/// Whether compaction is all [`super::clean`] would do to `text` under
/// `s`, provided it is one JSON value: compaction on (and, at or past
/// `min_bytes`, every other transform off), no marker, the text opening as
/// the clean stage requires of JSON, and whitespace between its tokens
/// (`layout`, when the scan found it already). The TOON stage may then read
/// the text as it is and measure itself against the compact form
/// (`stage::toon::encode_compacted`): compaction and encoding share one
/// pass over the text, and when TOON replaces the block the compact text
/// (a parse to check it is JSON, the rewrite pass and a parse of each form
/// to compare them) is never made. When TOON leaves the block, the
/// pipeline compacts it then.
pub fn deferrable(text: &str, s: &super::CleanSettings, layout: Option<bool>) -> bool {
    let only_compaction = s.compact_json
        && (text.len() < s.min_bytes
            || !(s.html_to_markdown || s.strip_base64 || s.collapse_whitespace || s.remove_nulls));
    let opens_as_json = matches!(
        text.trim_start_matches([' ', '\t', '\n', '\r'])
            .bytes()
            .next(),
        Some(b'{' | b'[' | b'"')
    );
    only_compaction
        && opens_as_json
        && !crate::marker::is_encoded(text)
        && layout.unwrap_or_else(|| has_layout(text))
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

    /// `write_characters` on a compact text: what it writes as characters
    /// and what it keeps.
    fn characters(text: &str) -> String {
        super::write_characters(text.to_string())
    }

    #[test]
    fn printable_escapes_become_characters() {
        let cases = [
            (r#"["M\u00fcller"]"#, "[\"Müller\"]"),
            (
                r#"{"\u4e2d\u6587":"\u0141\u00f3d\u017a"}"#,
                "{\"中文\":\"Łódź\"}",
            ),
            (r#"["\ud83d\ude00 \uD83D\uDE00"]"#, "[\"😀 😀\"]"),
            (r#"["\u003cb\u003e \u0026 \u002f"]"#, "[\"<b> & /\"]"),
            // What JSON requires escaped, and what is not printable, stays.
            (
                r#"["\u0022\u005c\u0000\u001f\u007f"]"#,
                r#"["\u0022\u005c\u0000\u001f\u007f"]"#,
            ),
            (
                r#"["\u00a0\u00ad\u200b\u2028\u2029\u202e\ufeff\ue000"]"#,
                r#"["\u00a0\u00ad\u200b\u2028\u2029\u202e\ufeff\ue000"]"#,
            ),
            // A lone surrogate, and a pair's halves apart, stay.
            (
                r#"["\ud800","\ude00\ud83d","\ud83d x"]"#,
                r#"["\ud800","\ude00\ud83d","\ud83d x"]"#,
            ),
            // An escaped backslash before `u` is no escape.
            (r#"["\\u00e9","\\\u00e9"]"#, r#"["\\u00e9","\\é"]"#),
            (r#"["\n\t\"\\\/"]"#, r#"["\n\t\"\\\/"]"#),
        ];
        for (text, want) in cases {
            assert_eq!(characters(text), want, "{text}");
            let changed = text != want;
            assert_eq!(super::has_character_escape(text), changed, "{text}");
            // The same value, always.
            let a: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
            let b: serde_json::Value = serde_json::from_str(want).unwrap_or_default();
            assert_eq!(a, b, "{text}");
        }
    }

    /// The clean stage takes a compact text for its escapes alone.
    #[test]
    fn an_escaped_compact_text_is_compacted() {
        use crate::stage::clean::{clean, CleanSettings};
        let s = CleanSettings::default();
        let out = clean(r#"[{"name":"M\u00fcller"}]"#, &s);
        assert_eq!(out.text.as_deref(), Some("[{\"name\":\"Müller\"}]"));
        assert_eq!(out.applied.len(), 1);
        assert_eq!(out.applied[0].transform.name(), "compact_json");
        assert_eq!(clean(r#"[{"name":"\u200b"}]"#, &s).text, None);
        let off = CleanSettings {
            compact_json: false,
            ..CleanSettings::default()
        };
        assert_eq!(clean(r#"[{"name":"M\u00fcller"}]"#, &off).text, None);
    }
}
