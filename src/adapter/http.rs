//! One HTTP stream. Each callback hands the event to the core and performs
//! the step it answers with.

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use proxy_wasm::traits::{Context, HttpContext};
use proxy_wasm::types::Action;

use super::host::{Metrics, SharedData};
use crate::config::{Settings, StreamInfo};
use crate::exchange::{BodyStep, Exchange, RequestHead, ResponseHead, ResponsePlan, Step};
use crate::stage::trim::{LlmReply, LlmRequest};

/// Filter-state key of the decision record; Envoy stores it as
/// `wasm.mcp_toon`, readable with `%FILTER_STATE(wasm.mcp_toon:PLAIN)%`.
const RECORD_PROPERTY: &str = "mcp_toon";
/// Response header summarising the decisions when headers could be held.
const SUMMARY_HEADER: &str = "x-mcp-toon";

pub struct Stream {
    metrics: Rc<Metrics>,
    exchange: Exchange,
    headers_held: bool,
    reported: bool,
    /// Size of the response body the host holds while a callout runs: a
    /// replacement must cover all of it.
    held_body: usize,
    callout_started: Option<SystemTime>,
}

impl Stream {
    pub fn new(settings: Arc<Settings>, metrics: Rc<Metrics>) -> Self {
        Self {
            metrics,
            exchange: Exchange::new(settings),
            headers_held: false,
            reported: false,
            held_body: 0,
            callout_started: None,
        }
    }

    fn stream_info(&self) -> StreamInfo {
        let text = |path: Vec<&str>| {
            self.get_property(path)
                .and_then(|b| String::from_utf8(b).ok())
                .filter(|s| !s.is_empty())
        };
        StreamInfo {
            route: text(vec!["xds", "route_name"]),
            cluster: text(vec!["xds", "cluster_name"]),
            authority: self.get_http_request_header(":authority"),
        }
    }

    fn publish(&mut self) {
        if self.reported {
            return;
        }
        self.reported = true;
        let report = self.exchange.report();
        if report.is_empty() {
            return;
        }
        self.metrics.record(report);
        let summary = report.summary();
        let record = report.to_json();
        log::debug!("mcp-toon: {summary} {record}");
        self.set_property(vec![RECORD_PROPERTY], Some(record.as_bytes()));
        if self.headers_held {
            self.set_http_response_header(SUMMARY_HEADER, Some(&summary));
        }
    }

    /// Performs a step on the `body_size` bytes the host holds. Returns the
    /// action for a body callback.
    fn perform(&mut self, step: Step, body_size: usize) -> Action {
        let mut step = step;
        loop {
            match step {
                Step::Continue => return Action::Continue,
                Step::Replace(bytes) => {
                    // Always the whole buffered size: Envoy keeps the tail
                    // of a partial replacement.
                    self.set_http_response_body(0, body_size, &bytes);
                    return Action::Continue;
                }
                Step::Hold => return Action::Pause,
                Step::Callout(request) => {
                    self.held_body = body_size;
                    if self.dispatch(&request) {
                        return Action::Pause;
                    }
                    step = self
                        .exchange
                        .callout_reply(&LlmReply::NotSent, &mut SharedData);
                }
            }
        }
    }

    fn dispatch(&mut self, request: &LlmRequest) -> bool {
        let headers: Vec<(&str, &str)> = request
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let timeout = Duration::from_millis(request.timeout_ms);
        self.callout_started = Some(self.get_current_time());
        self.dispatch_http_call(
            &request.cluster,
            headers,
            Some(&request.body),
            vec![],
            timeout,
        )
        .is_ok()
    }
}

impl Context for Stream {
    fn on_http_call_response(
        &mut self,
        _token: u32,
        _headers: usize,
        body_size: usize,
        _trailers: usize,
    ) {
        let status = self
            .get_http_call_response_header(":status")
            .and_then(|s| s.parse::<u16>().ok());
        let reply = match status {
            Some(status) => LlmReply::Response {
                status,
                body: self
                    .get_http_call_response_body(0, body_size)
                    .unwrap_or_default(),
            },
            None => {
                let elapsed = self
                    .callout_started
                    .and_then(|t| self.get_current_time().duration_since(t).ok())
                    .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
                LlmReply::Failed {
                    elapsed_ms: elapsed,
                }
            }
        };
        let step = self.exchange.callout_reply(&reply, &mut SharedData);
        let held = self.held_body;
        // The response was paused for the call; whatever happens it resumes.
        if self.perform(step, held) != Action::Pause {
            self.publish_if_done();
            self.resume_http_response();
        }
    }
}

impl Stream {
    fn publish_if_done(&mut self) {
        if self.exchange.is_done() {
            self.publish();
        }
    }
}

impl HttpContext for Stream {
    fn on_http_request_headers(&mut self, _headers: usize, end_of_stream: bool) -> Action {
        let method = self.get_http_request_header(":method").unwrap_or_default();
        let path = self.get_http_request_header(":path").unwrap_or_default();
        let content_type = self.get_http_request_header("content-type");
        let accept = self.get_http_request_header("accept");
        let stream = self.stream_info();
        let plan = self.exchange.request_headers(RequestHead {
            stream: &stream,
            method: &method,
            path: &path,
            content_type: content_type.as_deref(),
            accept: accept.as_deref(),
            end_of_stream,
        });
        if plan.strip_accept_encoding {
            self.set_http_request_header("accept-encoding", None);
        }
        if plan.remove_content_length {
            self.set_http_request_header("content-length", None);
        }
        Action::Continue
    }

    fn on_http_request_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        match self.exchange.request_body(body_size, end_of_stream) {
            BodyStep::Wait => Action::Pause,
            BodyStep::Ready => {
                let body = self.get_http_request_body(0, body_size).unwrap_or_default();
                if let Some(new) = self.exchange.request_complete(&body, &mut SharedData) {
                    self.set_http_request_body(0, body_size, &new);
                }
                Action::Continue
            }
            BodyStep::Pass | BodyStep::Stream => Action::Continue,
        }
    }

    fn on_http_response_headers(&mut self, _headers: usize, end_of_stream: bool) -> Action {
        let status = self
            .get_http_response_header(":status")
            .and_then(|s| s.parse::<u16>().ok());
        let content_type = self.get_http_response_header("content-type");
        let content_encoding = self.get_http_response_header("content-encoding");
        let plan = self.exchange.response_headers(ResponseHead {
            status,
            content_type: content_type.as_deref(),
            content_encoding: content_encoding.as_deref(),
            end_of_stream,
        });
        match plan {
            ResponsePlan::Pass => {}
            // The body may change size: the old length must not go out.
            ResponsePlan::Buffer | ResponsePlan::Stream => {
                self.set_http_response_header("content-length", None);
            }
        }
        Action::Continue
    }

    fn on_http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        let action = match self.exchange.response_body(body_size, end_of_stream) {
            BodyStep::Wait => Action::Pause,
            BodyStep::Pass => Action::Continue,
            BodyStep::Ready => {
                let body = self
                    .get_http_response_body(0, body_size)
                    .unwrap_or_default();
                let step = self.exchange.response_complete(body);
                self.perform(step, body_size)
            }
            BodyStep::Stream => {
                let body = self
                    .get_http_response_body(0, body_size)
                    .unwrap_or_default();
                let step = self
                    .exchange
                    .stream_body(&body, end_of_stream, &mut SharedData);
                self.perform(step, body_size)
            }
        };
        if action == Action::Continue {
            self.publish_if_done();
        }
        action
    }

    fn on_log(&mut self) {
        self.publish();
    }
}
