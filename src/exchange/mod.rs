//! One HTTP stream as the core sees it: request head and body, response head
//! and body, and the answer to a trim callout. Every decision about a stream
//! is made here, so an adapter only relays host events and performs the
//! [`Step`] it gets back.
//!
//! Three response shapes (MCP 2025-06-18 "Transports"):
//! - `application/json` answering a POST: buffered whole, then rewritten;
//! - `text/event-stream` answering a POST: events rewritten one by one as
//!   they complete ([`stream`]);
//! - the long-lived GET stream of the 2024-11-05 HTTP+SSE transport, whose
//!   requests arrive as POSTs on other streams ([`session`]).

mod paging;
mod session;
mod stream;

use std::sync::Arc;

pub use session::{NoSessions, SessionStore};

use crate::config::{ServerScope, Settings, StreamInfo};
use crate::mcp::{self, RequestInfo};
use crate::outcome::Reason;
use crate::page::reissue::Reissue;
use crate::page::LocalReply;
use crate::pipeline::{self, Job, Output};
use crate::report::{Decision, Report};
use crate::stage::trim::{LlmReply, LlmRequest};

/// Most decisions a stream's record keeps; older ones are counted in
/// metrics, then only their number stays (`omitted` in the record).
pub const RECORD_DECISIONS: usize = 64;

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
    /// Every request header (names lowercase): a page call reads its
    /// session and forwards credentials when it calls the tool again.
    pub headers: &'a [(String, String)],
}

/// What to do with the request headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestPlan {
    /// Remove `accept-encoding` so the server answers uncompressed.
    pub strip_accept_encoding: bool,
    /// Buffer the body and hand it over when complete.
    pub read_body: bool,
    /// The body may be rewritten (intent argument removed): the old
    /// `content-length` must not go upstream.
    pub remove_content_length: bool,
    /// Hold the request headers until a body step continues (the body may
    /// be a page call, answered without the server). Needs
    /// `allow_on_headers_stop_iteration`.
    pub pause_headers: bool,
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

/// Whether the host lets the body go on after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Let the (possibly replaced) bytes go; after a callout reply, resume
    /// if paused.
    Continue,
    /// Keep the bytes of this callback buffered and stop (or stay stopped).
    Pause,
}

/// The answer to a body callback or a callout reply.
#[derive(Debug, PartialEq, Eq)]
pub struct Step {
    /// Replace the bytes the host holds for this callback (after a callout:
    /// the bytes it kept when it paused) with these; `None` leaves them.
    /// The core keeps what it takes out and sends it later.
    pub body: Option<Vec<u8>>,
    /// Headers were held: set this exact `content-length` (and the summary
    /// header) before they go.
    pub content_length: Option<usize>,
    pub flow: Flow,
    /// Make this call and hand its outcome to [`Exchange::callout_reply`].
    pub callout: Option<LlmRequest>,
    /// Request path only: answer the request with this response, without
    /// the server (and stop the request).
    pub reply: Option<LocalReply>,
    /// Request path only: make this call to the route's cluster and hand its
    /// answer to [`Exchange::upstream_reply`].
    pub upstream: Option<LlmRequest>,
}

impl Step {
    fn new(body: Option<Vec<u8>>, flow: Flow) -> Self {
        Step {
            body,
            content_length: None,
            flow,
            callout: None,
            reply: None,
            upstream: None,
        }
    }

    fn pass() -> Self {
        Step::new(None, Flow::Continue)
    }

    fn send(bytes: Vec<u8>) -> Self {
        Step::new(Some(bytes), Flow::Continue)
    }

    /// Takes the callback's bytes out of the stream into the core.
    fn swallow(pause: bool) -> Self {
        Step::new(
            Some(Vec::new()),
            if pause { Flow::Pause } else { Flow::Continue },
        )
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for a request body worth reading.
    Request,
    /// The request is a tool call (or listing, or a legacy event stream).
    Interested,
    /// Buffering a JSON response body.
    Buffering,
    /// Rewriting an event stream.
    Streaming,
    /// Nothing more to do on this stream.
    Done,
}

/// Per-stream state.
#[derive(Debug)]
pub struct Exchange {
    settings: Arc<Settings>,
    scope: ServerScope,
    phase: Phase,
    request: RequestInfo,
    /// The 2024-11-05 GET event stream: requests come from other streams.
    legacy: bool,
    /// The 2024-11-05 session: from a POST's query, or a GET stream's
    /// `endpoint` event.
    session: Option<String>,
    /// Request bytes taken out of the stream while the body is read.
    request_body: Collected,
    /// Response bytes taken out of the stream while the body is buffered.
    response_body: Collected,
    /// Response headers are paused until the body is done.
    hold_headers: bool,
    /// A JSON body waiting for its callout.
    job: Option<Job>,
    stream: Option<stream::SseState>,
    report: Report,
    /// What the host knows of the stream: route, cluster, authority.
    stream_info: StreamInfo,
    /// Session and cluster of the stream's pages ([`crate::page::binding`]).
    binding: [u8; 8],
    /// Paging on: the request headers wait for the body.
    hold_request: bool,
    /// A page call's `:path`, `accept` and headers, for its reply or a
    /// re-issued call.
    path: String,
    accept: Option<String>,
    request_headers: Vec<(String, String)>,
    /// A page call waiting for the tool to be called again.
    reissue: Option<Box<Reissue>>,
    /// Most response bytes held ([`Exchange::response_limit`]).
    limit: usize,
}

/// Body bytes the core keeps. Envoy appends each chunk to its own buffer
/// before calling the plugin and resets the stream when that buffer passes
/// `per_connection_buffer_limit_bytes`; a paused body cannot stop the next
/// chunk landing on top. So the core takes every chunk out of Envoy's
/// buffer and keeps it here, bounded by `max_body_bytes` plus one chunk.
///
/// Known gap: a response that ends with trailers has no last body callback,
/// and the trailers callback has no buffer to write the body back into.
#[derive(Debug, Default)]
struct Collected {
    bytes: Vec<u8>,
    seen: usize,
    /// Bytes at the head of the host's next buffer that are already kept
    /// (the suffix of `bytes` left in Envoy's buffer).
    in_host: usize,
}

impl Collected {
    fn count(&mut self, chunk: &[u8]) -> usize {
        self.seen = self.seen.saturating_add(chunk.len());
        self.seen
    }

    /// Everything kept, then `chunk`.
    fn take_with(&mut self, chunk: &[u8]) -> Vec<u8> {
        let mut all = std::mem::take(&mut self.bytes);
        all.extend_from_slice(chunk);
        all
    }
}

impl Exchange {
    pub fn new(settings: Arc<Settings>) -> Self {
        Self {
            settings,
            scope: ServerScope::default(),
            phase: Phase::Request,
            request: RequestInfo::default(),
            legacy: false,
            session: None,
            request_body: Collected::default(),
            response_body: Collected::default(),
            hold_headers: false,
            job: None,
            stream: None,
            report: Report::default(),
            stream_info: StreamInfo::default(),
            binding: [0; 8],
            hold_request: false,
            path: String::new(),
            accept: None,
            request_headers: Vec::new(),
            reissue: None,
            limit: 0,
        }
    }

    fn pass(&mut self, reason: Reason) {
        self.report.push(Decision::response(reason));
        self.phase = Phase::Done;
    }

    /// Streamable HTTP: every client message is a POST with a JSON body.
    /// HTTP+SSE (2024-11-05): the client opens a GET event stream first.
    pub fn request_headers(&mut self, head: RequestHead<'_>) -> RequestPlan {
        self.scope = self.settings.server_for(head.stream);
        let is = |v: Option<&str>, media: &str| v.is_some_and(|ct| media_type(ct) == media);
        let accepts_sse = head
            .accept
            .is_some_and(|a| a.split(',').any(|m| media_type(m) == "text/event-stream"));
        if head.method.eq_ignore_ascii_case("GET") && accepts_sse {
            self.legacy = true;
            self.phase = Phase::Interested;
            return RequestPlan::default();
        }
        if !head.method.eq_ignore_ascii_case("POST")
            || !is(head.content_type, "application/json")
            || head.end_of_stream
        {
            self.pass(Reason::RequestNotJsonRpc);
            return RequestPlan::default();
        }
        self.session_of(head.path);
        let pause_headers = self.paging_headers(&head);
        RequestPlan {
            strip_accept_encoding: self.settings.strip_accept_encoding,
            read_body: true,
            remove_content_length: self.strips_intent(),
            pause_headers,
        }
    }

    /// One chunk of the request body. The request is only rewritten when
    /// the intent argument may need to come out; otherwise every chunk goes
    /// upstream at once and the core keeps a copy.
    pub fn request_chunk(
        &mut self,
        chunk: &[u8],
        end_of_stream: bool,
        sessions: &mut dyn SessionStore,
    ) -> Step {
        if self.phase != Phase::Request {
            return Step::pass();
        }
        // Held headers resume with the first body step that continues.
        let holds = self.strips_intent() || self.hold_request;
        if self.request_body.count(chunk) > self.settings.max_body_bytes {
            self.pass(Reason::RequestTooLarge);
            let kept = holds && !self.request_body.bytes.is_empty();
            let body = self.request_body.take_with(chunk);
            return if kept { Step::send(body) } else { Step::pass() };
        }
        if !end_of_stream {
            self.request_body.bytes.extend_from_slice(chunk);
            return if holds {
                Step::swallow(self.hold_request)
            } else {
                Step::pass()
            };
        }
        let body = self.request_body.take_with(chunk);
        if let Some(step) = self.page_call(&body, sessions) {
            return step;
        }
        match self.request_complete(&body, sessions) {
            Some(new) => Step::send(new),
            None if holds && body.len() > chunk.len() => Step::send(body),
            None => Step::pass(),
        }
    }

    fn strips_intent(&self) -> bool {
        self.settings.trim_anywhere() && self.settings.trim.advertise_intent
    }

    /// The complete request body; returns the body to send upstream if it
    /// changed (the intent argument taken out of `tools/call` arguments).
    fn request_complete(
        &mut self,
        body: &[u8],
        sessions: &mut dyn SessionStore,
    ) -> Option<Vec<u8>> {
        let arg = self
            .settings
            .trim_anywhere()
            .then_some(self.settings.trim.intent_argument.as_str());
        let Some(info) = RequestInfo::parse_with_intent(body, arg) else {
            self.pass(Reason::RequestNotJsonRpc);
            return None;
        };
        let rewritten = if self.strips_intent() && info.has_method(mcp::TOOLS_CALL) {
            std::str::from_utf8(body)
                .ok()
                .and_then(|text| crate::intent::strip(text, &self.settings.trim.intent_argument))
                .map(String::into_bytes)
        } else {
            None
        };
        self.remember_calls(&info, sessions);
        let wanted = info.has_method(mcp::TOOLS_CALL)
            || (self.settings.rewrites_listings() && info.has_method(mcp::TOOLS_LIST));
        if wanted {
            self.request = info;
            self.phase = Phase::Interested;
        } else {
            self.pass(Reason::NotToolsCall);
        }
        rewritten
    }

    /// The response began before the request body ended. A server may
    /// answer as soon as it has read what it needs: over HTTP/2 a client
    /// can send the end of its stream in a frame of its own, after the body
    /// reached the server. What was kept of the request decides when it is
    /// a whole JSON-RPC message (any byte after a whole JSON value would
    /// make the request invalid anyway); otherwise the stream passes.
    /// Call before [`Exchange::response_headers`]; a no-op once the
    /// request ended.
    pub fn response_started(&mut self, sessions: &mut dyn SessionStore) {
        if self.phase != Phase::Request {
            return;
        }
        let body = std::mem::take(&mut self.request_body.bytes);
        // A rewrite of the body could no longer go upstream, and need not:
        // a body the core forwards as it comes has reached the server; one
        // it holds back (trim strips the intent argument) has not, so the
        // server answered without it and the request is over.
        let _ = self.request_complete(&body, sessions);
    }

    pub fn response_headers(&mut self, head: ResponseHead<'_>) -> ResponsePlan {
        if self.phase != Phase::Interested {
            self.phase = Phase::Done;
            return ResponsePlan::Pass;
        }
        let media = head.content_type.map(media_type).unwrap_or_default();
        self.limit = self.response_limit();
        if self.session.is_some() && head.status == Some(202) {
            // A 2024-11-05 POST: `202 Accepted`, the answer travels on the
            // GET stream and is decided (and counted) there.
            self.phase = Phase::Done;
            return ResponsePlan::Pass;
        }
        // A legacy GET stream carries only events.
        let readable =
            media == "text/event-stream" || (media == "application/json" && !self.legacy);
        let reason = if !head.status.is_some_and(|s| (200..300).contains(&s)) {
            Some(Reason::HttpStatus)
        } else if head
            .content_encoding
            .is_some_and(|e| !e.trim().is_empty() && !e.trim().eq_ignore_ascii_case("identity"))
        {
            Some(Reason::ContentEncoding)
        } else if media != "text/event-stream"
            && head.content_length.is_some_and(|n| n > self.limit)
        {
            // Known to be too large before a byte arrives: pass it with its
            // framing (content-length) intact, without copying any of it.
            Some(Reason::ResponseTooLarge)
        } else if !readable {
            Some(Reason::NotJsonResponse)
        } else if head.end_of_stream && media == "application/json" && head.status == Some(200) {
            // A 200 promising JSON with an empty body is no JSON-RPC
            // message: the same reason whether the body ends with the
            // headers or with an empty chunk. (202 and 204 have no body
            // by design.)
            Some(Reason::MalformedResponse)
        } else if head.end_of_stream {
            Some(Reason::NotJsonResponse)
        } else {
            None
        };
        if let Some(r) = reason {
            self.pass(r);
            return ResponsePlan::Pass;
        }
        if media == "text/event-stream" {
            self.phase = Phase::Streaming;
            // A result that will be cut may be held past the event limit.
            let max_event = if self.limit > self.settings.max_body_bytes {
                self.settings.max_event_bytes.max(self.limit)
            } else {
                self.settings.max_event_bytes
            };
            self.stream = Some(stream::SseState::new(max_event));
            return ResponsePlan::Rewrite {
                hold_headers: false,
            };
        }
        self.phase = Phase::Buffering;
        // Hold only a body of known length the core will buffer whole: it
        // then ends in one rewrite. A body of unknown length may end past
        // `max_body_bytes`, and held headers would keep a stale length.
        self.hold_headers = self.settings.hold_headers
            && head
                .content_length
                .is_some_and(|n| n <= self.settings.max_body_bytes);
        ResponsePlan::Rewrite {
            hold_headers: self.hold_headers,
        }
    }

    /// One chunk of the response body.
    pub fn response_chunk(
        &mut self,
        chunk: &[u8],
        end_of_stream: bool,
        sessions: &mut dyn SessionStore,
    ) -> Step {
        match self.phase {
            Phase::Streaming => self.stream_chunk(chunk, end_of_stream, sessions),
            Phase::Buffering => self.json_chunk(chunk, end_of_stream, sessions),
            _ => Step::pass(),
        }
    }

    /// `buffer`: everything Envoy holds for this callback (the byte it kept
    /// from the previous one, then the new chunk).
    fn json_chunk(
        &mut self,
        buffer: &[u8],
        end_of_stream: bool,
        sessions: &mut dyn SessionStore,
    ) -> Step {
        let chunk = buffer.get(self.response_body.in_host..).unwrap_or_default();
        if self.response_body.count(chunk) > self.limit {
            // What was taken out goes back in front of this chunk, unchanged.
            self.pass(Reason::ResponseTooLarge);
            let kept = !self.response_body.bytes.is_empty();
            let body = self.response_body.take_with(chunk);
            return if kept { Step::send(body) } else { Step::pass() };
        }
        if !end_of_stream {
            self.response_body.bytes.extend_from_slice(chunk);
            // Continue on an emptied buffer: a paused body makes Envoy hold
            // the final replacement against its buffer limit and reset the
            // stream (seen with a 64 KiB limit). Held headers must pause.
            return Step::swallow(self.hold_headers);
        }
        self.json_end(chunk, sessions)
    }

    /// The whole JSON body is in: run the stages.
    fn json_end(&mut self, chunk: &[u8], sessions: &mut dyn SessionStore) -> Step {
        self.phase = Phase::Done;
        let kept = !self.response_body.bytes.is_empty();
        let body = self.response_body.take_with(chunk);
        match pipeline::start(
            &self.settings,
            self.scope,
            &self.request,
            body,
            &mut self.report,
        ) {
            Err(original) => self.final_body(Output::Unchanged(original), kept),
            Ok(job) => match job.callout().cloned() {
                // The host keeps this last chunk while the call runs; the
                // reply replaces it with the whole body.
                Some(request) => {
                    self.job = Some(job);
                    Step::new(None, Flow::Pause).with_callout(request)
                }
                None => {
                    let out = self.finish_job(job, None, sessions);
                    self.final_body(out, kept)
                }
            },
        }
    }

    /// Response trailers arrived: the body ended without a last body
    /// callback. The step's body replaces what Envoy still holds.
    pub fn response_trailers(&mut self, sessions: &mut dyn SessionStore) -> Step {
        match self.phase {
            Phase::Buffering => self.json_end(&[], sessions),
            Phase::Streaming => self.stream_chunk(&[], true, sessions),
            _ => Step::pass(),
        }
    }

    /// The last step of a JSON body: everything the core took out goes
    /// back, changed or not.
    fn final_body(&self, out: Output, kept: bool) -> Step {
        let body = match out {
            Output::Changed(b) => Some(b),
            Output::Unchanged(b) if kept => Some(b),
            Output::Unchanged(_) => None,
        };
        let content_length = match (&body, self.hold_headers) {
            (Some(b), true) => Some(b.len()),
            _ => None,
        };
        Step {
            content_length,
            ..Step::new(body, Flow::Continue)
        }
    }

    /// The outcome of the callout a [`Step::callout`] asked for. Always safe
    /// to call; without a pending callout it changes nothing.
    pub fn callout_reply(&mut self, reply: &LlmReply, sessions: &mut dyn SessionStore) -> Step {
        if let Some(job) = self.job.take() {
            let out = self.finish_job(job, Some(reply), sessions);
            return self.final_body(out, true);
        }
        if self.stream.is_some() {
            return self.stream_reply(reply, sessions);
        }
        Step::pass()
    }

    pub fn report(&self) -> &Report {
        &self.report
    }

    /// Keeps the decision record of a long-lived stream bounded: of the
    /// first `counted` decisions (those the host has already counted),
    /// drops the oldest beyond the last [`RECORD_DECISIONS`]. Returns how
    /// many went, so the host can move its count back.
    pub fn forget_counted(&mut self, counted: usize) -> usize {
        let excess = self.report.decisions.len().saturating_sub(RECORD_DECISIONS);
        let n = excess.min(counted);
        self.report.forget_oldest(n);
        n
    }

    /// Response bytes the core holds between callbacks: an incomplete
    /// trailing event, events waiting behind a callout, and a buffered
    /// JSON body.
    pub fn held_bytes(&self) -> usize {
        let stream = self.stream.as_ref().map_or(0, stream::SseState::held_bytes);
        stream.saturating_add(self.response_body.bytes.len())
    }

    /// The core wants the request body's bytes (else the host need not
    /// read them).
    pub fn reads_request(&self) -> bool {
        self.phase == Phase::Request
    }

    /// The core wants the response body's bytes.
    pub fn reads_response(&self) -> bool {
        matches!(self.phase, Phase::Buffering | Phase::Streaming) || self.job.is_some()
    }

    /// Nothing more can change on this stream (its report is final unless
    /// the stream is still flowing).
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done && self.job.is_none()
    }
}

/// The media type of a `content-type` value, lowercased, parameters dropped
/// (RFC 9110 §8.3.1).
pub fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests;
