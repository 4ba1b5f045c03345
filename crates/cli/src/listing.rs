//! What `listings` would make of a captured `tools/list` result, in bytes
//! and `o200k_base` tokens: as sent, compact at each level, and disclosed
//! (the hot tools in full with the search, call and describe tools).
//!
//! What is counted is the `result` object of each page as a client
//! receives it (the JSON-RPC envelope left out): the tools, and `ttlMs`,
//! `nextCursor` and the like. A compact listing counts the describe tool
//! it gains; a disclosed one the three tools it gains.

use serde::Serialize;

use super::tokens::Tokenizer;
use mcp_toon_engine::config::{Level, ListingMode, ListingsSettings};
use mcp_toon_engine::listing::{self, Catalog, Compaction, Limits, Names};
use mcp_toon_engine::mcp;

/// Bytes and tokens of one form of a listing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Size {
    pub(crate) bytes: usize,
    pub tokens: usize,
}

impl Size {
    fn of(text: &str, t: &Tokenizer) -> Size {
        Size {
            bytes: text.len(),
            tokens: t.count(text),
        }
    }

    fn add(&mut self, other: Size) {
        self.bytes += other.bytes;
        self.tokens += other.tokens;
    }
}

/// One captured listing, measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListingReport {
    pub tools: usize,
    pub(crate) pages: usize,
    pub sent: Size,
    pub light: Size,
    pub medium: Size,
    pub high: Size,
    /// The hot tools the disclosed form lists (those the catalog has).
    pub(crate) hot: Vec<String>,
    pub disclosed: Size,
}

/// The `result` texts of a body whose every response is a `tools/list`
/// result, in order; `None` when the body is anything else.
pub fn results(body: &str) -> Option<Vec<&str>> {
    let messages = mcp::parse_messages(body)?;
    if messages.is_empty() {
        return None;
    }
    messages
        .iter()
        .map(|m| {
            let result = m.result?;
            mcp::tools_array(result)?;
            Some(result.get())
        })
        .collect()
}

/// Measures the pages of one listing (`results`), with `hot` as the hot
/// tools of the disclosed form and `max_description_bytes` for `high`.
pub fn measure(
    results: &[&str],
    settings: &ListingsSettings,
    hot: &[String],
    max_description_bytes: usize,
    t: &Tokenizer,
) -> Option<ListingReport> {
    let names = Names {
        search: &settings.search_tool,
        call: &settings.call_tool,
        describe: &settings.describe_tool,
    };
    let mut catalog = Catalog::default();
    let limits = Limits {
        max_tools: usize::MAX,
        max_bytes: usize::MAX,
    };
    for r in results {
        catalog.add_page(r, limits).ok()?;
    }
    let describe = listing::describe_tool(names);
    let mut report = ListingReport {
        tools: catalog.len(),
        pages: results.len(),
        sent: Size::default(),
        light: Size::default(),
        medium: Size::default(),
        high: Size::default(),
        hot: hot
            .iter()
            .filter(|h| catalog.get(h).is_some())
            .cloned()
            .collect(),
        disclosed: Size::default(),
    };
    for (n, r) in results.iter().enumerate() {
        report.sent.add(Size::of(r, t));
        let last = n + 1 == results.len();
        let add: &[&str] = if last { &[&describe] } else { &[] };
        for level in Level::ALL {
            let how = Compaction {
                level,
                max_description_bytes,
            };
            let text = listing::compact_listing(r, how, add);
            let size = Size::of(text.as_deref().unwrap_or(r), t);
            match level {
                Level::Light => report.light.add(size),
                Level::Medium => report.medium.add(size),
                Level::High => report.high.add(size),
            }
        }
    }
    let hidden = catalog.len().saturating_sub(report.hot.len());
    let added = listing::added_tools(
        ListingMode::Disclose,
        names,
        hidden,
        settings.max_search_results,
    );
    let added: Vec<&str> = added.iter().map(String::as_str).collect();
    let last = results.last()?;
    let disclosed = listing::disclose(&catalog, &report.hot, &added, last)?;
    report.disclosed = Size::of(&disclosed, t);
    Some(report)
}

/// What of a listing reaches a model through most clients: each tool's
/// `name`, `description` and `inputSchema` (the fields of a function
/// definition in the OpenAI and Anthropic APIs), as the listing writes
/// them, one `{"name":…,"description":…,"inputSchema":…}` per tool.
pub fn model_view(result: &str) -> Option<String> {
    use serde_json::value::RawValue;
    #[derive(serde::Deserialize)]
    struct Tool<'a> {
        #[serde(borrow)]
        name: &'a RawValue,
        #[serde(borrow)]
        description: Option<&'a RawValue>,
        #[serde(rename = "inputSchema", borrow)]
        input_schema: Option<&'a RawValue>,
    }
    let raw: &RawValue = serde_json::from_str(result).ok()?;
    let mut out = String::new();
    for tool in mcp::tool_entries(raw)? {
        let t: Tool = serde_json::from_str(tool.raw.get()).ok()?;
        out.push_str("{\"name\":");
        out.push_str(t.name.get());
        if let Some(d) = t.description {
            out.push_str(",\"description\":");
            out.push_str(d.get());
        }
        if let Some(s) = t.input_schema {
            out.push_str(",\"inputSchema\":");
            out.push_str(s.get());
        }
        out.push('}');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_is_measured_at_each_level() {
        let t = Tokenizer::o200k_base().unwrap();
        let page = r#"{"tools":[{"name":"read_file","description":"Read a file. It must be in an allowed directory, and it is read as UTF-8 text.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"path":{"type":"string","description":"The path of the file to read"}},"required":["path"],"additionalProperties":false}}]}"#;
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{page}}}"#);
        let results = results(&body).unwrap();
        let r = measure(
            &results,
            &ListingsSettings::default(),
            &["read_file".into()],
            120,
            &t,
        )
        .unwrap();
        assert_eq!((r.tools, r.pages, r.sent.bytes), (1, 1, page.len()));
        assert_eq!(r.sent.tokens, t.count(page));
        // Each level keeps less (the describe tool it gains included).
        assert!(r.medium.tokens < r.light.tokens, "{r:?}");
        assert!(r.high.tokens <= r.medium.tokens, "{r:?}");
        assert_eq!(r.hot, ["read_file"]);
        assert!(
            r.disclosed.tokens > r.sent.tokens,
            "one tool in full and three added: {r:?}"
        );
        assert_eq!(
            super::results(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#),
            None
        );
    }
}
