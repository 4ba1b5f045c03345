//! The WebAssembly component adapter (`wit/mcp-toon.wit`, world `mcp-toon`):
//! maps the WIT interface onto the core the proxy-wasm plugin runs. Like the
//! proxy-wasm adapter it decides nothing: a `process-response` call is
//! replayed as the host events of one HTTP exchange (request headers and
//! body, response headers and body) and the [`Exchange`] decides.
//!
//! Built for `wasm32-wasip2` with `--no-default-features --features
//! component`; the proxy-wasm module never carries it. The WIT glue is
//! compiled for wasm only (a native cdylib cannot export names with `:`);
//! the functions it calls are plain Rust, tested natively.

#[cfg(target_arch = "wasm32")]
mod bindings;

use std::sync::Arc;

use crate::config::{Settings, StreamInfo};
use crate::convert;
use crate::exchange::{Exchange, NoSessions, RequestHead, ResponseHead, ResponsePlan};
use crate::report::Report;
use crate::stage::trim::LlmReply;

/// What one exchange came to: the body to send, whether it changed, and the
/// decision record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
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

/// One exchange as the proxy-wasm adapter sees it: a POST of
/// `application/json`, a complete request body, a 2xx response with
/// `content_type` and no content-encoding, a complete response body, each
/// in one chunk. A component host has no LLM endpoint: a trim callout is
/// answered "not sent" and fails open.
pub fn process(
    settings: &Arc<Settings>,
    request_body: &[u8],
    content_type: &str,
    response_body: Vec<u8>,
) -> Outcome {
    let mut exchange = Exchange::new(Arc::clone(settings));
    let stream = StreamInfo::default();
    let plan = exchange.request_headers(RequestHead {
        stream: &stream,
        method: "POST",
        path: "/",
        content_type: Some("application/json"),
        accept: Some("application/json, text/event-stream"),
        end_of_stream: request_body.is_empty(),
    });
    if plan.read_body {
        exchange.request_chunk(request_body, true, &mut NoSessions);
    }
    let plan = exchange.response_headers(ResponseHead {
        status: Some(200),
        content_type: Some(content_type),
        content_encoding: None,
        content_length: Some(response_body.len()),
        end_of_stream: response_body.is_empty(),
    });
    let mut body = None;
    if plan != ResponsePlan::Pass && exchange.reads_response() {
        let mut step = exchange.response_chunk(&response_body, true, &mut NoSessions);
        loop {
            if let Some(b) = step.body.take() {
                body = Some(b);
            }
            if step.callout.take().is_none() {
                break;
            }
            step = exchange.callout_reply(&LlmReply::NotSent, &mut NoSessions);
        }
    }
    let report = exchange.report().clone();
    match body {
        Some(body) if body != response_body => Outcome {
            body,
            changed: true,
            report,
        },
        _ => Outcome {
            body: response_body,
            changed: false,
            report,
        },
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
    fn config_errors_read_as_the_plugin_logs_them() {
        let e = configure(r#"{"toon":{"mode":"sometimes"}}"#).unwrap_err();
        assert!(e.starts_with("mcp-toon configuration: toon.mode: "), "{e}");
    }
}
