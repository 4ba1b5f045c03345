//! Hostile responses through the pipeline (issue 13): past a work budget a
//! block passes through byte-identical, counted under the budget's own
//! reason, and the other blocks of the response are decided as usual.

// A failed unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use mcp_toon::config::ServerScope;
use mcp_toon::mcp::RequestInfo;
use mcp_toon::outcome::{Outcome, Reason, Stage};
use mcp_toon::pipeline::process_response;
use mcp_toon::sim;
use mcp_toon::stage::trim::LlmReply;
use mcp_toon::{Report, Settings};
use serde_json::{json, Value};

const CALL: &[u8] =
    br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fetch","arguments":{}}}"#;

const TRANSFORMS_ON: &str = r#"{"clean": {"html_to_markdown": true, "strip_base64": true,
    "collapse_whitespace": true, "remove_nulls": true}}"#;

fn result(texts: &[String]) -> String {
    let content: Vec<Value> = texts
        .iter()
        .map(|t| json!({"type": "text", "text": t}))
        .collect();
    json!({"jsonrpc": "2.0", "id": 1, "result": {"content": content}}).to_string()
}

fn run(config: &str, request: &[u8], body: &str) -> (Option<Value>, Report) {
    let settings = Settings::from_json(config).unwrap();
    let request = RequestInfo::parse(request).unwrap();
    let mut report = Report::default();
    let out = process_response(
        &settings,
        ServerScope::default(),
        &request,
        body.as_bytes(),
        &mut report,
    );
    (out.map(|b| serde_json::from_slice(&b).unwrap()), report)
}

fn reasons(report: &Report, stage: Stage) -> Vec<(Option<usize>, Reason)> {
    report
        .decisions
        .iter()
        .filter(|d| d.stage == stage)
        .filter_map(|d| match d.outcome {
            Outcome::Passthrough(r) => Some((d.block, r)),
            _ => None,
        })
        .collect()
}

/// An ordinary HTML page the clean stage converts.
fn page() -> String {
    format!(
        "<html><body>{}</body></html>",
        "<h2>Title</h2><p>Some <b>bold</b> text and <a href=\"https://x.test/\">a link</a>.</p>"
            .repeat(20)
    )
}

#[test]
fn html_past_its_budget_passes_the_clean_stage_unchanged() {
    // Issue 13: `<rt>` nests without bound (its depth estimate counted it
    // as zero), and html5ever walks the whole stack for each one.
    let hostile = format!("<html><body><p>a</p>{}", "<rt>x".repeat(40_000));
    let body = result(&[hostile.clone(), page()]);
    let (out, report) = run(TRANSFORMS_ON, CALL, &body);
    let out = out.expect("the ordinary page still converts");
    assert_eq!(out["result"]["content"][0]["text"], hostile.as_str());
    assert!(!out["result"]["content"][1]["text"]
        .as_str()
        .unwrap()
        .contains('<'));
    assert_eq!(
        reasons(&report, Stage::Clean),
        [(Some(0), Reason::HtmlBudget)]
    );
    // At the default configuration the HTML is not looked at at all.
    let (out, report) = run("{}", CALL, &body);
    assert_eq!(out, None);
    assert!(reasons(&report, Stage::Clean).is_empty());
}

/// A table the fast path leaves to the generic one: beside its rows, an
/// array nested past the fast parser's bound (100 levels).
fn sparse(rows: usize) -> String {
    let rows: Vec<Value> = (0..rows)
        .map(|i| json!({"id": i, "name": format!("user-{i}"), "tag": "t"}))
        .collect();
    let deep = format!("{}{}", "[".repeat(101), "]".repeat(101));
    format!(r#"{{"deep":{deep},"rows":{}}}"#, Value::Array(rows))
}

#[test]
fn the_generic_toon_budget_is_shared_by_a_response() {
    // 16 KiB of such tables per response are encoded or refused on their
    // merits, the rest pass with `toon_budget`.
    let block = sparse(150);
    assert!(block.len() > 5 * 1024 && block.len() < 8 * 1024);
    let body = result(&[block.clone(), block.clone(), block.clone()]);
    let (_, report) = run("{}", CALL, &body);
    let toon = reasons(&report, Stage::Toon);
    assert_eq!(toon.len(), 3);
    assert_ne!(toon[0].1, Reason::ToonBudget);
    assert_eq!(toon[1].1, toon[0].1);
    assert_eq!(toon[2], (Some(2), Reason::ToonBudget));
}

#[test]
fn an_event_stream_shares_one_generic_budget() {
    // Per event, a stream of many small events would get the generic
    // path's budget many times.
    let block = sparse(150);
    let event = format!("event: message\ndata: {}\n\n", result(&[block]));
    let stream = event.repeat(4);
    let settings = std::sync::Arc::new(Settings::from_json("{}").unwrap());
    let out = sim::run(
        settings,
        CALL,
        &[CALL.len()],
        "text/event-stream",
        stream.as_bytes(),
        &[1000],
        &mut |_| LlmReply::NotSent,
    );
    assert_eq!(out.response_sent, stream.as_bytes());
    let toon = reasons(&out.report, Stage::Toon);
    assert_eq!(toon.len(), 4);
    assert_ne!(toon[0].1, Reason::ToonBudget);
    assert_eq!(toon[1].1, toon[0].1);
    assert_eq!(toon[2].1, Reason::ToonBudget);
    assert_eq!(toon[3].1, Reason::ToonBudget);
}

#[test]
fn a_batch_of_many_calls_pairs_every_result() {
    // Each result finds its call by id (once a scan of every call).
    let n = 5_000;
    let calls: Vec<Value> = (0..n)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": format!("t{i}")}}))
        .collect();
    let table = Value::Array(
        (0..20)
            .map(|i| json!({"id": i, "name": format!("row {i}"), "ok": true}))
            .collect(),
    )
    .to_string();
    let results: Vec<Value> = (0..n)
        .rev()
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": table}]}}))
        .collect();
    let request = serde_json::to_vec(&calls).unwrap();
    let body = serde_json::to_string(&results).unwrap();
    let (out, report) = run("{}", &request, &body);
    let out = out.unwrap();
    assert_eq!(out.as_array().unwrap().len(), n);
    let encoded = report
        .decisions
        .iter()
        .filter(|d| d.outcome == Outcome::Encoded)
        .count();
    assert_eq!(encoded, n);
}
