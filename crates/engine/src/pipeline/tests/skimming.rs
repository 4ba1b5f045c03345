//! A text the scan only measures (certainly no JSON value, under a policy
//! that changes only JSON: `mcp::Texts::SkimNotJson`) leaves the response
//! and its record exactly as decoding it did. The same bodies run under a
//! policy that differs only by a cap far past any text here, which makes
//! the scan decode every text: outputs and decisions must be identical.

use proptest::prelude::Rng;
use proptest::test_runner::{RngAlgorithm, TestRng};
use serde_json::{json, Value};

use super::{call_request, run, start_borrowed, table_text, FinishAlone};
use crate::config::Settings;

/// The configurations compared, each as given and with a cap that never
/// cuts (a 1 GB cap is a policy that reads any text).
const CONFIGS: [&str; 5] = [
    "{}",
    r#"{"toon": {"mode": "off"}}"#,
    r#"{"toon": {"mode": "always"}}"#,
    r#"{"toon": {"min_bytes": 10}, "clean": {"min_bytes": 0, "remove_nulls": true}}"#,
    r#"{"clean": {"compact_json": false}}"#,
];

fn with_cap(config: &str) -> Settings {
    let mut v: Value = serde_json::from_str(config).unwrap();
    v["clean"]["max_text_bytes"] = json!(1_000_000_000);
    Settings::from_json(&v.to_string()).unwrap()
}

fn texts() -> Vec<String> {
    let mut texts: Vec<String> = [
        "def handler(request):\n    path = request.path.replace('\\\\', '/')\n    return {\"ok\": True}\n",
        "diff --git a/x b/x\n@@ -1 +1 @@\n-a\n+b\n",
        "2026-12-05 10:00:00 INFO started",
        "42",
        "42 apples",
        "true",
        "true story",
        "  \n [1, 2]",
        "\"a JSON string\"",
        "   ",
        "",
        "é first",
        "[FILE] a.txt\n[DIR] src",
        "{\"a\": 1, \"b\": [1, 2]}",
        "1. first\n2. second",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    texts.push(table_text(40));
    texts.push(format!("  {}", table_text(12)));
    texts.push("x".repeat(600));
    texts.push(format!("note: {}", "prose and more prose ".repeat(40)));
    texts
}

/// A body whose result carries `items` text items, each a text of
/// [`texts`] in serde_json's spelling or every character `\uXXXX`.
fn body(rng: &mut TestRng, texts: &[String], items: usize) -> String {
    let mut content = Vec::new();
    for _ in 0..items {
        let text = &texts[(rng.next_u64() % texts.len() as u64) as usize];
        let literal = if rng.next_u64() % 4 == 0 {
            let mut out = String::from("\"");
            for unit in text.encode_utf16() {
                out.push_str(&format!("\\u{unit:04x}"));
            }
            out + "\""
        } else {
            serde_json::to_string(text).unwrap()
        };
        content.push(format!(r#"{{"type":"text","text":{literal}}}"#));
    }
    // A lone surrogate now and then: a text serde_json will not decode.
    if rng.next_u64() % 5 == 0 {
        content.push(r#"{"type":"text","text":"lone \ud800 surrogate"}"#.to_string());
    }
    format!(
        r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{}]}}}}"#,
        content.join(",")
    )
}

#[test]
fn a_skimmed_text_leaves_output_and_record_as_decoding_did() {
    let texts = texts();
    let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[3; 32]);
    let request = call_request("7", "read_file");
    for config in CONFIGS {
        let skimming = Settings::from_json(config).unwrap();
        let decoding = with_cap(config);
        let tool = skimming.policy(Default::default(), Some("read_file"));
        assert!(tool.changes_only_json(), "{config}");
        assert!(!decoding
            .policy(Default::default(), Some("read_file"))
            .changes_only_json());
        for _ in 0..300 {
            let items = 1 + (rng.next_u64() % 3) as usize;
            let body = body(&mut rng, &texts, items);
            assert_eq!(
                run(&skimming, &request, &body),
                run(&decoding, &request, &body),
                "{config} {body}"
            );
        }
    }
}

/// Written by hand, so that the bodies above cannot all miss it: texts in
/// every spelling, a lone surrogate among them, in one result.
#[test]
fn every_kind_of_text_in_one_result() {
    let request = call_request("7", "read_file");
    let items: Vec<String> = texts()
        .iter()
        .map(|t| {
            format!(
                r#"{{"type":"text","text":{}}}"#,
                serde_json::to_string(t).unwrap()
            )
        })
        .chain([r#"{"type":"text","text":"lone \ud800 surrogate"}"#.to_string()])
        .collect();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{}]}}}}"#,
        items.join(",")
    );
    for config in CONFIGS {
        let (skimmed, report) = run(&Settings::from_json(config).unwrap(), &request, &body);
        assert_eq!(
            (skimmed, report.clone()),
            run(&with_cap(config), &request, &body)
        );
        // Every text has its decision, the skimmed ones included.
        assert!(
            report.decisions.len() >= items.len(),
            "{config}: {report:?}"
        );
    }
}

/// An event's data (`start_borrowed`) records what a body does: when the
/// scan left every text unread, the same decisions, and no job (the data
/// is not copied).
#[test]
fn an_event_of_unread_texts_is_decided_without_a_job() {
    let texts = texts();
    let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[9; 32]);
    let request = call_request("7", "read_file");
    let mut settled = 0;
    for config in CONFIGS {
        let settings = Settings::from_json(config).unwrap();
        for _ in 0..200 {
            let items = 1 + (rng.next_u64() % 3) as usize;
            let body = body(&mut rng, &texts, items);
            let (out, whole) = run(&settings, &request, &body);
            let mut report = crate::report::Report::default();
            let job = start_borrowed(
                &settings,
                Default::default(),
                &request,
                &crate::pipeline::Resolved::of(&settings, Default::default(), &request),
                &body,
                &mut report,
                &mut |_| false,
            );
            let out_borrowed = match job {
                None => {
                    settled += 1;
                    None
                }
                Some(job) => job.finish_alone(&settings, None, &mut report).changed(),
            };
            assert_eq!(
                out_borrowed.map(|b| String::from_utf8(b).unwrap()),
                out,
                "{config} {body}"
            );
            assert_eq!(report, whole, "{config} {body}");
        }
    }
    assert!(settled > 100, "{settled}");
}
