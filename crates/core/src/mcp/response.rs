//! Response bodies, parsed into borrowed spans (JSON-RPC 2.0 §5; MCP
//! 2025-06-18 "Tools": a `CallToolResult` has `content[]`, optional
//! `structuredContent` and `isError`).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{id_key, messages};
use crate::json::object;

/// One JSON-RPC response of a body.
#[derive(Debug)]
pub struct Message<'a> {
    pub id: Option<String>,
    pub result: Option<&'a RawValue>,
    // Read by the tests that hold the scanner to this serde reading.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) is_error_response: bool,
}

#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// The messages of a body: one object, or a batch array. `None` when the
/// body is not that (or has a known field twice: JSON-RPC cannot say which
/// one counts, so the body is left alone).
pub fn parse_messages(text: &str) -> Option<Vec<Message<'_>>> {
    let raws = messages(text)?;
    let mut out = Vec::with_capacity(raws.len());
    for raw in raws {
        let m: RawMessage = object(raw)?;
        // A request or notification from the server (sampling, progress):
        // its id lives in the server's id space, never one of ours.
        if m.method.is_some() {
            continue;
        }
        out.push(Message {
            id: m.id.and_then(id_key),
            result: m.result,
            is_error_response: m.error.is_some(),
        });
    }
    Some(out)
}

/// A `CallToolResult`.
#[derive(Debug, Deserialize)]
pub struct ToolResult<'a> {
    #[serde(borrow)]
    pub content: Option<Vec<&'a RawValue>>,
    // Parsed so serde refuses what it would refuse (an `isError` that is
    // not a boolean); read by the tests that hold the scanner to it.
    #[serde(rename = "isError", default)]
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) is_error: Option<bool>,
    /// Present (and not `null`): the result's structured form (MCP
    /// 2025-06-18), which a changed `content` must not contradict.
    #[serde(rename = "structuredContent", borrow, default)]
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) structured_content: Option<&'a RawValue>,
}

/// Reads a `CallToolResult` from a `result` span.
pub fn tool_result<'a>(result: &'a RawValue) -> Option<ToolResult<'a>> {
    if !result.get().starts_with('{') {
        return None;
    }
    serde_json::from_str(result.get()).ok()
}

/// A content item; `text` is set for `type: "text"` items.
#[derive(Debug, Deserialize)]
pub struct ContentItem<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub text: Option<&'a RawValue>,
}

/// The content items, in order, each parsed or `None` when malformed.
pub fn text_items<'a>(content: &[&'a RawValue]) -> Vec<Option<ContentItem<'a>>> {
    content
        .iter()
        .map(|raw| {
            if raw.get().starts_with('{') {
                serde_json::from_str::<ContentItem>(raw.get()).ok()
            } else {
                None
            }
        })
        .collect()
}

/// One tool of a `tools/list` result.
#[derive(Debug)]
pub struct ToolEntry<'a> {
    pub raw: &'a RawValue,
    pub name: Option<String>,
    pub description: Option<&'a RawValue>,
    pub(crate) input_schema: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RawListResult<'a> {
    #[serde(borrow)]
    tools: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct RawTool<'a> {
    name: Option<String>,
    #[serde(borrow)]
    description: Option<&'a RawValue>,
    #[serde(rename = "inputSchema", borrow)]
    input_schema: Option<&'a RawValue>,
}

/// The tools of a `tools/list` result.
pub fn tool_entries<'a>(result: &'a RawValue) -> Option<Vec<ToolEntry<'a>>> {
    if !result.get().starts_with('{') {
        return None;
    }
    let list: RawListResult = serde_json::from_str(result.get()).ok()?;
    let mut out = Vec::new();
    for raw in list.tools? {
        if !raw.get().starts_with('{') {
            return None;
        }
        let t: RawTool = serde_json::from_str(raw.get()).ok()?;
        out.push(ToolEntry {
            raw,
            name: t.name,
            description: t.description,
            input_schema: t.input_schema,
        });
    }
    Some(out)
}

#[derive(Deserialize)]
struct RawArrays<'a> {
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    tools: Option<&'a RawValue>,
    #[serde(rename = "nextCursor", borrow)]
    next_cursor: Option<&'a RawValue>,
}

fn arrays<'a>(result: &'a RawValue) -> Option<RawArrays<'a>> {
    if !result.get().starts_with('{') {
        return None;
    }
    serde_json::from_str(result.get()).ok()
}

/// The `content` array of a `CallToolResult`, as its span.
pub fn content_array(result: &RawValue) -> Option<&RawValue> {
    arrays(result)?.content.filter(|c| c.get().starts_with('['))
}

/// The `tools` array of a `tools/list` result, as its span.
pub fn tools_array(result: &RawValue) -> Option<&RawValue> {
    arrays(result)?.tools.filter(|c| c.get().starts_with('['))
}

/// Whether a listing has more pages (a non-null `nextCursor`, MCP
/// 2025-06-18 "Pagination").
pub fn next_cursor(result: &RawValue) -> bool {
    arrays(result)
        .and_then(|a| a.next_cursor)
        .is_some_and(|c| c.get() != "null")
}
