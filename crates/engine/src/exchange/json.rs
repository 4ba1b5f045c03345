//! An `application/json` response: collected until its value closes, then
//! through the pipeline in one piece.

use super::collect::Collecting;
use super::response::Reading;
use super::{Exchange, Flow, Out, Phase, Services, Step};
use crate::outcome::Reason;
use crate::pipeline::{self, Output, Started};

impl Exchange {
    pub(super) fn json_chunk(
        &mut self,
        chunk: &[u8],
        end_of_stream: bool,
        sessions: &mut dyn Services,
    ) -> Step {
        let Phase::Response(Reading::Buffering(body)) = &mut self.phase else {
            return Step::input();
        };
        let kept = !body.bytes.is_empty();
        // A tool with a budget may be held past `max_body_bytes`.
        let max = self.response.limit;
        match body.push(chunk, end_of_stream, max) {
            // Continue on an emptied buffer: a paused body makes Envoy hold
            // the final replacement against its buffer limit. Held headers
            // must pause.
            Collecting::Open => Step::swallow(if self.response.hold_headers {
                Flow::Pause
            } else {
                Flow::Continue
            }),
            Collecting::TooLarge | Collecting::NotOneValue => {
                let reason = if body.seen > max {
                    Reason::ResponseTooLarge
                } else {
                    Reason::MalformedResponse
                };
                // What was taken out goes back in front of this chunk,
                // unchanged.
                let body = body.take_with(chunk);
                self.pass_response(reason);
                let mut step = if kept {
                    Step::send(body)
                } else {
                    Step::input()
                };
                step.content_length = self.final_length(None);
                step
            }
            Collecting::Closed(body, rest) => self.json_end(body, rest, !kept, sessions),
        }
    }

    /// The whole JSON value is in: run the stages. `after`: the bytes that
    /// followed the value in its last chunk (whitespace). `one_chunk`: the
    /// body and `after` are exactly the chunk at hand.
    fn json_end(
        &mut self,
        mut body: Vec<u8>,
        after: Vec<u8>,
        one_chunk: bool,
        sessions: &mut dyn Services,
    ) -> Step {
        self.phase = Phase::Done;
        let body_len = body.len();
        // Listings first (`listings`): the stages then see the new listing
        // as they would the server's. `relisted`: the body as it came.
        let relisted = self
            .listing_response(&body, sessions)
            .map(|new| std::mem::replace(&mut body, new));
        let one_chunk = one_chunk && relisted.is_none();
        let resolved = self.request.resolved.get_or_insert_with(|| {
            pipeline::Resolved::of(&self.settings, self.scope, &self.request.info)
        });
        let run = pipeline::Run {
            settings: &self.settings,
            scope: self.scope,
            request: &self.request.info,
            resolved,
        };
        let started = pipeline::start(run, body, &mut self.report, &mut |out| sessions.random(out));
        let job = match started {
            Started::Job(job) => job,
            Started::Unchanged(_) if one_chunk => return self.unchanged_chunk(),
            Started::Unchanged(b) => {
                let (out, original) = relisted_output(Output::Unchanged(b), None, relisted);
                return self.final_body(out, original, after);
            }
        };
        self.learn(job.listed(), sessions);
        let mut job = job;
        if job.callout().is_some() && body_len > self.settings.max_body_bytes {
            // The reply's step writes the body into the paused response's
            // buffer, which Envoy holds to its buffer limit (DESIGN "Facts
            // about the platform"; `max_body_bytes` stays below it): a body
            // larger than that goes on untrimmed, as an event too large to
            // wait does.
            job.give_up_trim(Reason::TrimQueueFull, &mut self.report);
        }
        match job.callout().cloned() {
            // Everything waits for the reply, which sends the body.
            Some(request) => {
                self.phase = Phase::Response(Reading::Waiting(Box::new((job, after))));
                Step::swallow(Flow::Pause).with_callout(request)
            }
            None => match self.finish_job(job, None, sessions) {
                (Output::Unchanged(_), _) if one_chunk => self.unchanged_chunk(),
                (out, original) => {
                    let (out, original) = relisted_output(out, original, relisted);
                    self.final_body(out, original, after)
                }
            },
        }
    }

    /// The last step of a JSON body: everything the core took out goes
    /// back, changed or not, then the bytes after the value.
    pub(super) fn final_body(
        &self,
        out: Output,
        original: Option<Vec<u8>>,
        after: Vec<u8>,
    ) -> Step {
        let (mut bytes, mut original) = match out {
            Output::Changed(b) => (b, original),
            Output::Unchanged(b) => (b, None),
        };
        bytes.extend_from_slice(&after);
        if let Some(o) = original.as_mut() {
            o.extend_from_slice(&after);
        }
        let length = bytes.len();
        Step {
            content_length: self.final_length(Some(length)),
            ..Step::new(Out::Bytes { bytes, original }, Flow::Continue)
        }
    }

    /// A body that came in one chunk goes on as it came.
    fn unchanged_chunk(&self) -> Step {
        let mut step = Step::input();
        step.content_length = self.final_length(None);
        step
    }

    /// With held headers, the `content-length` the response goes out with:
    /// `sent` bytes now (none: the server's length stands), then what the
    /// server has still to send. (Headers are held only for a body of
    /// known length the core reads whole, so every byte of it so far was
    /// handed to the core: `bytes` counts them.)
    pub(super) fn final_length(&self, sent: Option<usize>) -> Option<usize> {
        if !self.response.hold_headers {
            return None;
        }
        let announced = self.response.length?;
        let remaining = announced.saturating_sub(self.response.bytes);
        Some(sent.map_or(announced, |n| n.saturating_add(remaining)))
    }
}

/// The stages' output over a listing the exchange rewrote first: changed,
/// whatever the stages did, and its original the body as it came.
pub(super) fn relisted_output(
    out: Output,
    original: Option<Vec<u8>>,
    relisted: Option<Vec<u8>>,
) -> (Output, Option<Vec<u8>>) {
    match relisted {
        Some(came) => (Output::Changed(out.into_bytes()), Some(came)),
        None => (out, original),
    }
}
