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

mod session;
mod stream;

use std::sync::Arc;

pub use session::{NoSessions, SessionStore};

use crate::config::{ServerScope, Settings, StreamInfo};
use crate::mcp::{self, RequestInfo};
use crate::outcome::Reason;
use crate::pipeline::{self, Job};
use crate::report::{Decision, Report};
use crate::stage::trim::{LlmReply, LlmRequest};

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
}

/// What the host knows when response headers arrive.
#[derive(Debug, Clone, Copy, Default)]
pub struct ResponseHead<'a> {
    pub status: Option<u16>,
    pub content_type: Option<&'a str>,
    pub content_encoding: Option<&'a str>,
    pub end_of_stream: bool,
}

/// What to do with the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponsePlan {
    /// Leave the response alone.
    Pass,
    /// Buffer the whole body (JSON); its length may change.
    Buffer,
    /// Rewrite the body chunk by chunk (SSE); its length may change.
    Stream,
}

/// What to do with a body chunk, before reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyStep {
    /// Keep buffering.
    Wait,
    /// Release everything buffered unchanged and stop looking.
    Pass,
    /// The body is complete: hand it to [`Exchange::response_complete`].
    Ready,
    /// Hand everything buffered to [`Exchange::stream_body`].
    Stream,
}

/// What to do with the buffered response bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Let the buffered bytes go as they are.
    Continue,
    /// Replace everything buffered with these bytes (possibly empty), then
    /// let them go.
    Replace(Vec<u8>),
    /// Keep everything buffered: a callout is pending.
    Hold,
    /// Make this call and keep everything buffered; hand its outcome to
    /// [`Exchange::callout_reply`].
    Callout(LlmRequest),
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
    /// A JSON body waiting for its callout.
    job: Option<Job>,
    stream: Option<stream::SseState>,
    report: Report,
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
            job: None,
            stream: None,
            report: Report::default(),
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
        RequestPlan {
            strip_accept_encoding: self.settings.strip_accept_encoding,
            read_body: true,
            remove_content_length: self.strips_intent(),
        }
    }

    pub fn request_body(&mut self, buffered: usize, end_of_stream: bool) -> BodyStep {
        if self.phase != Phase::Request {
            return BodyStep::Pass;
        }
        if buffered > self.settings.max_body_bytes {
            self.pass(Reason::RequestTooLarge);
            return BodyStep::Pass;
        }
        if end_of_stream {
            BodyStep::Ready
        } else {
            BodyStep::Wait
        }
    }

    fn strips_intent(&self) -> bool {
        self.settings.trim_anywhere() && self.settings.trim.advertise_intent
    }

    /// The complete request body; returns the body to send upstream if it
    /// changed (the intent argument taken out of `tools/call` arguments).
    pub fn request_complete(
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

    pub fn response_headers(&mut self, head: ResponseHead<'_>) -> ResponsePlan {
        if self.phase != Phase::Interested {
            self.phase = Phase::Done;
            return ResponsePlan::Pass;
        }
        let media = head.content_type.map(media_type).unwrap_or_default();
        let reason = if !head.status.is_some_and(|s| (200..300).contains(&s)) {
            Some(Reason::HttpStatus)
        } else if head
            .content_encoding
            .is_some_and(|e| !e.trim().is_empty() && !e.trim().eq_ignore_ascii_case("identity"))
        {
            Some(Reason::ContentEncoding)
        } else if head.end_of_stream
            || !(media == "application/json" || media == "text/event-stream")
            || (self.legacy && media != "text/event-stream")
        {
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
            self.stream = Some(stream::SseState::new(self.settings.max_event_bytes));
            ResponsePlan::Stream
        } else {
            self.phase = Phase::Buffering;
            ResponsePlan::Buffer
        }
    }

    pub fn response_body(&mut self, buffered: usize, end_of_stream: bool) -> BodyStep {
        match self.phase {
            Phase::Streaming => BodyStep::Stream,
            Phase::Buffering if buffered > self.settings.max_body_bytes => {
                self.pass(Reason::ResponseTooLarge);
                BodyStep::Pass
            }
            Phase::Buffering if end_of_stream => BodyStep::Ready,
            Phase::Buffering => BodyStep::Wait,
            _ => BodyStep::Pass,
        }
    }

    /// The complete JSON response body.
    pub fn response_complete(&mut self, body: Vec<u8>) -> Step {
        self.phase = Phase::Done;
        let Some(job) = pipeline::start(
            &self.settings,
            self.scope,
            &self.request,
            body,
            &mut self.report,
        ) else {
            return Step::Continue;
        };
        match job.callout().cloned() {
            Some(request) => {
                self.job = Some(job);
                Step::Callout(request)
            }
            None => replace_or_continue(job.finish(&self.settings, None, &mut self.report)),
        }
    }

    /// The outcome of the callout a [`Step::Callout`] asked for. Always
    /// safe to call; without a pending callout it changes nothing.
    pub fn callout_reply(&mut self, reply: &LlmReply, sessions: &mut dyn SessionStore) -> Step {
        if let Some(job) = self.job.take() {
            return replace_or_continue(job.finish(&self.settings, Some(reply), &mut self.report));
        }
        if self.stream.is_some() {
            return self.stream_reply(reply, sessions);
        }
        Step::Continue
    }

    pub fn report(&self) -> &Report {
        &self.report
    }

    /// Nothing more can change on this stream (its report is final unless
    /// the stream is still flowing).
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done && self.job.is_none()
    }
}

fn replace_or_continue(body: Option<Vec<u8>>) -> Step {
    match body {
        Some(b) => Step::Replace(b),
        None => Step::Continue,
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
