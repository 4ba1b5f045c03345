//! The one place that orders the stages. A response body goes in; the body
//! to send ([`Output`]: changed, or the original bytes) and the decisions
//! come out.
//!
//! Data path, per response body (one JSON-RPC message or a batch):
//! 1. pair each message with its request; only `tools/call` results are
//!    touched, and only their `content[]` text items ("blocks");
//!    `structuredContent`, `isError` results, errors and other items never;
//! 2. per block: clean → project → trim → TOON. TOON is lossless and must
//!    see the final text. Project (operator rules, then the agent's query)
//!    comes before trim: it is exact and free, and what it drops no longer
//!    goes to the LLM (a smaller callout, or none below the threshold). A
//!    query the agent wrote says exactly what it wants, so a block it applied
//!    to is not trimmed as well (`trim_query_applied`); an intent still trims
//!    what operator rules left;
//! 3. per result of a tool with a budget: cut to fit what the stages left,
//!    the rest kept as pages ([`budget`]; after every other stage);
//! 4. `tools/list` results get the optional decode hint and the intent and
//!    query arguments (and the page tool, where paging is on);
//! 5. each changed string is spliced back at its byte span.
//!
//! One way in and one way out. The exchange builds a [`Run`] (settings,
//! scope, the request and its calls resolved) for each body and calls
//! [`start`], which runs everything up to trim's HTTP call, which only the
//! host can make, and returns a [`Job`]. The exchange
//! ([`crate::exchange`]) hands [`Job::callout`] (if any) to the driver,
//! which makes the call through its host, and gives the reply to
//! [`Job::finish`] (the original body is kept for a host that refuses the
//! new one). [`process_response`] runs both with no page store and no
//! endpoint: the unit tests' way.
//!
//! The order is here: [`start`] (via `read`) pairs messages with calls,
//! annotates listings, cleans, projects and plans the trim;
//! [`Job::finish`] applies the trim, runs TOON and each
//! block's last steps (`Job::stages`), the budget's cut and the page tool's
//! listing entry, then splices. What a step does sits beside it: a block's
//! own steps in `block.rs`, trim's plan and reply in `trim.rs`, listings in
//! `listing.rs`, the cut and the page tool in `budget.rs`.
//!
//! A trimmed block says so on its first line (trim's note,
//! [`stage::trim::header`]): on the marker line when TOON encodes the
//! extraction, on a line of its own otherwise — TOON decides on the
//! extraction alone, and the note costs the same either way. With
//! `marker_key` the first line of a block that has a header line ends with
//! its tag ([`crate::tag`]), written last, over the final text.

use std::ops::Range;

use serde_json::value::RawValue;

use crate::config::{Header, Policy, ServerScope, Settings};
use crate::marker;
use crate::mcp::{self, Call, Edits, RequestInfo};
use crate::outcome::{Outcome, Reason, Stage};
use crate::report::{Decision, Report};
use crate::shared::Services;
use crate::stage;
use crate::stage::clean::{self, TextKind};

mod block;
mod budget;
mod listing;
mod trim;

use block::{Block, Origin};
pub(crate) use budget::PageContext;
#[cfg(test)]
pub(crate) use listing::DECODE_HINT;
use trim::TrimPlan;

/// One tool of a listing: its name and which of the plugin's arguments its
/// own schema declares (none: the tool does not).
pub(crate) type Listed = (String, Vec<String>);

/// A response body between [`start`] and the end of its stages
/// ([`Job::finish`]).
#[derive(Debug)]
pub(crate) struct Job {
    body: String,
    edits: Edits,
    blocks: Vec<Block>,
    trim: Option<TrimPlan>,
    /// Results of tools with a budget.
    shapes: Vec<budget::Shape>,
    /// `tools/list` results, where the page tool may be listed.
    listings: Vec<Range<usize>>,
    scope: ServerScope,
    /// The tools of the listings in the body that trim, with the plugin's
    /// arguments their own schemas declare (see [`crate::exchange`]).
    listed: Vec<Listed>,
}

/// Runs the stages over one response body without an LLM endpoint or a
/// page store (the unit tests; the hosts go through the driver): a planned
/// trim is recorded as unavailable.
pub fn process_response(
    settings: &Settings,
    scope: ServerScope,
    request: &RequestInfo,
    body: &[u8],
    report: &mut Report,
) -> Option<Vec<u8>> {
    let resolved = Resolved::of(settings, scope, request);
    let run = Run {
        settings,
        scope,
        request,
        resolved: &resolved,
    };
    // No randomness, so no trim boundaries: a trim fails open, as it does
    // here anyway without an endpoint.
    let Started::Job(job) = start(run, body.to_vec(), report, &mut |_| false) else {
        return None;
    };
    finish_without_store(job, settings, None, report).changed()
}

/// [`Job::finish`] with no page store (results over a budget are cut
/// without pages) and a fresh TOON allowance: [`process_response`]'s, and
/// the unit tests'.
fn finish_without_store(
    job: Job,
    settings: &Settings,
    reply: Option<&stage::trim::LlmReply>,
    report: &mut Report,
) -> Output {
    let mut host = crate::shared::SharedMemory::with(crate::shared::Entropy::None);
    let mut cx = PageContext {
        host: &mut host,
        owner: &crate::page::owner::Owner::default(),
        cluster: None,
    };
    let mut toon = stage::toon::Allowance::per_response();
    job.finish(settings, reply, &mut toon, &mut cx, report).0
}

/// A body after the stages: changed, or exactly as it came.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Output {
    Changed(Vec<u8>),
    Unchanged(Vec<u8>),
}

impl Output {
    /// The new body, if any.
    pub(crate) fn changed(self) -> Option<Vec<u8>> {
        match self {
            Output::Changed(b) => Some(b),
            Output::Unchanged(_) => None,
        }
    }

    /// The bytes to send, changed or not.
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        match self {
            Output::Changed(b) | Output::Unchanged(b) => b,
        }
    }
}

/// What one response body is read against: the configuration, the
/// stream's server scope, the request the body answers and that request's
/// calls resolved ([`Resolved`], kept by the stream for every body that
/// answers the request). The exchange builds one for each body.
#[derive(Clone, Copy)]
pub(crate) struct Run<'r> {
    pub(crate) settings: &'r Settings,
    pub(crate) scope: ServerScope,
    pub(crate) request: &'r RequestInfo,
    pub(crate) resolved: &'r Resolved,
}

/// What [`start`] made of a body.
// Returned once per body and matched at once, as the `Result<Job, _>` it
// replaced was: boxing the job would add an allocation per body.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Started<Back> {
    /// Stages to finish ([`Job::finish`]), after the callout it plans if
    /// any.
    Job(Job),
    /// Nothing in the body can change (the reason is recorded): an owned
    /// body is handed back; a borrowed one was not copied (issue 14: an
    /// event that answers none of the calls, or whose result is an error,
    /// costs its scan and nothing more; one whose texts the scan left
    /// unread, its scan and their decisions).
    Unchanged(Back),
}

/// A body for [`start`]: a whole HTTP body the caller gives up
/// (`Vec<u8>`, handed back when nothing in it can change), or an event's
/// data the caller keeps (`&str`, copied only when something in it will).
pub(crate) trait Body {
    /// What [`Started::Unchanged`] hands back.
    type Back;
    fn start(
        self,
        run: Run<'_>,
        report: &mut Report,
        random: &mut dyn FnMut(&mut [u8]) -> bool,
    ) -> Started<Self::Back>;
}

impl Body for Vec<u8> {
    type Back = Vec<u8>;
    fn start(
        self,
        run: Run<'_>,
        report: &mut Report,
        random: &mut dyn FnMut(&mut [u8]) -> bool,
    ) -> Started<Vec<u8>> {
        let body = match String::from_utf8(self) {
            Ok(b) => b,
            Err(e) => {
                report.push(Decision::response(Reason::InvalidUtf8));
                return Started::Unchanged(e.into_bytes());
            }
        };
        match read(run, &body, report, random) {
            Some(found) => Started::Job(found.into_job(body)),
            None => Started::Unchanged(body.into_bytes()),
        }
    }
}

impl Body for &str {
    type Back = ();
    fn start(
        self,
        run: Run<'_>,
        report: &mut Report,
        random: &mut dyn FnMut(&mut [u8]) -> bool,
    ) -> Started<()> {
        let Some(found) = read(run, self, report, random) else {
            return Started::Unchanged(());
        };
        let idle = found.edits.is_empty()
            && found.listed.is_empty()
            && found.listings.is_empty()
            && found.trim.is_none()
            && found.shapes.is_empty()
            && found.blocks.iter().all(|b| b.is_unread());
        if idle {
            // What finishing would record, and all it would do: an unread
            // block meets no stage but TOON's refusal.
            for refusal in found.blocks.iter().filter_map(Block::unread_refusal) {
                report.push(refusal);
            }
            return Started::Unchanged(());
        }
        Started::Job(found.into_job(self.to_string()))
    }
}

/// Reads the body, pairs responses with requests, cleans each block and
/// plans the trim callout: the one way into the pipeline. `random` fills a
/// buffer with random bytes (false when the host has none): the callout's
/// boundaries.
pub(crate) fn start<B: Body>(
    run: Run<'_>,
    body: B,
    report: &mut Report,
    random: &mut dyn FnMut(&mut [u8]) -> bool,
) -> Started<B::Back> {
    body.start(run, report, random)
}

/// What a body holds for the stages, as spans of it.
struct Found {
    edits: Edits,
    blocks: Vec<Block>,
    trim: Option<TrimPlan>,
    shapes: Vec<budget::Shape>,
    listings: Vec<Range<usize>>,
    scope: ServerScope,
    listed: Vec<Listed>,
}

impl Found {
    fn into_job(self, body: String) -> Job {
        Job {
            body,
            edits: self.edits,
            blocks: self.blocks,
            trim: self.trim,
            shapes: self.shapes,
            listings: self.listings,
            scope: self.scope,
            listed: self.listed,
        }
    }
}

/// The policy of each `tools/call` of a request, resolved once per request
/// (an event stream answers a batch's calls in as many events: resolving
/// them all for each event made a 1 MiB batch quadratic), and how far the
/// scan reads the texts of their results. Where every call's policy
/// changes only JSON, a text that is certainly no JSON value is measured,
/// not decoded (`mcp::Texts`): source files, diffs and logs pass at the
/// cost of a check.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// By the calls' positions in the request; `None` for other methods.
    policies: Vec<Option<Policy>>,
    texts: mcp::Texts,
}

impl Resolved {
    pub(crate) fn of(settings: &Settings, scope: ServerScope, request: &RequestInfo) -> Self {
        let policies: Vec<Option<Policy>> = request
            .calls
            .iter()
            .map(|c| {
                (c.method == mcp::TOOLS_CALL).then(|| settings.policy(scope, c.tool.as_deref()))
            })
            .collect();
        // A query of the agent's is answered, or refused with a note, by
        // the project stage, which reads any text.
        let queries = settings.queries_anywhere();
        let only_json = policies.iter().zip(&request.calls).all(|(p, c)| {
            p.as_ref()
                .is_none_or(|p| p.changes_only_json() && (c.query.is_none() || !queries))
        });
        // Python literals are data too: a text that opens as a tuple's
        // `repr` is read where one of the calls reads them.
        let python = policies.iter().flatten().any(|p| p.clean.reads_python());
        Self {
            policies,
            texts: match (only_json, python) {
                (false, _) => mcp::Texts::Decode,
                (true, false) => mcp::Texts::SkimNotJson,
                (true, true) => mcp::Texts::SkimNotLiteral,
            },
        }
    }
}

/// The reading half of [`start`]; `None` when the body is no JSON-RPC
/// message (recorded).
fn read(
    run: Run<'_>,
    body: &str,
    report: &mut Report,
    random: &mut dyn FnMut(&mut [u8]) -> bool,
) -> Option<Found> {
    let Run {
        settings,
        scope,
        request,
        resolved,
    } = run;
    let mut edits = Edits::default();
    let mut blocks = Vec::new();
    let mut intents: Vec<Option<String>> = Vec::new();
    let mut shapes = Vec::new();
    let mut listings = Vec::new();
    let mut listed = Vec::new();
    // One pass over the body: messages, results and their items as spans
    // (mcp::scan_response).
    let Some(mut messages) = mcp::scan_response_reading(body, resolved.texts) else {
        report.push(Decision::response(Reason::MalformedResponse));
        return None;
    };
    let calls = request.index();
    for message in &mut messages {
        let found = message.id.as_deref().and_then(|id| calls.position(id));
        let Some((at, call)) = found else {
            if request.complete && message.id.is_some() {
                // A response to no request of this body (a server's bug):
                // it passes, counted. Its id, the server's to choose, is
                // not copied into the record.
                report.push(Decision::response(Reason::UnknownId));
            }
            continue;
        };
        if let Some(Some(policy)) = resolved.policies.get(at) {
            let found = tool_call_blocks(settings, body, call, policy, message, report);
            if found.iter().any(|b| b.origin.policy.budget.is_some()) {
                // A result with a budget is read again as a whole, for the
                // spans of its items (budget::Shape).
                let shape = message
                    .result
                    .and_then(|r| serde_json::from_str::<&RawValue>(r).ok())
                    .and_then(|r| budget::Shape::of(body, call, r));
                shapes.extend(shape);
            }
            intents.extend(found.iter().map(|_| call.intent.clone()));
            blocks.extend(found);
        } else if call.method == mcp::TOOLS_LIST {
            // A listing is read again, as a whole (it is rarely large).
            let result = message
                .result
                .and_then(|r| serde_json::from_str::<&RawValue>(r).ok());
            if let Some(result) = result {
                listing::listing(settings, scope, body, call, result, &mut edits, report);
                if settings.paging_anywhere() {
                    listings.extend(Edits::span_of(body, result));
                }
                listed.extend(listing::declaring(settings, scope, result));
            }
        }
    }
    // An unread block is no JSON under a policy that changes only JSON:
    // it meets no stage but TOON's refusal (`Job::stages`).
    // A lone block's compaction may wait for TOON (`block::Form::Deferred`):
    // with others, their records would come between its clean and TOON
    // records.
    let defer = blocks.len() == 1;
    for block in blocks.iter_mut().filter(|b| !b.is_unread()) {
        block.clean(report, defer);
        block.project(settings, report);
    }
    let trim = trim::plan_trim(settings, &blocks, &intents, report, random);
    Some(Found {
        edits,
        blocks,
        trim,
        shapes,
        listings,
        scope,
        listed,
    })
}

impl Job {
    /// The HTTP call the host should make before the job finishes, if any.
    pub fn callout(&self) -> Option<&stage::trim::LlmRequest> {
        self.trim.as_ref().map(|t| &t.request)
    }

    /// The trimming tools its listings showed, and which of the plugin's
    /// arguments each declares itself.
    pub(crate) fn listed(&self) -> &[Listed] {
        &self.listed
    }

    /// Goes on without the callout (the stream could not wait for it):
    /// its blocks are counted under `reason`, and finishing then leaves
    /// them as clean left them.
    pub(crate) fn give_up_trim(&mut self, reason: Reason, report: &mut Report) {
        if let Some(plan) = self.trim.take() {
            for &i in &plan.blocks {
                if let Some(block) = self.blocks.get(i) {
                    report.push(block.passthrough(Stage::Trim, reason));
                }
            }
        }
    }

    /// Bytes of the body as it came.
    pub(crate) fn body_len(&self) -> usize {
        self.body.len()
    }

    /// The body as it came, for a stream that gives up on this job.
    pub(crate) fn into_original(self) -> Vec<u8> {
        self.body.into_bytes()
    }

    /// Applies the callout's reply (or its absence), the stages and the
    /// budget, and returns the body to send: the one way out of the
    /// pipeline. The TOON stage's generic-path work is drawn from `toon`
    /// (an event stream shares one across its events), the pages of cut
    /// results are kept where `cx` says, and the original body comes back
    /// too when a new one replaces it: a host that refuses the new body
    /// sends the original.
    pub(crate) fn finish<H: Services + ?Sized>(
        mut self,
        settings: &Settings,
        reply: Option<&stage::trim::LlmReply>,
        toon: &mut stage::toon::Allowance,
        cx: &mut PageContext<'_, H>,
        report: &mut Report,
    ) -> (Output, Option<Vec<u8>>) {
        if let Some(plan) = self.trim.take() {
            trim::apply_trim(settings, &mut self.blocks, &plan, reply, report);
        }
        self.stages(settings, toon, report);
        budget::apply(
            settings,
            &self.body,
            &self.shapes,
            &mut self.blocks,
            cx,
            &mut self.edits,
            report,
        );
        for span in &self.listings {
            let Some(text) = self.body.get(span.clone()) else {
                continue;
            };
            let Ok(result) = serde_json::from_str::<&RawValue>(text) else {
                continue;
            };
            budget::listing(
                settings,
                self.scope,
                &self.body,
                result,
                cx,
                &mut self.edits,
            );
        }
        for block in &mut self.blocks {
            if let Some(wire) = block.to_write() {
                // Sized exactly, and the text let go once it is written:
                // the new body is the only other copy.
                let len = wire.unwrap_or_else(|| stage::literal_len(&block.text));
                let mut literal = String::with_capacity(len);
                crate::json::literal::write_literal(&mut literal, &block.text);
                block.text = String::new();
                self.edits.replace_span(block.origin.span.clone(), literal);
            }
        }
        if self.edits.is_empty() {
            return (Output::Unchanged(self.body.into_bytes()), None);
        }
        let edits = std::mem::take(&mut self.edits);
        match edits.apply(&self.body) {
            Some(new) => (
                Output::Changed(new.into_bytes()),
                Some(self.body.into_bytes()),
            ),
            None => (Output::Unchanged(self.body.into_bytes()), None),
        }
    }

    /// TOON, the trim note line, the cap, and the marker tag last, on
    /// every block; an unread one gets TOON's refusal alone.
    fn stages(
        &mut self,
        settings: &Settings,
        toon: &mut stage::toon::Allowance,
        report: &mut Report,
    ) {
        for block in &mut self.blocks {
            if let Some(refusal) = block.unread_refusal() {
                report.push(refusal);
                continue;
            }
            encode(block, settings, toon, report);
            block.note_line(!settings.marker_key.is_empty());
            block.cap(report);
            block.sign(&settings.marker_key);
        }
    }
}

/// One text item of a result after every stage but the budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalItem {
    /// Index in `content[]`.
    pub(crate) index: usize,
    pub text: String,
    pub framing: TextKind,
}

/// The text items of the result in `message` (a JSON-RPC response with
/// id `id` to a `tools/call` of `tool` with the agent's `query`) as the
/// stages leave them before the budget, without trim: a page rebuilt by
/// calling the tool again. `None` when the message is no successful tool
/// result.
pub fn final_items(
    settings: &Settings,
    scope: ServerScope,
    id: &str,
    tool: Option<&str>,
    query: Option<&str>,
    message: &str,
) -> Option<Vec<FinalItem>> {
    let request = RequestInfo {
        calls: vec![Call {
            id: id.to_string(),
            method: mcp::TOOLS_CALL.to_string(),
            tool: tool.map(str::to_string),
            query: query.map(str::to_string),
            ..Call::default()
        }],
        ..RequestInfo::default()
    };
    let mut report = Report::default();
    let resolved = Resolved::of(settings, scope, &request);
    let run = Run {
        settings,
        scope,
        request: &request,
        resolved: &resolved,
    };
    // No trim on a page rebuilt, so no trim boundaries to draw.
    let Started::Job(mut job) = start(run, message.as_bytes().to_vec(), &mut report, &mut |_| {
        false
    }) else {
        return None;
    };
    job.trim = None;
    if job.blocks.is_empty() {
        return None;
    }
    job.stages(
        settings,
        &mut stage::toon::Allowance::per_response(),
        &mut report,
    );
    Some(
        job.blocks
            .into_iter()
            .map(|b| FinalItem {
                index: b.origin.index,
                framing: b.framing(),
                text: b.text,
            })
            .collect(),
    )
}

/// Stage 4, TOON. The block it replaces is the text as the earlier stages
/// left it, and on the wire its string literal as sent (or as it would be
/// sent, once an earlier stage changed it). A trimmed block's note goes on
/// the emission's marker line (a line of its own for bare TOON); with a
/// marker key, an untrimmed block's marker line is sized with its tag.
fn encode(
    block: &mut Block,
    settings: &Settings,
    budget: &mut stage::toon::Allowance,
    report: &mut Report,
) {
    let keyed = !settings.marker_key.is_empty();
    let header = block.origin.policy.toon.header;
    let tags_marker = keyed && block.trim_note().is_none() && header != Header::None;
    // A cap too small for the header and one row would leave an agent a
    // marker and no data: the block goes unencoded instead.
    let max = block.origin.policy.clean.max_text_bytes;
    let framing = TextKind::Toon(header);
    let fits = |emission: &str| max == 0 || clean::can_hold_first_row(emission, max, framing);
    if block.take_deferred() {
        // TOON reads the text as it is, measured as its compact form;
        // when it encodes, the block's compaction is recorded as the clean
        // stage records it, and the compact text is never made. Else the
        // block is compacted now and goes on as any other.
        let settings_toon = toon_settings(&block.origin.policy.toon, None, tags_marker);
        let encoded = stage::toon::encode_compacted(&block.text, &settings_toon);
        match encoded.filter(|e| fits(&e.text)) {
            Some(e) => {
                let compact = e.replaced.len;
                report.push(block.applied(&clean::Applied {
                    transform: clean::Transform::CompactJson,
                    bytes_before: block.text.len(),
                    bytes_after: compact,
                }));
                report.push(block.decision(
                    Stage::Toon,
                    Outcome::Encoded,
                    compact,
                    e.text.len(),
                    true,
                ));
                block.encoded_to(e.text, Some(e.wire));
                block.tagged = keyed && tags_marker;
                return;
            }
            None => block.clean(report, false),
        }
    }
    let wire = block.wire_len();
    // A Python literal is encoded as the JSON it reads as, the marker
    // saying what it was; it competes with the literal on the wire.
    let python = block.python();
    let settings_toon = toon_settings(
        &block.origin.policy.toon,
        python.as_ref().map(|r| r.tuples),
        tags_marker,
    );
    let note = block.trim_note();
    let input = python
        .as_ref()
        .map_or(block.text.as_str(), |r| r.json.as_str());
    let sizes = stage::toon::Sizes::of(input, wire);
    let toon = stage::toon::encode_within(input, sizes, &settings_toon, budget);
    let result = toon.and_then(|emission| {
        // The note changes the text the stage measured.
        let (emission, wire) = match note {
            Some(note) => (with_note(emission.text, note, header), None),
            None => (emission.text, Some(emission.wire)),
        };
        if !fits(&emission) {
            return Err(Reason::CapTooSmall);
        }
        Ok((emission, wire))
    });
    match result {
        Ok((emission, wire)) => {
            if let Some(read) = python {
                block.take_python(read, report);
            }
            report.push(block.decision(
                Stage::Toon,
                Outcome::Encoded,
                block.text.len(),
                emission.len(),
                true,
            ));
            block.tagged = keyed && (tags_marker || block.trim_note().is_some());
            block.encoded_to(emission, wire);
        }
        Err(reason) => {
            let reason = match (reason, python) {
                (reason, Some(read)) => {
                    block.python_json(read, wire, keyed, report);
                    reason
                }
                (Reason::NotJson, None) => block.no_json_reason(),
                (reason, None) => reason,
            };
            report.push(block.passthrough(Stage::Toon, reason));
        }
    }
}

/// A block's TOON settings: for a Python literal, the marker line says
/// what the text was; with a tag, the line is sized with the tag's
/// placeholder.
fn toon_settings(
    toon: &crate::config::ToonSettings,
    python_tuples: Option<bool>,
    tags_marker: bool,
) -> std::borrow::Cow<'_, crate::config::ToonSettings> {
    let mut toon = std::borrow::Cow::Borrowed(toon);
    if let Some(tuples) = python_tuples {
        let marker = format!("{} {}", toon.marker, marker::python_note(tuples));
        toon.to_mut().marker = std::sync::Arc::from(marker);
    }
    if tags_marker {
        let marker = format!("{}{}", toon.marker, crate::tag::placeholder());
        toon.to_mut().marker = std::sync::Arc::from(marker);
    }
    toon
}

/// A TOON emission with a trimmed block's note: at the end of the marker
/// line, or, for bare TOON, as a line of its own before it.
fn with_note(emission: String, note: &str, header: Header) -> String {
    if header == Header::None {
        return format!("{note}\n{emission}");
    }
    let end = emission.find('\n').unwrap_or(emission.len());
    let (line, rest) = emission.split_at(end);
    format!("{line} {note}{rest}")
}

/// The text blocks of one tool result, or the reason there are none.
fn tool_call_blocks(
    settings: &Settings,
    base: &str,
    call: &Call,
    policy: &Policy,
    message: &mut mcp::Scanned<'_>,
    report: &mut Report,
) -> Vec<Block> {
    let at = |reason: Reason, block: Option<usize>| Decision {
        id: Some(call.id.clone()),
        tool: call.tool.clone(),
        block,
        ..Decision::response(reason)
    };
    if message.is_error_response {
        report.push(at(Reason::JsonRpcError, None));
        return Vec::new();
    }
    let Some(result) = &mut message.tool else {
        report.push(at(Reason::MalformedResponse, None));
        return Vec::new();
    };
    if result.is_error == Some(true) {
        report.push(at(Reason::IsError, None));
        return Vec::new();
    }
    let Some(content) = &mut result.content else {
        report.push(at(Reason::NoContent, None));
        return Vec::new();
    };
    let structured = result.structured_content.is_some();
    let mut blocks = Vec::new();
    for (index, item) in content.iter_mut().enumerate() {
        let Some(item) = item else {
            report.push(at(Reason::MalformedContent, Some(index)));
            continue;
        };
        if item.kind.as_deref() != Some("text") {
            continue;
        }
        let found = item
            .text
            .and_then(|l| Some((Edits::span_of_str(base, l)?, item.take_text()?)));
        let Some((span, read)) = found else {
            report.push(at(Reason::MalformedContent, Some(index)));
            continue;
        };
        let origin = Origin {
            span,
            id: call.id.clone(),
            tool: call.tool.clone(),
            index,
            policy: policy.clone(),
            structured,
            intent_too_long: call.intent_too_long,
            // Queries off everywhere: the argument was neither advertised
            // nor taken out, so it is the server's, not ours.
            query: call.query.clone().filter(|_| settings.queries_anywhere()),
        };
        blocks.push(match read {
            mcp::Text::Decoded {
                value,
                layout,
                escapes,
            } => Block::read(value, Some(clean::Known { layout, escapes }), origin),
            mcp::Text::NotJson { len } => Block::unread(len, origin),
        });
    }
    blocks
}

#[cfg(test)]
mod tests;
