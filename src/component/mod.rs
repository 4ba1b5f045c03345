//! The WebAssembly component adapter (`wit/mcp-toon.wit`, world `mcp-toon`):
//! maps the WIT interface onto the core the proxy-wasm plugin runs. Like the
//! proxy-wasm adapter it decides nothing: a `process-response` call is
//! played as the host events of one HTTP exchange (request headers and
//! body, response headers and body) on the in-memory host, and the
//! [`Driver`] carries out what the core decides.
//!
//! Built for `wasm32-wasip2` with `--features component` (default features
//! on, so the same stages as the plugin, HTML → Markdown included); the
//! proxy-wasm module never carries it. The WIT glue is
//! compiled for wasm only (a native cdylib cannot export names with `:`);
//! the functions it calls are plain Rust, tested natively.

#[cfg(target_arch = "wasm32")]
mod bindings;

use std::rc::Rc;
use std::sync::Arc;

use crate::config::Settings;
use crate::convert;
use crate::driver::MemoryHost;
use crate::driver::{Driver, Vm};
use crate::host::Direction;
use crate::report::Report;
use crate::stage::project::Query;

/// What one exchange came to: the body to send, whether it changed, and the
/// decision record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Processed {
    pub body: Vec<u8>,
    pub changed: bool,
    pub report: Report,
}

/// Parses and validates a configuration; errors read as the plugin logs them.
pub fn configure(config: &str) -> Result<Arc<Settings>, String> {
    Settings::from_json(config)
        .map(Arc::new)
        .map_err(|e| e.to_string())
}

/// One Streamable HTTP exchange, played on the in-memory host through the
/// same driver the plugin runs: a POST of `application/json` to `/mcp`, its
/// body in one chunk, then a 200 response of `content_type` (no
/// content-encoding), its body in one chunk.
///
/// This world imports no HTTP client, so the host refuses a trim callout:
/// the core fails open and records why, as the plugin does when its host
/// refuses a call.
pub fn process(
    settings: &Arc<Settings>,
    request_body: &[u8],
    content_type: &str,
    response_body: Vec<u8>,
) -> Processed {
    let mut driver = Driver::new(Arc::clone(settings), Rc::new(Vm::default()));
    let mut host = MemoryHost::post(&[
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ]);
    host.headers(&mut driver, Direction::Request, request_body.is_empty());
    if !request_body.is_empty() {
        host.body(&mut driver, Direction::Request, request_body, true);
    }
    let length = response_body.len().to_string();
    host.respond(&[
        (":status", "200"),
        ("content-type", content_type),
        ("content-length", &length),
    ]);
    host.headers(&mut driver, Direction::Response, response_body.is_empty());
    if !response_body.is_empty() {
        host.body(&mut driver, Direction::Response, &response_body, true);
    }
    host.end(&mut driver);
    let sent = host.sent(Direction::Response);
    Processed {
        changed: sent != response_body.as_slice(),
        body: sent.to_vec(),
        report: driver.report().clone(),
    }
}

/// `toon-encode`: bare TOON, or why not.
pub fn toon_encode(json: &str) -> Result<String, String> {
    convert::json_to_toon(json).map_err(|e| e.to_string())
}

/// `toon-decode`: compact JSON, or why not.
pub fn toon_decode(toon: &str) -> Result<String, String> {
    convert::toon_to_json(toon).map_err(|e| e.to_string())
}

/// `project-query`: the project stage's evaluation of an agent's query.
pub fn project_query(json: &str, expression: &str, max_query_bytes: u32) -> Result<String, String> {
    let max = usize::try_from(max_query_bytes).unwrap_or(usize::MAX);
    Query::parse(expression, max)
        .and_then(|q| q.apply(json))
        .map_err(|r| format!("{}: {}", r.reason.as_str(), r.detail))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALL: &[u8] =
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rows"}}"#;

    fn table_response() -> Vec<u8> {
        let rows: Vec<serde_json::Value> = (0..30)
            .map(|i| serde_json::json!({"id": i, "name": format!("row {i}"), "ok": true}))
            .collect();
        let text = serde_json::Value::Array(rows).to_string();
        serde_json::json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":text}]}})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn json_response_is_encoded() {
        let s = configure("").unwrap();
        let out = process(
            &s,
            CALL,
            "application/json; charset=utf-8",
            table_response(),
        );
        assert!(out.changed);
        assert!(String::from_utf8(out.body)
            .unwrap()
            .contains("[mcp-toon/v1]"));
        assert_eq!(out.report.summary().split(' ').next(), Some("encoded=1"));
    }

    #[test]
    fn other_shapes_pass_through_unchanged() {
        let s = configure("").unwrap();
        let body = table_response();
        for (request, content_type) in [
            (
                &br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#[..],
                "application/json",
            ),
            (CALL, "text/plain"),
            (b"", "application/json"),
        ] {
            let out = process(&s, request, content_type, body.clone());
            assert!(!out.changed);
            assert_eq!(out.body, body);
            assert!(!out.report.is_empty());
        }
    }

    #[test]
    fn event_streams_are_rewritten_event_by_event() {
        let s = configure("").unwrap();
        let event = String::from_utf8(table_response()).unwrap();
        let body = format!(": ping\n\nevent: message\ndata: {event}\n\n").into_bytes();
        let out = process(&s, CALL, "text/event-stream", body);
        assert!(out.changed);
        let text = String::from_utf8(out.body).unwrap();
        assert!(
            text.starts_with(": ping\n\nevent: message\ndata: {"),
            "{text}"
        );
        assert!(text.ends_with("}\n\n") && text.contains("[mcp-toon/v1]"));
    }

    #[test]
    fn a_trim_callout_fails_open_and_encoding_goes_on() {
        let s = configure(r#"{"trim":{"enabled":true,"cluster":"llm","threshold_bytes":100}}"#)
            .unwrap();
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rows","arguments":{"expected_info":"ids only"}}}"#;
        let out = process(&s, call, "application/json", table_response());
        let record = out.report.to_json();
        assert!(record.contains("\"stage\":\"trim\""), "{record}");
        assert!(out.changed, "{record}");
        assert!(out.report.summary().contains("encoded=1"), "{record}");
    }

    #[test]
    fn an_agent_query_projects_the_result() {
        let s = configure(r#"{"project":{"queries":true}}"#).unwrap();
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rows","arguments":{"jmespath":"[?id < `2`].name"}}}"#;
        let out = process(&s, call, "application/json", table_response());
        assert!(out.changed);
        let v: serde_json::Value = serde_json::from_slice(&out.body).unwrap();
        assert_eq!(v["result"]["content"][0]["text"], r#"["row 0","row 1"]"#);
        assert!(
            out.report.summary().contains("queried=1"),
            "{}",
            out.report.summary()
        );
        assert_eq!(project_query("[1,2,3]", "[1]", 64).unwrap(), "2");
        assert!(project_query("[1,2,3]", "[", 64)
            .unwrap_err()
            .starts_with("query_invalid: "));
    }

    #[test]
    fn config_errors_read_as_the_plugin_logs_them() {
        let e = configure(r#"{"toon":{"mode":"sometimes"}}"#).unwrap_err();
        assert!(e.starts_with("mcp-toon configuration: toon.mode: "), "{e}");
    }
}
