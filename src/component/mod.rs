//! The WebAssembly component adapter (`wit/mcp-toon.wit`, world `mcp-toon`):
//! maps the WIT interface onto the core the proxy-wasm plugin runs. Like the
//! proxy-wasm adapter it decides nothing: a `process-response` call is
//! replayed as the host events of one HTTP exchange (request headers and
//! body, response headers and body) and the [`Exchange`] decides.
//!
//! Built for `wasm32-wasip2` with `--features component` (default features
//! on, so the same stages as the plugin, HTML → Markdown included); the
//! proxy-wasm module never carries it. The WIT glue is
//! compiled for wasm only (a native cdylib cannot export names with `:`);
//! the functions it calls are plain Rust, tested natively.

#[cfg(target_arch = "wasm32")]
mod bindings;

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::Arc;

use crate::config::{Settings, StreamInfo};
use crate::convert;
use crate::exchange::{Exchange, Flow, NoSessions, RequestHead, ResponseHead, SessionStore, Step};
use crate::page::reissue::UpstreamReply;
use crate::page::{MemoryHost, PageHost, StoreError};
use crate::report::Report;
use crate::stage::trim::LlmReply;

/// Where one processor keeps the pages of the results it cut: its own
/// memory (a component instance shares nothing with other instances).
/// Random bytes come from SipHash keyed by the standard library's
/// per-process random keys (WASI `random` on wasm32-wasip2).
#[derive(Debug)]
pub struct Pages {
    data: MemoryHost,
    keys: RandomState,
    counter: u64,
}

impl Default for Pages {
    fn default() -> Self {
        Pages {
            data: MemoryHost::default(),
            keys: RandomState::new(),
            counter: 0,
        }
    }
}

impl PageHost for Pages {
    fn shared_get(&self, key: &str) -> Option<(Vec<u8>, u32)> {
        self.data.shared_get(key)
    }
    fn shared_set(&mut self, key: &str, value: &[u8], cas: u32) -> Result<(), StoreError> {
        self.data.shared_set(key, value, cas)
    }
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
    fn random(&mut self, buf: &mut [u8]) -> bool {
        for chunk in buf.chunks_mut(8) {
            self.counter = self.counter.wrapping_add(1);
            let word = self.keys.hash_one(self.counter).to_le_bytes();
            let n = chunk.len();
            chunk.copy_from_slice(word.get(..n).unwrap_or(&[]));
        }
        true
    }
}

impl SessionStore for Pages {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.shared_get(key).map(|(v, _)| v)
    }
    fn set(&mut self, key: &str, value: &[u8]) {
        let _ = self.shared_set(key, value, 0);
    }
}

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

/// One Streamable HTTP exchange as the proxy-wasm adapter sees it: a POST
/// of `application/json` to `/mcp`, its body in one chunk, then a 200
/// response of `content_type` (no content-encoding), its body in one chunk.
///
/// This world imports no HTTP client, so a trim callout the core asks for
/// is answered "not sent": the core fails open and records why, as the
/// plugin does when its host refuses a call.
pub fn process(
    settings: &Arc<Settings>,
    request_body: &[u8],
    content_type: &str,
    response_body: Vec<u8>,
) -> Outcome {
    process_with(
        settings,
        &mut NoSessions,
        request_body,
        content_type,
        response_body,
    )
}

/// [`process`], keeping the pages of cut results in `pages`.
pub fn process_with(
    settings: &Arc<Settings>,
    pages: &mut dyn SessionStore,
    request_body: &[u8],
    content_type: &str,
    response_body: Vec<u8>,
) -> Outcome {
    let mut exchange = Exchange::new(Arc::clone(settings));
    let stream = StreamInfo::default();
    let plan = exchange.request_headers(RequestHead {
        stream: &stream,
        method: "POST",
        path: "/mcp",
        content_type: Some("application/json"),
        accept: Some("application/json, text/event-stream"),
        headers: &[],
        end_of_stream: request_body.is_empty(),
    });
    if plan.read_body && exchange.reads_request() {
        // A rewritten request (intent argument taken out) would go to the
        // server; this interface returns only the response.
        let _ = exchange.request_chunk(request_body, true, pages);
    }
    exchange.response_headers(ResponseHead {
        status: Some(200),
        content_type: Some(content_type),
        content_encoding: None,
        content_length: Some(response_body.len()),
        end_of_stream: response_body.is_empty(),
    });
    if !exchange.reads_response() {
        return unchanged(response_body, &exchange);
    }
    let step = exchange.response_chunk(&response_body, true, pages);
    let sent = perform(&mut exchange, step, response_body.clone());
    if sent == response_body {
        return unchanged(response_body, &exchange);
    }
    Outcome {
        body: sent,
        changed: true,
        report: exchange.report().clone(),
    }
}

fn unchanged(body: Vec<u8>, exchange: &Exchange) -> Outcome {
    Outcome {
        body,
        changed: false,
        report: exchange.report().clone(),
    }
}

/// Carries out the steps for the one (last) chunk the host holds, as
/// Envoy would: a step's body replaces the held bytes; a callout is
/// answered and its step followed; bytes go out when the flow continues.
fn perform(exchange: &mut Exchange, mut step: Step, mut held: Vec<u8>) -> Vec<u8> {
    let mut sent = Vec::new();
    // Each reply settles one pending callout, and a response has finitely
    // many blocks; the bound only guards against a core bug looping.
    for _ in 0..=held.len() {
        if let Some(body) = step.body.take() {
            held = body;
        }
        let Some(_request) = step.callout.take() else {
            break;
        };
        let next = exchange.callout_reply(&LlmReply::NotSent, &mut NoSessions);
        if step.flow == Flow::Continue {
            sent.append(&mut held);
        }
        step = next;
    }
    if let Some(body) = step.body.take() {
        held = body;
    }
    sent.append(&mut held);
    sent
}

/// A response the processor sends itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
    pub report: Report,
}

/// `answer-request`: a request the plugin answers without the server (a
/// call of the page tool, where paging is on), or `None`: send it to the
/// server. This world imports no HTTP client, so a page this processor does
/// not hold cannot be rebuilt by calling the tool again: the agent gets the
/// page tool's error.
pub fn answer_request(
    settings: &Arc<Settings>,
    pages: &mut dyn SessionStore,
    request_body: &[u8],
    accept: &str,
) -> Option<Reply> {
    let mut exchange = Exchange::new(Arc::clone(settings));
    let stream = StreamInfo::default();
    let plan = exchange.request_headers(RequestHead {
        stream: &stream,
        method: "POST",
        path: "/mcp",
        content_type: Some("application/json"),
        accept: Some(accept),
        headers: &[],
        end_of_stream: request_body.is_empty(),
    });
    if !plan.read_body || !exchange.reads_request() {
        return None;
    }
    let mut step = exchange.request_chunk(request_body, true, pages);
    if step.upstream.take().is_some() {
        step = exchange.upstream_reply(&UpstreamReply::Failed);
    }
    let reply = step.reply?;
    let content_type = reply
        .headers
        .iter()
        .find(|(n, _)| n == "content-type")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    Some(Reply {
        status: reply.status,
        content_type,
        body: reply.body,
        report: exchange.report().clone(),
    })
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
    fn a_processor_keeps_pages_and_answers_the_page_tool() {
        let s =
            configure(r#"{"hold_headers":true,"budget":{"tokens":300},"paging":{"enabled":true}}"#)
                .unwrap();
        let rows: Vec<serde_json::Value> = (0..200)
            .map(|i| serde_json::json!({"id": i, "name": format!("row {i}"), "ok": true}))
            .collect();
        let text = serde_json::Value::Array(rows.clone()).to_string();
        let body = serde_json::json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":text}]}})
            .to_string()
            .into_bytes();
        let mut pages = Pages::default();
        let out = process_with(&s, &mut pages, CALL, "application/json", body);
        assert!(
            out.report.summary().contains("cut=1"),
            "{}",
            out.report.summary()
        );
        let v: serde_json::Value = serde_json::from_slice(&out.body).unwrap();
        let mut notice = v["result"]["content"][1]["text"]
            .as_str()
            .unwrap()
            .to_string();
        let mut all: Vec<serde_json::Value> = serde_json::from_str(
            &toon_decode(v["result"]["content"][0]["text"].as_str().unwrap()).unwrap(),
        )
        .unwrap();
        while let Some(at) = notice.find("{\"handle\":\"") {
            let rest = &notice[at + 11..];
            let handle = &rest[..rest.find('"').unwrap()];
            let call = serde_json::json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
                "params":{"name":"mcp_toon_page","arguments":{"handle":handle}}});
            let reply = answer_request(
                &s,
                &mut pages,
                call.to_string().as_bytes(),
                "text/event-stream",
            )
            .unwrap();
            assert_eq!(reply.content_type, "text/event-stream");
            let data = String::from_utf8(reply.body).unwrap();
            let data = data
                .strip_prefix("event: message\ndata: ")
                .unwrap()
                .trim_end();
            let v: serde_json::Value = serde_json::from_str(data).unwrap();
            let page = v["result"]["content"][0]["text"].as_str().unwrap();
            let json = toon_decode(page).unwrap_or_else(|_| page.to_string());
            all.extend(serde_json::from_str::<Vec<serde_json::Value>>(&json).unwrap());
            notice = v["result"]["content"][1]["text"]
                .as_str()
                .unwrap()
                .to_string();
        }
        assert_eq!(all, rows);
        // Anything else goes to the server.
        assert!(answer_request(&s, &mut pages, CALL, "application/json").is_none());
    }

    #[test]
    fn config_errors_read_as_the_plugin_logs_them() {
        let e = configure(r#"{"toon":{"mode":"sometimes"}}"#).unwrap_err();
        assert!(e.starts_with("mcp-toon configuration: toon.mode: "), "{e}");
    }
}
