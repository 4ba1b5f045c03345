//! The default configuration changes no JSON value and no byte of non-JSON
//! text (README "What it promises": by default, nothing an agent may send
//! back changes; only structure, never content).
//!
//! Generated texts of the kinds coding agents read and send back — code
//! (indentation, aligned columns, tabs, trailing spaces, blank-line runs),
//! unified diffs, HTML pages, JSON configuration with nulls (pretty, or with
//! `", "` / `": "` separators), JSON tables, PEM blocks and base64 — go, as
//! the text item of a `tools/call` result, through the whole pipeline
//! (clean, trim, encode; `pipeline::process_response`) with the default
//! [`Settings`]. Each text comes out byte-identical; or, when it is JSON, as
//! the same tokens without the whitespace between them (compact JSON: same
//! value, key order, number spellings, string bytes); or as the marker and
//! TOON that decodes to the identical value. Nothing else in the message
//! moves.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use mcp_toon::config::{Header, ServerScope};
use mcp_toon::mcp::RequestInfo;
use mcp_toon::pipeline::process_response;
use mcp_toon::{json, marker, stage, Report, Settings};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use serde_json::Value;

const REQUEST: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{}}}"#;
const PREFIX: &str = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"#;
const SUFFIX: &str =
    r#"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}],"isError":false}}"#;

/// The text as the agent receives it through the plugin at its defaults.
fn through_defaults(text: &str) -> String {
    let settings = Settings::from_json("{}").unwrap();
    let request = RequestInfo::parse(REQUEST.as_bytes()).unwrap();
    let body = format!("{PREFIX}{}{SUFFIX}", serde_json::to_string(text).unwrap());
    let mut report = Report::default();
    let Some(out) = process_response(
        &settings,
        ServerScope::default(),
        &request,
        body.as_bytes(),
        &mut report,
    ) else {
        return text.to_string();
    };
    let out = String::from_utf8(out).unwrap();
    // Only the text's JSON string changed: every other byte is the server's.
    assert!(out.starts_with(PREFIX) && out.ends_with(SUFFIX), "{out}");
    let literal = &out[PREFIX.len()..out.len() - SUFFIX.len()];
    serde_json::from_str::<String>(literal).unwrap()
}

/// `text` without the whitespace between JSON tokens (string contents kept).
fn without_layout(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            out.push(c);
        }
    }
    out
}

/// Fails unless `after` is what the defaults may send for `before`.
fn assert_content_kept(before: &str, after: &str) {
    if after == before {
        return;
    }
    let Ok(value) = serde_json::from_str::<Value>(before) else {
        panic!("non-JSON text changed:\n--- before\n{before}\n--- after\n{after}");
    };
    if let Some(toon) = marker::unwrap(after, Header::Marker).filter(|_| marker::is_encoded(after))
    {
        let decoded = stage::toon::from_toon(toon).expect("TOON decodes");
        assert!(
            json::same_value(&decoded, &value),
            "TOON decodes to another value:\n{before}\n{after}"
        );
        return;
    }
    assert_eq!(
        after,
        without_layout(before),
        "not the compact form of the JSON text"
    );
}

fn check(text: &str) -> Result<(), TestCaseError> {
    let after = through_defaults(text);
    assert_content_kept(text, &after);
    Ok(())
}

// --- generators -------------------------------------------------------------------

fn pick(items: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    prop::sample::select(items)
}

const INDENTS: &[&str] = &[
    "",
    "",
    "    ",
    "        ",
    "            ",
    "\t",
    "\t\t",
    "  ",
    " ",
];
const WORDS: &[&str] = &[
    "def",
    "return",
    "self.value",
    "=",
    "==",
    "(x)",
    "{",
    "}",
    "if",
    "for",
    "i",
    "in",
    "range(10):",
    "\"a  b\"",
    "'c'",
    "0x1F",
    "3.14",
    "//",
    "#",
    "->",
    "&&",
    "é",
    "日本",
    "λ",
    "<T>",
    "&amp;",
    "null",
    "None",
    "[1,",
    "2]",
    "\\n",
    "fn",
    "let",
    "mut",
    "x:",
    "i64",
    "price",
    "TAX_RATES",
];
const GAPS: &[&str] = &[" ", " ", " ", " ", "  ", "   ", "      ", "\t"];
const TRAILS: &[&str] = &["", "", "", " ", "   ", "\t"];

fn code_line() -> impl Strategy<Value = String> {
    (
        pick(INDENTS),
        prop::collection::vec((pick(WORDS), pick(GAPS)), 0..9),
        pick(TRAILS),
    )
        .prop_map(|(indent, parts, trail)| {
            let mut line = indent.to_string();
            for (i, (word, gap)) in parts.iter().enumerate() {
                if i > 0 {
                    line.push_str(gap);
                }
                line.push_str(word);
            }
            line.push_str(trail);
            line
        })
}

fn code() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(code_line(), 1..160),
        pick(&["\n", "\n", "\r\n"]),
    )
        .prop_map(|(lines, eol)| lines.join(eol) + eol)
}

fn diff() -> impl Strategy<Value = String> {
    prop::collection::vec((pick(&[" ", " ", "+", "-"]), code_line()), 1..120).prop_map(|lines| {
        let mut out = String::from(
            "diff --git a/src/app.py b/src/app.py\nindex 892ccfe..aa0af06 100644\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1,40 +1,41 @@\n",
        );
        for (sign, line) in lines {
            out.push_str(sign);
            out.push_str(&line);
            out.push('\n');
        }
        out
    })
}

const ELEMENTS: &[&str] = &[
    "<p>",
    "</p>",
    "<div class=\"a  b\">",
    "</div>",
    "<h1>",
    "</h1>",
    "<ul>\n  <li>",
    "</li>\n</ul>",
    "<a href=\"/x\">",
    "</a>",
    "<pre>",
    "</pre>",
    "<code>",
    "</code>",
    "<table><tr><td>",
    "</td></tr></table>",
    "<br>",
    "<!-- note -->",
    "&nbsp;",
    "&lt;",
    "\n",
    "\n    ",
    "  ",
    "text",
    "more  words",
    "é",
];

fn html() -> impl Strategy<Value = String> {
    prop::collection::vec(pick(ELEMENTS), 1..300).prop_map(|parts| {
        format!(
            "<!DOCTYPE html>\n<html>\n<head>\n  <title>Page</title>\n  <style>\n    body {{ margin: 0; }}\n  </style>\n  <script>\n    var  x = 1;\n  </script>\n</head>\n<body>\n{}\n</body>\n</html>\n",
            parts.concat()
        )
    })
}

const STRINGS: &[&str] = &[
    "",
    "orders",
    "a  b",
    "  leading",
    "trailing  ",
    "tab\there",
    "line\nbreak",
    "quote\"d",
    "back\\slash",
    "é日本😀",
    "0.0.0.0",
    "postgres://db:5432/x",
    "null",
    "   ",
    "<b>bold</b>",
    "Welcome  to   the order service;  maintenance   window on Sundays,  02:00 to 04:00 UTC.",
];
const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "1.50",
    "2.0",
    "1e400",
    "1E+2",
    "12345678901234567890123",
    "-7.25e-3",
    "3",
];
const KEYS: &[&str] = &[
    "id",
    "name",
    "port",
    "tls",
    "replica",
    "note",
    "a b",
    "é",
    "timeout_ms",
    "x",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        2 => pick(NUMBERS).prop_map(|n| serde_json::from_str(n).unwrap()),
        3 => pick(STRINGS).prop_map(|s| Value::String(s.to_string())),
    ]
}

fn config_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 80, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((pick(KEYS), inner), 0..8).prop_map(|members| Value::Object(
                members
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect()
            )),
        ]
    })
}

/// A configuration document: sections of nested values, often past
/// `clean.min_bytes` (where the lossy transforms would have run).
fn config_document() -> impl Strategy<Value = Value> {
    prop::collection::vec((pick(SECTIONS), config_value()), 2..14).prop_map(|members| {
        Value::Object(
            members
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    })
}

const SECTIONS: &[&str] = &[
    "service", "listen", "database", "features", "retry", "owners", "limits", "banner",
];

/// A table with nulls: rows of one shape, the kind TOON encodes.
fn table() -> impl Strategy<Value = Value> {
    prop::collection::vec(
        (
            pick(NUMBERS),
            pick(STRINGS),
            prop::option::of(pick(STRINGS)),
            any::<bool>(),
        ),
        4..40,
    )
    .prop_map(|rows| {
        Value::Array(
            rows.into_iter()
                .enumerate()
                .map(|(i, (price, name, note, ok))| {
                    serde_json::json!({
                        "id": i,
                        "name": name,
                        "price": serde_json::from_str::<Value>(price).unwrap(),
                        "note": note,
                        "ok": ok,
                    })
                })
                .collect(),
        )
    })
}

/// `", "` and `": "` between tokens, as Python's `json.dumps` writes them.
fn spaced(compact: &str) -> String {
    let mut out = String::new();
    let (mut in_string, mut escaped) = (false, false);
    for c in compact.chars() {
        out.push(c);
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        } else if c == ',' || c == ':' {
            out.push(' ');
        }
    }
    out
}

fn json_text(value: impl Strategy<Value = Value>) -> impl Strategy<Value = String> {
    (value, 0..4u8).prop_map(|(v, layout)| match layout {
        0 => serde_json::to_string(&v).unwrap(),
        1 => serde_json::to_string_pretty(&v).unwrap(),
        2 => spaced(&serde_json::to_string(&v).unwrap()),
        _ => format!(
            "{}\n",
            serde_json::to_string_pretty(&v)
                .unwrap()
                .replace("  ", "    ")
        ),
    })
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n =
            chunk.iter().fold(0u32, |acc, b| acc << 8 | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
        }
        out.push_str(&"=".repeat(3 - chunk.len()));
    }
    out
}

/// PEM blocks (RFC 7468: 64-column base64 lines), a `data:` URI, a bare run.
fn pem_and_base64() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(any::<u8>(), 150..1500),
        0..3u8,
        pick(&["\n", "\r\n"]),
    )
        .prop_map(|(bytes, kind, eol)| {
            let b64 = base64(&bytes);
            match kind {
                0 => {
                    let lines: Vec<&str> = b64
                        .as_bytes()
                        .chunks(64)
                        .map(|c| std::str::from_utf8(c).unwrap())
                        .collect();
                    format!(
                        "-----BEGIN CERTIFICATE-----{eol}{}{eol}-----END CERTIFICATE-----{eol}",
                        lines.join(eol)
                    )
                }
                1 => format!("![chart](data:image/png;base64,{b64}){eol}Rendered  at 10:00.{eol}"),
                _ => format!(
                    "{{\"name\": \"key.bin\", \"content_base64\": \"{b64}\", \"size\": {}}}",
                    bytes.len()
                ),
            }
        })
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        rng_seed: RngSeed::Fixed(0x05AF_EDEF),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn code_keeps_every_byte(text in code()) {
        prop_assert_eq!(through_defaults(&text), text);
    }

    #[test]
    fn diffs_keep_every_byte(text in diff()) {
        prop_assert_eq!(through_defaults(&text), text);
    }

    #[test]
    fn html_keeps_every_byte(text in html()) {
        prop_assert_eq!(through_defaults(&text), text);
    }

    #[test]
    fn pem_and_base64_keep_every_byte_or_value(text in pem_and_base64()) {
        check(&text)?;
    }

    #[test]
    fn json_configuration_with_nulls_keeps_its_value(text in json_text(config_document())) {
        check(&text)?;
    }

    #[test]
    fn json_tables_keep_their_value(text in json_text(table())) {
        check(&text)?;
    }
}

/// The generators reach each lossless outcome, so the properties above are
/// not only about texts nothing would touch.
#[test]
fn the_generated_texts_reach_compaction_and_toon() {
    let pretty = serde_json::to_string_pretty(
        &serde_json::json!({"port": 8080, "tls": null, "banner": "a  b"}),
    )
    .unwrap();
    let after = through_defaults(&pretty);
    assert_eq!(after, r#"{"port":8080,"tls":null,"banner":"a  b"}"#);
    let rows: Vec<Value> = (0..30)
        .map(|i| serde_json::json!({"id": i, "name": format!("row  {i}"), "note": null, "ok": i % 2 == 0}))
        .collect();
    let table = serde_json::to_string_pretty(&rows).unwrap();
    let after = through_defaults(&table);
    assert!(marker::is_encoded(&after), "{after}");
    assert_content_kept(&table, &after);
}
