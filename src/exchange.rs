//! One HTTP stream as the core sees it: request head and body, response head
//! and body. Every decision about a stream is made here, so an adapter only
//! relays host events and performs the plan it gets back.

use std::sync::Arc;

use crate::config::{ServerScope, Settings, StreamInfo};
use crate::mcp::{self, RequestInfo};
use crate::outcome::Reason;
use crate::pipeline;
use crate::report::{Decision, Report};

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
    report: Report,
}

impl Exchange {
    pub fn new(settings: Arc<Settings>) -> Self {
        Self {
            settings,
            scope: ServerScope::default(),
            phase: Phase::Request,
            request: RequestInfo::default(),
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

    pub fn request_complete(&mut self, body: &[u8]) {
        let Some(info) = RequestInfo::parse(body) else {
            self.pass(Reason::RequestNotJsonRpc);
            return;
        };
        let wanted = info.has_method(mcp::TOOLS_CALL)
            || (self.settings.annotate_tools && info.has_method(mcp::TOOLS_LIST));
        if !wanted {
            self.pass(Reason::NotToolsCall);
            return;
        }
        self.request = info;
        self.phase = Phase::Interested;
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

    /// The complete response body; returns the body to send if it changed.
    pub fn response_complete(&mut self, body: &[u8]) -> Option<Vec<u8>> {
        self.phase = Phase::Done;
        pipeline::process_response(
            &self.settings,
            self.scope,
            &self.request,
            body,
            &mut self.report,
        )
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
