//! What the plugin would do to captured payloads, block by block, in bytes
//! and `o200k_base` tokens. Each payload goes through the driver the plugin
//! runs, on the in-memory host, with a `tools/call` request synthesised for
//! every response id so the responses pair up as they would on the wire.
//!
//! Token counts are those of the text blocks an agent reads (the `text` of
//! each `content[]` item), before and after, marker included.

use std::rc::Rc;
use std::sync::Arc;

use serde::Serialize;

use super::capture::{self, Kind};
use super::listing::{self, ListingReport};
use super::tokens::Tokenizer;
use mcp_toon_engine::config::{Settings, StreamInfo};
use mcp_toon_engine::driver::MemoryHost;
use mcp_toon_engine::driver::{Driver, Vm};
use mcp_toon_engine::host::Direction;
use mcp_toon_engine::mcp;
use mcp_toon_engine::outcome::{Outcome, Reason};
use mcp_toon_engine::report::{Decision, Report};

/// One captured payload: a name to show and the bytes as saved.
#[derive(Debug, Clone)]
pub(crate) struct Payload {
    pub(crate) name: String,
    pub(crate) bytes: Vec<u8>,
}

/// Where the payloads are taken to come from: the tool name picks the
/// `tools.<name>` settings, the stream fields the `servers[]` entry.
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub tool: Option<String>,
    pub stream: StreamInfo,
    /// A JMESPath query every call carries (`--project`).
    pub query: Option<String>,
}

/// One core decision, as in the decision record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StageDecision {
    pub stage: &'static str,
    /// The clean transform this decision is about, if any.
    pub(crate) transform: Option<&'static str>,
    pub outcome: &'static str,
    pub(crate) reason: Option<&'static str>,
    pub(crate) bytes_before: usize,
    pub(crate) bytes_after: usize,
    pub(crate) lossless: bool,
}

/// One text block (or, with `block` unset, a whole response that passed
/// through before any block was looked at).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    /// JSON-RPC id of the response, as its JSON text.
    pub(crate) id: Option<String>,
    pub(crate) tool: Option<String>,
    /// Index in `result.content[]`.
    pub block: Option<usize>,
    /// The changes made, joined with `+` (`encoded`), or `passthrough`.
    pub outcome: String,
    /// The reasons of the stages that passed the block through, joined
    /// with `,`.
    pub reason: Option<String>,
    /// False when a stage that changed the block drops information.
    pub(crate) lossless: bool,
    pub(crate) bytes_before: usize,
    pub bytes_after: usize,
    pub tokens_before: usize,
    pub tokens_after: usize,
    pub decisions: Vec<StageDecision>,
}

/// Sums over rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Totals {
    pub(crate) blocks: usize,
    pub(crate) changed: usize,
    pub(crate) bytes_before: usize,
    pub(crate) bytes_after: usize,
    pub(crate) tokens_before: usize,
    pub(crate) tokens_after: usize,
}

impl Totals {
    fn add_row(&mut self, r: &Row) {
        if r.block.is_some() {
            self.blocks += 1;
        }
        if r.outcome != PASSTHROUGH {
            self.changed += 1;
        }
        self.bytes_before += r.bytes_before;
        self.bytes_after += r.bytes_after;
        self.tokens_before += r.tokens_before;
        self.tokens_after += r.tokens_after;
    }

    fn add(&mut self, t: &Totals) {
        self.blocks += t.blocks;
        self.changed += t.changed;
        self.bytes_before += t.bytes_before;
        self.bytes_after += t.bytes_after;
        self.tokens_before += t.tokens_before;
        self.tokens_after += t.tokens_after;
    }
}

/// The rows of one payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct PayloadReport {
    pub(crate) payload: String,
    pub(crate) kind: Kind,
    pub(crate) rows: Vec<Row>,
    pub(crate) totals: Totals,
    /// A captured `tools/list` result (every response of the payload one):
    /// what `listings` would make of it, instead of rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) listing: Option<ListingReport>,
}

/// Everything `mcp-toon measure` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Measurement {
    pub(crate) tokenizer: &'static str,
    pub(crate) payloads: Vec<PayloadReport>,
    pub(crate) totals: Totals,
}

/// Measures every payload.
pub(crate) fn measure(
    settings: &Settings,
    target: &Target,
    tokenizer: &Tokenizer,
    payloads: &[Payload],
) -> Measurement {
    let reports: Vec<PayloadReport> = payloads
        .iter()
        .map(|p| measure_payload(settings, target, tokenizer, p))
        .collect();
    let mut totals = Totals::default();
    for r in &reports {
        totals.add(&r.totals);
    }
    Measurement {
        tokenizer: Tokenizer::NAME,
        payloads: reports,
        totals,
    }
}

/// Measures one payload: every response body it stands for.
pub(crate) fn measure_payload(
    settings: &Settings,
    target: &Target,
    tokenizer: &Tokenizer,
    payload: &Payload,
) -> PayloadReport {
    let captured = capture::bodies(&payload.bytes);
    if let Some(report) = measure_listing(settings, target, tokenizer, &captured) {
        return PayloadReport {
            payload: payload.name.clone(),
            kind: captured.kind,
            rows: Vec::new(),
            totals: Totals::default(),
            listing: Some(report),
        };
    }
    let mut rows = Vec::new();
    for body in &captured.bodies {
        rows.extend(measure_body(settings, target, tokenizer, body));
    }
    let mut totals = Totals::default();
    for r in &rows {
        totals.add_row(r);
    }
    PayloadReport {
        payload: payload.name.clone(),
        kind: captured.kind,
        rows,
        totals,
        listing: None,
    }
}

/// A payload that is a captured `tools/list` (one JSON-RPC body, every
/// response a listing), measured with the `listings` policy of the
/// target's server scope.
fn measure_listing(
    settings: &Settings,
    target: &Target,
    tokenizer: &Tokenizer,
    captured: &capture::Bodies,
) -> Option<ListingReport> {
    if captured.kind != Kind::JsonRpc {
        return None;
    }
    let [body] = captured.bodies.as_slice() else {
        return None;
    };
    let results = listing::results(std::str::from_utf8(body).ok()?)?;
    let policy = settings.listing_policy(settings.server_for(&target.stream));
    listing::measure(
        &results,
        &settings.listings,
        &policy.hot,
        policy.max_description_bytes,
        tokenizer,
    )
}

/// Runs one response body through the plugin's driver on the in-memory
/// host, as the `200 application/json` answer to a `tools/call` of
/// `target.tool` for each of its ids: the same gates (status, media type,
/// encoding, size) and the same stages as the plugin.
pub fn measure_body(
    settings: &Settings,
    target: &Target,
    tokenizer: &Tokenizer,
    body: &[u8],
) -> Vec<Row> {
    let text = std::str::from_utf8(body).ok();
    let ids: Vec<String> = text
        .and_then(mcp::parse_messages)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.id)
        .collect();
    let query = target
        .query
        .as_deref()
        .map(|q| (settings.project.query_argument.as_str(), q));
    let request = tool_calls(&ids, target.tool.as_deref(), query);
    let mut host = MemoryHost::post(&[
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ]);
    if let Some(authority) = &target.stream.authority {
        host.set_request_header(":authority", authority);
    }
    for (name, value) in [
        ("route_name", &target.stream.route),
        ("cluster_name", &target.stream.cluster),
    ] {
        if let Some(v) = value {
            host.properties
                .insert(format!("xds.{name}"), v.clone().into_bytes());
        }
    }
    let mut driver = Driver::new(Arc::new(settings.clone()), Rc::new(Vm::default()));
    host.headers(&mut driver, Direction::Request, false);
    host.body(&mut driver, Direction::Request, request.as_bytes(), true);
    let length = body.len().to_string();
    host.respond(&[
        (":status", "200"),
        ("content-type", "application/json"),
        ("content-length", &length),
    ]);
    host.headers(&mut driver, Direction::Response, body.is_empty());
    if !body.is_empty() {
        host.body(&mut driver, Direction::Response, body, true);
    }
    host.end(&mut driver);
    let out = host.sent(Direction::Response);
    let before = text.map(block_texts).unwrap_or_default();
    let after = if out == body {
        before.clone()
    } else {
        std::str::from_utf8(out)
            .map(block_texts)
            .unwrap_or_default()
    };
    let after = budget_cuts(driver.report(), &before, after);
    rows(driver.report(), &before, &after, tokenizer)
}

/// A `tools/call` request for each id (a batch for several), naming `tool`
/// and carrying `query` as the argument `(name, expression)`, as an agent
/// sends it.
fn tool_calls(ids: &[String], tool: Option<&str>, query: Option<(&str, &str)>) -> String {
    let mut params = serde_json::Map::new();
    if let Some(t) = tool {
        params.insert("name".into(), t.into());
    }
    if let Some((name, expression)) = query {
        let arguments = serde_json::Map::from_iter([(name.to_string(), expression.into())]);
        params.insert("arguments".into(), arguments.into());
    }
    let params = serde_json::Value::Object(params).to_string();
    let call = |id: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{}","params":{params}}}"#,
            mcp::TOOLS_CALL
        )
    };
    match ids {
        [] => call("0"),
        [one] => call(one),
        many => format!(
            "[{}]",
            many.iter().map(|id| call(id)).collect::<Vec<_>>().join(",")
        ),
    }
}

/// A result cut to its budget has a new `content` array: text items after
/// the cut are gone and the notice is its last item. What an agent reads
/// of the cut block is its first page and the notice, so the notice counts
/// with that block, and the items left out count as empty.
fn budget_cuts(
    report: &Report,
    before: &[(BlockKey, String)],
    after: Vec<(BlockKey, String)>,
) -> Vec<(BlockKey, String)> {
    let mut after = after;
    for d in &report.decisions {
        if d.outcome != Outcome::Cut {
            continue;
        }
        let (id, cut) = (d.id.clone(), d.block.unwrap_or(0));
        // The notice is the result's last text item.
        let notice_at = after.iter().rposition(|((i, _), _)| *i == id);
        let notice = notice_at
            .and_then(|n| after.get(n))
            .map(|(_, t)| t.clone())
            .unwrap_or_default();
        let text_at = |k: usize| {
            after
                .iter()
                .position(|((i, b), _)| *i == id && *b == Some(k))
                .filter(|&n| Some(n) != notice_at)
                .and_then(|n| after.get(n))
                .map(|(_, t)| t.clone())
        };
        let mut mine = Vec::new();
        for ((_, b), _) in before.iter().filter(|((i, _), _)| *i == id) {
            let text = match b {
                Some(k) if *k < cut => text_at(*k).unwrap_or_default(),
                Some(k) if *k == cut => match text_at(*k) {
                    Some(shown) => format!("{shown}\n{notice}"),
                    None => notice.clone(),
                },
                _ => String::new(),
            };
            mine.push(((id.clone(), *b), text));
        }
        after.retain(|((i, _), _)| *i != id);
        after.extend(mine);
    }
    after
}

/// The outcome of a block no stage changed.
pub(crate) const PASSTHROUGH: &str = "passthrough";

type BlockKey = (Option<String>, Option<usize>);

/// Groups the decisions by block, in the order blocks first appear.
fn rows(
    report: &Report,
    before: &[(BlockKey, String)],
    after: &[(BlockKey, String)],
    tokenizer: &Tokenizer,
) -> Vec<Row> {
    let mut groups: Vec<(BlockKey, Vec<&Decision>)> = Vec::new();
    for d in &report.decisions {
        let key = (d.id.clone(), d.block);
        match groups
            .iter_mut()
            .find(|(k, _)| *k == key && key.1.is_some())
        {
            Some((_, list)) => list.push(d),
            None => groups.push((key, vec![d])),
        }
    }
    // A call decided at its request (a policy that changes nothing,
    // `mode_off`) has one decision and no block, and so has a stream of a
    // configuration under which nothing changes (`policy_off`, no id): its
    // blocks are measured as passing, one row each, as when each block was
    // looked at.
    let groups: Vec<(BlockKey, Vec<&Decision>)> = groups
        .into_iter()
        .flat_map(|(key, decisions)| {
            let at_request = key.1.is_none()
                && decisions.iter().all(|d| match d.outcome {
                    Outcome::Passthrough(Reason::ModeOff) => key.0.is_some(),
                    Outcome::Passthrough(Reason::PolicyOff) => true,
                    _ => false,
                });
            let blocks: Vec<BlockKey> = before
                .iter()
                .filter(|(k, _)| at_request && (key.0.is_none() || k.0 == key.0))
                .map(|(k, _)| k.clone())
                .collect();
            if blocks.is_empty() {
                vec![(key, decisions)]
            } else {
                blocks.into_iter().map(|k| (k, decisions.clone())).collect()
            }
        })
        .collect();
    groups
        .into_iter()
        .map(|(key, decisions)| {
            let find = |list: &[(BlockKey, String)]| {
                list.iter().find(|(k, _)| *k == key).map(|(_, t)| t.clone())
            };
            let (text_before, text_after) = match key.1 {
                Some(_) => {
                    let b = find(before).unwrap_or_default();
                    let a = find(after).unwrap_or_else(|| b.clone());
                    (b, a)
                }
                None => (String::new(), String::new()),
            };
            let changes: Vec<&str> = decisions
                .iter()
                .filter(|d| d.outcome.changed())
                .map(|d| d.outcome.as_str())
                .collect();
            let reasons: Vec<&str> = decisions
                .iter()
                .filter_map(|d| match d.outcome {
                    Outcome::Passthrough(r) => Some(r.as_str()),
                    _ => None,
                })
                .collect();
            Row {
                id: key.0,
                tool: decisions.iter().find_map(|d| d.tool.clone()),
                block: key.1,
                outcome: if changes.is_empty() {
                    PASSTHROUGH.to_string()
                } else {
                    changes.join("+")
                },
                reason: (!reasons.is_empty()).then(|| reasons.join(",")),
                lossless: decisions.iter().all(|d| d.lossless || !d.outcome.changed()),
                bytes_before: text_before.len(),
                bytes_after: text_after.len(),
                tokens_before: tokenizer.count(&text_before),
                tokens_after: tokenizer.count(&text_after),
                decisions: decisions
                    .iter()
                    .map(|d| StageDecision {
                        stage: d.stage.as_str(),
                        transform: d.transform,
                        outcome: d.outcome.as_str(),
                        reason: match d.outcome {
                            Outcome::Passthrough(r) => Some(r.as_str()),
                            _ => None,
                        },
                        bytes_before: d.bytes_before,
                        bytes_after: d.bytes_after,
                        lossless: d.lossless,
                    })
                    .collect(),
            }
        })
        .collect()
}

/// The text of every `type: "text"` content item of every tool result in
/// a body, keyed by response id and item index.
fn block_texts(body: &str) -> Vec<(BlockKey, String)> {
    let mut out = Vec::new();
    for message in mcp::parse_messages(body).unwrap_or_default() {
        let Some(content) = message
            .result
            .and_then(mcp::tool_result)
            .and_then(|r| r.content)
        else {
            continue;
        };
        for (index, item) in mcp::text_items(&content).into_iter().enumerate() {
            let Some(text) = item
                .filter(|i| i.kind.as_deref() == Some("text"))
                .and_then(|i| i.text)
                .and_then(|t| serde_json::from_str::<String>(t.get()).ok())
            else {
                continue;
            };
            out.push(((message.id.clone(), Some(index)), text));
        }
    }
    out
}
