//! The decision record of one stream: what each stage did to each block,
//! with bytes before and after. The driver turns it into metrics, a
//! filter-state property, a response header and a debug log line
//! (`driver/record.rs`) through the host, which decides nothing.

use serde::Serialize;

use crate::outcome::{Outcome, Reason, Stage};

#[cfg(test)]
/// Prefix of every metric the plugin defines.
pub(crate) const METRIC_PREFIX: &str = "mcp_toon";
/// Response header summarising the decisions when headers were held (and
/// on the page tool's replies).
pub const SUMMARY_HEADER: &str = "x-mcp-toon";

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
    /// The clean transform (`html_to_markdown`, …, `max_text_bytes`).
    pub transform: Option<&'static str>,
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
            transform: None,
        }
    }
}

/// Counters of the page store: pages written, evicted to make room (of
/// those, pages of another owner past its fair share), and emptied after
/// their time to live.
pub(crate) const STORE_COUNTERS: [&str; 4] = [
    "mcp_toon_page_stored",
    "mcp_toon_page_evicted",
    "mcp_toon_page_evicted_over_share",
    "mcp_toon_page_expired",
];
/// Gauges of the page store: bytes and pages held (all workers).
pub const STORE_GAUGES: [&str; 2] = ["mcp_toon_page_store_bytes", "mcp_toon_page_store_pages"];
/// Counters of the bytes of the changed blocks, before and after.
pub(crate) const BYTES_BEFORE: &str = "mcp_toon_bytes_before";
pub(crate) const BYTES_AFTER: &str = "mcp_toon_bytes_after";

/// What the page store (`crate::page::store`) held after an operation,
/// and what it did: reported here, below the store, which fills it in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    /// Bytes of page data held (slot values).
    pub bytes: u64,
    /// Slots holding a page.
    pub pages: u64,
    pub stored: u64,
    /// Pages emptied before their expiry to make room (the owner's own,
    /// and those below).
    pub evicted: u64,
    /// Of those, pages of another owner that held more than its fair share.
    pub evicted_over_share: u64,
    pub expired: u64,
}

impl Figures {
    /// The counters these figures move, with their amounts.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        [
            self.stored,
            self.evicted,
            self.evicted_over_share,
            self.expired,
        ]
        .into_iter()
        .zip(STORE_COUNTERS)
        .filter(|(n, _)| *n > 0)
        .map(|(n, c)| (c, n))
        .collect()
    }

    /// The gauges these figures set.
    pub fn gauges(&self) -> Vec<(&'static str, u64)> {
        [self.bytes, self.pages]
            .into_iter()
            .zip(STORE_GAUGES)
            .map(|(n, g)| (g, n))
            .collect()
    }
}

/// The counter of one clean transform, by its name (e.g.
/// `html_to_markdown`); `None` for a name no transform has.
pub(crate) fn metric_transform(transform: &str) -> Option<&'static str> {
    crate::stage::clean::Transform::ALL
        .iter()
        .find(|t| t.name() == transform)
        .map(|t| t.metric())
}

/// Every counter name the plugin may increment, for hosts that must define
/// metrics up front (proxy-wasm).
pub fn all_metrics() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Reason::ALL.iter().map(|r| r.metric()).collect();
    names.extend(
        crate::stage::clean::Transform::ALL
            .iter()
            .map(|t| t.metric()),
    );
    names.extend(Outcome::CHANGES.iter().map(|o| o.metric()));
    names.extend(STORE_COUNTERS);
    names.extend([BYTES_BEFORE, BYTES_AFTER]);
    names
}

/// All decisions of one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub decisions: Vec<Decision>,
    /// Decisions dropped from the front of a long-lived stream's record
    /// after they were counted (see [`Report::forget_oldest`]).
    pub omitted: usize,
    /// The page store after this stream last wrote to it (counters and
    /// gauges, not part of the record); a host takes it when it counts.
    pub store: Option<Figures>,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    transform: Option<&'static str>,
}

impl Report {
    pub fn push(&mut self, d: Decision) {
        self.decisions.push(d);
    }

    pub fn is_empty(&self) -> bool {
        self.decisions.is_empty() && self.omitted == 0
    }

    /// Drops up to `n` of the oldest decisions, keeping their number. A
    /// 2024-11-05 GET stream lives as long as its session and would
    /// otherwise keep a decision for every call ever answered on it.
    pub fn forget_oldest(&mut self, n: usize) {
        let n = n.min(self.decisions.len());
        self.decisions.drain(..n);
        self.omitted = self.omitted.saturating_add(n);
    }

    /// The counters this report moves, with the amounts: one per decision,
    /// plus the bytes of the changed blocks.
    pub fn metrics(&self) -> Vec<(&'static str, u64)> {
        self.metrics_since(0)
    }

    /// The counters moved by the decisions from `start` on: a host counts
    /// a long-lived event stream as it goes. Cut only where no block is
    /// half-decided (no callout pending), so each block's bytes count once.
    ///
    /// Every name is spelt at build time: this runs on every stream, and
    /// formatting each name (with a vector per decision) was a good part of
    /// what an untouched stream cost in the module (issue 14).
    pub fn metrics_since(&self, start: usize) -> Vec<(&'static str, u64)> {
        let decisions = self.decisions.get(start..).unwrap_or_default();
        let mut out: Vec<(&'static str, u64)> = Vec::with_capacity(decisions.len() + 2);
        for d in decisions {
            out.push((d.outcome.metric(), 1));
            if d.outcome.changed() {
                out.extend(d.transform.and_then(metric_transform).map(|t| (t, 1)));
            }
        }
        let (before, after) = block_bytes(decisions);
        if before != 0 || after != 0 {
            out.push((BYTES_BEFORE, before as u64));
            out.push((BYTES_AFTER, after as u64));
        }
        out
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
                transform: d.transform,
            })
            .collect();
        // Written straight from the records: no `serde_json::Value` in
        // between (this runs on every stream the plugin reads).
        #[derive(Serialize)]
        struct Record<'r, 'a> {
            decisions: &'r [DecisionRecord<'a>],
            #[serde(skip_serializing_if = "Option::is_none")]
            omitted: Option<usize>,
        }
        let record = Record {
            decisions: &records,
            omitted: (self.omitted > 0).then_some(self.omitted),
        };
        serde_json::to_string(&record).unwrap_or_default()
    }

    /// One line for the `x-mcp-toon` header and the debug log, e.g.
    /// `encoded=1 passthrough=not_tabular:1 bytes=5120->2300` (bytes of the
    /// blocks that changed, before the first change and after the last).
    pub fn summary(&self) -> String {
        let mut changes: Vec<(&'static str, usize)> = Vec::new();
        let mut reasons: Vec<(&'static str, usize)> = Vec::new();
        let bump = |list: &mut Vec<(&'static str, usize)>, name: &'static str| match list
            .iter_mut()
            .find(|(n, _)| *n == name)
        {
            Some((_, c)) => *c += 1,
            None => list.push((name, 1)),
        };
        for d in &self.decisions {
            match d.outcome {
                Outcome::Passthrough(r) => bump(&mut reasons, r.as_str()),
                o => bump(&mut changes, o.as_str()),
            }
        }
        let mut parts: Vec<String> = Vec::new();
        if changes.is_empty() {
            parts.push("encoded=0".to_string());
        }
        parts.extend(changes.iter().map(|(n, c)| format!("{n}={c}")));
        if !reasons.is_empty() {
            let list: Vec<String> = reasons.iter().map(|(n, c)| format!("{n}:{c}")).collect();
            parts.push(format!("passthrough={}", list.join(",")));
        }
        let (before, after) = self.block_bytes();
        if before != after {
            parts.push(format!("bytes={before}->{after}"));
        }
        parts.join(" ")
    }

    /// Bytes of every changed block: as it came in, and as it goes out.
    /// Stages record their own before/after; a block's first change gives
    /// its input size and its last change its output size.
    pub fn block_bytes(&self) -> (usize, usize) {
        block_bytes(&self.decisions)
    }
}

fn block_bytes(decisions: &[Decision]) -> (usize, usize) {
    type Key<'a> = (Option<&'a str>, Option<usize>);
    // One changed block (most results): its first change and its last.
    let mut changed = decisions
        .iter()
        .filter(|d| d.outcome.changed() && d.block.is_some());
    let Some(first) = changed.next() else {
        return (0, 0);
    };
    let key = (first.id.as_deref(), first.block);
    let mut last = first;
    if changed.all(|d| {
        last = d;
        (d.id.as_deref(), d.block) == key
    }) {
        return (first.bytes_before, last.bytes_after);
    }
    // By block, in a map: a result (or a listing) of very many changed
    // blocks must not cost the square of their number (issue 13).
    let mut blocks: std::collections::HashMap<Key, (usize, usize)> =
        std::collections::HashMap::new();
    for d in decisions
        .iter()
        .filter(|d| d.outcome.changed() && d.block.is_some())
    {
        blocks
            .entry((d.id.as_deref(), d.block))
            .and_modify(|(_, after)| *after = d.bytes_after)
            .or_insert((d.bytes_before, d.bytes_after));
    }
    blocks
        .values()
        .fold((0, 0), |(b, a), (x, y)| (b + x, a + y))
}

#[cfg(test)]
mod tests {
    use super::{all_metrics, Decision, Report};
    use crate::outcome::{Outcome, Reason, Stage};
    use crate::stage::clean::Transform;

    fn decision(outcome: Outcome, transform: Option<&'static str>) -> Decision {
        Decision {
            stage: Stage::Clean,
            outcome,
            id: Some("1".into()),
            tool: None,
            block: Some(0),
            bytes_before: 10,
            bytes_after: 5,
            lossless: false,
            transform,
        }
    }

    /// Hosts define counters up front from `all_metrics`: a counter a report
    /// moves but that list lacks is silently never counted (regression:
    /// `mcp_toon_cleaned` was missing).
    #[test]
    fn every_metric_a_report_moves_is_defined() {
        let defined = all_metrics();
        let mut report = Report::default();
        for t in Transform::ALL {
            report.push(decision(Outcome::Cleaned, Some(t.name())));
        }
        for o in Outcome::CHANGES {
            report.push(decision(*o, None));
        }
        for r in Reason::ALL {
            report.push(decision(Outcome::Passthrough(*r), None));
        }
        for (name, _) in report.metrics() {
            assert!(defined.contains(&name), "{name} is not defined");
        }
        assert!(defined.contains(&"mcp_toon_cleaned"));
    }

    /// The names spelt at build time are the prefix and the vocabulary's
    /// own names, each defined once.
    #[test]
    fn metric_names_are_the_prefix_and_the_names() {
        use super::METRIC_PREFIX;
        for r in Reason::ALL {
            assert_eq!(
                r.metric(),
                format!("{METRIC_PREFIX}_passthrough_{}", r.as_str())
            );
            assert_eq!(Outcome::Passthrough(*r).metric(), r.metric());
        }
        for o in Outcome::CHANGES {
            assert_eq!(o.metric(), format!("{METRIC_PREFIX}_{}", o.as_str()));
        }
        for t in Transform::ALL {
            assert_eq!(t.metric(), format!("{METRIC_PREFIX}_clean_{}", t.name()));
            assert_eq!(super::metric_transform(t.name()), Some(t.metric()));
        }
        let defined = all_metrics();
        let unique: std::collections::HashSet<_> = defined.iter().collect();
        assert_eq!(unique.len(), defined.len());
        assert!(defined.iter().all(|n| n.starts_with("mcp_toon_")));
    }

    /// A block's bytes are its first change's before and its last change's
    /// after, summed over the changed blocks (one block, or many: the
    /// shortcut for one and the map for more agree).
    #[test]
    fn block_bytes_take_each_blocks_first_and_last_change() {
        let change = |id: &str, block: Option<usize>, before: usize, after: usize| Decision {
            id: Some(id.into()),
            block,
            bytes_before: before,
            bytes_after: after,
            ..decision(Outcome::Cleaned, None)
        };
        let pass = Decision {
            block: Some(0),
            bytes_before: 999,
            bytes_after: 999,
            ..decision(Outcome::Passthrough(Reason::NotTabular), None)
        };
        let cases: Vec<(Vec<Decision>, (usize, usize))> = vec![
            (vec![], (0, 0)),
            (vec![pass.clone()], (0, 0)),
            (vec![change("1", None, 7, 3)], (0, 0)),
            (vec![change("1", Some(0), 100, 80)], (100, 80)),
            (
                vec![
                    change("1", Some(0), 100, 80),
                    pass.clone(),
                    change("1", Some(0), 80, 40),
                ],
                (100, 40),
            ),
            (
                vec![
                    change("1", Some(0), 100, 80),
                    change("1", Some(1), 50, 20),
                    change("1", Some(0), 80, 40),
                ],
                (150, 60),
            ),
            (
                vec![change("1", Some(0), 100, 80), change("2", Some(0), 30, 10)],
                (130, 90),
            ),
        ];
        for (decisions, expected) in cases {
            let report = Report {
                decisions,
                ..Report::default()
            };
            assert_eq!(report.block_bytes(), expected, "{:?}", report.decisions);
        }
    }
}
