//! The tools the plugin adds to a listing, as JSON texts: the search and
//! call tools of a disclosed listing, and the describe tool of both
//! modes. Their `inputSchema`s are plain objects with `type: "object"`
//! at the root (MCP 2025-11-25 `Tool.inputSchema`), which the official
//! SDKs' listing schemas accept (tests/listings.rs checks both); their
//! descriptions say how to use them in as few words as that takes.

use crate::json::literal::write_literal;

/// The names of the added tools (`listings.search_tool`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Names<'a> {
    pub search: &'a str,
    pub call: &'a str,
    pub describe: &'a str,
}

fn quoted(s: &str) -> String {
    let mut out = String::new();
    write_literal(&mut out, s);
    out
}

/// The search tool. `hidden`: how many of the server's tools the listing
/// leaves out; `max_limit`: `listings.max_search_results`.
pub fn search_tool(names: Names<'_>, hidden: usize, max_limit: usize) -> String {
    let description = format!(
        "Find this server's {hidden} other tools: `query` says what you want to do. Returns the best matches with their arguments; run one with {}.",
        names.call
    );
    format!(
        r#"{{"name":{},"description":{},"inputSchema":{{"type":"object","properties":{{"query":{{"type":"string"}},"limit":{{"type":"integer","minimum":1,"maximum":{max_limit}}}}},"required":["query"]}},"annotations":{{"readOnlyHint":true}}}}"#,
        quoted(names.search),
        quoted(&description),
    )
}

/// The call tool. No annotations: whether a call is read-only depends on
/// the tool it runs (a client then assumes the defaults, MCP 2025-03-26
/// `ToolAnnotations`: it may change things).
pub(crate) fn call_tool(names: Names<'_>) -> String {
    let description = format!(
        "Run a tool {} found: its exact `name`, and `arguments` that fit its inputSchema.",
        names.search
    );
    format!(
        r#"{{"name":{},"description":{},"inputSchema":{{"type":"object","properties":{{"name":{{"type":"string"}},"arguments":{{"type":"object"}}}},"required":["name"]}}}}"#,
        quoted(names.call),
        quoted(&description),
    )
}

/// The describe tool.
pub fn describe_tool(names: Names<'_>) -> String {
    format!(
        r#"{{"name":{},"description":{},"inputSchema":{{"type":"object","properties":{{"name":{{"type":"string"}}}},"required":["name"]}},"annotations":{{"readOnlyHint":true}}}}"#,
        quoted(names.describe),
        quoted("A tool's full definition, as the server wrote it (listed tools may be shortened)."),
    )
}

/// The tools a listing in `mode` gains: the describe tool for a compact
/// listing; search, call and describe for a disclosed one.
pub fn added_tools(
    mode: crate::config::ListingMode,
    names: Names<'_>,
    hidden: usize,
    max_limit: usize,
) -> Vec<String> {
    use crate::config::ListingMode;
    match mode {
        ListingMode::Off => Vec::new(),
        ListingMode::Compact => vec![describe_tool(names)],
        ListingMode::Disclose => vec![
            search_tool(names, hidden, max_limit),
            call_tool(names),
            describe_tool(names),
        ],
    }
}
