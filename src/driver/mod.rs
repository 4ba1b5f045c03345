//! The one executor of the core's plans. A host hands each stream event to
//! a [`Driver`] (one per stream) and returns what it answers; the driver
//! asks the [`Exchange`] what to do, carries it out through the [`Host`],
//! and keeps every piece of bookkeeping: what the host holds for the stream
//! and what the core holds, whether a direction is paused, the callout in
//! flight, the decisions counted and the record published.
//!
//! How bytes move (proxy-wasm semantics, which every host here follows):
//! in a body callback the host's buffer holds the new chunk (after what it
//! kept when the previous callback paused); the driver replaces it with
//! what the core sends on. Outside a body callback the body is writable
//! only while paused. Envoy counts a paused body against the listener's
//! `per_connection_buffer_limit_bytes` and resets a stream whose buffered
//! body passes it, so the driver leaves a paused buffer empty while it
//! waits, and writes into one at most `max_body_bytes` at a time unless the
//! body has ended (the operator keeps `max_body_bytes` at or below that
//! limit; README "Buffering and Envoy's buffer limit").
//!
//! Nothing is lost on the driver's side of the host:
//! - a body ends at its JSON value's closing bracket or its last SSE event,
//!   so trailers after a well-formed message find nothing held;
//! - a refused host call that moves bytes turns the rest of the direction
//!   into a byte-identical pass-through (`host_refused`): the bytes the
//!   core held go in front of the host's buffer, as they came;
//! - what the host cannot be given (trailers arriving after an unfinished
//!   message with no buffer to write into, a stream reset while bytes are
//!   held) is counted (`lost_at_trailers`, `lost_at_reset`).

mod memory;
mod side;

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::SystemTime;

pub use memory::{Call, MemoryHost};
use side::{Side, Site};

use crate::callout::LlmReply;
use crate::config::{Settings, StreamInfo};
use crate::exchange::{
    Exchange, Flow, Out, RequestHead, ResponseHead, ResponsePlan, SessionStore, Step,
};
use crate::host::{Action, Body, Direction, Headers, Host, LogLevel};
use crate::outcome::Reason;

/// Gauge: the most response bytes one stream held between callbacks on
/// this VM (an incomplete trailing SSE event, events queued behind a
/// callout, a collected JSON body).
pub const HELD_BYTES_MAX: &str = "mcp_toon_held_bytes_max";
/// Gauge: this VM's memory in bytes (for wasm its peak: it never shrinks).
pub const VM_MEMORY_BYTES: &str = "mcp_toon_vm_memory_bytes";
/// Filter-state key of the decision record; Envoy stores it as
/// `wasm.mcp_toon`, readable with `%FILTER_STATE(wasm.mcp_toon:PLAIN)%`.
pub const RECORD_PROPERTY: &str = "mcp_toon";
/// Response header summarising the decisions when headers were held.
pub const SUMMARY_HEADER: &str = "x-mcp-toon";
/// APISIX (wasm-nginx-module) runs a plugin's body callbacks only when the
/// plugin sets these properties to a non-empty value in the matching header
/// callback (APISIX docs, "Wasm"). Other hosts treat them as ordinary
/// properties: Envoy stores them as filter state nobody reads.
const APISIX_BODY: [&str; 2] = ["wasm_process_req_body", "wasm_process_resp_body"];

/// What the streams of one VM share.
#[derive(Debug, Default)]
pub struct Vm {
    held_peak: Cell<usize>,
}

/// One stream.
pub struct Driver {
    vm: Rc<Vm>,
    exchange: Exchange,
    request: Side,
    response: Side,
    /// Decisions already counted: a long-lived event stream is counted as
    /// it goes, not when it closes.
    counted: usize,
    published: bool,
    /// A callout is in flight, since then.
    callout: Option<SystemTime>,
}

/// The host's shared data as the exchange's session store.
struct Shared<'a>(&'a mut dyn Host);

impl SessionStore for Shared<'_> {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        // A record the host will not give back: the result's shape decides.
        self.0.shared_get(key).unwrap_or_else(|e| {
            self.0.log(
                LogLevel::Debug,
                &format!("mcp-toon: shared data read refused ({e:?})"),
            );
            None
        })
    }

    fn set(&mut self, key: &str, value: &[u8]) {
        if let Err(e) = self.0.shared_set(key, value) {
            // The GET stream then falls back to the result's shape.
            self.0.log(
                LogLevel::Debug,
                &format!("mcp-toon: shared data write refused ({e:?})"),
            );
        }
    }
}

/// Observability and hints are best effort: a refusal is logged, and the
/// stream goes on.
fn best_effort(host: &dyn Host, what: &str, result: crate::host::HostResult<()>) {
    if let Err(e) = result {
        host.log(
            LogLevel::Debug,
            &format!("mcp-toon: {what} refused ({e:?})"),
        );
    }
}

/// A header as the host gives it; one it refuses to read reads as absent.
fn header(host: &dyn Host, map: Headers, name: &str) -> Option<String> {
    host.header(map, name).unwrap_or_else(|e| {
        host.log(
            LogLevel::Debug,
            &format!("mcp-toon: header {name} unreadable ({e:?})"),
        );
        None
    })
}

fn text_property(host: &dyn Host, path: &[&str]) -> Option<String> {
    host.property(path)
        .ok()
        .flatten()
        .and_then(|b| String::from_utf8(b).ok())
        .filter(|s| !s.is_empty())
}

impl Driver {
    pub fn new(settings: Arc<Settings>, vm: Rc<Vm>) -> Self {
        Self {
            exchange: Exchange::new(settings),
            vm,
            request: Side::default(),
            response: Side::default(),
            counted: 0,
            published: false,
            callout: None,
        }
    }

    pub fn report(&self) -> &crate::report::Report {
        self.exchange.report()
    }

    pub fn request_headers(&mut self, host: &mut dyn Host, end_of_stream: bool) -> Action {
        let get = |name: &str| header(host, Headers::Request, name);
        let (method, path) = (
            get(":method").unwrap_or_default(),
            get(":path").unwrap_or_default(),
        );
        let (content_type, accept) = (get("content-type"), get("accept"));
        let stream = StreamInfo {
            route: text_property(host, &["xds", "route_name"]),
            cluster: text_property(host, &["xds", "cluster_name"]),
            authority: get(":authority"),
        };
        let plan = self.exchange.request_headers(RequestHead {
            stream: &stream,
            method: &method,
            path: &path,
            content_type: content_type.as_deref(),
            accept: accept.as_deref(),
            end_of_stream,
        });
        if plan.strip_accept_encoding {
            // Refused: the server may compress, and a compressed response
            // passes through unchanged.
            let r = host.remove_header(Headers::Request, "accept-encoding");
            best_effort(host, "removing accept-encoding", r);
        }
        if plan.remove_content_length {
            if let Err(e) = host.remove_header(Headers::Request, "content-length") {
                host.log(
                    LogLevel::Debug,
                    &format!("mcp-toon: request length fixed ({e:?})"),
                );
                self.exchange.request_keeps_length();
            }
        }
        if plan.read_body {
            let r = host.set_property(&[APISIX_BODY[0]], b"true");
            best_effort(host, "asking for the request body", r);
        }
        Action::Continue
    }

    pub fn request_body(&mut self, host: &mut dyn Host, size: usize, end: bool) -> Action {
        self.body(host, Direction::Request, size, end)
    }

    pub fn request_trailers(&mut self, host: &mut dyn Host) -> Action {
        self.trailers(host, Direction::Request)
    }

    pub fn response_headers(&mut self, host: &mut dyn Host, end_of_stream: bool) -> Action {
        self.response.started = true;
        self.response.ended = end_of_stream;
        self.exchange.response_started(&mut Shared(host));
        let get = |name: &str| header(host, Headers::Response, name);
        let status = get(":status").and_then(|s| s.parse::<u16>().ok());
        let (content_type, content_encoding) = (get("content-type"), get("content-encoding"));
        let content_length = get("content-length").and_then(|v| v.trim().parse::<usize>().ok());
        let plan = self.exchange.response_headers(ResponseHead {
            status,
            content_type: content_type.as_deref(),
            content_encoding: content_encoding.as_deref(),
            content_length,
            end_of_stream,
        });
        let ResponsePlan::Rewrite { hold_headers } = plan else {
            return self.settle(host);
        };
        let r = host.set_property(&[APISIX_BODY[1]], b"true");
        best_effort(host, "asking for the response body", r);
        if hold_headers {
            // A plain StopIteration (Envoy ≥ 1.35 with
            // allow_on_headers_stop_iteration): body callbacks still run and
            // set the final content-length.
            return Action::Pause;
        }
        // The headers leave now and the body may change size.
        if let Err(e) = host.remove_header(Headers::Response, "content-length") {
            host.log(
                LogLevel::Debug,
                &format!("mcp-toon: response length fixed ({e:?})"),
            );
            self.exchange.response_headers_refused(Reason::HostRefused);
        }
        self.settle(host)
    }

    pub fn response_body(&mut self, host: &mut dyn Host, size: usize, end: bool) -> Action {
        self.body(host, Direction::Response, size, end)
    }

    pub fn response_trailers(&mut self, host: &mut dyn Host) -> Action {
        self.trailers(host, Direction::Response)
    }

    /// The reply to the callout in flight: its headers and `body_size`
    /// bytes of body are readable from the host now. A reply without a
    /// status is a failure (a reset, or a timeout some hosts report so).
    pub fn callout_reply(&mut self, host: &mut dyn Host, body_size: usize) {
        let started = self.callout.take();
        let status = header(host, Headers::CalloutReply, ":status").and_then(|s| s.parse().ok());
        let elapsed_ms = || {
            started
                .and_then(|t| host.now().duration_since(t).ok())
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        };
        let reply = match status {
            Some(status) => match host.body(Body::CalloutReply, 0, body_size) {
                Ok(body) => LlmReply::Response { status, body },
                // A reply it cannot read is a reply it did not get.
                Err(_) => LlmReply::Failed {
                    elapsed_ms: elapsed_ms(),
                },
            },
            None => LlmReply::Failed {
                elapsed_ms: elapsed_ms(),
            },
        };
        let step = self.exchange.callout_reply(&reply, &mut Shared(host));
        self.carry(host, Direction::Response, step, Site::Reply);
    }

    /// The stream is over (completed or reset): count what is left and
    /// publish the record.
    pub fn log(&mut self, host: &mut dyn Host) {
        let request_held = self.exchange.held_request_bytes();
        let response_held = self.exchange.held_bytes();
        if self.request.cut_short(request_held) || self.response.cut_short(response_held) {
            // Reset mid-body: the host dropped the stream, and with it the
            // bytes held for it.
            self.exchange.record(Reason::LostAtReset);
        }
        self.publish(host);
    }

    fn side(&mut self, direction: Direction) -> &mut Side {
        match direction {
            Direction::Request => &mut self.request,
            Direction::Response => &mut self.response,
        }
    }

    fn reads(&self, direction: Direction) -> bool {
        match direction {
            Direction::Request => self.exchange.reads_request(),
            Direction::Response => self.exchange.reads_response(),
        }
    }

    fn body(
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
        if side.refused {
            return self.flush_refused(host, direction, Site::Body { size, consumed: 0 });
        }
        if !reads && side.idle() {
            return Action::Continue;
        }
        let buffer = match host.body(direction.into(), 0, size) {
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
        let chunk = buffer.get(self.side(direction).kept..).unwrap_or_default();
        let step = match direction {
            Direction::Request => self.exchange.request_chunk(chunk, end, &mut Shared(host)),
            Direction::Response => self.exchange.response_chunk(chunk, end, &mut Shared(host)),
        };
        let untouched = step.out == Out::Input
            && step.flow == Flow::Continue
            && step.callout.is_none()
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

    fn trailers(&mut self, host: &mut dyn Host, direction: Direction) -> Action {
        let reads = self.reads(direction);
        let side = self.side(direction);
        side.ended = true;
        if side.refused {
            return self.flush_refused(host, direction, Site::Trailers);
        }
        if !reads && side.idle() {
            return Action::Continue;
        }
        let step = match direction {
            Direction::Request => self.exchange.request_trailers(&mut Shared(host)),
            Direction::Response => self.exchange.response_trailers(&mut Shared(host)),
        };
        self.carry(host, direction, step, Site::Trailers)
    }

    /// Carries out a step at `site`: starts its callout (or fails it open
    /// at once), hands its bytes to the host, sets the held headers'
    /// length, then pauses, continues or resumes.
    fn carry(
        &mut self,
        host: &mut dyn Host,
        direction: Direction,
        step: Step,
        site: Site,
    ) -> Action {
        let mut step = step;
        let mut sent = Sent::from(std::mem::replace(&mut step.out, Out::Input));
        while let Some(request) = step.callout.take() {
            match host.dispatch(&request) {
                Ok(()) => self.callout = Some(host.now()),
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
        let in_host = match site {
            Site::Body { size, .. } => size,
            Site::Trailers | Site::Reply => side.kept,
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
        let side = self.side(direction);
        side.kept = 0;
        if holds {
            side.backlog = sent.bytes;
        }
        self.go_on(host, direction, site, pause, in_flight)
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
    /// buffer, as soon as the host takes it.
    fn flush_refused(&mut self, host: &mut dyn Host, direction: Direction, site: Site) -> Action {
        let side = self.side(direction);
        let taken = side.backlog.is_empty()
            || host
                .replace_body(direction.into(), 0, &side.backlog)
                .is_ok();
        if taken {
            side.backlog.clear();
        } else if !matches!(site, Site::Body { .. }) || side.ended {
            // No later callback will take them.
            side.backlog.clear();
        }
        let waiting = side.paused || side.trailers_waiting;
        let keep = !taken && matches!(site, Site::Body { .. }) && !side.ended;
        // Keep the host's bytes behind ours until it takes ours.
        side.paused = keep;
        side.trailers_waiting = false;
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
    fn resume(&mut self, host: &mut dyn Host, direction: Direction) {
        if let Err(e) = host.resume(direction) {
            host.log(LogLevel::Warn, &format!("mcp-toon: resume refused ({e:?})"));
            self.exchange.record(Reason::HostRefused);
        }
    }

    /// After a callback that lets the stream go on: counts what is decided,
    /// and publishes the record once nothing more can change.
    fn settle(&mut self, host: &mut dyn Host) -> Action {
        self.count(host, false);
        if self.exchange.is_done() && self.callout.is_none() {
            self.publish(host);
        }
        Action::Continue
    }

    /// Counts the decisions made since the last count, unless a callout is
    /// in flight (and the stream goes on): its block is half-decided, and
    /// its bytes must be counted from its first stage to its last in one go.
    fn count(&mut self, host: &mut dyn Host, last: bool) {
        if self.exchange.waiting() && !last {
            return;
        }
        let report = self.exchange.report();
        for (name, amount) in report.metrics_since(self.counted) {
            let r = host.count(&name, amount);
            best_effort(host, "counting", r);
        }
        self.counted = report.decisions.len();
        if !last {
            // The record of a stream still flowing stays bounded; a
            // finished one is published whole.
            let forgotten = self.exchange.forget_counted(self.counted);
            self.counted -= forgotten;
        }
    }

    fn publish(&mut self, host: &mut dyn Host) {
        if self.published {
            return;
        }
        self.published = true;
        self.count(host, true);
        let report = self.exchange.report();
        if report.is_empty() {
            return;
        }
        let record = report.to_json();
        host.log(
            LogLevel::Debug,
            &format!("mcp-toon: {} {record}", report.summary()),
        );
        let r = host.set_property(&[RECORD_PROPERTY], record.as_bytes());
        best_effort(host, "publishing the record", r);
    }

    /// After a response callback: what the stream holds now, and the VM's
    /// memory.
    fn observe(&mut self, host: &mut dyn Host) {
        let held = self
            .exchange
            .held_bytes()
            .saturating_add(self.response.backlog.len());
        if held > self.vm.held_peak.get() {
            self.vm.held_peak.set(held);
            let r = host.gauge(HELD_BYTES_MAX, u64::try_from(held).unwrap_or(u64::MAX));
            best_effort(host, "a gauge", r);
        }
        let memory = u64::try_from(host.memory_bytes()).unwrap_or(u64::MAX);
        let r = host.gauge(VM_MEMORY_BYTES, memory);
        best_effort(host, "a gauge", r);
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

#[cfg(test)]
mod tests;
