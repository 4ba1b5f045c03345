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
use crate::page::PageHost;

/// A key-value store shared by all streams of the host (its page-store
/// calls, [`PageHost`], default to "none").
pub trait SessionStore: PageHost {
    fn get(&self, key: &str) -> Option<Vec<u8>>;
    /// Stores `value`; an empty value clears the key.
    fn set(&mut self, key: &str, value: &[u8]);
}

/// For hosts without shared state: legacy streams fall back to shapes.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoSessions;

impl PageHost for NoSessions {}

impl SessionStore for NoSessions {
    fn get(&self, _key: &str) -> Option<Vec<u8>> {
        None
    }
    fn set(&mut self, _key: &str, _value: &[u8]) {}
}

#[derive(Serialize, Deserialize)]
struct Record {
    /// Session and JSON-RPC id: a slot is shared, so a reader checks both.
    s: String,
    id: String,
    m: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    t: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    i: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    q: Option<String>,
}

/// Records live in a fixed number of slots. Proxy-wasm (ABI 0.2.1) cannot
/// delete a shared-data key, only empty it, so a key per session and id
/// would leave one key in the host's memory for every call ever made.
/// Two calls in flight on the same slot: the later overwrites the earlier,
/// whose result then falls back to its shape (server-level settings) —
/// never to another call's tool.
const SLOTS: u32 = 4096;

fn key(session: &str, id: &str) -> String {
    // FNV-1a: deterministic on every worker (the slot is found again by
    // another VM), and cheap.
    let mut hash: u32 = 0x811c_9dc5;
    for byte in session.bytes().chain([0]).chain(id.bytes()) {
        hash = (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193);
    }
    format!("mcp_toon.legacy.{}", hash % SLOTS)
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
                s: session.clone(),
                id: call.id.clone(),
                m: call.method.clone(),
                t: call.tool.clone(),
                i: call.intent.clone(),
                q: call.query.clone(),
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
                let record = serde_json::from_slice::<Record>(&value)
                    .ok()
                    .filter(|r| r.s == s && r.id == id)?;
                sessions.set(&k, b"");
                Some(record)
            });
            match recorded {
                Some(r) => calls.push(Call {
                    id,
                    method: r.m,
                    tool: r.t,
                    intent: r.i,
                    arguments: None,
                    query: r.q,
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
                        arguments: None,
                        query: None,
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

    #[test]
    fn records_stay_within_a_fixed_number_of_keys() {
        let mut keys = std::collections::HashSet::new();
        for session in 0..50 {
            for id in 0..1000 {
                keys.insert(key(&format!("session{session}"), &id.to_string()));
            }
        }
        assert!(keys.len() <= SLOTS as usize, "{}", keys.len());
        // Spread over the slots, not piled on a few.
        assert!(keys.len() > SLOTS as usize * 9 / 10, "{}", keys.len());
    }
}

#[cfg(test)]
mod slot_tests {
    use std::collections::HashMap;

    use super::*;
    use crate::mcp::RequestInfo;

    #[derive(Default)]
    struct Store(HashMap<String, Vec<u8>>);

    impl crate::page::PageHost for Store {}

    impl SessionStore for Store {
        fn get(&self, key: &str) -> Option<Vec<u8>> {
            self.0.get(key).cloned()
        }
        fn set(&mut self, key: &str, value: &[u8]) {
            self.0.insert(key.to_string(), value.to_vec());
        }
    }

    /// Two (session, id) pairs that share a slot.
    fn colliding() -> ((String, String), (String, String)) {
        let first = ("s0".to_string(), "1".to_string());
        let slot = key(&first.0, &first.1);
        for n in 1.. {
            let other = (format!("s{n}"), "1".to_string());
            if key(&other.0, &other.1) == slot {
                return (first, other);
            }
        }
        unreachable!()
    }

    fn exchange_in(session: &str) -> Exchange {
        let settings = std::sync::Arc::new(crate::config::Settings::from_json("{}").unwrap());
        let mut e = Exchange::new(settings);
        e.session = Some(session.to_string());
        e
    }

    fn post(store: &mut Store, session: &str, id: &str, tool: &str) {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}"}}}}"#
        );
        let info = RequestInfo::parse_with_intent(body.as_bytes(), None).unwrap();
        exchange_in(session).remember_calls(&info, store);
    }

    const RESULT: &str =
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}"#;

    #[test]
    fn a_record_overwritten_in_its_slot_is_never_read_as_another_call() {
        let ((s1, id1), (s2, id2)) = colliding();
        let mut store = Store::default();
        post(&mut store, &s1, &id1, "first_tool");
        post(&mut store, &s2, &id2, "second_tool");
        assert_eq!(store.0.len(), 1, "one slot");
        // The first session's result: its record was overwritten, so the
        // shape decides (no tool), not the other session's record.
        let calls = exchange_in(&s1).legacy_requests(RESULT, &mut store).calls;
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].tool, None);
        // The record that is there still serves its own call.
        let calls = exchange_in(&s2).legacy_requests(RESULT, &mut store).calls;
        assert_eq!(calls[0].tool.as_deref(), Some("second_tool"));
    }
}
