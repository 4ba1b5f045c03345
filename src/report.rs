//! The decision record of one stream: what each stage did to each block,
//! with bytes before and after. Adapters turn it into metrics, a filter-state
//! property, a response header and a debug log line; none of them decides
//! anything.

use serde::Serialize;

use crate::outcome::{Outcome, Reason, Stage};

/// Prefix of every metric the plugin defines.
pub const METRIC_PREFIX: &str = "mcp_toon";

/// One decision about one block (or a whole response when `block` is None).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub stage: Stage,
    pub outcome: Outcome,
    /// JSON-RPC id of the response, as its JSON text.
    pub id: Option<String>,
    pub tool: Option<String>,
    /// Index in `result.content[]` (or `result.tools[]` for annotations).
    pub block: Option<usize>,
    pub bytes_before: usize,
    pub bytes_after: usize,
    /// False for stages that drop information by design.
    pub lossless: bool,
}

impl Decision {
    /// A response-level passthrough.
    pub fn response(reason: Reason) -> Self {
        Self {
            stage: Stage::Response,
            outcome: Outcome::Passthrough(reason),
            id: None,
            tool: None,
            block: None,
            bytes_before: 0,
            bytes_after: 0,
            lossless: true,
        }
    }

    /// The counters this decision moves, with the amount.
    pub fn metrics(&self) -> Vec<(String, u64)> {
        match self.outcome {
            Outcome::Passthrough(r) => vec![(metric_passthrough(r), 1)],
            Outcome::Encoded | Outcome::Annotated => {
                let name = format!("{METRIC_PREFIX}_{}", self.outcome.as_str());
                vec![
                    (name, 1),
                    (
                        format!("{METRIC_PREFIX}_bytes_before"),
                        self.bytes_before as u64,
                    ),
                    (
                        format!("{METRIC_PREFIX}_bytes_after"),
                        self.bytes_after as u64,
                    ),
                ]
            }
        }
    }
}

/// Metric counting passthroughs for `reason`.
pub fn metric_passthrough(reason: Reason) -> String {
    format!("{METRIC_PREFIX}_passthrough_{}", reason.as_str())
}

/// Every counter name the plugin may move, for hosts that define them up front.
pub fn all_metrics() -> Vec<String> {
    let mut names: Vec<String> = Reason::ALL.iter().map(|r| metric_passthrough(*r)).collect();
    names.push(format!("{METRIC_PREFIX}_{}", Outcome::Encoded.as_str()));
    names.push(format!("{METRIC_PREFIX}_{}", Outcome::Annotated.as_str()));
    names.push(format!("{METRIC_PREFIX}_bytes_before"));
    names.push(format!("{METRIC_PREFIX}_bytes_after"));
    names
}

/// All decisions of one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub decisions: Vec<Decision>,
}

#[derive(Serialize)]
struct DecisionRecord<'a> {
    stage: &'static str,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    block: Option<usize>,
    bytes_before: usize,
    bytes_after: usize,
    lossless: bool,
}

impl Report {
    pub fn push(&mut self, d: Decision) {
        self.decisions.push(d);
    }

    pub fn is_empty(&self) -> bool {
        self.decisions.is_empty()
    }

    /// The decision record as JSON: `{"decisions":[{...}]}`.
    pub fn to_json(&self) -> String {
        let records: Vec<DecisionRecord> = self
            .decisions
            .iter()
            .map(|d| DecisionRecord {
                stage: d.stage.as_str(),
                outcome: d.outcome.as_str(),
                reason: match d.outcome {
                    Outcome::Passthrough(r) => Some(r.as_str()),
                    _ => None,
                },
                id: d.id.as_deref(),
                tool: d.tool.as_deref(),
                block: d.block,
                bytes_before: d.bytes_before,
                bytes_after: d.bytes_after,
                lossless: d.lossless,
            })
            .collect();
        serde_json::json!({ "decisions": records }).to_string()
    }

    /// One line for the `x-mcp-toon` header and the debug log, e.g.
    /// `encoded=1 passthrough=not_tabular:1 bytes=5120->2300`.
    pub fn summary(&self) -> String {
        let mut encoded = 0usize;
        let mut before = 0usize;
        let mut after = 0usize;
        let mut reasons: Vec<(&'static str, usize)> = Vec::new();
        for d in &self.decisions {
            match d.outcome {
                Outcome::Passthrough(r) => match reasons.iter_mut().find(|(n, _)| *n == r.as_str())
                {
                    Some((_, c)) => *c += 1,
                    None => reasons.push((r.as_str(), 1)),
                },
                Outcome::Encoded | Outcome::Annotated => {
                    encoded += 1;
                    before += d.bytes_before;
                    after += d.bytes_after;
                }
            }
        }
        let mut out = format!("encoded={encoded}");
        if !reasons.is_empty() {
            let list: Vec<String> = reasons.iter().map(|(n, c)| format!("{n}:{c}")).collect();
            out.push_str(" passthrough=");
            out.push_str(&list.join(","));
        }
        if encoded > 0 {
            out.push_str(&format!(" bytes={before}->{after}"));
        }
        out
    }
}
