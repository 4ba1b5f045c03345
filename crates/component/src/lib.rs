//! The WebAssembly component adapter (`wit/mcp-toon.wit`, world `mcp-toon`):
//! maps the WIT interface onto the core the proxy-wasm plugin runs. Like the
//! proxy-wasm adapter it decides nothing: a `process-response` call is
//! played as the host events of one HTTP exchange (request headers and
//! body, response headers and body) on the in-memory host, and the
//! [`Driver`] carries out what the core decides; an `answer-request` call
//! plays the request alone and returns the local reply the driver sent,
//! if any. A processor's shared data (the pages of the results it cut)
//! lives in its [`Pages`], moved into each exchange's host and back.
//!
//! The crate `mcp-toon-component`, a host over the engine beside the
//! others (it depends on none of them). Built for `wasm32-wasip2` with
//! `cargo build -p mcp-toon-component --target wasm32-wasip2 --release`
//! (default features on, so the same stages as the plugin, HTML → Markdown
//! included); the proxy-wasm module never carries it. The WIT glue is
//! compiled for wasm only (a native cdylib cannot export names with `:`);
//! the functions it calls are plain Rust, tested natively.

#[cfg(target_arch = "wasm32")]
mod bindings;

use std::collections::hash_map::RandomState;
use std::rc::Rc;
use std::sync::Arc;

use mcp_toon_engine::config::Settings;
use mcp_toon_engine::convert;
use mcp_toon_engine::driver::MemoryHost;
use mcp_toon_engine::driver::{Driver, Vm};
use mcp_toon_engine::host::Direction;
use mcp_toon_engine::report::Report;
use mcp_toon_engine::shared::{Entropy, SharedMemory};
use mcp_toon_engine::stage::project::Query;

/// Where one processor keeps the pages of the results it cut: its own
/// memory (a component instance shares nothing with other instances).
/// Random bytes come from SipHash keyed by the standard library's
/// per-process random keys (WASI `random` on wasm32-wasip2).
#[derive(Debug)]
pub struct Pages(SharedMemory);

impl Default for Pages {
    fn default() -> Self {
        Pages(SharedMemory::with(Entropy::Keyed {
            keys: RandomState::new(),
            counter: 0,
        }))
    }
}

impl Pages {
    /// A host for one exchange, holding the processor's shared data; its
    /// clock reads the system's (pages have a time to live).
    fn host(&mut self, accept: &str) -> MemoryHost {
        let mut host =
            MemoryHost::post(&[("content-type", "application/json"), ("accept", accept)]);
        host.shared = std::mem::take(&mut self.0);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        host.set_now_ms(now);
        host
    }

    /// The exchange is over: its shared data goes back to the processor.
    fn keep(&mut self, host: &mut MemoryHost) {
        self.0 = std::mem::take(&mut host.shared);
    }
}

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
/// refuses a call. Results over their budget are cut without pages.
pub fn process(
    settings: &Arc<Settings>,
    request_body: &[u8],
    content_type: &str,
    response_body: Vec<u8>,
) -> Processed {
    let mut pages = Pages(SharedMemory::with(Entropy::None));
    process_with(
        settings,
        &mut pages,
        request_body,
        content_type,
        response_body,
    )
}

/// [`process`], keeping the pages of cut results in `pages`.
pub fn process_with(
    settings: &Arc<Settings>,
    pages: &mut Pages,
    request_body: &[u8],
    content_type: &str,
    response_body: Vec<u8>,
) -> Processed {
    let mut driver = Driver::new(Arc::clone(settings), Rc::new(Vm::default()));
    let mut host = pages.host("application/json, text/event-stream");
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
    pages.keep(&mut host);
    let sent = host.sent(Direction::Response);
    Processed {
        changed: sent != response_body.as_slice(),
        body: sent.to_vec(),
        report: driver.report().clone(),
    }
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
/// server. The request is played on the in-memory host like the plugin's:
/// this world imports no HTTP client, so a page this processor does not
/// hold cannot be rebuilt by calling the tool again (the host refuses the
/// call): the agent gets the page tool's error.
pub fn answer_request(
    settings: &Arc<Settings>,
    pages: &mut Pages,
    request_body: &[u8],
    accept: &str,
) -> Option<Reply> {
    let mut driver = Driver::new(Arc::clone(settings), Rc::new(Vm::default()));
    let mut host = pages.host(accept);
    host.headers(&mut driver, Direction::Request, request_body.is_empty());
    if !request_body.is_empty() {
        host.body(&mut driver, Direction::Request, request_body, true);
    }
    host.end(&mut driver);
    pages.keep(&mut host);
    let reply = host.local_reply.take()?;
    let content_type = reply
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    Some(Reply {
        status: reply.status,
        content_type,
        body: reply.body,
        report: driver.report().clone(),
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
