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

/// One text block on its way through the stages: where it came from, and
/// where its text stands.
#[derive(Debug)]
pub(super) struct Block {
    pub(super) origin: Origin,
    /// Empty while the block is [`Form::Unread`].
    pub(super) text: String,
    /// Where the text stands; only the methods below move it.
    form: Form,
    /// Whose words the text is.
    author: Author,
    /// The first line ends with the tag placeholder: sign it last.
    pub(super) tagged: bool,
    /// A query that could not apply: the line appended last.
    pub(super) note: Option<String>,
}

/// Where a text item is and what it belongs to, as the scan found it.
#[derive(Debug)]
pub(super) struct Origin {
    /// Span of the item's JSON string literal in the body.
    pub(super) span: Range<usize>,
    pub(super) id: String,
    pub(super) tool: Option<String>,
    /// Index in `content[]`.
    pub(super) index: usize,
    pub(super) policy: Policy,
    /// The result carries `structuredContent`.
    pub(super) structured: bool,
    /// The call declared an intent past `trim.max_intent_bytes`.
    pub(super) intent_too_long: bool,
    /// The agent's JMESPath query, until the project stage takes it.
    pub(super) query: Option<String>,
}

/// Where a block's text stands. The stages move it one way:
/// read → deferred → changed → encoded → written, skipping any, and an
/// unread block stays so. One value instead of a flag per fact keeps the
/// combinations that cannot happen (an encoded text never changed, a
/// deferred compaction of a changed text) unwritable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// The scan left the text undecoded (`mcp::Texts::SkimNotJson`): it is
    /// certainly no JSON value and the policy changes only JSON, so the
    /// pipeline takes it past every stage with TOON's refusal
    /// ([`Block::unread_refusal`]). Its length.
    Unread(usize),
    /// As the scan read it, with whether it has whitespace between JSON
    /// tokens, and escapes, when the scan found that (for clean, the first
    /// to look).
    Read(Option<clean::Known>),
    /// As read, and compaction is all the clean stage would do to it while
    /// TOON reads it as it is, measured as its compact form
    /// ([`clean::compact::deferrable`]): the compact text is written only
    /// if TOON leaves the block.
    Deferred,
    /// A stage changed the text; its size as a JSON string literal where
    /// the stage that wrote it measured that (TOON does), so that the
    /// write is sized without another pass. Every other change forgets it;
    /// were one to miss, the write would only be sized wrong, never
    /// written wrong.
    Changed(Option<usize>),
    /// A TOON emission with the policy's header, sized as `Changed`; the
    /// cap, a note or a tag may still change it.
    Encoded(Option<usize>),
    /// The budget step wrote the result the block belongs to.
    Written,
}

/// Whose words a block's text is. Rules that project it keep the tool's
/// (nothing later asks); the agent's query and an LLM's trim are
/// exclusive (trim leaves a queried block, `trim_query_applied`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Author {
    Tool,
    /// The agent's query replaced the text: no trim on top of it.
    Query,
    /// An LLM rewrote the text; the note its first line carries (with the
    /// tag placeholder when a marker key is set) until TOON's marker line
    /// or a line of its own takes it.
    Llm {
        note: Option<String>,
    },
}

impl Block {
    /// A text item the scan decoded, with what it learned of its layout.
    pub(super) fn read(text: String, layout: Option<clean::Known>, origin: Origin) -> Block {
        Block::new(text, Form::Read(layout), origin)
    }

    /// A text item the scan left undecoded, of `len` bytes.
    pub(super) fn unread(len: usize, origin: Origin) -> Block {
        Block::new(String::new(), Form::Unread(len), origin)
    }

    fn new(text: String, form: Form, origin: Origin) -> Block {
        Block {
            origin,
            text,
            form,
            author: Author::Tool,
            tagged: false,
            note: None,
        }
    }

    /// The scan left the text undecoded: it meets TOON's refusal alone.
    pub(super) fn is_unread(&self) -> bool {
        matches!(self.form, Form::Unread(_))
    }

    /// The text is a TOON emission (and not yet written by the budget).
    pub(super) fn is_encoded(&self) -> bool {
        matches!(self.form, Form::Encoded(_))
    }

    /// The framing the text has for the cap and the budget's cut.
    pub(super) fn framing(&self) -> TextKind {
        if self.is_encoded() {
            TextKind::Toon(self.origin.policy.toon.header)
        } else {
            TextKind::Text
        }
    }

    /// The agent's query made the text.
    pub(super) fn is_queried(&self) -> bool {
        self.author == Author::Query
    }

    /// An LLM rewrote the text.
    pub(super) fn is_trimmed(&self) -> bool {
        matches!(self.author, Author::Llm { .. })
    }

    /// Trimmed, and the note not yet placed.
    pub(super) fn trim_note(&self) -> Option<&str> {
        match &self.author {
            Author::Llm { note } => note.as_deref(),
            _ => None,
        }
    }

    /// The trim note, placed by the caller.
    fn take_trim_note(&mut self) -> Option<String> {
        match &mut self.author {
            Author::Llm { note } => note.take(),
            _ => None,
        }
    }

    /// Trim's extract replaces the text; `note` goes on its first line.
    pub(super) fn trimmed_to(&mut self, text: String, note: String) {
        self.set_text(text);
        self.author = Author::Llm { note: Some(note) };
    }

    /// TOON's emission replaces the text, of `wire` bytes as a literal
    /// where that was measured; a trim note, if any, is in it now.
    pub(super) fn encoded_to(&mut self, text: String, wire: Option<usize>) {
        self.text = text;
        self.form = Form::Encoded(wire);
        self.take_trim_note();
    }

    /// The text as the block's write needs it: its literal size where
    /// known, or `None` for a block whose text goes out as it came (read,
    /// unread, or written with its whole result by the budget).
    pub(super) fn to_write(&self) -> Option<Option<usize>> {
        match self.form {
            Form::Changed(wire) | Form::Encoded(wire) => Some(wire),
            Form::Unread(_) | Form::Read(_) | Form::Deferred | Form::Written => None,
        }
    }

    /// The budget step wrote the result the block belongs to.
    pub(super) fn written(&mut self) {
        self.form = Form::Written;
    }

    /// The text's size as a JSON string literal: the span it came in while
    /// unchanged, else measured.
    pub(super) fn wire_len(&self) -> usize {
        match self.form {
            Form::Unread(_) | Form::Read(_) | Form::Deferred => self.origin.span.len(),
            Form::Changed(_) | Form::Encoded(_) | Form::Written => stage::literal_len(&self.text),
        }
    }

    /// TOON takes a deferred compaction: the block is as read again, the
    /// compaction now TOON's to record or to do. Returns whether it was
    /// deferred.
    pub(super) fn take_deferred(&mut self) -> bool {
        if self.form != Form::Deferred {
            return false;
        }
        self.form = Form::Read(None);
        true
    }

    /// Some change to the text: a read text becomes changed, and a
    /// measured literal size is forgotten; an unread or written block's
    /// text is never sent, so it stays as it is.
    fn touched(&mut self) {
        self.form = match self.form {
            Form::Read(_) | Form::Deferred | Form::Changed(_) => Form::Changed(None),
            Form::Encoded(_) => Form::Encoded(None),
            keep @ (Form::Unread(_) | Form::Written) => keep,
        };
    }

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
            id: Some(self.origin.id.clone()),
            tool: self.origin.tool.clone(),
            block: Some(self.origin.index),
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
        self.touched();
    }

    /// The decision that the block passed `stage` unchanged, for `reason`;
    /// later stages still see it.
    pub(super) fn passthrough(&self, stage: Stage, reason: Reason) -> Decision {
        let n = match self.form {
            Form::Unread(len) => len,
            _ => self.text.len(),
        };
        self.decision(stage, Outcome::Passthrough(reason), n, n, true)
    }

    /// The TOON stage's decision on a block the scan left unread (no JSON
    /// value, so its early checks decide); `None` for a block it read.
    pub(super) fn unread_refusal(&self) -> Option<Decision> {
        let Form::Unread(len) = self.form else {
            return None;
        };
        let reason = stage::toon::refusal_of_no_json(len, &self.origin.policy.toon);
        Some(self.passthrough(Stage::Toon, reason))
    }

    /// The block's text read as a Python literal (`clean.python_literal`),
    /// where its policy reads them and the text is exactly a `repr`: what
    /// the TOON stage encodes in its place.
    pub(super) fn python(&self) -> Option<python::Read> {
        if !self.origin.policy.clean.reads_python() {
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
        let lined = self.origin.policy.toon.header != Header::None;
        // A trimmed block's note goes above, with the tag.
        let tag = lined && keyed && self.trim_note().is_none();
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
        self.form = Form::Changed(Some(new_wire));
        self.tagged |= tag;
        true
    }

    /// Why TOON left a text that is no JSON: a Python literal that the
    /// policy does not read says so, so that operators see what it would
    /// save.
    pub(super) fn no_json_reason(&self) -> Reason {
        if !self.origin.policy.clean.reads_python() && python::read(&self.text).is_some() {
            Reason::PythonLiteralOff
        } else {
            Reason::NotJson
        }
    }

    /// Stage 1, clean: each transform that changed the block is recorded.
    /// With `defer`, a block the clean stage would only compact, and that
    /// meets no stage but TOON before it, is measured instead
    /// ([`Form::Deferred`]); the pipeline passes `defer` only where no
    /// record can come between this one and TOON's, so that the records
    /// keep their order.
    pub(super) fn clean(&mut self, report: &mut Report, defer: bool) {
        // What the scan learned holds for the text as read only.
        let known = match &mut self.form {
            Form::Read(known) => known.take(),
            _ => None,
        };
        let only_toon_next = self.origin.query.is_none()
            && self.origin.policy.project.rules.is_empty()
            && !self.origin.policy.trim
            && self.origin.policy.toon.mode != crate::config::Mode::Off;
        if defer
            && only_toon_next
            && clean::compact::deferrable(
                &self.text,
                &self.origin.policy.clean,
                known.map(|k| k.layout),
            )
        {
            self.form = Form::Deferred;
            return;
        }
        let cleaned = clean::clean_known(&self.text, &self.origin.policy.clean, known);
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
        if let Some(note) = self.take_trim_note() {
            let text = format!("{note}\n{}", self.text);
            self.set_text(text);
            self.tagged = keyed;
        }
    }

    /// Last of all, with a marker key: the tag over the final text.
    pub(super) fn sign(&mut self, key: &str) {
        if !self.tagged {
            return;
        }
        if let Some(signed) = crate::tag::sign(&self.text, key.as_bytes()) {
            self.set_text(signed);
        }
    }

    /// Stage 2, project: the operator's rules, then the agent's query.
    pub(super) fn project(&mut self, settings: &Settings, report: &mut Report) {
        if !self.origin.policy.project.rules.is_empty() {
            match project::rules::apply(&self.text, &self.origin.policy.project.rules) {
                Ok(text) => self.rewrite(Stage::Project, Outcome::Projected, text, false, report),
                Err(reason) => report.push(self.passthrough(Stage::Project, reason)),
            }
        }
        let Some(query) = self.origin.query.take() else {
            return;
        };
        let result = if self.origin.policy.project.queries {
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
                self.author = Author::Query;
            }
            Err(refusal) => {
                report.push(self.passthrough(Stage::Project, refusal.reason));
                self.note = Some(project::note(&refusal));
            }
        }
    }

    /// Last, the `max_text_bytes` cap on whatever the block became, with
    /// room left for a query's note, which then goes at the very end.
    pub(super) fn cap(&mut self, report: &mut Report) {
        let note = self.note.take();
        let reserve = note.as_ref().map_or(0, String::len);
        let max = match self.origin.policy.clean.max_text_bytes {
            0 => 0,
            m => m.saturating_sub(reserve).max(1),
        };
        let capped = clean::cap(&self.text, max, self.framing());
        if let Some(a) = capped.applied(self.text.len()) {
            report.push(self.applied(&a));
        }
        if let clean::Capped::Cut { text, .. } = capped {
            self.set_text(text);
        }
        if let Some(note) = note {
            self.text.push_str(&note);
            self.touched();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ServerScope;

    fn origin(span: Range<usize>) -> Origin {
        Origin {
            span,
            id: "1".into(),
            tool: None,
            index: 0,
            policy: Settings::default().policy(ServerScope::default(), None),
            structured: false,
            intent_too_long: false,
            query: None,
        }
    }

    #[test]
    fn a_text_as_read_goes_out_as_it_came_until_a_stage_changes_it() {
        let mut b = Block::read("{\"a\": 1}".into(), None, origin(10..22));
        assert_eq!(b.to_write(), None);
        assert_eq!(b.wire_len(), 12, "the span it came in");
        b.set_text("{\"a\":1}".into());
        assert_eq!(b.to_write(), Some(None), "changed, its size unknown");
        assert_eq!(b.wire_len(), 11);
        assert!(!b.is_encoded());
    }

    #[test]
    fn an_emission_stays_an_emission_through_later_changes_and_forgets_its_size() {
        let mut b = Block::read("[]".into(), None, origin(0..4));
        b.encoded_to("[0]:".into(), Some(6));
        assert_eq!(b.to_write(), Some(Some(6)));
        b.set_text("[0]: capped".into());
        assert!(b.is_encoded(), "a cap or a tag keeps the framing");
        assert_eq!(b.to_write(), Some(None));
        assert_eq!(b.framing(), TextKind::Toon(b.origin.policy.toon.header));
    }

    #[test]
    fn unread_and_written_blocks_are_never_written_by_the_block() {
        let mut unread = Block::unread(40, origin(0..42));
        unread.set_text("never sent".into());
        assert!(unread.is_unread());
        assert_eq!(unread.to_write(), None);
        assert_eq!(
            unread
                .passthrough(Stage::Toon, Reason::NotJson)
                .bytes_before,
            40
        );
        let mut written = Block::read("x".into(), None, origin(0..3));
        written.set_text("y".into());
        written.written();
        written.set_text("z".into());
        assert_eq!(written.to_write(), None, "its result was written whole");
    }

    #[test]
    fn a_deferred_compaction_is_taken_once_and_a_trim_note_placed_once() {
        let mut b = Block::read("{ }".into(), None, origin(0..5));
        b.form = Form::Deferred;
        assert_eq!(b.to_write(), None, "deferred is still the text as read");
        assert!(b.take_deferred());
        assert!(!b.take_deferred());
        b.trimmed_to("short".into(), "[trimmed]".into());
        assert!(b.is_trimmed() && !b.is_queried());
        b.note_line(false);
        assert_eq!(b.text, "[trimmed]\nshort");
        assert_eq!(b.trim_note(), None);
        b.note_line(false);
        assert_eq!(b.text, "[trimmed]\nshort", "the note goes on once");
        assert!(b.is_trimmed(), "the words stay the LLM's");
    }
}
