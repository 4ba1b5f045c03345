//! The slice of the MCP message model the plugin needs (JSON-RPC 2.0 over
//! Streamable HTTP, MCP revision 2025-06-18): which requests a body carries,
//! and where in a response body each tool-result text lives, as byte spans
//! so a rewrite changes nothing else.

mod edit;
pub(crate) mod request;
mod response;
mod scan;

pub use edit::Edits;
pub use request::{query_not_a_string, Call, CallIndex, Declared, RequestInfo, QUERY_NOT_A_STRING};
pub use response::{
    content_array, next_cursor, parse_messages, text_items, tool_entries, tool_result, tools_array,
    ContentItem, Message, ToolEntry, ToolResult,
};
pub use scan::{
    response as scan_response, response_reading as scan_response_reading, Item, Scanned, Text,
    Texts, ToolShape,
};

use serde_json::value::RawValue;

/// The method whose results the stages rewrite (MCP 2025-06-18,
/// "Tools" → "Calling Tools").
pub const TOOLS_CALL: &str = "tools/call";
/// The listing `annotate_tools` adds the decode hint to.
pub const TOOLS_LIST: &str = "tools/list";
/// Most bytes of a `tools/call`'s arguments the request model keeps with
/// the call: a page handle carries them to call the tool again, and longer
/// ones would cost an agent more tokens than paging saves (such results page
/// from the store only, `crate::page::handle`).
pub const MAX_ARGUMENTS: usize = 512;
/// The stream of change notifications a 2026-07-28 client opens (SEP-2575);
/// earlier revisions send them on the GET stream or a request's own.
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

/// The messages of a body: one object, or the elements of a batch array
/// (JSON-RPC 2.0 §6); `None` when the body is neither. Every reader of a
/// body (requests, responses, the intent argument) splits it here.
pub(crate) fn messages(text: &str) -> Option<Vec<&RawValue>> {
    if text.trim_start().starts_with('[') {
        serde_json::from_str(text).ok()
    } else {
        serde_json::from_str(text).ok().map(|one| vec![one])
    }
}

/// A JSON-RPC id as a canonical string (its JSON text after a re-parse, so
/// `"a\u0062"` and `"ab"` match), used to pair responses with requests.
pub fn id_key(raw: &RawValue) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
    match v {
        serde_json::Value::String(_) | serde_json::Value::Number(_) => Some(v.to_string()),
        _ => None,
    }
}
