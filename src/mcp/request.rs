//! What a request body asks: JSON-RPC 2.0 §4 (a request object) or §6 (a
//! batch, an array of them; MCP 2025-03-26 allowed batches, 2025-06-18
//! removed them, servers in the field still accept both).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{id_key, TOOLS_CALL};

/// One request (not a notification: those have no id and no response).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Call {
    pub id: String,
    pub method: String,
    /// `params.name` of a `tools/call`.
    pub tool: Option<String>,
    /// The declared intent of a `tools/call` (see [`crate::intent`]).
    pub intent: Option<String>,
    /// `params.arguments` of a `tools/call` as sent, when at most
    /// [`crate::page::handle::MAX_ARGUMENTS`] bytes: a signed page handle
    /// carries them to call the tool again.
    pub arguments: Option<String>,
}

/// The requests of one body, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestInfo {
    pub calls: Vec<Call>,
}

#[derive(Deserialize)]
struct RawRequest<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CallParams<'a> {
    name: Option<String>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

impl RequestInfo {
    /// Parses a JSON-RPC request body; `None` when it is not one.
    pub fn parse(body: &[u8]) -> Option<RequestInfo> {
        Self::parse_with_intent(body, None)
    }

    /// Like [`RequestInfo::parse`], also reading each call's declared intent
    /// from the argument named `intent_argument`.
    pub fn parse_with_intent(body: &[u8], intent_argument: Option<&str>) -> Option<RequestInfo> {
        let text = std::str::from_utf8(body).ok()?;
        let trimmed = text.trim_start();
        let raws: Vec<&RawValue> = if trimmed.starts_with('[') {
            serde_json::from_str(text).ok()?
        } else {
            vec![serde_json::from_str(text).ok()?]
        };
        let mut calls = Vec::new();
        for raw in raws {
            let Ok(req) = serde_json::from_str::<RawRequest>(raw.get()) else {
                continue;
            };
            let (Some(id), Some(method)) = (req.id.and_then(id_key), req.method) else {
                continue;
            };
            let params = req.params.filter(|p| p.get().starts_with('{'));
            let (tool, arguments, intent) = match params {
                Some(p) if method == TOOLS_CALL => {
                    let parsed = serde_json::from_str::<CallParams>(p.get()).ok();
                    let arguments = parsed
                        .as_ref()
                        .and_then(|c| c.arguments)
                        .map(|a| a.get())
                        .filter(|a| a.len() <= crate::page::handle::MAX_ARGUMENTS)
                        .map(str::to_string);
                    (
                        parsed.and_then(|c| c.name),
                        arguments,
                        intent_argument.and_then(|arg| crate::intent::declared(p, arg)),
                    )
                }
                _ => (None, None, None),
            };
            calls.push(Call {
                id,
                method: method.into_owned(),
                tool,
                intent,
                arguments,
            });
        }
        Some(RequestInfo { calls })
    }

    /// The request a response id answers.
    pub fn call(&self, id: &str) -> Option<&Call> {
        self.calls.iter().find(|c| c.id == id)
    }

    pub fn has_method(&self, method: &str) -> bool {
        self.calls.iter().any(|c| c.method == method)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_call_with_tool() {
        let r = RequestInfo::parse(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"rows","arguments":{}}}"#);
        let r = r.unwrap_or_default();
        assert_eq!(
            r.calls,
            vec![Call {
                id: "7".into(),
                method: "tools/call".into(),
                tool: Some("rows".into()),
                intent: None,
                arguments: Some("{}".into()),
            }]
        );
    }

    #[test]
    fn batch_skips_notifications_and_keeps_order() {
        let r = RequestInfo::parse(
            br#"[{"jsonrpc":"2.0","method":"notifications/initialized"},
                {"jsonrpc":"2.0","id":"a\u0062","method":"tools/list"},
                {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t"}}]"#,
        )
        .unwrap_or_default();
        assert_eq!(r.calls.len(), 2);
        assert_eq!(
            r.call("\"ab\"").map(|c| c.method.as_str()),
            Some("tools/list")
        );
        assert_eq!(r.call("2").and_then(|c| c.tool.as_deref()), Some("t"));
    }

    #[test]
    fn not_json_rpc() {
        assert_eq!(RequestInfo::parse(b"hello"), None);
        assert_eq!(RequestInfo::parse(&[0xff, 0xfe]), None);
    }
}
