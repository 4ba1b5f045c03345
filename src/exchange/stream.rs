//! Rewriting a `text/event-stream` response event by event.
//!
//! Complete events go out in the same body callback that completed them;
//! only an incomplete trailing event is held (by the framer). A tool result
//! whose trim needs a callout holds the stream: the host keeps buffering
//! (each later callback hands over everything buffered, of which the first
//! `consumed` bytes were already read), and when the reply arrives all held
//! events go out at once.

use std::collections::VecDeque;

use super::{Exchange, SessionStore, Step};
use crate::outcome::Reason;
use crate::pipeline::{self, Job};
use crate::report::Decision;
use crate::sse::{Event, PassReason, SseFramer, Unit};
use crate::stage::trim::LlmReply;

#[derive(Debug)]
pub(super) struct SseState {
    framer: SseFramer,
    /// Bytes of the host's current buffer already fed to the framer.
    consumed: usize,
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
            consumed: 0,
            queue: VecDeque::new(),
            out: Vec::new(),
            pending: None,
        }
    }
}

enum Rewritten {
    Ready(Vec<u8>),
    Callout(Box<(Event, Job)>),
}

impl Exchange {
    /// Everything the host holds of the response body so far (after a
    /// [`Step::Replace`] the host starts a new buffer).
    pub fn stream_body(
        &mut self,
        buffered: &[u8],
        end_of_stream: bool,
        sessions: &mut dyn SessionStore,
    ) -> Step {
        let Some(state) = self.stream.as_mut() else {
            return Step::Continue;
        };
        let fresh = buffered.get(state.consumed..).unwrap_or_default();
        state.consumed = buffered.len();
        let mut units = state.framer.push(fresh);
        if end_of_stream {
            units.extend(state.framer.finish());
        }
        state.queue.extend(units);
        self.drain(sessions)
    }

    pub(super) fn stream_reply(
        &mut self,
        reply: &LlmReply,
        sessions: &mut dyn SessionStore,
    ) -> Step {
        let Some((event, job)) = self.stream.as_mut().and_then(|s| s.pending.take()) else {
            return self.drain(sessions);
        };
        let bytes = rewritten(
            event,
            job.finish(&self.settings, Some(reply), &mut self.report),
        );
        if let Some(state) = self.stream.as_mut() {
            state.out.extend(bytes);
        }
        self.drain(sessions)
    }

    fn drain(&mut self, sessions: &mut dyn SessionStore) -> Step {
        loop {
            let Some(state) = self.stream.as_mut() else {
                return Step::Continue;
            };
            if state.pending.is_some() {
                return Step::Hold;
            }
            let Some(unit) = state.queue.pop_front() else {
                state.consumed = 0;
                return Step::Replace(std::mem::take(&mut state.out));
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
                        match request {
                            Some(r) => return Step::Callout(r),
                            None => continue,
                        }
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
        let Some(job) = job else {
            return Rewritten::Ready(event.into_raw());
        };
        if job.callout().is_some() {
            return Rewritten::Callout(Box::new((event, job)));
        }
        Rewritten::Ready(rewritten(
            event,
            job.finish(&self.settings, None, &mut self.report),
        ))
    }
}

/// The event with its new data, or as it came.
fn rewritten(event: Event, data: Option<Vec<u8>>) -> Vec<u8> {
    match data.and_then(|d| String::from_utf8(d).ok()) {
        Some(d) => event.with_data(&d),
        None => event.into_raw(),
    }
}
