//! Moving bytes: a body or trailers callback's step, a callout reply's
//! step, carried out through the host — and what happens when the host
//! refuses.

use super::side::Site;
use super::{best_effort, Driver, Shared, SUMMARY_HEADER};
use crate::callout::LlmReply;
use crate::exchange::UpstreamReply;
use crate::exchange::{Flow, Out, Step};
use crate::host::{Action, Direction, Headers, Host, HostError, LogLevel};
use crate::outcome::Reason;

impl Driver {
    pub(super) fn body(
        &mut self,
        host: &mut dyn Host,
        direction: Direction,
        size: usize,
        end: bool,
    ) -> Action {
        let reads = self.reads(direction);
        let side = self.side(direction);
        side.started = true;
        side.ended |= end;
        let (refused, idle) = (side.refused, side.idle());
        if direction == Direction::Response && (refused || (!reads && idle)) {
            // Not handed to the core: counted for the record's bytes, which
            // is published once the response ends.
            if self.exchange.passed(size, end) && !refused {
                return self.settle(host);
            }
        }
        if refused {
            return self.flush_refused(host, direction, Site::Body { size, consumed: 0 });
        }
        if !reads && idle {
            return Action::Continue;
        }
        let read = if size == 0 {
            Ok(Vec::new())
        } else {
            host.body(direction.into(), 0, size)
        };
        let buffer = match read {
            Ok(b) => b,
            Err(e) => {
                host.log(
                    LogLevel::Debug,
                    &format!("mcp-toon: body unreadable ({e:?})"),
                );
                return self.refuse(
                    host,
                    direction,
                    Site::Body { size, consumed: 0 },
                    Vec::new(),
                );
            }
        };
        let chunk = buffer.as_slice();
        let step = match direction {
            Direction::Request => self.exchange.request_chunk(chunk, end, &mut Shared(host)),
            Direction::Response => self.exchange.response_chunk(chunk, end, &mut Shared(host)),
        };
        let untouched = step.out == Out::Input
            && step.flow == Flow::Continue
            && step.callout.is_none()
            && step.reply.is_none()
            && step.upstream.is_none()
            && step.content_length.is_none()
            && self.side(direction).idle();
        let action = if untouched {
            // The host already holds exactly what goes on.
            self.settle(host)
        } else {
            let step = match step.out {
                Out::Input => Step {
                    out: Out::Bytes {
                        bytes: chunk.to_vec(),
                        original: None,
                    },
                    ..step
                },
                Out::Bytes { .. } => step,
            };
            let consumed = chunk.len();
            self.carry(host, direction, step, Site::Body { size, consumed })
        };
        if direction == Direction::Response {
            self.observe(host);
        }
        action
    }

    pub(super) fn trailers(&mut self, host: &mut dyn Host, direction: Direction) -> Action {
        let reads = self.reads(direction);
        let side = self.side(direction);
        side.ended = true;
        let (refused, idle) = (side.refused, side.idle());
        if direction == Direction::Response && (refused || (!reads && idle)) {
            self.exchange.measured_end();
        }
        if refused {
            return self.flush_refused(host, direction, Site::Trailers);
        }
        if !reads && idle {
            // The response's record may wait for its end.
            return match direction {
                Direction::Response => self.settle(host),
                Direction::Request => Action::Continue,
            };
        }
        let step = match direction {
            Direction::Request => self.exchange.request_trailers(&mut Shared(host)),
            Direction::Response => self.exchange.response_trailers(&mut Shared(host)),
        };
        self.carry(host, direction, step, Site::Trailers)
    }

    /// Carries out a step at `site`: starts its call upstream or sends its
    /// local reply (a page call), starts its callout (or fails it open at
    /// once), hands its bytes to the host, sets the held headers' length,
    /// then pauses, continues or resumes.
    pub(super) fn carry(
        &mut self,
        host: &mut dyn Host,
        direction: Direction,
        step: Step,
        site: Site,
    ) -> Action {
        let mut step = step;
        if let Some(request) = step.upstream.take() {
            match host.dispatch(&request) {
                Ok(()) => self.callout = Some((host.now(), direction)),
                Err(e) => {
                    // No call was made: the page tool answers with its error.
                    host.log(
                        LogLevel::Debug,
                        &format!("mcp-toon: re-issued call refused ({e:?})"),
                    );
                    step = self.exchange.upstream_reply(&UpstreamReply::Failed);
                }
            }
        }
        if let Some((name, value)) = step.request_header.take() {
            // The request headers wait for this body (held), so a change
            // still goes with them.
            let r = host.set_header(Headers::Request, name, &value);
            best_effort(host, "a rewritten request header", r);
        }
        if let Some(reply) = step.reply.take() {
            match host.send_local_response(reply.status, &reply.headers, &reply.body) {
                Ok(()) => return self.replied(host, direction, site),
                Err(e) => {
                    // Only a page call is answered locally, and it must
                    // never reach the server: the stream ends instead.
                    host.log(
                        LogLevel::Debug,
                        &format!("mcp-toon: local reply refused ({e:?})"),
                    );
                    return self.end_page_call(host, direction, site);
                }
            }
        }
        let mut sent = Sent::from(std::mem::replace(&mut step.out, Out::Input));
        while let Some(request) = step.callout.take() {
            match host.dispatch(&request) {
                Ok(()) => self.callout = Some((host.now(), direction)),
                Err(e) => {
                    // No call was made (unknown cluster, no healthy host…):
                    // the core fails open at once.
                    host.log(
                        LogLevel::Debug,
                        &format!("mcp-toon: callout refused ({e:?})"),
                    );
                    let next = self
                        .exchange
                        .callout_reply(&LlmReply::NotSent, &mut Shared(host));
                    sent.append(Sent::from(next.out));
                    step = Step {
                        out: Out::Input,
                        ..next
                    };
                }
            }
        }
        let pause = step.flow == Flow::Pause;
        let in_flight = self.callout.is_some();
        let side = self.side(direction);
        sent.prepend(std::mem::take(&mut side.backlog));
        // Outside a body callback the bytes go in front of what the host's
        // buffer holds: nothing when the core paused it (its chunks wait
        // here, see `holds`), the host's own bytes after a refusal.
        let in_host = match site {
            Site::Body { size, .. } => size,
            Site::Trailers | Site::Reply => 0,
        };
        // A body callback always has a buffer; trailers and a reply have
        // one when the body is paused, and try otherwise (Envoy refuses: it
        // buffers no body for a stream that went on).
        let buffered = matches!(site, Site::Body { .. }) || side.paused;
        // While paused nothing goes on: the bytes wait here and the host's
        // buffer is left empty, so it holds nothing against its buffer
        // limit. A reply on a stream neither paused nor with trailers
        // waiting leaves them for the next body callback.
        let holds = pause || (site == Site::Reply && !side.paused && !side.trailers_waiting);
        let bytes: &[u8] = if holds { &[] } else { &sent.bytes };
        if let Some(length) = step.content_length.filter(|_| !holds) {
            if let Err(e) = set_length(host, length, self.exchange.report()) {
                host.log(
                    LogLevel::Debug,
                    &format!("mcp-toon: content-length refused ({e:?})"),
                );
                return self.refuse(host, direction, site, sent.into_original());
            }
        }
        let wrote = if bytes.is_empty() && in_host == 0 {
            Ok(())
        } else {
            host.replace_body(direction.into(), in_host, bytes)
        };
        if let Err(e) = wrote {
            host.log(
                LogLevel::Debug,
                &format!("mcp-toon: body write refused ({e:?})"),
            );
            if let Some(length) = step.content_length.and(self.exchange.announced_length()) {
                // The body stays as the server sent it, and so its length.
                let r = host.set_header(Headers::Response, "content-length", &length.to_string());
                best_effort(host, "restoring content-length", r);
            }
            if !buffered {
                // Trailers ended an unfinished message, and the host has no
                // buffer to write what was held into.
                self.exchange.record(Reason::LostAtTrailers);
                self.exchange.abandon(direction);
                return self.go_on(host, direction, site, pause, in_flight);
            }
            return self.refuse(host, direction, site, sent.into_original());
        }
        if holds {
            self.side(direction).backlog = sent.bytes;
        }
        self.go_on(host, direction, site, pause, in_flight)
    }

    /// The host sent the core's local reply: the request never goes on,
    /// and nothing it held is wanted any more.
    fn replied(&mut self, host: &mut dyn Host, direction: Direction, site: Site) -> Action {
        let side = self.side(direction);
        side.backlog.clear();
        side.trailers_waiting = false;
        self.settle(host);
        match site {
            // Envoy ends the stream with the reply; the callback stops.
            Site::Body { .. } | Site::Trailers => Action::Pause,
            Site::Reply => Action::Continue,
        }
    }

    /// A page call the host would not let the plugin answer (its reply, or
    /// a body write, refused): it must not go on to the server, so the
    /// stream is closed (Envoy resets it) — the client sees an error, the
    /// server nothing. A host that refuses that too leaves the request
    /// stopped until its own timeouts. Counted `host_refused`.
    fn end_page_call(&mut self, host: &mut dyn Host, direction: Direction, site: Site) -> Action {
        self.exchange.record(Reason::HostRefused);
        self.exchange.abandon(direction);
        self.callout = None;
        if let Err(e) = host.close(direction) {
            host.log(
                LogLevel::Warn,
                &format!("mcp-toon: closing a page call's stream refused ({e:?}); it waits for the host's timeout"),
            );
        }
        let side = self.side(direction);
        side.backlog.clear();
        side.trailers_waiting = false;
        side.paused = true;
        self.settle(host);
        match site {
            Site::Body { .. } | Site::Trailers => Action::Pause,
            Site::Reply => Action::Continue,
        }
    }

    /// After a step's bytes are in the host: pauses, continues or resumes.
    fn go_on(
        &mut self,
        host: &mut dyn Host,
        direction: Direction,
        site: Site,
        pause: bool,
        in_flight: bool,
    ) -> Action {
        let side = self.side(direction);
        match site {
            Site::Body { .. } => {
                side.paused = pause;
                if pause {
                    return Action::Pause;
                }
                self.settle(host)
            }
            Site::Trailers => {
                if in_flight {
                    // The callout's reply writes the body, then resumes.
                    side.trailers_waiting = true;
                    return Action::Pause;
                }
                side.paused = false;
                self.settle(host)
            }
            Site::Reply => {
                if !pause && (side.paused || side.trailers_waiting) {
                    side.paused = false;
                    side.trailers_waiting = false;
                    self.resume(host, direction);
                }
                self.settle(host)
            }
        }
    }

    /// A host call that moves bytes failed: the rest of this direction
    /// passes as it comes. `fallback`: the original bytes of what was to go
    /// now; with everything the core still holds, they go in front of what
    /// the host's buffer holds (the chunk the core read, at a body site).
    fn refuse(
        &mut self,
        host: &mut dyn Host,
        direction: Direction,
        site: Site,
        fallback: Vec<u8>,
    ) -> Action {
        if direction == Direction::Request && self.exchange.answers_page_call() {
            return self.end_page_call(host, direction, site);
        }
        if !self.side(direction).refused {
            self.exchange.record(Reason::HostRefused);
        }
        let mut all = fallback;
        all.extend(self.exchange.abandon(direction));
        if let Site::Body { consumed, .. } = site {
            // The host still holds the chunk: the last bytes of `all`.
            all.truncate(all.len().saturating_sub(consumed));
        }
        let side = self.side(direction);
        side.refused = true;
        side.backlog = all;
        self.flush_refused(host, direction, site)
    }

    /// After a refusal: puts what the core held in front of the host's
    /// buffer, as soon as the host takes it. Refused again where no later
    /// callback comes (trailers, a callout reply, the last chunk): those
    /// bytes are dropped, counted (`lost_at_refusal`).
    fn flush_refused(&mut self, host: &mut dyn Host, direction: Direction, site: Site) -> Action {
        let side = self.side(direction);
        let taken = side.backlog.is_empty()
            || host
                .replace_body(direction.into(), 0, &side.backlog)
                .is_ok();
        // Refused where no later callback comes to take them.
        let lost = !taken && (!matches!(site, Site::Body { .. }) || side.ended);
        if taken || lost {
            side.backlog.clear();
        }
        let waiting = side.paused || side.trailers_waiting;
        let keep = !taken && matches!(site, Site::Body { .. }) && !side.ended;
        // Keep the host's bytes behind ours until it takes ours.
        side.paused = keep;
        side.trailers_waiting = false;
        if lost {
            self.exchange.record(Reason::LostAtRefusal);
        }
        if keep {
            return Action::Pause;
        }
        if site == Site::Reply && waiting {
            self.resume(host, direction);
        }
        self.settle(host)
    }

    /// Lets a paused direction go on. A host that refuses leaves the stream
    /// stopped until its own timeouts: nothing else can move it.
    pub(super) fn resume(&mut self, host: &mut dyn Host, direction: Direction) {
        if let Err(e) = host.resume(direction) {
            self.resume_refused(host, e);
        }
    }

    /// The host would not let a paused direction go on (now, or where it
    /// resumes after the callback, when it tried): the stream waits for the
    /// host's own timeouts; nothing else can move it. Counted.
    pub fn resume_refused(&mut self, host: &mut dyn Host, error: HostError) {
        host.log(
            LogLevel::Warn,
            &format!("mcp-toon: resume refused ({error:?})"),
        );
        self.exchange.record(Reason::HostRefused);
        self.count(host, false);
    }
}

/// Held headers go out with the exact length and the decision summary.
fn set_length(
    host: &mut dyn Host,
    length: usize,
    report: &crate::report::Report,
) -> crate::host::HostResult<()> {
    host.set_header(Headers::Response, "content-length", &length.to_string())?;
    let r = host.set_header(Headers::Response, SUMMARY_HEADER, &report.summary());
    best_effort(host, "the summary header", r);
    Ok(())
}

/// The bytes a step sends, and what they were before a stage changed them.
struct Sent {
    bytes: Vec<u8>,
    original: Option<Vec<u8>>,
}

impl From<Out> for Sent {
    fn from(out: Out) -> Self {
        match out {
            Out::Input => Sent {
                bytes: Vec::new(),
                original: None,
            },
            Out::Bytes { bytes, original } => Sent { bytes, original },
        }
    }
}

impl Sent {
    fn append(&mut self, more: Sent) {
        match (self.original.as_mut(), more.original) {
            (Some(o), mo) => o.extend_from_slice(mo.as_deref().unwrap_or(&more.bytes)),
            (None, Some(mo)) => {
                let mut o = self.bytes.clone();
                o.extend_from_slice(&mo);
                self.original = Some(o);
            }
            (None, None) => {}
        }
        self.bytes.extend_from_slice(&more.bytes);
    }

    /// Bytes decided earlier go first.
    fn prepend(&mut self, earlier: Vec<u8>) {
        if earlier.is_empty() {
            return;
        }
        let mut sent = Sent {
            bytes: earlier,
            original: None,
        };
        sent.append(Sent {
            bytes: std::mem::take(&mut self.bytes),
            original: self.original.take(),
        });
        *self = sent;
    }

    fn into_original(self) -> Vec<u8> {
        self.original.unwrap_or(self.bytes)
    }
}
