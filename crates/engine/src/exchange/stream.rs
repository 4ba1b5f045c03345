//! Rewriting a `text/event-stream` response event by event.
//!
//! Complete events go out in the same step that completed them; only an
//! incomplete trailing event is held (by the framer). A tool result whose
//! trim needs a callout holds back what follows it: the stream waits
//! ([`Flow::Pause`]), later chunks queue here, and the reply's step sends
//! the rewritten event and everything queued behind it at once — whether or
//! not more upstream bytes ever come. The event and the queue together
//! hold at most `trim.max_queued_bytes`: past it the event goes on without
//! its callout (`trim_queue_full`), followed by the queue; an event larger
//! than that gets no callout at all. Why both count: while the stream
//! waits, the host buffers the response, and Envoy resets a response whose
//! buffer passes the listener's `per_connection_buffer_limit_bytes`
//! (`response_payload_too_large`, headers already sent) — everything held
//! goes into that buffer at once when the wait ends, so it must fit.

use std::collections::VecDeque;

use super::{streaming, Exchange, Flow, Out, Services, Step};
use crate::callout::LlmReply;
use crate::outcome::Reason;
use crate::pipeline::{self, Job, Output, Started};
use crate::report::Decision;
use crate::sse::{Event, PassReason, SseFramer, Unit};
use crate::stage::toon::Allowance;

#[derive(Debug)]
pub(super) struct SseState {
    framer: SseFramer,
    /// Units waiting behind a pending callout, in stream order.
    queue: VecDeque<Unit>,
    /// The event whose trim callout is in flight.
    pending: Option<(Event, Job)>,
    /// The TOON stage's generic-path budget, one for the whole stream: per
    /// event, a stream of many small events would get it many times.
    pub(super) toon_budget: Allowance,
}

impl SseState {
    pub(super) fn new(max_event_bytes: usize) -> Self {
        Self {
            framer: SseFramer::new(max_event_bytes),
            queue: VecDeque::new(),
            pending: None,
            toon_budget: Allowance::per_response(),
        }
    }

    fn queued_bytes(&self) -> usize {
        self.queue.iter().map(|u| u.bytes().len()).sum()
    }

    /// What waits for the callout: its event and the queue behind it.
    fn behind_callout(&self) -> usize {
        let pending = self.pending.as_ref().map_or(0, |(e, _)| e.raw().len());
        pending + self.queued_bytes()
    }

    pub(super) fn held_bytes(&self) -> usize {
        let queued = self.queued_bytes();
        let pending = self.pending.as_ref().map_or(0, |(e, _)| e.raw().len());
        self.framer.held_bytes() + queued + pending
    }

    /// Bytes of memory the stream's events take: the framer's buffer (its
    /// capacity), the queue and the event waiting for its callout with the
    /// blocks the stages read from it.
    pub(super) fn memory(&self) -> usize {
        let pending = self.pending.as_ref().map_or(0, |(e, _)| {
            e.raw().len().saturating_mul(crate::config::VM_WORK_FACTOR)
        });
        self.framer
            .held_capacity()
            .saturating_add(self.queued_bytes())
            .saturating_add(pending)
    }

    /// How much more memory the stream's events may take once `more` bytes
    /// arrive: the framer's buffer may grow by them (doubling), and the
    /// complete events among them wait in the queue.
    pub(super) fn growth(&self, more: usize) -> usize {
        let (cap, len) = (self.framer.held_capacity(), self.framer.held_bytes());
        (super::growth::grown(cap, len, more) - cap).saturating_add(more)
    }

    pub(super) fn waiting(&self) -> bool {
        self.pending.is_some()
    }

    /// Everything held, as it came: the pending event, the queue, and the
    /// framer's incomplete event.
    pub(super) fn into_held(mut self) -> Vec<u8> {
        let mut held = self
            .pending
            .take()
            .map(|(e, _)| e.into_raw())
            .unwrap_or_default();
        for unit in self.queue.drain(..).chain(self.framer.finish()) {
            held.extend(unit.into_bytes());
        }
        held
    }
}

/// What one step sends, and — once a stage changed any of it — what it was.
#[derive(Default)]
struct Sent {
    bytes: Vec<u8>,
    original: Option<Vec<u8>>,
}

impl Sent {
    fn same(&mut self, b: &[u8]) {
        self.bytes.extend_from_slice(b);
        if let Some(o) = self.original.as_mut() {
            o.extend_from_slice(b);
        }
    }

    fn changed(&mut self, new: &[u8], was: &[u8]) {
        let original = self.original.get_or_insert_with(|| self.bytes.clone());
        original.extend_from_slice(was);
        self.bytes.extend_from_slice(new);
    }

    fn event(&mut self, (bytes, was): (Vec<u8>, Option<Vec<u8>>)) {
        match was {
            Some(was) => self.changed(&bytes, &was),
            None => self.same(&bytes),
        }
    }
}

/// An event after the pipeline: ready to send, or waiting for its callout.
enum EventPlan {
    /// Its bytes, and its original bytes when they changed.
    Ready(Vec<u8>, Option<Vec<u8>>),
    Callout(Box<(Event, Job)>),
}

impl Exchange {
    pub(super) fn stream_chunk(
        &mut self,
        chunk: &[u8],
        end_of_stream: bool,
        sessions: &mut dyn Services,
    ) -> Step {
        let Some(state) = streaming(&mut self.phase) else {
            return Step::input();
        };
        let mut units = state.framer.push(chunk);
        if end_of_stream {
            units.extend(state.framer.finish());
        }
        state.queue.extend(units);
        let mut sent = Sent::default();
        let over = state.behind_callout() > self.settings.trim.max_queued_bytes;
        if let Some((event, mut job)) = state.pending.take_if(|_| over) {
            job.give_up_trim(Reason::TrimQueueFull, &mut self.report);
            let (out, _) = self.finish_job(job, None, sessions);
            sent.event(with_output(event, out));
        }
        self.drain(sent, Some(chunk), sessions)
    }

    pub(super) fn stream_reply(&mut self, reply: &LlmReply, sessions: &mut dyn Services) -> Step {
        let mut sent = Sent::default();
        let pending = streaming(&mut self.phase).and_then(|s| s.pending.take());
        if let Some((event, job)) = pending {
            let (out, _) = self.finish_job(job, Some(reply), sessions);
            sent.event(with_output(event, out));
        }
        self.drain(sent, None, sessions)
    }

    /// Runs queued units through the pipeline until the queue is empty or a
    /// callout is needed. `chunk`: the bytes of the current body callback
    /// (`None` after a reply).
    fn drain(&mut self, mut sent: Sent, chunk: Option<&[u8]>, sessions: &mut dyn Services) -> Step {
        let mut callout = None;
        while let Some(unit) = self.next_unit() {
            match unit {
                Unit::Passthrough { bytes, reason } => {
                    match reason {
                        PassReason::TooLarge => {
                            self.event_decision(Reason::EventTooLarge, bytes.len())
                        }
                        PassReason::Truncated => {
                            self.event_decision(Reason::StreamTruncated, bytes.len())
                        }
                        // The rest of an event too large: its decision
                        // counts these bytes too.
                        PassReason::Continued => self.event_grew(bytes.len()),
                        PassReason::NoEvent => {}
                    }
                    sent.same(&bytes);
                }
                Unit::Event(event) => match self.event(event, sessions) {
                    EventPlan::Ready(bytes, was) => sent.event((bytes, was)),
                    // Larger than what may wait: held until the reply, it
                    // could not go out at once (see the module docs).
                    EventPlan::Callout(pending)
                        if pending.0.raw().len() > self.settings.trim.max_queued_bytes =>
                    {
                        let (event, mut job) = *pending;
                        job.give_up_trim(Reason::TrimQueueFull, &mut self.report);
                        let (out, _) = self.finish_job(job, None, sessions);
                        sent.event(with_output(event, out));
                    }
                    EventPlan::Callout(pending) => {
                        callout = pending.1.callout().cloned();
                        if let Some(state) = streaming(&mut self.phase) {
                            state.pending = Some(*pending);
                        }
                    }
                },
            }
        }
        let waiting = streaming(&mut self.phase).is_some_and(|s| s.waiting());
        let out = match (chunk, sent.original) {
            (Some(c), None) if c == sent.bytes.as_slice() => Out::Input,
            (_, original) => Out::Bytes {
                bytes: sent.bytes,
                original,
            },
        };
        let step = Step::new(out, if waiting { Flow::Pause } else { Flow::Continue });
        match callout {
            Some(request) => step.with_callout(request),
            None => step,
        }
    }

    /// An event passed unread, for `reason`: its decision names the
    /// stream's call when the request made one (an event stream answering
    /// a POST carries that call's messages; a batch's events are not told
    /// apart unread) and counts the event's bytes.
    fn event_decision(&mut self, reason: Reason, bytes: usize) {
        let mut calls = self.request.info.calls.iter();
        let call = match (calls.next(), calls.next()) {
            (Some(c), None) if !self.legacy.get_stream => Some(c),
            _ => None,
        };
        self.report.push(Decision {
            id: call.map(|c| c.id.clone()),
            tool: call.and_then(|c| c.tool.clone()),
            bytes_before: bytes,
            bytes_after: bytes,
            ..Decision::response(reason)
        });
    }

    /// More bytes of the event too large whose decision is the last one.
    fn event_grew(&mut self, bytes: usize) {
        if let Some(d) =
            self.report.decisions.last_mut().filter(|d| {
                d.outcome == crate::outcome::Outcome::Passthrough(Reason::EventTooLarge)
            })
        {
            d.bytes_before = d.bytes_before.saturating_add(bytes);
            d.bytes_after = d.bytes_before;
        }
    }

    /// The next queued unit, unless a callout holds the queue.
    fn next_unit(&mut self) -> Option<Unit> {
        let state = streaming(&mut self.phase)?;
        if state.pending.is_some() {
            return None;
        }
        state.queue.pop_front()
    }

    /// One complete event through the pipeline. Only `message` events whose
    /// data is JSON can carry a JSON-RPC response (WHATWG: no `event` field
    /// means `message`).
    fn event(&mut self, event: Event, sessions: &mut dyn Services) -> EventPlan {
        if self.legacy.get_stream && event.event_type() == "endpoint" {
            if let Some(data) = event.data() {
                let data = data.to_string();
                self.endpoint_event(&data);
            }
            return EventPlan::Ready(event.into_raw(), None);
        }
        if event.event_type() != "message" || !event.looks_like_json() {
            return EventPlan::Ready(event.into_raw(), None);
        }
        let Some(data) = event.data() else {
            self.report.push(Decision::response(Reason::InvalidUtf8));
            return EventPlan::Ready(event.into_raw(), None);
        };
        self.listing_changed(data, sessions);
        // Listings first, as for a JSON body (`json::relisted_output`).
        let relisted = self
            .listing_response(data.as_bytes(), sessions)
            .and_then(|b| String::from_utf8(b).ok());
        let data = relisted.as_deref().unwrap_or(data);
        // A legacy event's calls are its own; a stream's are its request's,
        // resolved once for all its events.
        let legacy_request;
        let legacy_resolved;
        let (request, resolved) = if self.legacy.get_stream {
            legacy_request = self.legacy_requests(data, sessions);
            legacy_resolved = pipeline::Resolved::of(&self.settings, self.scope, &legacy_request);
            (&legacy_request, &legacy_resolved)
        } else {
            let resolved = self.request.resolved.get_or_insert_with(|| {
                pipeline::Resolved::of(&self.settings, self.scope, &self.request.info)
            });
            (&self.request.info, &*resolved)
        };
        if request.calls.is_empty() {
            return EventPlan::Ready(event.into_raw(), None);
        }
        let run = pipeline::Run {
            settings: &self.settings,
            scope: self.scope,
            request,
            resolved,
        };
        let started = pipeline::start(run, data, &mut self.report, &mut |out| sessions.random(out));
        let Started::Job(job) = started else {
            return match relisted {
                Some(new) => EventPlan::Ready(event.with_data(&new), Some(event.into_raw())),
                None => EventPlan::Ready(event.into_raw(), None),
            };
        };
        self.learn(job.listed(), sessions);
        if job.callout().is_some() {
            return EventPlan::Callout(Box::new((event, job)));
        }
        let (out, _) = self.finish_job(job, None, sessions);
        let out = match (out, relisted.is_some()) {
            (Output::Unchanged(b), true) => Output::Changed(b),
            (out, _) => out,
        };
        let (bytes, was) = with_output(event, out);
        EventPlan::Ready(bytes, was)
    }
}

/// The event with its new data, and its original bytes; or as it came.
fn with_output(event: Event, data: Output) -> (Vec<u8>, Option<Vec<u8>>) {
    match data.changed().and_then(|d| String::from_utf8(d).ok()) {
        Some(d) => {
            let new = event.with_data(&d);
            (new, Some(event.into_raw()))
        }
        None => (event.into_raw(), None),
    }
}
