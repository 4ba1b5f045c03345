//! A call of the page tool, answered by the plugin from the request path.
//!
//! The reply is what an MCP server would send (MCP 2025-06-18 "Tools":
//! a JSON-RPC response with the request's id whose result is a
//! `CallToolResult`), as JSON or one SSE event as the client accepts. A
//! handle that is unknown, expired, forged, or another owner's (another
//! caller, session or server: [`crate::page::owner`]) gets a tool error
//! (`isError: true`) telling the agent to call the original tool again
//! with narrower arguments. The owner is checked before anything else is
//! done for the call: a foreign handle is never served from the store and
//! never re-issued.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::call::decision;
pub(crate) use super::call::{refuse, Context, PageCall};
use super::reissue::Reissue;
use crate::config::ReissuePolicy;
use crate::mcp::{id_key, TOOLS_CALL};
use crate::outcome::{Outcome, Reason, Stage};
use crate::page::handle::{Handle, Refused};
use crate::page::keys;
use crate::page::store::{Miss, Store};
use crate::page::{tool_result, tools, LocalReply};
use crate::report::Decision;
use crate::shared::Services;

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    method: Option<String>,
    #[serde(borrow)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    name: Option<String>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta", borrow)]
    meta: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Arguments {
    handle: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Meta {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    version: Option<String>,
}

/// A page call, or one whose id is too long to copy into a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Call(PageCall),
    /// Its id's JSON text is longer than `max_id_bytes`: it is answered
    /// with a JSON-RPC error whose id is null (JSON-RPC 2.0 §5: the id
    /// could not be taken), and never copied anywhere.
    IdTooLong,
}

/// The page call in `body`: one JSON-RPC request (not a batch) calling
/// `tool_name`, with an id of at most `max_id` bytes of JSON text.
pub fn parse(body: &[u8], tool_name: &str, max_id: usize) -> Option<Parsed> {
    let text = std::str::from_utf8(body).ok()?;
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let r: Request = serde_json::from_str(text).ok()?;
    let params = r.params?;
    if r.method.as_deref() != Some(TOOLS_CALL) || params.name.as_deref() != Some(tool_name) {
        return None;
    }
    let raw_id = r.id?;
    if raw_id.get().len() > max_id {
        return Some(Parsed::IdTooLong);
    }
    let id = id_key(raw_id)?;
    if id.len() > max_id {
        return Some(Parsed::IdTooLong);
    }
    let handle = params
        .arguments
        .and_then(|a| serde_json::from_str::<Arguments>(a.get()).ok())
        .and_then(|a| a.handle)
        .and_then(|h| h.as_str().map(str::to_string));
    let version = params
        .meta
        .and_then(|m| serde_json::from_str::<Meta>(m.get()).ok())
        .and_then(|m| m.version);
    Some(Parsed::Call(PageCall {
        id,
        handle,
        meta: params.meta.map(|m| m.get().to_string()),
        modern: crate::page::is_modern(version.as_deref()),
    }))
}

/// The answer to a page call whose id is too long: HTTP 400 with a
/// JSON-RPC error, id null (MCP 2025-11-25 "Streamable HTTP": a POST the
/// server cannot accept gets 400, optionally with an error response without
/// an id).
pub(crate) fn id_too_long() -> (LocalReply, Decision) {
    let message = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"The request id is longer than this gateway accepts (max_id_bytes)."}}"#;
    let reply = LocalReply {
        status: 400,
        headers: vec![
            ("content-type".to_string(), "application/json".to_string()),
            ("cache-control".to_string(), "no-store".to_string()),
        ],
        body: message.as_bytes().to_vec(),
    };
    let d = Decision {
        stage: Stage::Page,
        outcome: Outcome::Passthrough(Reason::IdTooLong),
        id: None,
        tool: None,
        block: None,
        bytes_before: 0,
        bytes_after: 0,
        lossless: false,
        transform: None,
    };
    (reply, d)
}

/// What the request path does with a page call.
#[derive(Debug)]
pub(crate) enum Answer {
    /// Send this reply; record this decision.
    Reply(LocalReply, Decision),
    /// Call the tool again upstream, then [`Reissue::finish`].
    Reissue(Box<Reissue>),
}

/// Answers a page call: from the store, by calling the tool again, or with
/// a tool error.
pub(crate) fn answer<H: Services + ?Sized>(
    call: &PageCall,
    cx: &Context<'_>,
    host: &mut H,
) -> Answer {
    let header = cx
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("mcp-protocol-version"))
        .map(|(_, v)| v.as_str());
    let modern_call;
    let call = if !call.modern && crate::page::is_modern(header) {
        modern_call = PageCall {
            modern: true,
            ..call.clone()
        };
        &modern_call
    } else {
        call
    };
    let paging = &cx.settings.paging;
    let refused = |reason: Reason, tool: Option<&str>| {
        let (reply, d) = refuse(call, cx.framing, reason, tool);
        Answer::Reply(reply, d)
    };
    let Some(text) = call.handle.as_deref() else {
        return refused(Reason::PageMissing, None);
    };
    let keys = keys::derive(&paging.keys);
    let (handle, opened_with) = match Handle::decode(text, &keys) {
        Ok(h) => h,
        Err(Refused::Malformed | Refused::Forged) => return refused(Reason::PageForged, None),
    };
    let tool = handle.call.as_ref().map(|c| c.tool.clone());
    let now_s = u32::try_from(host.now_ms() / 1000).unwrap_or(u32::MAX);
    let mut miss = Miss::Unknown;
    let slot = handle
        .slot(paging.store_pages)
        .filter(|_| paging.store_bytes > 0);
    // The local key only where a page may be stored: reading it may make
    // it.
    let local = slot.and_then(|_| keys::local(host));
    if let Some((slot, local)) = slot.zip(local) {
        let store = Store::new(host, paging.store_pages, paging.store_bytes);
        let binding = cx.owner.binding(&local);
        match store.read(slot, &handle.id, handle.page, &binding, now_s) {
            Ok(kept) => {
                let message =
                    tool_result(&call.id, &[&kept.text, &kept.notice], false, call.modern);
                let owner = Some(kept.tool.as_str()).filter(|t| !t.is_empty());
                let d = decision(call, owner, Outcome::Paged, kept.text.len());
                let summary = cx.settings.hold_headers.then(|| "paged=1".to_string());
                return Answer::Reply(cx.framing.reply(&message, summary), d);
            }
            Err(m) => miss = m,
        }
    }
    if miss == Miss::Foreign {
        return refused(Reason::PageForeign, tool.as_deref());
    }
    let Some(signed) = handle.call.as_ref() else {
        let reason = if miss == Miss::Expired {
            Reason::PageExpired
        } else {
            Reason::PageUnknown
        };
        return refused(reason, None);
    };
    // The owner first: a foreign handle is never re-issued.
    let owner_key = keys.get(opened_with).map(|k| k.owner);
    if owner_key.map(|k| cx.owner.binding(&k)) != Some(signed.binding) {
        return refused(Reason::PageForeign, tool.as_deref());
    }
    if signed.expires_s <= now_s || miss == Miss::Expired {
        return refused(Reason::PageExpired, tool.as_deref());
    }
    let policy = cx.settings.policy(cx.scope, Some(&signed.tool));
    let safe = match policy.reissue {
        ReissuePolicy::Always => true,
        ReissuePolicy::Never => false,
        ReissuePolicy::Auto => {
            signed.reissue
                || tools::known_safe(host, &cx.stream.server(), &signed.tool) == Some(true)
        }
    };
    // Opened with an older key: the handles this page call hands on are
    // sealed with the first key, so their binding is the owner's under it.
    let mut handle = handle;
    if opened_with != 0 {
        if let (Some(first), Some(c)) = (keys.first(), handle.call.as_mut()) {
            c.binding = cx.owner.binding(&first.owner);
        }
    }
    let mark_key = keys.first().map(|k| k.mark);
    match (
        safe,
        Reissue::new(call, &handle, cx, mark_key.as_ref(), now_s),
    ) {
        (true, Some(r)) => Answer::Reissue(Box::new(r)),
        _ => refused(Reason::PageUnknown, tool.as_deref()),
    }
}
