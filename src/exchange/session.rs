//! The HTTP+SSE transport of MCP 2024-11-05: the client opens a GET event
//! stream, the server's first event (`event: endpoint`) names a URL carrying
//! the session (`/messages/?session_id=…` in the Python SDK,
//! `/messages?sessionId=…` in the TypeScript SDK), requests go as POSTs to
//! that URL and are answered `202 Accepted`, and the responses arrive as
//! `message` events on the GET stream.
//!
//! The POST and the GET are different streams, so a response on the GET
//! stream is paired with its request through a store the host shares
//! between streams (proxy-wasm shared data): each POST records, per
//! JSON-RPC id, the method, tool and intent; the GET stream reads and clears
//! the record when the response passes. Where no record is found (another
//! proxy saw the POST, or the host shares nothing), a `result` with a
//! `content` array is recognised as a tool result by its shape and the
//! top-level settings apply.

use serde::{Deserialize, Serialize};

use super::Exchange;
use crate::mcp::{self, Call, RequestInfo};

/// A key-value store shared by all streams of the host.
pub trait SessionStore {
    fn get(&self, key: &str) -> Option<Vec<u8>>;
    /// Stores `value`; an empty value clears the key.
    fn set(&mut self, key: &str, value: &[u8]);
}

/// For hosts without shared state: legacy streams fall back to shapes.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoSessions;

impl SessionStore for NoSessions {
    fn get(&self, _key: &str) -> Option<Vec<u8>> {
        None
    }
    fn set(&mut self, _key: &str, _value: &[u8]) {}
}

#[derive(Serialize, Deserialize)]
struct Record {
    m: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    t: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    i: Option<String>,
}

fn key(session: &str, id: &str) -> String {
    format!("mcp_toon.session.{session}.{id}")
}

/// The session named in a URL's query (`session_id` or `sessionId`).
pub(super) fn session_in(url: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    let query = query.split('#').next().unwrap_or_default();
    query.split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        let ok = (name == "session_id" || name == "sessionId")
            && !value.is_empty()
            && value.len() <= 128
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.%".contains(&b));
        ok.then(|| value.to_string())
    })
}

impl Exchange {
    pub(super) fn session_of(&mut self, path: &str) {
        self.session = session_in(path);
    }

    /// A POST of a 2024-11-05 session: leave each call where the GET stream
    /// will look for it.
    pub(super) fn remember_calls(&self, info: &RequestInfo, sessions: &mut dyn SessionStore) {
        let Some(session) = &self.session else { return };
        for call in &info.calls {
            if call.method != mcp::TOOLS_CALL && call.method != mcp::TOOLS_LIST {
                continue;
            }
            let record = Record {
                m: call.method.clone(),
                t: call.tool.clone(),
                i: call.intent.clone(),
            };
            if let Ok(value) = serde_json::to_vec(&record) {
                sessions.set(&key(session, &call.id), &value);
            }
        }
    }

    /// The `endpoint` event of a legacy GET stream names the session.
    pub(super) fn endpoint_event(&mut self, data: &str) {
        if self.legacy {
            self.session = session_in(data.trim());
        }
    }

    /// The requests the messages of one legacy event answer: recorded ones,
    /// else tool results recognised by shape.
    pub(super) fn legacy_requests(
        &self,
        data: &str,
        sessions: &mut dyn SessionStore,
    ) -> RequestInfo {
        let mut calls = Vec::new();
        for message in mcp::parse_messages(data).unwrap_or_default() {
            let Some(id) = message.id else { continue };
            let recorded = self.session.as_deref().and_then(|s| {
                let k = key(s, &id);
                let value = sessions.get(&k).filter(|v| !v.is_empty())?;
                sessions.set(&k, b"");
                serde_json::from_slice::<Record>(&value).ok()
            });
            match recorded {
                Some(r) => calls.push(Call {
                    id,
                    method: r.m,
                    tool: r.t,
                    intent: r.i,
                }),
                None if message
                    .result
                    .and_then(mcp::tool_result)
                    .is_some_and(|r| r.content.is_some()) =>
                {
                    calls.push(Call {
                        id,
                        method: mcp::TOOLS_CALL.to_string(),
                        tool: None,
                        intent: None,
                    })
                }
                None => {}
            }
        }
        RequestInfo { calls }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_from_either_sdk_spelling() {
        assert_eq!(
            session_in("/messages/?session_id=ab12cd").as_deref(),
            Some("ab12cd")
        );
        assert_eq!(
            session_in("/messages?x=1&sessionId=9f-8e").as_deref(),
            Some("9f-8e")
        );
        assert_eq!(session_in("/mcp"), None);
        assert_eq!(session_in("/messages?session_id="), None);
        assert_eq!(session_in("/messages?session_id=a b"), None);
    }
}
