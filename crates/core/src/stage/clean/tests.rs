//! The clean stage as the pipeline calls it: the order of the transforms,
//! the JSON path, the records. Each transform's own cases sit beside it.

// A failed unwrap or panic here is a failed test, which is what it is for.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use super::*;

/// Deterministic bytes (xorshift64*), so blobs are reproducible.
pub(super) fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// RFC 4648 base64: §4 with padding, or §5 (URL-safe) without.
pub(super) fn encode_base64(bytes: &[u8], url_safe: bool) -> String {
    let alphabet: &[u8] = if url_safe {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    } else {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    };
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
        if !url_safe {
            for _ in chunk.len()..3 {
                out.push('=');
            }
        }
    }
    out
}

/// The lossy string transforms on (they are opt-in), nulls kept.
fn settings() -> CleanSettings {
    CleanSettings {
        min_bytes: 0,
        html_to_markdown: true,
        strip_base64: true,
        collapse_whitespace: true,
        ..CleanSettings::default()
    }
}

fn names(c: &Cleaned) -> Vec<&'static str> {
    c.applied.iter().map(|a| a.transform.name()).collect()
}

/// The records chain from the input's length to the output's.
fn assert_chain(input: &str, c: &Cleaned) {
    let out = c.text_or(input);
    let mut size = input.len();
    for a in &c.applied {
        assert_eq!(a.bytes_before, size, "{:?} starts where the last ended", a);
        assert!(a.bytes_after < a.bytes_before, "{a:?} shrinks the block");
        size = a.bytes_after;
    }
    assert_eq!(size, out.len(), "the last record ends at the output length");
}

#[test]
fn all_off_is_byte_identical() {
    let s = CleanSettings {
        html_to_markdown: false,
        strip_base64: false,
        remove_nulls: false,
        collapse_whitespace: false,
        compact_json: false,
        ..settings()
    };
    for text in [
        "<html><body><p>x    y</p></body></html>",
        "{\n  \"a\": null\n}",
    ] {
        assert_eq!(clean(text, &s), Cleaned::default());
    }
}

#[test]
fn short_and_encoded_blocks_are_skipped() {
    let s = CleanSettings {
        collapse_whitespace: true,
        compact_json: false,
        ..CleanSettings::default()
    };
    let short = "{\n  \"a\":   \"x   y\"\n}";
    let c = clean(short, &s);
    assert_eq!((c.text, c.skipped), (None, Some(Reason::BelowMinBytes)));
    // Compaction is lossless and applies below `min_bytes`; the lossy
    // transforms still do not.
    let c = clean(
        short,
        &CleanSettings {
            compact_json: true,
            ..s.clone()
        },
    );
    assert_eq!(c.text.as_deref(), Some("{\"a\":\"x   y\"}"));
    assert_eq!(names(&c), vec!["compact_json"]);
    let encoded = format!(
        "[mcp-toon/v1] x\n[2]{{a,b}}:\n  1,   2\n  3,   4{}",
        " ".repeat(600)
    );
    let c = clean(&encoded, &s);
    assert_eq!((c.text, c.skipped), (None, Some(Reason::AlreadyEncoded)));
}

#[test]
fn min_bytes_is_inclusive() {
    let text = "a    b";
    let s = CleanSettings {
        min_bytes: text.len(),
        collapse_whitespace: true,
        ..CleanSettings::default()
    };
    assert_eq!(clean(text, &s).text.as_deref(), Some("a b"));
    let s = CleanSettings {
        min_bytes: text.len() + 1,
        ..s
    };
    assert_eq!(clean(text, &s).text, None);
}

#[test]
#[cfg(feature = "html")]
fn html_page_becomes_markdown_then_loses_its_blobs() {
    let png = encode_base64(&random_bytes(900, 1), false);
    let text = format!(
        "<!DOCTYPE html><html><head><title>T</title><style>p {{ color: red }}</style>\
         <script>var secret = 1;</script></head><body>\
         <h1 id=\"top\">Report</h1><p>Total:   <b>42</b></p>\
         <img alt=\"chart\" src=\"data:image/png;base64,{png}\">\
         <pre><code>a    b</code></pre></body></html>"
    );
    let c = clean(&text, &settings());
    let out = c.text.clone().unwrap();
    // The data URI survives conversion as an image link, then goes; the
    // converter already normalised the whitespace.
    assert_eq!(names(&c), ["html_to_markdown", "strip_base64"]);
    assert!(out.contains("# Report"), "{out}");
    assert!(out.contains("**42**"), "{out}");
    assert!(out.contains("![chart](<stripped: 900 bytes>)"), "{out}");
    assert!(out.contains("a    b"), "code keeps its spaces: {out}");
    assert!(!out.contains("Total:   "), "{out}");
    assert!(!out.contains("secret") && !out.contains("color"), "{out}");
    assert!(!out.contains("id="), "no anchors: {out}");
    assert_chain(&text, &c);
}

#[test]
fn blobs_go_before_whitespace_is_collapsed() {
    // Both change the block, in this order: the blob (found by its lines of
    // equal width) goes first, then the blank lines around it shrink.
    let b = encode_base64(&random_bytes(601, 3), false);
    let wrapped: Vec<&str> = b
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let text = format!("attachment:    report.pdf\n\n\n\n{}\n", wrapped.join("\n"));
    let c = clean(&text, &settings());
    assert_eq!(
        c.text.as_deref(),
        Some("attachment: report.pdf\n\n<stripped: 601 bytes>\n")
    );
    assert_eq!(names(&c), ["strip_base64", "collapse_whitespace"]);
    assert_chain(&text, &c);
}

#[test]
fn prose_mentioning_tags_is_not_html() {
    let text = format!(
        "Wrap the title in <b>bold</b> and use a <br> between lines.   {}",
        "More prose here. ".repeat(40)
    );
    let c = clean(&text, &settings());
    assert_eq!(names(&c), ["collapse_whitespace"]);
    assert!(c.text.unwrap().contains("<b>bold</b> and use a <br>"));
}

#[test]
fn html_looking_strings_in_json_are_left_alone() {
    let text = serde_json::json!({
        "doc": "Use <b>bold</b> for emphasis",
        "type": "Vec<T> where T: Into<String>",
        "xml": "<note><to>Tove</to><from>Jani</from></note>",
        "snippet": "<div>Example</div>",
        "link": "<https://example.com/a>",
    })
    .to_string();
    assert_eq!(clean(&text, &settings()), Cleaned::default());
}

#[test]
#[cfg(feature = "html")]
fn html_string_values_in_json_are_converted() {
    let text = serde_json::json!({
        "id": 7,
        "body_html": "<p>Hello <strong>world</strong></p><ul><li>one</li><li>two</li></ul>",
        "title": "<b>not converted</b>",
    })
    .to_string();
    let c = clean(&text, &settings());
    assert_eq!(names(&c), ["html_to_markdown"]);
    assert_eq!(
        c.text.as_deref(),
        Some(
            r#"{"id":7,"body_html":"Hello **world**\n\n- one\n- two","title":"<b>not converted</b>"}"#
        )
    );
    assert_chain(&text, &c);
}

#[test]
fn json_strings_are_cleaned_and_keys_never_are() {
    let blob = encode_base64(&random_bytes(300, 2), false);
    let text = format!(
        "{{\n  \"a  b\": \"x    y\\n\\n\\n\\nz\",\n  \"image\": \"{blob}\",\n  \"nextPageToken\": \"{blob}\",\n  \"code\": \"```\\nk  =  1\\n```\",\n  \"n\": 1.50\n}}"
    );
    let c = clean(&text, &settings());
    assert_eq!(
        c.text.as_deref(),
        Some(
            format!(
                "{{\"a  b\":\"x y\\n\\nz\",\"image\":\"<stripped: 300 bytes>\",\"nextPageToken\":\"{blob}\",\"code\":\"```\\nk  =  1\\n```\",\"n\":1.50}}"
            )
            .as_str()
        )
    );
    assert_eq!(
        names(&c),
        ["strip_base64", "collapse_whitespace", "compact_json"]
    );
    assert_chain(&text, &c);
}

#[test]
fn a_handle_key_covers_its_own_arrays_only() {
    // Whether a key names a handle is remembered per member, so it is
    // asked once for an array of many strings, and never carried over to
    // the next member.
    let blob = encode_base64(&random_bytes(300, 3), false);
    let text = format!(
        "{{\"pageToken\": [\"{blob}\", [\"{blob}\"]], \"pages\": [\"{blob}\", [\"{blob}\"]]}}"
    );
    let c = clean(&text, &settings());
    let stripped = "<stripped: 300 bytes>";
    assert_eq!(
        c.text.as_deref(),
        Some(
            format!(
                "{{\"pageToken\":[\"{blob}\",[\"{blob}\"]],\"pages\":[\"{stripped}\",[\"{stripped}\"]]}}"
            )
            .as_str()
        )
    );
}

#[test]
fn nulls_go_only_when_asked() {
    let text = "{\n  \"id\": 1,\n  \"parent\": null,\n  \"tags\": [null, \"a\"],\n  \"meta\": {\"x\": null}\n}";
    let off = clean(text, &settings());
    assert_eq!(names(&off), ["compact_json"]);
    assert_eq!(
        off.text.as_deref(),
        Some(r#"{"id":1,"parent":null,"tags":[null,"a"],"meta":{"x":null}}"#)
    );
    let s = CleanSettings {
        remove_nulls: true,
        ..settings()
    };
    let on = clean(text, &s);
    assert_eq!(names(&on), ["remove_nulls", "compact_json"]);
    assert_eq!(
        on.text.as_deref(),
        Some(r#"{"id":1,"tags":[null,"a"],"meta":{}}"#)
    );
    assert_chain(text, &on);
    let lossless: Vec<bool> = on.applied.iter().map(|a| a.transform.lossless()).collect();
    assert_eq!(lossless, [false, true]);
}

#[test]
fn a_changed_json_block_is_compact_even_with_compact_json_off() {
    let text = "{\n  \"parent\": null,\n  \"id\": 1\n}";
    let s = CleanSettings {
        remove_nulls: true,
        compact_json: false,
        ..settings()
    };
    let c = clean(text, &s);
    assert_eq!(c.text.as_deref(), Some(r#"{"id":1}"#));
    assert_eq!(names(&c), ["remove_nulls", "compact_json"]);
    assert_chain(text, &c);
}

#[test]
fn compact_json_keeps_order_numbers_and_unicode() {
    let text = "{\n  \"zeta\": 12345678901234567890123,\n  \"alpha\": [1.50, 1e400, -0.0, 2E-7],\n  \"naïve\": \"日本語 😀 \\u00e9\\/\",\n  \"big\": -98765432109876543210.000\n}\n";
    let c = clean(text, &settings());
    assert_eq!(
        c.text.as_deref(),
        // Escapes JSON needs none for are written as the characters.
        Some("{\"zeta\":12345678901234567890123,\"alpha\":[1.50,1e400,-0.0,2E-7],\"naïve\":\"日本語 😀 é\\/\",\"big\":-98765432109876543210.000}")
    );
    assert_eq!(names(&c), ["compact_json"]);
    assert!(c.applied.iter().all(|a| a.transform.lossless()));
    let back: serde_json::Value = serde_json::from_str(c.text.as_deref().unwrap()).unwrap();
    let orig: serde_json::Value = serde_json::from_str(text).unwrap();
    assert!(crate::json::same_value(&back, &orig));
}

#[test]
fn re_serialised_json_keeps_number_spellings_and_key_order() {
    // A transform forces serde_json to write the value: numbers still come
    // out as the source spelled them, keys in source order.
    let text = "{\"z\": 12345678901234567890123, \"a\": 1.50, \"e\": 1e400, \"s\": \"x    y\", \"é\": \"ü\"}";
    let c = clean(text, &settings());
    assert_eq!(
        c.text.as_deref(),
        Some("{\"z\":12345678901234567890123,\"a\":1.50,\"e\":1e400,\"s\":\"x y\",\"é\":\"ü\"}")
    );
}

#[test]
fn compaction_needs_no_threshold() {
    // `", "` and `": "` separators: 26 → 21 bytes. Lossless, so taken
    // whatever TOON's `min_savings_pct` says.
    let text = "{\"a\": 1, \"b\": 2, \"c\": [3]}";
    assert_eq!(text.len(), 26);
    assert_eq!(
        clean(text, &settings()).text.as_deref(),
        Some("{\"a\":1,\"b\":2,\"c\":[3]}")
    );
}

#[test]
fn compact_json_alone_can_be_off() {
    let text = "{\n  \"a\": 1\n}";
    let s = CleanSettings {
        compact_json: false,
        ..settings()
    };
    assert_eq!(clean(text, &s), Cleaned::default());
}

#[test]
fn duplicate_keys_are_kept() {
    // The JSON path never builds a map, so a duplicate key cannot be lost.
    let text = "{\n  \"a\": \"x    y\",\n  \"a\": null,\n  \"a\": 2\n}";
    let s = CleanSettings {
        remove_nulls: true,
        ..settings()
    };
    let c = clean(text, &s);
    assert_eq!(c.text.as_deref(), Some("{\"a\":\"x y\",\"a\":2}"));
    assert_eq!(
        names(&c),
        ["collapse_whitespace", "remove_nulls", "compact_json"]
    );
    assert_chain(text, &c);
}

#[test]
fn text_that_only_looks_like_json_is_text() {
    let text = "[INFO]   started\n\n\n[WARN]   slow";
    let c = clean(text, &settings());
    assert_eq!(c.text.as_deref(), Some("[INFO] started\n\n[WARN] slow"));
}

#[test]
fn markdown_code_fences_keep_their_layout() {
    let text = "Result:   ok\n\n\n```json\n{\n    \"a\":    1\n}\n```\n";
    let c = clean(text, &settings());
    assert_eq!(
        c.text.as_deref(),
        Some("Result: ok\n\n```json\n{\n    \"a\":    1\n}\n```\n")
    );
}

#[test]
fn transforms_that_change_nothing_leave_no_record() {
    let text = "{\"a\":\"plain\",\"b\":[1,2,3]}";
    let s = CleanSettings {
        remove_nulls: true,
        ..settings()
    };
    assert_eq!(clean(text, &s), Cleaned::default());
    assert_eq!(clean("plain text\n", &s), Cleaned::default());
}

#[test]
fn transform_names_and_flags() {
    let named: Vec<(&str, bool)> = Transform::ALL
        .iter()
        .map(|t| (t.name(), t.lossless()))
        .collect();
    assert_eq!(
        named,
        [
            ("python_literal", true),
            ("html_to_markdown", false),
            ("strip_base64", false),
            ("collapse_whitespace", false),
            ("remove_nulls", false),
            ("compact_json", true),
            ("max_text_bytes", false),
        ]
    );
}

#[test]
fn defaults_match_the_issue() {
    let d = CleanSettings::default();
    assert_eq!(
        (
            d.html_to_markdown,
            d.strip_base64,
            d.remove_nulls,
            d.collapse_whitespace,
            d.compact_json
        ),
        // Only the lossless transform by default (issue 11): nothing an
        // agent may send back changes.
        (false, false, false, false, true)
    );
    assert_eq!(
        (d.min_bytes, d.base64_min_chars, d.max_text_bytes),
        (500, 256, 0)
    );
}
