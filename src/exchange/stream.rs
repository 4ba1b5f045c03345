//! Rewriting a `text/event-stream` response event by event.
//!
//! Complete events go out in the same body callback that completed them;
//! only an incomplete trailing event is held (by the framer). A tool result
//! whose trim needs a callout holds back what follows it: later chunks are
//! taken out of the stream into the queue, and the held events go out with
//! the first chunk after the reply — or, when the stream ends first, the
//! host pauses on its last chunk and the reply's step replaces that chunk
//! with everything held.

use std::collections::VecDeque;

use super::{Exchange, Flow, SessionStore, Step};
use crate::outcome::Reason;
use crate::pipeline::{self, Job, Output};
use crate::report::Decision;
use crate::sse::{Event, PassReason, SseFramer, Unit};
use crate::stage::trim::LlmReply;

#[derive(Debug)]
pub(super) struct SseState {
    framer: SseFramer,
    /// The last chunk arrived.
    ended: bool,
    /// Units waiting behind a pending callout, in stream order.
    queue: VecDeque<Unit>,
    /// Bytes ready to go, not yet handed to the host.
    out: Vec<u8>,
    /// The event whose trim callout is in flight.
    pending: Option<(Event, Job)>,
}

impl SseState {
    pub(super) fn new(max_event_bytes: usize) -> Self {
        Self {
            framer: SseFramer::new(max_event_bytes),
            ended: false,
            queue: VecDeque::new(),
            out: Vec::new(),
            pending: None,
        }
    }
}

impl SseState {
    pub(super) fn held_bytes(&self) -> usize {
        let queued: usize = self.queue.iter().map(|u| u.bytes().len()).sum();
        let pending = self.pending.as_ref().map_or(0, |(e, _)| e.raw().len());
        self.framer.held_bytes() + queued + self.out.len() + pending
    }
}

enum Rewritten {
    Ready(Vec<u8>),
    Callout(Box<(Event, Job)>),
}

impl Exchange {
    pub(super) fn stream_chunk(
        &mut self,
        chunk: &[u8],
        end_of_stream: bool,
        sessions: &mut dyn SessionStore,
    ) -> Step {
        let Some(state) = self.stream.as_mut() else {
            return Step::pass();
        };
        let mut units = state.framer.push(chunk);
        if end_of_stream {
            units.extend(state.framer.finish());
            state.ended = true;
        }
        state.queue.extend(units);
        self.drain(Some(chunk), sessions)
    }

    pub(super) fn stream_reply(
        &mut self,
        reply: &LlmReply,
        sessions: &mut dyn SessionStore,
    ) -> Step {
        let pending = self.stream.as_mut().and_then(|s| s.pending.take());
        if let Some((event, job)) = pending {
            let bytes = rewritten(event, self.finish_job(job, Some(reply), sessions));
            if let Some(state) = self.stream.as_mut() {
                state.out.extend(bytes);
            }
        }
        self.drain(None, sessions)
    }

    /// Runs queued units through the pipeline until the queue is empty or a
    /// callout is needed. `chunk`: the bytes of the current body callback
    /// (`None` after a reply).
    fn drain(&mut self, chunk: Option<&[u8]>, sessions: &mut dyn SessionStore) -> Step {
        loop {
            let Some(state) = self.stream.as_mut() else {
                return Step::pass();
            };
            if state.pending.is_some() {
                return match (chunk, state.ended) {
                    // The last chunk stays with the host, paused; the reply
                    // replaces it with everything held.
                    (_, true) => Step::new(None, Flow::Pause),
                    (Some(_), false) => Step::swallow(false),
                    (None, false) => Step::pass(),
                };
            }
            let Some(unit) = state.queue.pop_front() else {
                let out = std::mem::take(&mut state.out);
                return match chunk {
                    Some(c) if c == out.as_slice() => Step::pass(),
                    Some(_) => Step::send(out),
                    // After a reply: the host paused only on the last chunk.
                    None if state.ended => Step::send(out),
                    None => {
                        state.out = out;
                        Step::pass()
                    }
                };
            };
            let bytes = match unit {
                Unit::Passthrough { bytes, reason } => {
                    match reason {
                        PassReason::TooLarge => {
                            self.report.push(Decision::response(Reason::EventTooLarge))
                        }
                        PassReason::Truncated => self
                            .report
                            .push(Decision::response(Reason::StreamTruncated)),
                        PassReason::NoEvent | PassReason::Continued => {}
                    }
                    bytes
                }
                Unit::Event(event) => match self.event(event, sessions) {
                    Rewritten::Ready(bytes) => bytes,
                    Rewritten::Callout(pending) => {
                        let (event, job) = *pending;
                        let request = job.callout().cloned();
                        if let Some(state) = self.stream.as_mut() {
                            state.pending = Some((event, job));
                        }
                        let Some(request) = request else { continue };
                        // Events before this one go out with this chunk
                        // unless the stream ended: then the host pauses on
                        // the last chunk and everything goes with the reply.
                        let Some(state) = self.stream.as_mut() else {
                            return Step::pass();
                        };
                        let step = match (chunk, state.ended) {
                            (Some(_), false) => Step::send(std::mem::take(&mut state.out)),
                            (None, false) => Step::pass(),
                            (_, true) => Step::new(None, Flow::Pause),
                        };
                        return step.with_callout(request);
                    }
                },
            };
            if let Some(state) = self.stream.as_mut() {
                state.out.extend(bytes);
            }
        }
    }

    /// One complete event through the pipeline. Only `message` events whose
    /// data is JSON can carry a JSON-RPC response (WHATWG: no `event` field
    /// means `message`).
    fn event(&mut self, event: Event, sessions: &mut dyn SessionStore) -> Rewritten {
        if self.legacy && event.event_type() == "endpoint" {
            if let Some(data) = event.data() {
                let data = data.to_string();
                self.endpoint_event(&data);
            }
            return Rewritten::Ready(event.into_raw());
        }
        if event.event_type() != "message" || !event.looks_like_json() {
            return Rewritten::Ready(event.into_raw());
        }
        let Some(data) = event.data() else {
            self.report.push(Decision::response(Reason::InvalidUtf8));
            return Rewritten::Ready(event.into_raw());
        };
        let legacy_request;
        let request = if self.legacy {
            legacy_request = self.legacy_requests(data, sessions);
            &legacy_request
        } else {
            &self.request
        };
        if request.calls.is_empty() {
            return Rewritten::Ready(event.into_raw());
        }
        let job = pipeline::start(
            &self.settings,
            self.scope,
            request,
            data.as_bytes().to_vec(),
            &mut self.report,
        );
        let Ok(job) = job else {
            return Rewritten::Ready(event.into_raw());
        };
        if job.callout().is_some() {
            return Rewritten::Callout(Box::new((event, job)));
        }
        Rewritten::Ready(rewritten(event, self.finish_job(job, None, sessions)))
    }
}

/// The event with its new data, or as it came.
fn rewritten(event: Event, data: Output) -> Vec<u8> {
    match data.changed().and_then(|d| String::from_utf8(d).ok()) {
        Some(d) => event.with_data(&d),
        None => event.into_raw(),
    }
}
