//! Captured payloads, as people save them: what shape a file holds, and the
//! JSON-RPC response bodies the plugin would have seen for it.
//!
//! Shapes, tried in this order:
//! - a JSON-RPC response or batch (`{"jsonrpc":"2.0","id":..,"result":..}`);
//! - a bare `CallToolResult` (`{"content":[...]}`), answered as id 1;
//! - any other JSON text, or plain text: one text block of id 1;
//! - a `text/event-stream` capture: each event's data that is a JSON-RPC
//!   response (progress notifications and pings are skipped).

use serde::Serialize;
use serde_json::Value;

use mcp_toon_engine::sse::{SseFramer, Unit};

/// The id given to results captured without their JSON-RPC envelope.
const SYNTHETIC_ID: u64 = 1;

/// What a payload file held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    /// A JSON-RPC response or batch, measured as it is.
    #[serde(rename = "jsonrpc")]
    JsonRpc,
    /// A bare `CallToolResult`.
    CallToolResult,
    /// A server-sent events stream.
    Sse,
    /// A JSON text that is neither of the above: one text block.
    Json,
    /// Plain text (HTML, prose, ...): one text block.
    Text,
    /// Bytes that are not UTF-8, handed to the pipeline as they are.
    Binary,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::JsonRpc => "jsonrpc",
            Kind::CallToolResult => "call_tool_result",
            Kind::Sse => "sse",
            Kind::Json => "json",
            Kind::Text => "text",
            Kind::Binary => "binary",
        }
    }
}

/// The response bodies a payload stands for, each as the plugin would
/// receive it from a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bodies {
    pub(crate) kind: Kind,
    pub(crate) bodies: Vec<Vec<u8>>,
}

/// Works out the shape of a payload and the response bodies it stands for.
pub(crate) fn bodies(bytes: &[u8]) -> Bodies {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Bodies {
            kind: Kind::Binary,
            bodies: vec![bytes.to_vec()],
        };
    };
    let one = |kind: Kind, body: String| Bodies {
        kind,
        bodies: vec![body.into_bytes()],
    };
    match serde_json::from_str::<Value>(text) {
        Ok(value) if is_response_or_batch(&value) => one(Kind::JsonRpc, text.to_string()),
        Ok(value) if is_call_tool_result(&value) => one(
            Kind::CallToolResult,
            format!(r#"{{"jsonrpc":"2.0","id":{SYNTHETIC_ID},"result":{text}}}"#),
        ),
        Ok(_) => one(Kind::Json, text_block(text)),
        Err(_) if looks_like_sse(text) => Bodies {
            kind: Kind::Sse,
            bodies: sse_data(text)
                .into_iter()
                .filter(|d| {
                    serde_json::from_str::<Value>(d).is_ok_and(|v| is_response_or_batch(&v))
                })
                .map(String::into_bytes)
                .collect(),
        },
        Err(_) => one(Kind::Text, text_block(text)),
    }
}

/// JSON-RPC 2.0 §5: a response has an `id` and one of `result` / `error`.
fn is_response(v: &Value) -> bool {
    v.as_object().is_some_and(|o| {
        o.contains_key("id") && (o.contains_key("result") || o.contains_key("error"))
    })
}

fn is_response_or_batch(v: &Value) -> bool {
    match v {
        Value::Array(items) => !items.is_empty() && items.iter().all(is_response),
        _ => is_response(v),
    }
}

/// MCP 2025-06-18 "Tools": a `CallToolResult` has a `content` array.
fn is_call_tool_result(v: &Value) -> bool {
    v.get("content").is_some_and(Value::is_array)
}

/// A response carrying `text` as its one text content item.
fn text_block(text: &str) -> String {
    let literal = serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_string());
    format!(
        r#"{{"jsonrpc":"2.0","id":{SYNTHETIC_ID},"result":{{"content":[{{"type":"text","text":{literal}}}]}}}}"#
    )
}

/// A text is taken for an event stream when its first non-blank line is a
/// field or a comment and some line is a `data` field.
fn looks_like_sse(text: &str) -> bool {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines().map(|l| l.trim_end_matches('\r'));
    let first = lines.clone().find(|l| !l.is_empty()).unwrap_or_default();
    let field_or_comment = ["data", "event", "id", "retry"]
        .iter()
        .any(|f| first.strip_prefix(f).is_some_and(|r| r.starts_with(':')))
        || first.starts_with(':');
    field_or_comment && lines.any(|l| l == "data" || l.starts_with("data:"))
}

/// The data of each event of a stream, cut by the framer the plugin uses
/// (`mcp_toon_engine::sse`, WHATWG HTML §9.2.5–9.2.6). Unlike a browser, a last event
/// without its blank line still counts: captures get cut short.
pub(crate) fn sse_data(text: &str) -> Vec<String> {
    let mut framer = SseFramer::new(text.len().saturating_add(2));
    let mut units = framer.push(text.as_bytes());
    units.extend(framer.push(b"\n\n"));
    units.extend(framer.finish());
    units
        .into_iter()
        .filter_map(|u| match u {
            Unit::Event(e) => e.data().map(str::to_string),
            Unit::Passthrough { .. } => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let rpc = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#;
        assert_eq!(bodies(rpc).kind, Kind::JsonRpc);
        assert_eq!(bodies(rpc).bodies, vec![rpc.to_vec()]);
        let batch = br#"[{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}}]"#;
        assert_eq!(bodies(batch).kind, Kind::JsonRpc);
        let ctr = bodies(br#"{"content":[{"type":"text","text":"hi"}]}"#);
        assert_eq!(ctr.kind, Kind::CallToolResult);
        assert_eq!(
            ctr.bodies,
            vec![
                br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#
                    .to_vec()
            ]
        );
        let json = bodies(b"[1,2]");
        assert_eq!(json.kind, Kind::Json);
        assert_eq!(
            json.bodies,
            vec![br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"[1,2]"}]}}"#.to_vec()]
        );
        assert_eq!(bodies(b"<p>hello</p>").kind, Kind::Text);
        assert_eq!(bodies(b"data is here").kind, Kind::Text);
        assert_eq!(bodies(&[0xff, 0x00]).kind, Kind::Binary);
    }

    #[test]
    fn sse_keeps_responses_only() {
        let stream = "\u{feff}: ping\r\n\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\r\n\r\n\
                      id: 9\rdata: {\"jsonrpc\":\"2.0\",\r\ndata:\"id\":2,\"result\":{}}\n\ndata: not json\n\n";
        let b = bodies(stream.as_bytes());
        assert_eq!(b.kind, Kind::Sse);
        assert_eq!(
            b.bodies,
            vec![b"{\"jsonrpc\":\"2.0\",\n\"id\":2,\"result\":{}}".to_vec()]
        );
    }

    #[test]
    fn sse_last_event_without_blank_line_counts() {
        assert_eq!(sse_data("data: a\ndata\ndata: b"), vec!["a\n\nb"]);
        assert_eq!(sse_data("data:\n\n"), vec![String::new()]);
        assert!(sse_data(": only a comment\n\nevent: x\n\n").is_empty());
    }
}
