//! The pipeline's last step and the page tool's entry in listings.
//!
//! After every block of a result went through its stages, a result whose
//! tool has a budget is measured as a whole and, when over, cut
//! ([`crate::page::cut`]): its `content` array is written anew — items
//! before the cut as they are (a changed block with its new text), the cut
//! block with its first page, text items after it left out, other items
//! kept — with the notice item last. Each kept item keeps its own bytes.
//! A result that carries `structuredContent` is never cut (it passes
//! whole, `budget_structured_content`): its two forms must not disagree.

use std::ops::Range;

use serde_json::value::RawValue;

use super::Block;
use crate::config::{Settings, MARKER_PREFIX};
use crate::mcp::{self, Call, Edits};
use crate::outcome::{Outcome, Reason, Stage};
use crate::page::cut::{cut, CallInfo};
use crate::page::tools;
use crate::report::Decision;
use crate::shared::Services;
use crate::stage::budget::{fits as stage_fits, Item, NoPlan};

/// Where a result's content lives in the body, for a tool with a budget.
#[derive(Debug)]
pub(super) struct Shape {
    pub(crate) id: String,
    pub(crate) tool: Option<String>,
    pub(crate) arguments: Option<String>,
    /// The `content` array.
    pub(crate) content: Range<usize>,
    /// Each item of it.
    pub(crate) items: Vec<Range<usize>>,
}

impl Shape {
    pub(super) fn of(base: &str, call: &Call, result: &RawValue) -> Option<Shape> {
        let array = mcp::content_array(result)?;
        let items: Vec<&RawValue> = serde_json::from_str(array.get()).ok()?;
        Some(Shape {
            id: call.id.clone(),
            tool: call.tool.clone(),
            arguments: call.arguments.clone(),
            content: Edits::span_of(base, array)?,
            items: items
                .iter()
                .map(|i| Edits::span_of(base, i))
                .collect::<Option<_>>()?,
        })
    }
}

/// Where pages of this stream's results go and whom they belong to.
pub(crate) struct PageContext<'a, H: Services + ?Sized> {
    pub(crate) host: &'a mut H,
    /// Whom the stream's results are cut for: their pages are bound to
    /// them ([`crate::page::owner`]).
    pub(crate) owner: &'a crate::page::owner::Owner,
    /// The server ([`crate::config::StreamInfo::server`]) whose listings
    /// say which tools are safe to call again ([`crate::page::tools`]).
    pub(crate) cluster: Option<&'a str>,
}

/// Cuts each result over its budget: adds to `edits` those that rewrite
/// their content arrays, and marks their blocks as written.
pub(super) fn apply<H: Services + ?Sized>(
    settings: &Settings,
    base: &str,
    shapes: &[Shape],
    blocks: &mut [Block],
    cx: &mut PageContext<'_, H>,
    edits: &mut Edits,
    report: &mut crate::report::Report,
) {
    // The blocks of each result by its id, found once: a batch of many
    // results, or a result of many items, must not cost the square of
    // their number (issue 13).
    let mut by_id: std::collections::HashMap<String, Vec<usize>> = std::collections::HashMap::new();
    for (i, b) in blocks.iter().enumerate() {
        by_id.entry(b.origin.id.clone()).or_default().push(i);
    }
    for shape in shapes {
        let positions: Vec<usize> = by_id.get(&shape.id).cloned().unwrap_or_default();
        let Some(policy) = positions
            .first()
            .and_then(|&i| blocks.get(i))
            .map(|b| b.origin.policy.clone())
        else {
            continue;
        };
        let items: Vec<Item<'_>> = positions
            .iter()
            .filter_map(|&i| blocks.get(i))
            .map(|b| Item {
                text: &b.text,
                framing: b.framing(),
            })
            .collect();
        let indexes: Vec<usize> = positions
            .iter()
            .filter_map(|&i| blocks.get(i).map(|b| b.origin.index))
            .collect();
        let before: usize = items.iter().map(|i| i.text.len()).sum();
        let structured = positions
            .iter()
            .filter_map(|&i| blocks.get(i))
            .any(|b| b.origin.structured);
        if structured {
            // Cutting `content` alone would leave it contradicting
            // `structuredContent`, and cutting that would break the tool's
            // `outputSchema` (MCP 2025-06-18 "Structured Content"), as for
            // trim: the result passes whole, counted when it was over.
            if policy.budget.is_some_and(|b| !stage_fits(&items, b)) {
                report.push(Decision {
                    stage: Stage::Budget,
                    id: Some(shape.id.clone()),
                    tool: shape.tool.clone(),
                    bytes_before: before,
                    bytes_after: before,
                    ..Decision::response(Reason::BudgetStructuredContent)
                });
            }
            continue;
        }
        let trimmed = positions
            .iter()
            .filter_map(|&i| blocks.get(i))
            .any(Block::is_trimmed);
        let call = CallInfo {
            tool: shape.tool.as_deref(),
            arguments: shape.arguments.as_deref(),
            owner: cx.owner,
            cluster: cx.cluster,
            trimmed,
        };
        let outcome = cut(&items, &indexes, &policy, &settings.paging, &call, cx.host);
        drop(items);
        let done = match outcome {
            Err(NoPlan::Fits) => continue,
            Err(NoPlan::TooSmall) => {
                report.push(Decision {
                    id: Some(shape.id.clone()),
                    tool: shape.tool.clone(),
                    ..Decision::response(Reason::BudgetTooSmall)
                });
                continue;
            }
            Ok(done) => done,
        };
        // The content array anew.
        let cut_at = done.plan.cut;
        let first = done.plan.pages.first();
        let mut out: Vec<String> = Vec::with_capacity(shape.items.len() + 1);
        let mut shown = 0usize;
        // Item index → its block among `positions` (the first, as a
        // search from the start would find).
        let mut block_of: Vec<Option<usize>> = vec![None; shape.items.len()];
        for (k, &j) in indexes.iter().enumerate() {
            if let Some(slot @ None) = block_of.get_mut(j) {
                *slot = Some(k);
            }
        }
        for (j, span) in shape.items.iter().enumerate() {
            let raw = base.get(span.clone()).unwrap_or("");
            let Some(k) = block_of.get(j).copied().flatten() else {
                out.push(raw.to_string());
                continue;
            };
            let Some(block) = positions.get(k).and_then(|&i| blocks.get(i)) else {
                continue;
            };
            let text = if k < cut_at {
                Some(block.text.as_str())
            } else if k == cut_at {
                first
                    .filter(|p| !p.units.is_empty())
                    .map(|p| p.text.as_str())
            } else {
                None
            };
            if let Some(text) = text {
                shown += text.len();
                match splice(raw, span.start, &block.origin.span, text) {
                    Some(item) => out.push(item),
                    None => out.push(raw.to_string()),
                }
            }
        }
        let notice_item = serde_json::json!({"type": "text", "text": done.notice}).to_string();
        out.push(notice_item);
        edits.replace_span(shape.content.clone(), format!("[{}]", out.join(",")));
        for &i in &positions {
            if let Some(b) = blocks.get_mut(i) {
                b.written();
            }
        }
        report.push(Decision {
            stage: Stage::Budget,
            outcome: Outcome::Cut,
            id: Some(shape.id.clone()),
            tool: shape.tool.clone(),
            block: indexes.get(cut_at).copied(),
            bytes_before: before,
            bytes_after: shown + done.notice.len(),
            lossless: false,
            transform: None,
        });
        if done.not_kept.is_some() && settings.paging.store_bytes > 0 && policy.paging {
            report.push(Decision {
                id: Some(shape.id.clone()),
                tool: shape.tool.clone(),
                ..Decision::response(Reason::PageNotKept)
            });
        }
        if let Some(f) = done.figures {
            report.store = Some(f);
        }
    }
}

/// `item` (at `at` in the body) with the text literal at `literal` (in
/// the body) replaced by `text`.
fn splice(item: &str, at: usize, literal: &Range<usize>, text: &str) -> Option<String> {
    let start = literal.start.checked_sub(at)?;
    let end = literal.end.checked_sub(at)?;
    let lit = serde_json::to_string(text).ok()?;
    Some(format!("{}{lit}{}", item.get(..start)?, item.get(end..)?))
}

/// The page tool as listed (MCP 2025-06-18 `Tool`): one string argument,
/// annotated read-only, idempotent and closed-world.
pub(crate) fn page_tool(name: &str) -> String {
    serde_json::json!({
        "name": name,
        "title": "Next page of a cut result",
        "description": format!(
            "Returns the next page of a tool result that a gateway cut to fit a token budget. \
             Call it with the handle from the notice that follows the cut result (a text item \
             starting with {PAGE_PREFIX:?}); each page ends with the handle of the next one. \
             Pages of TOON ({MARKER_PREFIX} marker) or JSON decode on their own, with the same \
             shape as the first page."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "handle": {"type": "string", "description": "The handle given in the notice of the previous page."}
            },
            "required": ["handle"]
        },
        "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
    })
    .to_string()
}

const PAGE_PREFIX: &str = crate::stage::budget::notice::PREFIX;

/// `tools/list` on a stream where paging is on: learns which tools are safe
/// to call again, and lists the page tool on the listing's last page (no
/// `nextCursor`) when a listed tool has a budget with paging. Returns
/// whether it added the tool.
pub(super) fn listing<H: Services + ?Sized>(
    settings: &Settings,
    scope: crate::config::ServerScope,
    base: &str,
    result: &RawValue,
    cx: &mut PageContext<'_, H>,
    edits: &mut Edits,
) -> bool {
    let Some(tools_list) = mcp::tool_entries(result) else {
        return false;
    };
    let name = &settings.paging.tool_name;
    let mut pages =
        settings.policy(scope, None).paging && settings.policy(scope, None).budget.is_some();
    let mut present = false;
    for tool in &tools_list {
        let Some(t) = tool.name.as_deref() else {
            continue;
        };
        if t == name {
            present = true;
            continue;
        }
        tools::learn(
            cx.host,
            cx.cluster.unwrap_or(""),
            t,
            tools::safe_to_repeat(tool.raw),
        );
        let p = settings.policy(scope, Some(t));
        pages |= p.paging && p.budget.is_some();
    }
    if !pages || present || mcp::next_cursor(result) {
        return false;
    }
    let Some(array) = mcp::tools_array(result) else {
        return false;
    };
    let Some(span) = Edits::span_of(base, array) else {
        return false;
    };
    let close = span.end.saturating_sub(1);
    let sep = if tools_list.is_empty() { "" } else { "," };
    edits.insert(close, format!("{sep}{}", page_tool(name)));
    true
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::mcp::RequestInfo;
    use crate::report::Report;
    use crate::shared::SharedMemory;

    fn run(config: &str, result: Value, host: &mut SharedMemory) -> Value {
        let request = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        run_with(config, request, result, host, &mut Report::default())
    }

    fn run_with(
        config: &str,
        request: &[u8],
        result: Value,
        host: &mut SharedMemory,
        report: &mut Report,
    ) -> Value {
        let s = Settings::from_json(config).unwrap();
        let request = RequestInfo::parse(request).unwrap();
        let body = json!({"jsonrpc": "2.0", "id": 1, "result": result}).to_string();
        let resolved = super::super::Resolved::of(&s, Default::default(), &request);
        let run = super::super::Run {
            settings: &s,
            scope: Default::default(),
            request: &request,
            resolved: &resolved,
        };
        let super::super::Started::Job(job) =
            super::super::start(run, body.clone().into_bytes(), report, &mut |_| false)
        else {
            panic!("a job for {body}");
        };
        let mut cx = PageContext {
            host,
            owner: &crate::page::owner::Owner::default(),
            cluster: Some("c"),
        };
        let out = job
            .finish(
                &s,
                None,
                &mut crate::stage::toon::Allowance::per_response(),
                &mut cx,
                report,
            )
            .0
            .into_bytes();
        serde_json::from_slice(&out).unwrap()
    }

    const PAGING: &str = r#"{"hold_headers":true,"tools":{"rows":{"budget":{"tokens":500},"paging":{"enabled":true}}}}"#;

    fn tools() -> Value {
        json!([
            {"name": "rows", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
            {"name": "write", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": true}}
        ])
    }

    #[test]
    fn the_page_tool_is_listed_once_on_the_last_page_and_hints_are_learnt() {
        let mut host = SharedMemory::default();
        let v = run(PAGING, json!({"tools": tools(), "ttlMs": 0}), &mut host);
        let names: Vec<&str> = v["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["rows", "write", "mcp_toon_page"]);
        assert_eq!(
            v["result"]["ttlMs"], 0,
            "the rest of the result is the server's"
        );
        assert_eq!(tools::known_safe(&host, "c", "rows"), Some(true));
        // Not known safe: nothing is kept for it.
        assert_eq!(tools::known_safe(&host, "c", "write"), None);
        // Not on a listing page with more to come.
        let v = run(
            PAGING,
            json!({"tools": tools(), "nextCursor": "2"}),
            &mut host,
        );
        assert_eq!(v["result"]["tools"].as_array().unwrap().len(), 2);
        // Not where no listed tool pages.
        let v = run(
            r#"{"hold_headers":true,"tools":{"other":{"budget":{"tokens":500},"paging":{"enabled":true}}}}"#,
            json!({"tools": tools()}),
            &mut host,
        );
        assert_eq!(v["result"]["tools"].as_array().unwrap().len(), 2);
        // An empty listing of a server that pages everything.
        let v = run(
            r#"{"hold_headers":true,"budget":{"tokens":500},"paging":{"enabled":true}}"#,
            json!({"tools": []}),
            &mut host,
        );
        assert_eq!(v["result"]["tools"][0]["name"], "mcp_toon_page");
    }

    /// Issue 13: `structuredContent` and `content` never disagree. A
    /// result over its budget is cut when it has only `content`, and passes
    /// whole, counted, when it also carries `structuredContent`.
    #[test]
    fn a_result_with_structured_content_is_not_cut_and_is_counted() {
        let config = r#"{"tools":{"rows":{"budget":{"bytes":1024}}}}"#;
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rows","arguments":{}}}"#;
        let lines: String = (0..200).map(|i| format!("line {i} of the log\n")).collect();
        let text = json!([{"type": "text", "text": lines}]);
        let structured = json!({"lines": 200});

        let mut report = Report::default();
        let plain = run_with(
            config,
            call,
            json!({"content": text}),
            &mut SharedMemory::default(),
            &mut report,
        );
        assert_eq!(
            plain["result"]["content"].as_array().unwrap().len(),
            2,
            "without structuredContent the result is cut and a notice follows"
        );
        assert!(report
            .decisions
            .iter()
            .any(|d| d.stage == Stage::Budget && d.outcome == Outcome::Cut));

        let mut report = Report::default();
        let whole = json!({"content": text, "structuredContent": structured});
        let out = run_with(
            config,
            call,
            whole.clone(),
            &mut SharedMemory::default(),
            &mut report,
        );
        assert_eq!(out["result"], whole, "passed whole");
        let budget: Vec<_> = report
            .decisions
            .iter()
            .filter(|d| d.stage == Stage::Budget)
            .collect();
        assert_eq!(budget.len(), 1, "{:?}", report.decisions);
        assert_eq!(
            budget[0].outcome,
            Outcome::Passthrough(Reason::BudgetStructuredContent)
        );
        assert_eq!(budget[0].id.as_deref(), Some("1"));
        assert_eq!(budget[0].tool.as_deref(), Some("rows"));
        assert_eq!(budget[0].bytes_before, lines.len());
        assert!(report
            .metrics()
            .contains(&("mcp_toon_passthrough_budget_structured_content", 1)));

        // Within its budget it is not counted: nothing would have been cut.
        let mut report = Report::default();
        let small = json!({"content": [{"type": "text", "text": "short"}], "structuredContent": structured});
        let out = run_with(
            config,
            call,
            small.clone(),
            &mut SharedMemory::default(),
            &mut report,
        );
        assert_eq!(out["result"], small);
        assert!(
            !report.decisions.iter().any(|d| d.stage == Stage::Budget),
            "{:?}",
            report.decisions
        );
    }
}
