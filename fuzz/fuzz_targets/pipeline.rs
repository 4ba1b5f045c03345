//! The whole stream logic on arbitrary request and response bytes, JSON and
//! SSE, cut into arbitrary chunks, with arbitrary callout replies: never a
//! panic, a stall or a lost byte. When no decision changed anything, the
//! client gets exactly the server's bytes. Run with a libFuzzer `-timeout`
//! (fuzz/run.sh): every stage is linear in its input or stops at a work
//! budget, so a slow input is a finding.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use mcp_toon::config::Settings;
use mcp_toon::sim;
use mcp_toon::stage::trim::LlmReply;

const CONFIGS: &[&str] = &[
    "{}",
    r#"{"toon":{"mode":"always","min_bytes":0,"header":"fence"},"annotate_tools":true,"max_event_bytes":2048}"#,
    r#"{"hold_headers":true,"toon":{"min_bytes":0,"min_rows":1,"header":"none"},"max_body_bytes":4096}"#,
    r#"{"trim":{"enabled":true,"threshold_bytes":16,"blocks":"all"},"toon":{"min_bytes":0}}"#,
    r#"{"trim":{"enabled":true,"threshold_bytes":0}}"#,
    // Every clean transform opted in, on blocks of any size.
    r#"{"clean":{"html_to_markdown":true,"strip_base64":true,"collapse_whitespace":true,"remove_nulls":true,"min_bytes":0,"base64_min_chars":16},"toon":{"min_bytes":0}}"#,
];

fuzz_target!(|data: &[u8]| {
    // Layout: knobs, request length (2 bytes), request, response.
    let [knobs, chunking, reply_kind, hi, lo, rest @ ..] = data else { return };
    let req_len = (usize::from(*hi) << 8 | usize::from(*lo)).min(rest.len());
    let (request, response) = rest.split_at(req_len);
    let config = CONFIGS[usize::from(*knobs) % CONFIGS.len()];
    let settings = Arc::new(Settings::from_json(config).expect("fixed config"));
    let content_type = if knobs & 0x80 != 0 { "text/event-stream" } else { "application/json" };
    let sizes: Vec<usize> = [1, 2, 3, 7, 64, 1000].iter().map(|n| n * (usize::from(*chunking) % 5 + 1)).collect();
    let mut reply = |_: &_| match reply_kind % 5 {
        0 => LlmReply::NotSent,
        1 => LlmReply::Failed { elapsed_ms: u64::from(*reply_kind) * 100 },
        2 => LlmReply::Response { status: 500, body: response.to_vec() },
        3 => LlmReply::Response { status: 200, body: response.to_vec() },
        _ => LlmReply::Response {
            status: 200,
            body: br#"{"choices":[{"message":{"content":"[{\"a\":1},{\"a\":2},{\"a\":3},{\"a\":4}]"}}]}"#.to_vec(),
        },
    };
    let out = sim::run(settings, request, &sizes, content_type, response, &sizes[1..], &mut reply);
    let changed = out.report.decisions.iter().any(|d| d.outcome.changed());
    if !changed {
        assert_eq!(out.response_sent, response, "unchanged responses pass byte-identical");
    }
    if content_type == "application/json" && changed {
        assert!(serde_json::from_slice::<serde_json::Value>(&out.response_sent).is_ok(), "a rewrite is valid JSON");
    }
});
