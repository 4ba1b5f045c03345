//! One HTTP stream as the core sees it: request head and body, response head
//! and body. Every decision about a stream is made here, so an adapter only
//! relays host events and performs the plan it gets back.

use std::sync::Arc;

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
    pub content_type: Option<&'a str>,
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
    /// Buffer the whole body; remove `content-length` if headers must go out
    /// before the body is rewritten.
    Buffer,
}

/// What the finished response needs.
#[derive(Debug)]
pub enum Completion {
    /// Send this body (`None`: the original bytes).
    Done(Option<Vec<u8>>),
    /// Make this call, keep the response paused, then call
    /// [`Exchange::llm_reply`].
    Callout(LlmRequest),
}

/// What to do with a body chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyStep {
    /// Keep buffering.
    Wait,
    /// Release everything buffered unchanged and stop looking.
    Pass,
    /// The body is complete: hand it over.
    Ready,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for a request body worth reading.
    Request,
    /// The request is a tool call (or listing) worth answering for.
    Interested,
    /// Buffering the response body.
    Buffering,
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
    job: Option<Job>,
    report: Report,
}

impl Exchange {
    pub fn new(settings: Arc<Settings>) -> Self {
        Self {
            settings,
            scope: ServerScope::default(),
            phase: Phase::Request,
            request: RequestInfo::default(),
            job: None,
            report: Report::default(),
        }
    }

    fn pass(&mut self, reason: Reason) {
        self.report.push(Decision::response(reason));
        self.phase = Phase::Done;
    }

    /// Streamable HTTP (MCP 2025-06-18 "Transports"): every client message
    /// is a POST with a JSON body.
    pub fn request_headers(&mut self, head: RequestHead<'_>) -> RequestPlan {
        self.scope = self.settings.server_for(head.stream);
        let json = head
            .content_type
            .is_some_and(|ct| media_type(ct) == "application/json");
        if !head.method.eq_ignore_ascii_case("POST") || !json || head.end_of_stream {
            self.pass(Reason::RequestNotJsonRpc);
            return RequestPlan::default();
        }
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
    pub fn request_complete(&mut self, body: &[u8]) -> Option<Vec<u8>> {
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
        } else if media == "text/event-stream" {
            Some(Reason::EventStream)
        } else if media != "application/json" || head.end_of_stream {
            Some(Reason::NotJsonResponse)
        } else {
            None
        };
        match reason {
            Some(r) => {
                self.pass(r);
                ResponsePlan::Pass
            }
            None => {
                self.phase = Phase::Buffering;
                ResponsePlan::Buffer
            }
        }
    }

    pub fn response_body(&mut self, buffered: usize, end_of_stream: bool) -> BodyStep {
        if self.phase != Phase::Buffering {
            return BodyStep::Pass;
        }
        if buffered > self.settings.max_body_bytes {
            self.pass(Reason::ResponseTooLarge);
            return BodyStep::Pass;
        }
        if end_of_stream {
            BodyStep::Ready
        } else {
            BodyStep::Wait
        }
    }

    /// The complete response body: either the body to send, or a callout
    /// to make first.
    pub fn response_complete(&mut self, body: Vec<u8>) -> Completion {
        self.phase = Phase::Done;
        let Some(job) = pipeline::start(
            &self.settings,
            self.scope,
            &self.request,
            body,
            &mut self.report,
        ) else {
            return Completion::Done(None);
        };
        match job.callout().cloned() {
            Some(request) => {
                self.job = Some(job);
                Completion::Callout(request)
            }
            None => Completion::Done(job.finish(&self.settings, None, &mut self.report)),
        }
    }

    /// The reply to the callout [`Exchange::response_complete`] asked for;
    /// returns the body to send if it changed. Without a pending callout it
    /// changes nothing.
    pub fn llm_reply(&mut self, reply: &LlmReply) -> Option<Vec<u8>> {
        let job = self.job.take()?;
        job.finish(&self.settings, Some(reply), &mut self.report)
    }

    pub fn report(&self) -> &Report {
        &self.report
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
