//! `tools/list` results made to fit (docs/listings.md): compact tool
//! definitions, a ranked search over a server's tools, the tools the
//! plugin adds (search, call, describe) and the rewrite of a call made
//! through them into the real `tools/call`. Pure functions on text: no
//! host, no stream, no store; the exchange decides when they run and
//! keeps what they need (one server scope's [`Catalog`]).
//!
//! Everything a listing does not change passes byte for byte: a tool the
//! compaction leaves alone keeps its text, and so does every member of a
//! tool but the ones [`compact`] names.

mod call;
mod catalog;
mod compact;
mod inject;
mod search;
mod sentence;

pub use call::{parse_call, rewrite_call, Called, InjectedCall, Rewrite};
pub use catalog::{Catalog, Limits, Refusal};
pub use compact::{compact_tool, Compaction};
pub use inject::{added_tools, describe_tool, search_tool, Names};
pub use search::{Hit, Index, Query, MAX_QUERY_BYTES, MAX_QUERY_TERMS};

use crate::json::literal::write_literal;
use crate::mcp::{self, Edits};
use serde_json::value::RawValue;

/// A `tools/list` result (the `result` object's text) with every tool
/// compacted as `how` says and the tools in `add` (JSON texts) appended
/// to its `tools` array. `None` when nothing changes or the result is no
/// listing the plugin understands (a tool that is not an object, a known
/// member written twice): it then passes as it came.
pub fn compact_listing(result: &str, how: Compaction, add: &[&str]) -> Option<String> {
    let raw: &RawValue = serde_json::from_str(result).ok()?;
    let tools = mcp::tool_entries(raw)?;
    let array = mcp::tools_array(raw)?;
    let mut edits = Edits::default();
    for tool in &tools {
        if let Some(short) = compact_tool(tool.raw.get(), how) {
            edits.replace(result, tool.raw, short);
        }
    }
    if !add.is_empty() {
        let span = Edits::span_of(result, array)?;
        let mut text = String::new();
        for (n, t) in add.iter().enumerate() {
            if n > 0 || !tools.is_empty() {
                text.push(',');
            }
            text.push_str(t);
        }
        // Just before the array's closing bracket.
        edits.insert(span.end.checked_sub(1)?, text);
    }
    if edits.is_empty() {
        return None;
    }
    edits.apply(result)
}

#[cfg(test)]
/// Whether a `tools/list` result has more pages (a `nextCursor`, MCP
/// 2025-06-18 "Pagination"): the tools the plugin adds go on the last.
pub(crate) fn has_more(result: &str) -> bool {
    serde_json::from_str::<&RawValue>(result).is_ok_and(mcp::next_cursor)
}

/// The progressive-disclosure listing: a `tools/list` result whose tools
/// are the `hot` tools of `catalog` that it holds, in that order, as the
/// server sent them, then the tools in `add`; its other members are those
/// of `last` (the server's last page: `ttlMs`, `cacheScope`,
/// `resultType`, `_meta` ...), values as sent, less `tools` and
/// `nextCursor` (the disclosed listing is one page).
pub fn disclose(catalog: &Catalog, hot: &[String], add: &[&str], last: &str) -> Option<String> {
    let raw: &RawValue = serde_json::from_str(last).ok()?;
    let members = crate::json::members(raw)?;
    let mut out = String::from("{\"tools\":[");
    let tools = hot
        .iter()
        .filter_map(|name| catalog.get(name))
        .chain(add.iter().copied());
    for (n, tool) in tools.enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push_str(tool);
    }
    out.push(']');
    for (key, value) in members {
        if key == "tools" || key == "nextCursor" {
            continue;
        }
        out.push(',');
        write_literal(&mut out, &key);
        out.push(':');
        out.push_str(value.get());
    }
    out.push('}');
    Some(out)
}

/// The text of a search's answer: the best `limit` tools for `query`, as
/// a JSON array of their definitions compacted as `how` says; or, when
/// none matches, a sentence naming the server's tools (at most
/// [`NAMES_BYTES`] of them), so every tool stays reachable.
pub fn search_answer(
    catalog: &Catalog,
    index: &Index,
    query: &str,
    limit: usize,
    how: Compaction,
) -> String {
    let hits = index.search(&Query::new(query), limit);
    if hits.is_empty() {
        let mut names = String::new();
        for (name, _) in catalog.tools() {
            if names.len() + name.len() + 2 > NAMES_BYTES {
                names.push_str(", …");
                break;
            }
            if !names.is_empty() {
                names.push_str(", ");
            }
            names.push_str(name);
        }
        return format!("No tool matches that query. This server's tools: {names}.");
    }
    let mut out = String::from("[");
    for (n, hit) in hits.iter().enumerate() {
        let Some(tool) = catalog.get(&hit.name) else {
            continue;
        };
        if n > 0 {
            out.push(',');
        }
        match compact_tool(tool, how) {
            Some(short) => out.push_str(&short),
            None => out.push_str(tool),
        }
    }
    out.push(']');
    out
}

/// Most bytes of tool names a search that finds nothing lists.
pub(crate) const NAMES_BYTES: usize = 4096;

/// The text of a describe call's answer: the tool's definition as the
/// server sent it; `Err` with what to tell the agent when there is none.
pub fn describe_answer<'c>(catalog: &'c Catalog, name: Option<&str>) -> Result<&'c str, String> {
    let Some(name) = name else {
        return Err("Give `name`: the exact name of one of this server's tools.".into());
    };
    catalog.get(name).ok_or_else(|| {
        let mut shown = String::new();
        write_literal(&mut shown, name);
        format!("This server has no tool named {shown}.")
    })
}

#[cfg(test)]
mod tests;
