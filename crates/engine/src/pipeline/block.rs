//! One text block on its way through the stages, and what each stage does
//! to it. The order they run in is the pipeline's ([`super`]).

use std::ops::Range;

use crate::config::{Header, Policy, Settings};
use crate::json::python;
use crate::marker;
use crate::outcome::{Outcome, Reason, Stage};
use crate::report::{Decision, Report};
use crate::stage;
use crate::stage::clean::{self, TextKind, Transform};
use crate::stage::project::{self, Query, Refusal};

/// One text block on its way through the stages.
#[derive(Debug)]
pub(super) struct Block {
    /// Span of the block's JSON string literal in the body.
    pub(super) span: Range<usize>,
    pub(super) text: String,
    /// The scan left the text undecoded (`mcp::Texts::SkimNotJson`): it is
    /// certainly no JSON value and the policy changes only JSON, so the
    /// pipeline takes it past every stage with TOON's refusal
    /// ([`Block::unread_refusal`]). Its length; `text` is empty.
    pub(super) unread: Option<usize>,
    /// `text`'s size as a JSON string literal, where the stage that wrote
    /// it measured that (TOON does): the block's write is sized by it
    /// without another pass. Every other change to `text` clears it; were
    /// one to miss, the write would only be sized wrong, never written
    /// wrong.
    pub(super) wire: Option<usize>,
    /// Whether the text as read has whitespace between JSON tokens, and
    /// escapes, when the scan found it (for clean, the first to look).
    pub(super) layout: Option<clean::Known>,
    /// Compaction is all the clean stage would do to the text, and TOON
    /// reads it as it is, measured as its compact form
    /// ([`clean::compact::deferrable`]): the compact text is written only
    /// if TOON leaves the block.
    pub(super) deferred: bool,
    pub(super) changed: bool,
    pub(super) id: String,
    pub(super) tool: Option<String>,
    pub(super) index: usize,
    pub(super) policy: Policy,
    /// The text is a TOON emission (with the policy's header).
    pub(super) encoded: bool,
    /// An LLM rewrote the block.
    pub(super) trimmed: bool,
    /// The budget step wrote the block's result already.
    pub(super) written: bool,
    /// The result carries `structuredContent`.
    pub(super) structured: bool,
    /// The call declared an intent past `trim.max_intent_bytes`.
    pub(super) intent_too_long: bool,
    /// Trimmed: the note its first line carries (with the tag placeholder
    /// when a marker key is set).
    pub(super) trim_note: Option<String>,
    /// The first line ends with the tag placeholder: sign it last.
    pub(super) tagged: bool,
    /// The agent's JMESPath query, until the project stage takes it.
    pub(super) query: Option<String>,
    /// The query replaced the text: no trim on top of it.
    pub(super) queried: bool,
    /// A query that could not apply: the line appended last.
    pub(super) note: Option<String>,
}

impl Block {
    pub(super) fn decision(
        &self,
        stage: Stage,
        outcome: Outcome,
        before: usize,
        after: usize,
        lossless: bool,
    ) -> Decision {
        Decision {
            stage,
            outcome,
            id: Some(self.id.clone()),
            tool: self.tool.clone(),
            block: Some(self.index),
            bytes_before: before,
            bytes_after: after,
            lossless,
            transform: None,
        }
    }

    /// A stage replaced the block's text: record it with the sizes before
    /// and after, then take the new text.
    pub(super) fn rewrite(
        &mut self,
        stage: Stage,
        outcome: Outcome,
        text: String,
        lossless: bool,
        report: &mut Report,
    ) {
        report.push(self.decision(stage, outcome, self.text.len(), text.len(), lossless));
        self.set_text(text);
    }

    /// A stage's new text, not yet measured.
    pub(super) fn set_text(&mut self, text: String) {
        self.text = text;
        self.changed = true;
        self.wire = None;
    }

    /// The decision that the block passed `stage` unchanged, for `reason`;
    /// later stages still see it.
    pub(super) fn passthrough(&self, stage: Stage, reason: Reason) -> Decision {
        let n = self.unread.unwrap_or(self.text.len());
        self.decision(stage, Outcome::Passthrough(reason), n, n, true)
    }

    /// The TOON stage's decision on a block the scan left unread (no JSON
    /// value, so its early checks decide); `None` for a block it read.
    pub(super) fn unread_refusal(&self) -> Option<Decision> {
        let len = self.unread?;
        let reason = stage::toon::refusal_of_no_json(len, &self.policy.toon);
        Some(self.passthrough(Stage::Toon, reason))
    }

    /// The block's text read as a Python literal (`clean.python_literal`),
    /// where its policy reads them and the text is exactly a `repr`: what
    /// the TOON stage encodes in its place.
    pub(super) fn python(&self) -> Option<python::Read> {
        if !self.policy.clean.reads_python() {
            return None;
        }
        python::read(&self.text)
    }

    /// TOON encodes `read`, the Python literal the text is: the read is
    /// recorded (clean's `python_literal`, lossless) and its JSON becomes
    /// the text TOON's emission replaces.
    pub(super) fn take_python(&mut self, read: python::Read, report: &mut Report) {
        report.push(self.applied(&clean::Applied {
            transform: Transform::PythonLiteral,
            bytes_before: self.text.len(),
            bytes_after: read.json.len(),
        }));
        self.set_text(read.json);
    }

    /// TOON left `read`, the Python literal the text is (of `wire` bytes
    /// as a literal on the wire): its compact JSON goes out instead, after
    /// the line that says what it was ([`marker::python_line`]; none with
    /// the header `none`), when that is smaller on the wire too. Strings
    /// cost two bytes more there than in Python (`\"` for `'`), which the
    /// separators rarely pay back, so mostly literals of numbers, words
    /// and tuples. Returns whether it did.
    pub(super) fn python_json(
        &mut self,
        read: python::Read,
        wire: usize,
        keyed: bool,
        report: &mut Report,
    ) -> bool {
        let lined = self.policy.toon.header != Header::None;
        // A trimmed block's note goes above, with the tag.
        let tag = lined && keyed && self.trim_note.is_none();
        let mut text = String::new();
        if lined {
            text.push_str(&marker::python_line(read.tuples));
            if tag {
                text.push_str(&crate::tag::placeholder());
            }
            text.push('\n');
        }
        let new_wire = stage::literal_len(&read.json) + text.len() + usize::from(!text.is_empty());
        if new_wire >= wire || read.json.len() + text.len() >= self.text.len() {
            return false;
        }
        text.push_str(&read.json);
        report.push(self.applied(&clean::Applied {
            transform: Transform::PythonLiteral,
            bytes_before: self.text.len(),
            bytes_after: text.len(),
        }));
        self.set_text(text);
        self.wire = Some(new_wire);
        self.tagged |= tag;
        true
    }

    /// Why TOON left a text that is no JSON: a Python literal that the
    /// policy does not read says so, so that operators see what it would
    /// save.
    pub(super) fn no_json_reason(&self) -> Reason {
        if !self.policy.clean.reads_python() && python::read(&self.text).is_some() {
            Reason::PythonLiteralOff
        } else {
            Reason::NotJson
        }
    }

    /// Stage 1, clean: each transform that changed the block is recorded.
    /// With `defer`, a block the clean stage would only compact, and that
    /// meets no stage but TOON before it, is measured instead
    /// ([`Block::deferred`]); the pipeline passes `defer` only where no
    /// record can come between this one and TOON's, so that the records
    /// keep their order.
    pub(super) fn clean(&mut self, report: &mut Report, defer: bool) {
        let only_toon_next = self.query.is_none()
            && self.policy.project.rules.is_empty()
            && !self.policy.trim
            && self.policy.toon.mode != crate::config::Mode::Off;
        if defer
            && only_toon_next
            && clean::compact::deferrable(
                &self.text,
                &self.policy.clean,
                self.layout.map(|k| k.layout),
            )
        {
            self.deferred = true;
            self.layout = None;
            return;
        }
        let cleaned = clean::clean_known(&self.text, &self.policy.clean, self.layout.take());
        if let Some(reason @ Reason::HtmlBudget) = cleaned.skipped {
            report.push(self.passthrough(Stage::Clean, reason));
        }
        for a in &cleaned.applied {
            report.push(self.applied(a));
        }
        if let Some(text) = cleaned.text {
            self.set_text(text);
        }
    }

    pub(super) fn applied(&self, a: &clean::Applied) -> Decision {
        let outcome = Outcome::Cleaned;
        Decision {
            transform: Some(a.transform.name()),
            ..self.decision(
                Stage::Clean,
                outcome,
                a.bytes_before,
                a.bytes_after,
                a.transform.lossless(),
            )
        }
    }

    /// A trimmed block whose note TOON did not take onto its marker line
    /// gets it as a line of its own.
    pub(super) fn note_line(&mut self, keyed: bool) {
        if let Some(note) = self.trim_note.take() {
            self.text = format!("{note}\n{}", self.text);
            self.wire = None;
            self.tagged = keyed;
        }
    }

    /// Last of all, with a marker key: the tag over the final text.
    pub(super) fn sign(&mut self, key: &str) {
        if !self.tagged {
            return;
        }
        if let Some(signed) = crate::tag::sign(&self.text, key.as_bytes()) {
            self.text = signed;
            self.wire = None;
        }
    }

    /// Stage 2, project: the operator's rules, then the agent's query.
    pub(super) fn project(&mut self, settings: &Settings, report: &mut Report) {
        if !self.policy.project.rules.is_empty() {
            match project::rules::apply(&self.text, &self.policy.project.rules) {
                Ok(text) => self.rewrite(Stage::Project, Outcome::Projected, text, false, report),
                Err(reason) => report.push(self.passthrough(Stage::Project, reason)),
            }
        }
        let Some(query) = self.query.take() else {
            return;
        };
        let result = if self.policy.project.queries {
            Query::parse(&query, settings.project.max_query_bytes)
                .and_then(|q| q.apply_within(&self.text, &settings.project.query_budget))
        } else {
            Err(Refusal {
                reason: Reason::QueryOff,
                detail: "queries are off for this tool".into(),
            })
        };
        match result {
            Ok(text) => {
                self.rewrite(Stage::Project, Outcome::Queried, text, false, report);
                self.queried = true;
            }
            Err(refusal) => {
                report.push(self.passthrough(Stage::Project, refusal.reason));
                self.note = Some(project::note(&refusal));
            }
        }
    }

    /// Last, the `max_text_bytes` cap on whatever the block became, with
    /// room left for a query's note, which then goes at the very end.
    pub(super) fn cap(&mut self, encoded: bool, report: &mut Report) {
        let note = self.note.take();
        let reserve = note.as_ref().map_or(0, String::len);
        let max = match self.policy.clean.max_text_bytes {
            0 => 0,
            m => m.saturating_sub(reserve).max(1),
        };
        let framing = if encoded {
            TextKind::Toon(self.policy.toon.header)
        } else {
            TextKind::Text
        };
        let capped = clean::cap(&self.text, max, framing);
        if let Some(a) = capped.applied(self.text.len()) {
            report.push(self.applied(&a));
        }
        if let clean::Capped::Cut { text, .. } = capped {
            self.set_text(text);
        }
        if let Some(note) = note {
            self.text.push_str(&note);
            self.changed = true;
            self.wire = None;
        }
    }
}
