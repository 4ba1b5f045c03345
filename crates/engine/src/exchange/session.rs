//! The HTTP+SSE transport of MCP 2024-11-05: the client opens a GET event
//! stream, the server's first event (`event: endpoint`) names a URL carrying
//! the session (`/messages/?session_id=…` in the Python SDK,
//! `/messages?sessionId=…` in the TypeScript SDK), requests go as POSTs to
//! that URL and are answered `202 Accepted`, and the responses arrive as
//! `message` events on the GET stream.
//!
//! The POST and the GET are different streams, so a response on the GET
//! stream is paired with its request through records the host shares
//! between streams (proxy-wasm shared data): once the server accepted a
//! POST (its `202`), each of its calls is recorded — session, JSON-RPC id,
//! method, tool, intent — and the GET stream reads and clears the record
//! when the response passes. Where no record is found (another proxy saw
//! the POST, or the host shares nothing), a `result` with a `content` array
//! is recognised as a tool result by its shape and the top-level settings
//! apply.
//!
//! Shared data lives outside the VM's memory limit and is written by every
//! client, so the records are bounded and guarded:
//! - a fixed number of slots ([`SLOTS`]): proxy-wasm (ABI 0.2.1) cannot
//!   delete a key, only empty it, so a key per call would grow the host's
//!   memory with every call ever made;
//! - a session takes at most `legacy_session_slots` of them: a call's slot
//!   is chosen by its session and its lane, one of that many, which
//!   consecutive integer ids take in turn (any other id by its hash), so a
//!   session that never reads its GET stream overwrites only its own
//!   records (`legacy_session_full`), never another session's;
//! - a record's fields are within the request limits (`max_id_bytes`,
//!   `max_tool_name_bytes`, `trim.max_intent_bytes`; a session is at most
//!   128 bytes), and nothing is written for a POST the server did not
//!   accept;
//! - a slot is chosen by HMAC-SHA256 (RFC 2104) under a key drawn from the
//!   host's randomness once per process, so no client can aim at another
//!   session's slot;
//! - a slot is written by compare-and-swap, only when it is empty, expired
//!   (`legacy_record_ttl_ms`) or holds another call of the same session: a
//!   live record of another session (or of the same call) is never
//!   replaced, and the new call falls back to its shape, counted
//!   `legacy_slot_busy`.
//!
//! What no gateway can fix: whoever holds a session id is that session to
//! the server too (the 2024-11-05 transport has no other credential), so a
//! client that learnt another's session id can send calls in it.

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::Exchange;
use crate::mcp::{self, Call, RequestInfo};
use crate::outcome::Reason;
use crate::report::Decision;
use crate::shared::{Services, Unstored};

/// One recorded call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Record {
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
    /// The intent was past its limit.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    l: bool,
    /// Unix milliseconds after which another session may take the slot.
    exp: u64,
}

/// Slots of records. Two calls in flight on one slot: the later one falls
/// back to its shape (server-level settings) — never to another call's
/// tool or intent.
pub const SLOTS: u32 = crate::config::LEGACY_SLOTS;
/// The shared-data key of the slot hash's key.
const HASH_KEY: &str = "mcp_toon.legacy.key";
const HASH_KEY_BYTES: usize = 16;

/// The key of the slot hash: made from the host's randomness by the first
/// stream that records a call (or a server's declared arguments,
/// `declared.rs`), and shared by every VM of the process (a GET stream on
/// another worker must find the slot again). Two first writers racing both
/// write; the later key stands, and a call recorded under the earlier one
/// falls back to its shape.
pub(super) fn hash_key(sessions: &mut dyn Services, create: bool) -> Option<Vec<u8>> {
    let stored = sessions.get(HASH_KEY);
    if let Some((key, _)) = &stored {
        if key.len() == HASH_KEY_BYTES {
            return stored.map(|(key, _)| key);
        }
    }
    if !create {
        return None;
    }
    let mut key = [0u8; HASH_KEY_BYTES];
    if !sessions.random(&mut key) {
        return None;
    }
    let cas = stored.map_or(0, |(_, cas)| cas);
    sessions.set(HASH_KEY, &key, cas).ok();
    sessions
        .get(HASH_KEY)
        .map(|(key, _)| key)
        .filter(|key| key.len() == HASH_KEY_BYTES)
}

/// HMAC-SHA256 (RFC 2104) under the slot key of `parts`, each followed
/// by a zero byte, as a number below `below`: the one keyed hash of every
/// slot choice (legacy records, their lanes, servers' declared arguments).
pub(super) fn keyed(key: &[u8], parts: &[&[u8]], below: u64) -> Option<u64> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).ok()?;
    for part in parts {
        mac.update(part);
        mac.update(&[0]);
    }
    let digest = mac.finalize().into_bytes();
    let mut first = [0u8; 8];
    first.copy_from_slice(digest.get(..8)?);
    Some(u64::from_le_bytes(first) % below.max(1))
}

/// Which of its session's `lanes` a call takes: an id that is a JSON
/// integer (what the SDKs send, counting up) takes the next lane after its
/// predecessor's, so up to `lanes` calls in flight never share one; any
/// other id takes the lane its hash (under the slot key) picks.
fn lane(key: &[u8], id: &str, lanes: usize) -> Option<u64> {
    let lanes = u64::try_from(lanes.max(1)).ok()?;
    match id.parse::<u64>() {
        Ok(n) => Some(n % lanes),
        Err(_) => keyed(key, &[b"lane", id.as_bytes()], lanes),
    }
}

/// The slot of a call: its session's lane ([`lane`]) through the keyed
/// hash, so a session's calls take at most `lanes` slots, and no client
/// can aim at another session's.
fn slot(key: &[u8], session: &str, id: &str, lanes: usize) -> Option<String> {
    let lane = lane(key, id, lanes)?;
    let n = keyed(
        key,
        &[session.as_bytes(), &lane.to_le_bytes()],
        u64::from(SLOTS),
    )?;
    Some(format!("mcp_toon.legacy.{n}"))
}

/// How a record went into its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claimed {
    /// The slot was empty, expired or read.
    Free,
    /// It held a live record of another call of the same session, which
    /// that call now goes without.
    OverOwn,
    /// A live record of another session (or of the same call) holds it, or
    /// the host kept nothing: not written.
    Busy,
}

/// Writes `record` into its slot unless a live record of another session,
/// or of the same call, holds it.
fn claim(sessions: &mut dyn Services, slot: &str, record: &Record, now: u64) -> Claimed {
    let Ok(value) = serde_json::to_vec(record) else {
        return Claimed::Busy;
    };
    // A write between our read and our write (another worker) sends us
    // round again; three rounds settle any real contention.
    for _ in 0..3 {
        let (held, cas) = sessions.get(slot).unwrap_or_default();
        let mut over_own = false;
        if let Ok(h) = serde_json::from_slice::<Record>(&held) {
            let live = h.exp > now;
            if live && (h.s != record.s || h.id == record.id) {
                return Claimed::Busy;
            }
            over_own = live;
        }
        match sessions.set(slot, &value, cas) {
            Ok(()) if over_own => return Claimed::OverOwn,
            Ok(()) => return Claimed::Free,
            Err(Unstored::Changed) => continue,
            Err(Unstored::Refused) => return Claimed::Busy,
        }
    }
    Claimed::Busy
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
        self.legacy.session = session_in(path);
    }

    /// A POST of a 2024-11-05 session: the calls to record once the server
    /// accepts it.
    pub(super) fn note_calls(&mut self, info: &RequestInfo) {
        let Some(session) = &self.legacy.session else {
            return;
        };
        self.legacy.pending = info
            .calls
            .iter()
            .filter(|c| c.method == mcp::TOOLS_CALL || c.method == mcp::TOOLS_LIST)
            .map(|c| Record {
                s: session.clone(),
                id: c.id.clone(),
                m: c.method.clone(),
                t: c.tool.clone(),
                i: c.intent.clone(),
                q: c.query
                    .clone()
                    .filter(|q| q.len() <= self.settings.project.max_query_bytes),
                l: c.intent_too_long,
                exp: 0,
            })
            .collect();
    }

    /// The server accepted the POST (`202`): each noted call goes where the
    /// GET stream will look for it.
    pub(super) fn accepted(&mut self, sessions: &mut dyn Services) {
        let pending = std::mem::take(&mut self.legacy.pending);
        if pending.is_empty() {
            return;
        }
        // No key (a host without randomness or shared data): the results
        // are recognised by their shape.
        let Some(key) = hash_key(sessions, true) else {
            return;
        };
        let now = sessions.now_ms();
        let exp = now.saturating_add(self.settings.legacy_record_ttl_ms);
        let lanes = self.settings.legacy_session_slots;
        for mut record in pending {
            record.exp = exp;
            let Some(slot) = slot(&key, &record.s, &record.id, lanes) else {
                continue;
            };
            let reason = match claim(sessions, &slot, &record, now) {
                Claimed::Free => continue,
                Claimed::OverOwn => Reason::LegacySessionFull,
                Claimed::Busy => Reason::LegacySlotBusy,
            };
            self.report.push(Decision {
                id: Some(record.id.clone()),
                tool: record.t.clone(),
                ..Decision::response(reason)
            });
        }
    }

    /// The `endpoint` event of a legacy GET stream names the session.
    pub(super) fn endpoint_event(&mut self, data: &str) {
        if self.legacy.get_stream {
            self.legacy.session = session_in(data.trim());
        }
    }

    /// The requests the messages of one legacy event answer: recorded ones,
    /// else tool results recognised by shape. An id past `max_id_bytes` is
    /// not followed: its copies would go into every block and decision.
    pub(super) fn legacy_requests(
        &mut self,
        data: &str,
        sessions: &mut dyn Services,
    ) -> RequestInfo {
        let mut info = RequestInfo::default();
        let key = self
            .legacy
            .session
            .is_some()
            .then(|| hash_key(sessions, false))
            .flatten();
        let now = sessions.now_ms();
        // Only ids and shapes: the texts are the pipeline's to read.
        let messages = mcp::scan_response_reading(data, mcp::Texts::Check);
        for message in messages.unwrap_or_default() {
            let Some(id) = message.id else { continue };
            if id.len() > self.settings.max_id_bytes {
                self.report.push(Decision::response(Reason::IdTooLong));
                continue;
            }
            let recorded = match (&self.legacy.session, &key) {
                (Some(s), Some(k)) => {
                    let lanes = self.settings.legacy_session_slots;
                    take(sessions, k, s, &id, lanes, now)
                }
                _ => None,
            };
            match recorded {
                Some(r) => info.calls.push(Call {
                    id,
                    method: r.m,
                    tool: r.t,
                    intent: r.i,
                    arguments: None,
                    intent_too_long: r.l,
                    query: r.q,
                }),
                None if message.tool.is_some_and(|r| r.content.is_some()) => {
                    info.calls.push(Call {
                        id,
                        method: mcp::TOOLS_CALL.to_string(),
                        ..Call::default()
                    })
                }
                None => {}
            }
        }
        info
    }
}

/// The record of `(session, id)`, cleared once read; `None` when its slot
/// holds another call's record or an expired one.
fn take(
    sessions: &mut dyn Services,
    key: &[u8],
    session: &str,
    id: &str,
    lanes: usize,
    now: u64,
) -> Option<Record> {
    let slot = slot(key, session, id, lanes)?;
    let (value, cas) = sessions.get(&slot).filter(|(v, _)| !v.is_empty())?;
    let record = serde_json::from_slice::<Record>(&value)
        .ok()
        .filter(|r| r.s == session && r.id == id && r.exp > now)?;
    // Changed since (the same session's next call took the slot): that
    // record stays for its own result.
    sessions.set(&slot, b"", cas).ok();
    Some(record)
}

/// The stream's part in a 2024-11-05 HTTP+SSE session.
#[derive(Debug, Default)]
pub(super) struct Legacy {
    /// The session's GET event stream: requests come from other streams.
    pub(super) get_stream: bool,
    /// The session: from a POST's query, or a GET stream's `endpoint`
    /// event.
    pub(super) session: Option<String>,
    /// A POST's calls, recorded once the server accepts it.
    pub(super) pending: Vec<Record>,
}

#[cfg(test)]
mod tests;
