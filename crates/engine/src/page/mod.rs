//! Pages on demand: the rest of a result the budget stage cut, fetched with
//! a synthetic tool the plugin adds to `tools/list` and answers itself.
//!
//! Two ways to serve a page, and a page call may land on any gateway
//! (MCP 2026-07-28 has no sessions: any request may reach any instance):
//!
//! - **From the store** ([`store`]) of the gateway that cut the result:
//!   every page is kept in proxy-wasm shared data when the result is cut, so
//!   a page call is one shared-data read. Needs the page call to reach the
//!   same Envoy (one instance, or routing that keeps a client on one).
//! - **By calling the tool again** (the exchange's re-issue): a sealed handle
//!   ([`handle`]) carries the original call; a gateway that does not hold
//!   the page re-issues the `tools/call` to the route's cluster (or back
//!   through its own listener, [`mark`]), runs the same stages, checks the
//!   digest of the result against the one in the handle (a changed result
//!   is reported, never mixed) and returns the page. Only for tools
//!   annotated read-only or idempotent, or configured so (calling a tool
//!   again must be safe).
//!
//! Either way a page is served only to its owner ([`owner`]): the caller
//! it was cut for, on the same server. The page tool is answered from the
//! request path: its call never reaches the server
//! (`crate::exchange::serve`, above the pipeline, whose stages a
//! re-issued result meets again; this module is below it).

pub(crate) mod cut;
pub mod handle;
pub mod keys;
pub mod mark;
pub(crate) mod owner;
pub(crate) mod store;
pub(crate) mod tools;

/// A response the plugin sends itself, without the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// How a JSON-RPC response is framed for the client: JSON, or one SSE
/// `message` event (MCP 2025-03-26 and later, Streamable HTTP: the server
/// answers a POST with either; the client lists both in `Accept`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    Json,
    Sse,
}

impl Framing {
    /// JSON unless the client accepts only event streams.
    pub(crate) fn for_accept(accept: Option<&str>) -> Self {
        let media = || accept.unwrap_or("").split(',');
        let is = crate::media::is_media;
        let json =
            media().any(|m| is(m, "application/json") || is(m, "*/*") || is(m, "application/*"));
        let sse = media().any(|m| is(m, "text/event-stream"));
        if sse && !json {
            Framing::Sse
        } else {
            Framing::Json
        }
    }

    /// A 200 carrying `message` (a JSON-RPC response).
    pub(crate) fn reply(self, message: &str, summary: Option<String>) -> LocalReply {
        let (content_type, body) = match self {
            Framing::Json => ("application/json", message.as_bytes().to_vec()),
            Framing::Sse => (
                "text/event-stream",
                format!("event: message\ndata: {message}\n\n").into_bytes(),
            ),
        };
        let mut headers = vec![
            ("content-type".to_string(), content_type.to_string()),
            ("cache-control".to_string(), "no-store".to_string()),
        ];
        if let Some(s) = summary {
            headers.push((crate::report::SUMMARY_HEADER.to_string(), s));
        }
        LocalReply {
            status: 200,
            headers,
            body,
        }
    }
}

/// A JSON-RPC response whose result is a `CallToolResult` of text items.
/// `id` is the request's id as its JSON text. MCP 2026-07-28 results carry
/// `resultType` (`"complete"`); earlier revisions have no such field.
pub fn tool_result(id: &str, texts: &[&str], is_error: bool, modern: bool) -> String {
    let content: Vec<serde_json::Value> = texts
        .iter()
        .map(|t| serde_json::json!({"type": "text", "text": t}))
        .collect();
    let mut result = serde_json::Map::new();
    result.insert("content".into(), serde_json::Value::Array(content));
    if is_error {
        result.insert("isError".into(), serde_json::Value::Bool(true));
    }
    if modern {
        result.insert("resultType".into(), "complete".into());
    }
    let id_value: serde_json::Value = serde_json::from_str(id).unwrap_or(serde_json::Value::Null);
    serde_json::json!({"jsonrpc": "2.0", "id": id_value, "result": result}).to_string()
}

/// The first MCP revision whose results carry `resultType`.
const MODERN: &str = "2026-07-28";

/// Whether a request speaks MCP 2026-07-28 or later: its protocol version
/// travels in `params._meta` (and the `MCP-Protocol-Version` header).
pub(crate) fn is_modern(version: Option<&str>) -> bool {
    version.is_some_and(|v| v >= MODERN)
}
