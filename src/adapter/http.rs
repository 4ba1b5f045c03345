//! One HTTP stream. Each callback hands the event to the core and performs
//! the step it answers with; comments say where Envoy shapes the code.

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use proxy_wasm::traits::{Context, HttpContext};
use proxy_wasm::types::Action;

use super::host::{Metrics, SharedData};
use crate::config::{Settings, StreamInfo};
use crate::exchange::{Exchange, Flow, RequestHead, ResponseHead, ResponsePlan, Step};
use crate::stage::trim::LlmReply;

/// Filter-state key of the decision record; Envoy stores it as
/// `wasm.mcp_toon`, readable with `%FILTER_STATE(wasm.mcp_toon:PLAIN)%`.
const RECORD_PROPERTY: &str = "mcp_toon";
/// Response header summarising the decisions when headers were held.
const SUMMARY_HEADER: &str = "x-mcp-toon";

pub struct Stream {
    metrics: Rc<Metrics>,
    exchange: Exchange,
    headers_held: bool,
    reported: bool,
    /// The response is paused on a body callback of this many bytes; a
    /// callout reply's step replaces them.
    paused_on: Option<usize>,
    callout_started: Option<SystemTime>,
}

impl Stream {
    pub fn new(settings: Arc<Settings>, metrics: Rc<Metrics>) -> Self {
        Self {
            metrics,
            exchange: Exchange::new(settings),
            headers_held: false,
            reported: false,
            paused_on: None,
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
        let record = report.to_json();
        log::debug!("mcp-toon: {} {record}", report.summary());
        self.set_property(vec![RECORD_PROPERTY], Some(record.as_bytes()));
    }

    /// Performs a response step on the `size` bytes the host holds for the
    /// current callback (or kept when it paused). Returns whether the
    /// response is paused afterwards.
    fn perform(&mut self, mut step: Step, size: usize) -> bool {
        loop {
            if let Some(bytes) = step.body.take() {
                // Always the whole held size: Envoy keeps the tail of a
                // partial replacement.
                self.set_http_response_body(0, size, &bytes);
            }
            if let Some(length) = step.content_length {
                self.set_http_response_header("content-length", Some(&length.to_string()));
                let summary = self.exchange.report().summary();
                self.set_http_response_header(SUMMARY_HEADER, Some(&summary));
            }
            let Some(request) = step.callout.take() else {
                return step.flow == Flow::Pause;
            };
            let headers: Vec<(&str, &str)> = request
                .headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect();
            self.callout_started = Some(self.get_current_time());
            let timeout = Duration::from_millis(request.timeout_ms);
            if self
                .dispatch_http_call(
                    &request.cluster,
                    headers,
                    Some(&request.body),
                    vec![],
                    timeout,
                )
                .is_ok()
            {
                return step.flow == Flow::Pause;
            }
            // No call was made (unknown cluster...): the core fails open.
            let paused = step.flow == Flow::Pause;
            step = self
                .exchange
                .callout_reply(&LlmReply::NotSent, &mut SharedData);
            if !paused {
                // Nothing is held by the host: there is nothing to replace.
                step.body = None;
            }
        }
    }

    fn body_action(&mut self, step: Step, size: usize) -> Action {
        if self.perform(step, size) {
            self.paused_on = Some(size);
            Action::Pause
        } else {
            if self.exchange.is_done() {
                self.publish();
            }
            Action::Continue
        }
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
            // Envoy reports a timeout, a reset and a refused connection
            // alike, without headers; the core tells them apart by time.
            None => LlmReply::Failed {
                elapsed_ms: self
                    .callout_started
                    .and_then(|t| self.get_current_time().duration_since(t).ok())
                    .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            },
        };
        let mut step = self.exchange.callout_reply(&reply, &mut SharedData);
        let Some(size) = self.paused_on else {
            // Not paused: what the core holds goes out with the next chunk.
            step.body = None;
            self.perform(step, 0);
            return;
        };
        if !self.perform(step, size) {
            self.paused_on = None;
            if self.exchange.is_done() {
                self.publish();
            }
            // The response was paused for the call; it always resumes.
            self.resume_http_response();
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
        if !self.exchange.reads_request() {
            return Action::Continue;
        }
        let chunk = self.get_http_request_body(0, body_size).unwrap_or_default();
        let step = self
            .exchange
            .request_chunk(&chunk, end_of_stream, &mut SharedData);
        if let Some(bytes) = step.body {
            self.set_http_request_body(0, body_size, &bytes);
        }
        Action::Continue
    }

    fn on_http_response_headers(&mut self, _headers: usize, end_of_stream: bool) -> Action {
        let header = |name: &str| self.get_http_response_header(name);
        let status = header(":status").and_then(|s| s.parse::<u16>().ok());
        let content_type = header("content-type");
        let content_encoding = header("content-encoding");
        let content_length = header("content-length").and_then(|v| v.trim().parse::<usize>().ok());
        let plan = self.exchange.response_headers(ResponseHead {
            status,
            content_type: content_type.as_deref(),
            content_encoding: content_encoding.as_deref(),
            content_length,
            end_of_stream,
        });
        match plan {
            ResponsePlan::Pass => Action::Continue,
            // A plain StopIteration (Envoy ≥ 1.35 with
            // allow_on_headers_stop_iteration): body callbacks still run and
            // set the final content-length.
            ResponsePlan::Rewrite { hold_headers: true } => {
                self.headers_held = true;
                Action::Pause
            }
            ResponsePlan::Rewrite {
                hold_headers: false,
            } => {
                // The headers leave now and the body may change size.
                self.set_http_response_header("content-length", None);
                Action::Continue
            }
        }
    }

    fn on_http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        if !self.exchange.reads_response() {
            return Action::Continue;
        }
        let chunk = self
            .get_http_response_body(0, body_size)
            .unwrap_or_default();
        let step = self
            .exchange
            .response_chunk(&chunk, end_of_stream, &mut SharedData);
        self.body_action(step, body_size)
    }

    fn on_log(&mut self) {
        self.publish();
    }
}
