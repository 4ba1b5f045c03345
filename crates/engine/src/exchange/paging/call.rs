//! A call of the page tool as the request path reads it: what was asked
//! ([`PageCall`]), the request's context ([`Context`]), and the tool error
//! that refuses it ([`refuse`]); [`super::serve`] answers it, from the
//! store or by [`super::reissue`], and both refuse with the same words.

use crate::config::{ServerScope, Settings, StreamInfo};
use crate::outcome::{Outcome, Reason, Stage};
use crate::page::owner::Owner;
use crate::page::{tool_result, Framing, LocalReply};
use crate::report::Decision;
use crate::stage::budget::notice;

/// A call of the page tool, read from a request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageCall {
    /// The request's id as its JSON text.
    pub id: String,
    /// `arguments.handle`, when it is a string.
    pub(crate) handle: Option<String>,
    /// `params._meta` as sent (MCP 2026-07-28 carries the protocol version
    /// and client info there); a re-issued call carries it too.
    pub(crate) meta: Option<String>,
    /// The request speaks MCP 2026-07-28 or later (results need
    /// `resultType`).
    pub(crate) modern: bool,
}

/// The request's context a page call needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context<'a> {
    pub(crate) settings: &'a Settings,
    pub(crate) scope: ServerScope,
    pub(crate) stream: &'a StreamInfo,
    /// Whom the page call comes from ([`Owner::of`] its request).
    pub(crate) owner: &'a Owner,
    pub(crate) framing: Framing,
    /// `:path` and request headers of the page call, for a re-issued call.
    pub(crate) path: &'a str,
    pub(crate) headers: &'a [(String, String)],
}

pub(super) fn decision(
    call: &PageCall,
    tool: Option<&str>,
    outcome: Outcome,
    bytes: usize,
) -> Decision {
    Decision {
        stage: Stage::Page,
        outcome,
        id: Some(call.id.clone()),
        tool: tool.map(str::to_string),
        block: None,
        bytes_before: 0,
        bytes_after: bytes,
        lossless: false,
        transform: None,
    }
}

/// A tool error for a refused page call.
pub(crate) fn refuse(
    call: &PageCall,
    framing: Framing,
    reason: Reason,
    tool: Option<&str>,
) -> (LocalReply, Decision) {
    let why = match reason {
        Reason::PageExpired => "This page handle has expired.",
        Reason::PageForeign => "This page handle belongs to another caller, session or server.",
        Reason::PageChanged => "The result changed since its first page was sent (the tool returned something else when called again), so its pages would not fit together.",
        Reason::PageReissueFailed => "The rest of this result is not held by this gateway, and calling the tool again failed.",
        Reason::PageReissueTooLarge => "The rest of this result is not held by this gateway, and calling the tool again returned more than this gateway holds (paging.max_result_bytes).",
        Reason::PageMissing => "The page tool needs its `handle` argument: the handle in the notice of the previous page.",
        _ => "This page handle is unknown here: it was not issued by this gateway, or its pages are no longer held.",
    };
    let message = tool_result(&call.id, &[&notice::refused(why)], true, call.modern);
    let d = decision(call, tool, Outcome::Passthrough(reason), 0);
    (framing.reply(&message, None), d)
}
