//! One HTTP stream as the core sees it: request head and body, response head
//! and body, and the answer to a trim callout. Every decision about a stream
//! is made here; the [`crate::driver::Driver`] hands each host event over and
//! carries out the [`Step`] it gets back.
//!
//! The exchange is a transducer: body bytes go in, the bytes to send on come
//! out, in order. It never knows what the host's buffers hold; it only says
//! what to send now and whether the stream must wait.
//!
//! Three response shapes (MCP 2025-06-18 "Transports"):
//! - `application/json` answering a POST: collected whole, then rewritten;
//! - `text/event-stream` answering a POST: events rewritten one by one as
//!   they complete ([`stream`]);
//! - the long-lived GET stream of the 2024-11-05 HTTP+SSE transport, whose
//!   requests arrive as POSTs on other streams ([`session`]).

mod collect;
mod declared;
mod growth;
mod json;
mod listings;
mod memory;
mod paging;
mod record;
mod request;
mod response;
mod session;
mod stream;

use std::sync::Arc;

pub use crate::media::is_media;
#[cfg(test)]
pub use crate::media::media_type;
pub use crate::shared::{NoServices, Services, Unstored};
pub(crate) use paging::reissue::UpstreamReply;
pub use paging::serve;

use crate::callout::{LlmReply, LlmRequest};
use crate::config::{ServerScope, Settings, StreamInfo};
use crate::host::Direction;
use crate::outcome::Reason;
use crate::page::LocalReply;
use crate::report::{Decision, Report};
use response::Reading;

/// Most decisions a stream's record keeps; older ones are counted in
/// metrics, then only their number stays (`omitted` in the record).
pub(crate) const RECORD_DECISIONS: usize = 64;

/// What the host knows when request headers arrive.
#[derive(Debug, Clone, Copy)]
pub struct RequestHead<'a> {
    pub stream: &'a StreamInfo,
    pub method: &'a str,
    /// `:path`, query included.
    pub path: &'a str,
    pub content_type: Option<&'a str>,
    pub accept: Option<&'a str>,
    /// No body follows.
    pub end_of_stream: bool,
    /// Every request header (names lowercase) when
    /// [`Exchange::wants_request_headers`], else none: a page call reads
    /// its session and forwards credentials when it calls the tool again.
    pub headers: &'a [(String, String)],
    /// `Mcp-Method` and `Mcp-Name` (MCP 2026-07-28, SEP-2243): the body's
    /// method and, for `tools/call`, its tool, for routing intermediaries.
    pub mcp_method: Option<&'a str>,
    pub mcp_name: Option<&'a str>,
    /// The property [`Exchange::owner_property`] names, when it does: the
    /// identity an authentication filter left in dynamic metadata.
    pub owner_metadata: Option<&'a [u8]>,
    /// The `x-mcp-toon-reissue` header ([`crate::page::mark`]).
    pub reissue_mark: Option<&'a str>,
    /// The host's clock, Unix milliseconds (a mark's expiry).
    pub now_ms: u64,
}

/// What to do with the request headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestPlan {
    /// Remove `accept-encoding` so the server answers uncompressed.
    pub(crate) strip_accept_encoding: bool,
    /// Hand the body over as it comes.
    pub(crate) read_body: bool,
    /// The body may be rewritten (intent or query argument removed): the old
    /// `content-length` must not go upstream.
    pub(crate) remove_content_length: bool,
    /// Hold the request headers until a body step continues (the body may
    /// be a page call, answered without the server). Needs Envoy's
    /// `allow_on_headers_stop_iteration`.
    pub(crate) pause_headers: bool,
    /// Remove the re-issue mark ([`crate::page::mark::HEADER`]): it never
    /// goes on to the server.
    pub(crate) remove_reissue_mark: bool,
}

/// What the host knows when response headers arrive.
#[derive(Debug, Clone, Copy, Default)]
pub struct ResponseHead<'a> {
    pub status: Option<u16>,
    pub content_type: Option<&'a str>,
    pub content_encoding: Option<&'a str>,
    pub content_length: Option<usize>,
    pub end_of_stream: bool,
}

/// What to do with the response headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponsePlan {
    /// Leave the response alone.
    Pass,
    /// The body may change size. `hold_headers`: pause the headers and let
    /// a later [`Step::content_length`] set the exact length; otherwise
    /// remove `content-length` now (the body goes chunked).
    Rewrite { hold_headers: bool },
}

/// Whether the stream goes on after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    /// Nothing may go on yet: the response headers are held until the body
    /// is rewritten, or a callout is in flight and what follows its block
    /// must wait for it.
    Pause,
}

/// The bytes a step sends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    /// Exactly the bytes handed in with this call, nothing before them.
    Input,
    /// These bytes. `original`: what they were before a stage changed them
    /// (`None` when they are the original bytes), so a host that refuses
    /// them can still send what came in.
    Bytes {
        bytes: Vec<u8>,
        original: Option<Vec<u8>>,
    },
}

impl Out {
    fn bytes(bytes: Vec<u8>) -> Self {
        Out::Bytes {
            bytes,
            original: None,
        }
    }

    fn none() -> Self {
        Out::bytes(Vec::new())
    }
}

/// The answer to a body callback, trailers or a callout reply.
#[derive(Debug, PartialEq, Eq)]
pub struct Step {
    pub out: Out,
    /// Headers were held: set this exact `content-length` (and the summary
    /// header) before they go.
    pub(crate) content_length: Option<usize>,
    pub(crate) flow: Flow,
    /// Make this call and hand its outcome to [`Exchange::callout_reply`].
    pub(crate) callout: Option<LlmRequest>,
    /// Request path only: answer the request with this response, without
    /// the server, and stop the request. `out` and `flow` then say what
    /// happens should the host refuse the reply: the request goes on to
    /// the server as it came.
    pub(crate) reply: Option<LocalReply>,
    /// Request path only: make this call to the route's cluster and hand
    /// its answer to [`Exchange::upstream_reply`].
    pub(crate) upstream: Option<LlmRequest>,
    /// Request path only, with the request headers held: set this request
    /// header (a rewritten call's `Mcp-Name`) before they go.
    pub(crate) request_header: Option<(&'static str, String)>,
}

impl Step {
    fn new(out: Out, flow: Flow) -> Self {
        Step {
            out,
            content_length: None,
            flow,
            callout: None,
            reply: None,
            upstream: None,
            request_header: None,
        }
    }

    /// The input goes on unchanged.
    fn input() -> Self {
        Step::new(Out::Input, Flow::Continue)
    }

    fn send(bytes: Vec<u8>) -> Self {
        Step::new(Out::bytes(bytes), Flow::Continue)
    }

    /// The input is taken out of the stream into the core.
    fn swallow(flow: Flow) -> Self {
        Step::new(Out::none(), flow)
    }

    fn with_callout(mut self, request: LlmRequest) -> Self {
        self.callout = Some(request);
        self
    }

    fn with_reply(mut self, reply: LocalReply) -> Self {
        self.reply = Some(reply);
        self
    }

    fn with_upstream(mut self, request: LlmRequest) -> Self {
        self.upstream = Some(request);
        self
    }
}

/// Where a stream stands: its request is read, then its response, until
/// nothing more can change.
#[derive(Debug)]
enum Phase {
    /// Waiting for a request body worth reading.
    Request,
    /// The request is a tool call (or listing, or a legacy event stream).
    Interested,
    /// The response body is read ([`Reading`]).
    Response(Reading),
    /// Nothing more to do on this stream.
    Done,
}

/// Per-stream state: what the stream is (its settings, scope, the host's
/// facts, the owner of its pages, its record and its share of the VM's
/// memory), its phase, which holds the response body in the state it is
/// read in ([`response::Reading`]: collected, streamed, or waiting for a
/// callout), and four parts, each with its own file: the request side
/// ([`request::RequestSide`]), the response's facts
/// ([`response::ResponseSide`]), a page call ([`paging::PageCall`]) and the
/// 2024-11-05 session ([`session::Legacy`]).
#[derive(Debug)]
pub struct Exchange {
    settings: Arc<Settings>,
    scope: ServerScope,
    phase: Phase,
    /// What the host knows of the stream: route, cluster, authority.
    stream_info: StreamInfo,
    /// Whom the stream's pages belong to ([`crate::page::owner`]).
    owner: crate::page::owner::Owner,
    report: Report,
    /// Whether the stream's decisions go into a record
    /// ([`Exchange::pass_unrecorded`]).
    recorded: bool,
    /// The most bytes the stream may hold, in its body buffers and queues
    /// together: its share of the VM's memory budget, set by the driver
    /// before each callback ([`Exchange::allow`]). Past it the stream is not
    /// read further (`vm_memory_budget`).
    room: usize,
    request: request::RequestSide,
    response: response::ResponseSide,
    page: paging::PageCall,
    legacy: session::Legacy,
}

impl Exchange {
    pub fn new(settings: Arc<Settings>) -> Self {
        Self {
            settings,
            scope: ServerScope::default(),
            phase: Phase::Request,
            stream_info: StreamInfo::default(),
            owner: crate::page::owner::Owner::default(),
            report: Report::default(),
            recorded: true,
            room: usize::MAX,
            request: request::RequestSide::default(),
            response: response::ResponseSide::default(),
            page: paging::PageCall::default(),
            legacy: session::Legacy::default(),
        }
    }

    /// Whether the settings leave every stream of an unmatched scope
    /// unchanged (no `servers[]` entry to match): then a stream is decided
    /// before its headers are read.
    pub(crate) fn idle_everywhere(&self) -> bool {
        !self.settings.matches_servers() && self.settings.idle(ServerScope::default())
    }

    /// Whether a decision record is published for the stream (one that
    /// concerns no tool call or listing has none; its reason is counted).
    pub(crate) fn recorded(&self) -> bool {
        self.recorded
    }

    /// Records why the rest of the stream goes on unchanged, and is done
    /// with it. (A block that passes one stage, while the stream goes on, is
    /// the pipeline's `Block::passthrough`.)
    fn pass_rest(&mut self, reason: Reason) {
        self.report.push(Decision::response(reason));
        self.phase = Phase::Done;
    }

    pub fn response_headers(
        &mut self,
        head: ResponseHead<'_>,
        sessions: &mut dyn Services,
    ) -> ResponsePlan {
        if self.legacy.session.is_some() && head.status == Some(202) {
            // A 2024-11-05 POST: `202 Accepted`, the answer travels on the
            // GET stream and is decided (and counted) there. Only now, with
            // the server's consent, are its calls recorded.
            self.accepted(sessions);
            self.phase = Phase::Done;
            return ResponsePlan::Pass;
        }
        // Any other answer: the server did not take the calls.
        self.legacy.pending.clear();
        if !matches!(self.phase, Phase::Interested) {
            self.phase = Phase::Done;
            if head.end_of_stream {
                self.measured_end();
            }
            return ResponsePlan::Pass;
        }
        // A length the body may not keep (it passes unread whatever it
        // says); the record reports it as announced.
        self.response.size = head.content_length;
        let media = head.content_type.unwrap_or_default();
        let (sse, json) = (
            is_media(media, "text/event-stream"),
            is_media(media, "application/json"),
        );
        self.response.limit = self.response_limit();
        // A legacy GET stream carries only events.
        let readable = sse || (json && !self.legacy.get_stream);
        let reason = if !head.status.is_some_and(|s| (200..300).contains(&s)) {
            Some(Reason::HttpStatus)
        } else if head
            .content_encoding
            .is_some_and(|e| !e.trim().is_empty() && !e.trim().eq_ignore_ascii_case("identity"))
        {
            Some(Reason::ContentEncoding)
        } else if !sse && head.content_length.is_some_and(|n| n > self.response.limit) {
            // Known to be too large before a byte arrives: pass it with its
            // framing (content-length) intact, without copying any of it.
            Some(Reason::ResponseTooLarge)
        } else if !readable {
            Some(Reason::NotJsonResponse)
        } else if head.end_of_stream && json && head.status == Some(200) {
            // A 200 promising JSON with an empty body is no JSON-RPC
            // message: the same reason whether the body ends with the
            // headers or with an empty chunk. (202 and 204 have no body
            // by design.)
            Some(Reason::MalformedResponse)
        } else if head.end_of_stream {
            Some(Reason::NotJsonResponse)
        } else if !sse && head.content_length.is_some_and(|n| self.over_room_by(n)) {
            // Collected into one buffer of its announced size: it would
            // pass the VM's budget. It passes before a byte is copied.
            Some(Reason::VmMemoryBudget)
        } else {
            None
        };
        if let Some(r) = reason {
            if self.legacy.get_stream && (!sse || r == Reason::HttpStatus) {
                // A GET answered otherwise than with an event stream (a
                // Streamable HTTP server without one answers 405) carries
                // no tool result: counted, not recorded.
                self.pass_unrecorded(r);
                return ResponsePlan::Pass;
            }
            if head.end_of_stream {
                self.response.size = Some(0);
            }
            self.pass_response(r);
            return ResponsePlan::Pass;
        }
        if sse {
            // A result that will be cut may be held past the event limit.
            let max_event = if self.response.limit > self.settings.max_response_bytes {
                self.settings.max_event_bytes.max(self.response.limit)
            } else {
                self.settings.max_event_bytes
            };
            let state = Box::new(stream::SseState::new(max_event));
            self.phase = Phase::Response(Reading::Streaming(state));
            return ResponsePlan::Rewrite {
                hold_headers: false,
            };
        }
        self.response.length = head.content_length;
        let mut body = collect::Collected::default();
        body.expect(head.content_length);
        self.phase = Phase::Response(Reading::Buffering(body));
        // Hold only a body of known length the core will buffer whole: it
        // then ends in one rewrite. A body of unknown length may end past
        // the limit, and held headers would keep a stale length. And only
        // one within `max_body_bytes`: a held response's body waits in
        // Envoy's buffer, whose limit a larger rewrite would pass (a 500
        // instead of the response); a larger one goes chunked and leaves in
        // a body callback that continues, which Envoy does not buffer.
        self.response.hold_headers = self.settings.hold_headers
            && head
                .content_length
                .is_some_and(|n| n <= self.settings.max_body_bytes);
        ResponsePlan::Rewrite {
            hold_headers: self.response.hold_headers,
        }
    }

    /// The response is not worth reading: nothing in it can change (or the
    /// stream is already decided). The host need not look at its headers.
    pub(crate) fn ignores_response(&self) -> bool {
        !matches!(self.phase, Phase::Interested)
    }

    /// The summary header to set on response headers that go out now, for
    /// a stream decided before its response.
    pub(crate) fn summary_at_headers(&self) -> Option<String> {
        self.response
            .summary_at_headers
            .then(|| self.report.summary())
    }

    /// The response headers could not be changed as the plan said (the
    /// host refused): the body must keep its bytes.
    pub(crate) fn response_headers_refused(&mut self, reason: Reason) {
        self.pass_response(reason);
    }

    /// One chunk of the response body.
    pub fn response_chunk(
        &mut self,
        chunk: &[u8],
        end_of_stream: bool,
        sessions: &mut dyn Services,
    ) -> Step {
        let step = self.response_chunk_read(chunk, end_of_stream, sessions);
        if end_of_stream {
            self.measured_end();
        }
        step
    }

    fn response_chunk_read(
        &mut self,
        chunk: &[u8],
        end_of_stream: bool,
        sessions: &mut dyn Services,
    ) -> Step {
        self.response.bytes = self.response.bytes.saturating_add(chunk.len());
        if self.reads_response() && self.over_room(chunk.len()) {
            return self.over_budget(chunk);
        }
        match &mut self.phase {
            Phase::Response(Reading::Waiting(waiting)) => {
                // Bytes after the value, while its callout runs: they
                // follow it, up to `trim.max_queued_bytes`; past it the
                // value goes on without its callout.
                waiting.1.extend_from_slice(chunk);
                if waiting.1.len() <= self.settings.trim.max_queued_bytes {
                    return Step::swallow(Flow::Pause);
                }
                let Some((mut job, after)) = self.take_waiting() else {
                    return Step::swallow(Flow::Pause);
                };
                job.give_up_trim(Reason::TrimQueueFull, &mut self.report);
                let (out, original) = self.finish_job(job, None, sessions);
                self.final_body(out, original, after)
            }
            Phase::Response(Reading::Streaming(_)) => {
                self.stream_chunk(chunk, end_of_stream, sessions)
            }
            Phase::Response(Reading::Buffering(_)) => {
                self.json_chunk(chunk, end_of_stream, sessions)
            }
            _ => Step::input(),
        }
    }

    /// The job waiting for its callout, and the bytes after its value: the
    /// response is then done.
    fn take_waiting(&mut self) -> Option<(crate::pipeline::Job, Vec<u8>)> {
        if !matches!(self.phase, Phase::Response(Reading::Waiting(_))) {
            return None;
        }
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Response(Reading::Waiting(waiting)) => Some(*waiting),
            _ => None,
        }
    }

    /// Response trailers arrived: the body ended without a last chunk.
    pub(crate) fn response_trailers(&mut self, sessions: &mut dyn Services) -> Step {
        let step = match self.phase {
            Phase::Response(Reading::Waiting(_)) => return Step::swallow(Flow::Pause),
            Phase::Response(Reading::Buffering(_)) => self.json_chunk(&[], true, sessions),
            Phase::Response(Reading::Streaming(_)) => self.stream_chunk(&[], true, sessions),
            _ => Step::input(),
        };
        self.measured_end();
        step
    }

    /// The outcome of the callout a [`Step::callout`] asked for. Always safe
    /// to call; without a pending callout it changes nothing.
    pub(crate) fn callout_reply(&mut self, reply: &LlmReply, sessions: &mut dyn Services) -> Step {
        if let Some((job, after)) = self.take_waiting() {
            let (out, original) = self.finish_job(job, Some(reply), sessions);
            return self.final_body(out, original, after);
        }
        if streaming(&mut self.phase).is_some() {
            return self.stream_reply(reply, sessions);
        }
        Step::send(Vec::new())
    }

    /// Gives up on one direction: from now on its bytes pass unchanged.
    /// Returns the bytes of it the core holds, in
    /// order, to be sent before anything else.
    pub(crate) fn abandon(&mut self, direction: Direction) -> Vec<u8> {
        let held = match direction {
            Direction::Request => {
                // A page call never goes to the server (the driver ends the
                // stream instead): nothing of it is handed back, and its
                // re-issued call is forgotten.
                self.page.reissue = None;
                if !matches!(self.phase, Phase::Request) || self.page.answering {
                    return Vec::new();
                }
                // Bytes only read (not held back) went upstream already.
                let held = std::mem::take(&mut self.request.body.bytes);
                if self.holds_request() {
                    held
                } else {
                    Vec::new()
                }
            }
            Direction::Response => match std::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Response(Reading::Buffering(mut body)) => body.take_with(&[]),
                Phase::Response(Reading::Streaming(state)) => (*state).into_held(),
                Phase::Response(Reading::Waiting(waiting)) => {
                    let (job, after) = *waiting;
                    let mut held = job.into_original();
                    held.extend(after);
                    held
                }
                _ => Vec::new(),
            },
        };
        self.phase = Phase::Done;
        held
    }

    /// The largest callout reply the core reads (`trim.max_reply_bytes`).
    pub(crate) fn max_reply_bytes(&self) -> usize {
        self.settings.trim.max_reply_bytes
    }

    /// The response's `content-length` as the server announced it.
    pub(crate) fn announced_length(&self) -> Option<usize> {
        self.response.length
    }

    pub(crate) fn report(&self) -> &Report {
        &self.report
    }

    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Records a decision the driver made (a host refusal, a loss).
    pub(crate) fn record(&mut self, reason: Reason) {
        self.record_calls(reason);
    }

    /// Keeps the decision record of a long-lived stream bounded: of the
    /// first `counted` decisions (those the driver has already counted,
    /// `crates/engine/src/driver/record.rs`), drops the oldest beyond the last
    /// [`RECORD_DECISIONS`]. Returns how many went, so the driver can move
    /// its count back.
    pub(crate) fn forget_counted(&mut self, counted: usize) -> usize {
        let excess = self.report.decisions.len().saturating_sub(RECORD_DECISIONS);
        let n = excess.min(counted);
        self.report.forget_oldest(n);
        n
    }

    /// Response bytes the core holds between callbacks: an incomplete
    /// trailing event, events waiting behind a callout, and a collected
    /// JSON body.
    pub(crate) fn held_bytes(&self) -> usize {
        match &self.phase {
            Phase::Response(Reading::Buffering(body)) => body.bytes.len(),
            Phase::Response(Reading::Streaming(state)) => state.held_bytes(),
            Phase::Response(Reading::Waiting(waiting)) => {
                waiting.0.body_len().saturating_add(waiting.1.len())
            }
            _ => 0,
        }
    }

    /// Request bytes the core holds back (an argument may come out).
    pub(crate) fn held_request_bytes(&self) -> usize {
        if matches!(self.phase, Phase::Request) && self.holds_request() {
            self.request.body.bytes.len()
        } else {
            0
        }
    }

    /// The core wants the request body's bytes (else the host need not
    /// read them).
    pub(crate) fn reads_request(&self) -> bool {
        matches!(self.phase, Phase::Request) || self.page.answering
    }

    /// The core wants the response body's bytes.
    pub(crate) fn reads_response(&self) -> bool {
        matches!(self.phase, Phase::Response(_))
    }

    /// A callout is in flight: its block is half-decided.
    pub(crate) fn waiting(&self) -> bool {
        match &self.phase {
            Phase::Response(Reading::Waiting(_)) => true,
            Phase::Response(Reading::Streaming(state)) => state.waiting(),
            _ => false,
        }
    }

    /// Nothing more can change on this stream (its report is final unless
    /// the stream is still flowing).
    pub(crate) fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done) && self.response.measured.is_empty()
    }
}

/// The event stream's state while it is rewritten (a function of the
/// phase alone, so that the exchange's other fields stay free to borrow).
fn streaming(phase: &mut Phase) -> Option<&mut stream::SseState> {
    match phase {
        Phase::Response(Reading::Streaming(state)) => Some(state),
        _ => None,
    }
}

#[cfg(test)]
mod bounds_tests;
#[cfg(test)]
mod memory_tests;
#[cfg(test)]
mod tests;
