//! One HTTP stream. Each callback hands the event to the core and performs
//! the step it answers with; comments say where Envoy shapes the code.

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use proxy_wasm::traits::{Context, HttpContext};
use proxy_wasm::types::Action;

use super::abi::{self, Buffer, Headers};
use super::host::{Metrics, SharedData};
use crate::config::{Settings, StreamInfo};
use crate::exchange::{Exchange, Flow, RequestHead, ResponseHead, ResponsePlan, Step};
use crate::page::reissue::UpstreamReply;
use crate::page::LocalReply;
use crate::report::SUMMARY_HEADER;
use crate::stage::trim::{LlmReply, LlmRequest};

/// Filter-state key of the decision record; Envoy stores it as
/// `wasm.mcp_toon`, readable with `%FILTER_STATE(wasm.mcp_toon:PLAIN)%`.
const RECORD_PROPERTY: &str = "mcp_toon";
/// APISIX (wasm-nginx-module) runs a plugin's body callbacks only when the
/// plugin sets these properties to a non-empty value in the matching header
/// callback (APISIX docs, "Wasm"). Other hosts treat them as ordinary
/// properties: Envoy stores them as filter state nobody reads. Their status
/// is ignored, so a host that refuses them changes nothing.
const APISIX_REQUEST_BODY: &str = "wasm_process_req_body";
const APISIX_RESPONSE_BODY: &str = "wasm_process_resp_body";

/// Asks hosts that deliver bodies only on request (APISIX) for this one.
fn want_body(property: &str) {
    let _ = abi::set_property(&[property], b"true");
}

pub struct Stream {
    metrics: Rc<Metrics>,
    exchange: Exchange,
    reported: bool,
    /// Decisions already counted: a long-lived event stream is counted as
    /// it goes, not when it closes.
    counted: usize,
    /// Bytes of response body Envoy holds for us (we paused on them); a
    /// later step replaces exactly these.
    held: usize,
    /// The response is paused (the last step said so).
    paused: bool,
    /// A callout is in flight.
    waiting: bool,
    callout_started: Option<SystemTime>,
}

fn header(kind: Headers, name: &str) -> Option<String> {
    abi::get_header(kind, name).ok().flatten()
}

impl Stream {
    pub fn new(settings: Arc<Settings>, metrics: Rc<Metrics>) -> Self {
        Self {
            metrics,
            exchange: Exchange::new(settings),
            reported: false,
            counted: 0,
            held: 0,
            paused: false,
            waiting: false,
            callout_started: None,
        }
    }

    fn stream_info() -> StreamInfo {
        let text = |path: &[&str]| {
            abi::get_property(path)
                .ok()
                .flatten()
                .and_then(|b| String::from_utf8(b).ok())
                .filter(|s| !s.is_empty())
        };
        StreamInfo {
            route: text(&["xds", "route_name"]),
            cluster: text(&["xds", "cluster_name"]),
            authority: header(Headers::Request, ":authority"),
        }
    }

    fn publish(&mut self) {
        if self.reported {
            return;
        }
        self.reported = true;
        self.count(true);
        let report = self.exchange.report();
        if report.is_empty() {
            return;
        }
        let record = report.to_json();
        log::debug!("mcp-toon: {} {record}", report.summary());
        let _ = abi::set_property(&[RECORD_PROPERTY], record.as_bytes());
    }

    /// Counts the decisions made since the last count, unless a callout
    /// is in flight (and the stream goes on): its block is half-decided,
    /// and its bytes must be counted from its first stage to its last in
    /// one go.
    fn count(&mut self, last: bool) {
        if let Some(figures) = self.exchange.take_store_figures() {
            self.metrics.store(&figures);
        }
        if self.waiting && !last {
            return;
        }
        let report = self.exchange.report();
        self.metrics.record(report, self.counted);
        self.counted = report.decisions.len();
        if !last {
            // The record of a stream still flowing stays bounded; a
            // finished one is published whole.
            let forgotten = self.exchange.forget_counted(self.counted);
            self.counted -= forgotten;
        }
    }

    /// Performs a response step on the `size` bytes Envoy holds for the
    /// current callback (or kept when it paused). Returns whether the
    /// response stays paused.
    fn perform(&mut self, mut step: Step, size: usize) -> bool {
        loop {
            let mut size_after = size;
            if let Some(bytes) = step.body.take() {
                // Always the whole held size: Envoy keeps the tail of a
                // partial replacement.
                if abi::set_buffer(Buffer::ResponseBody, 0, size, &bytes).is_ok() {
                    size_after = bytes.len();
                }
            }
            if let Some(length) = step.content_length {
                let _ = abi::set_header(
                    Headers::Response,
                    "content-length",
                    Some(&length.to_string()),
                );
                let summary = self.exchange.report().summary();
                let _ = abi::set_header(Headers::Response, SUMMARY_HEADER, Some(&summary));
            }
            let paused = step.flow == Flow::Pause;
            self.paused = paused;
            self.held = if paused { size_after } else { 0 };
            let Some(request) = step.callout.take() else {
                return paused;
            };
            if self.call(&request) {
                return paused;
            }
            // No call was made (unknown cluster, no healthy host...): the
            // core fails open at once.
            step = self
                .exchange
                .callout_reply(&LlmReply::NotSent, &mut SharedData);
            if !paused {
                // Envoy holds nothing of ours: there is nothing to replace.
                step.body = None;
            }
        }
    }

    /// Starts a callout; false when the host made none.
    fn call(&mut self, request: &LlmRequest) -> bool {
        let headers: Vec<(&str, &str)> = request
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        self.callout_started = Some(abi::now());
        let timeout = Duration::from_millis(request.timeout_ms);
        let sent = abi::http_call(&request.cluster, &headers, &request.body, timeout).is_ok();
        self.waiting = sent;
        sent
    }

    /// Answers the request without the server (the page tool). Should the
    /// host refuse, the request goes on upstream: never a stalled stream.
    fn reply_locally(&mut self, reply: &LocalReply) {
        let sent =
            abi::send_local_response(reply.status, "mcp_toon_page", &reply.headers, &reply.body);
        if sent.is_err() {
            let _ = abi::resume_request();
        }
        self.count(false);
    }

    /// Performs a request-path step: a call upstream, a local reply, or
    /// new body bytes; returns the callback's answer.
    fn request_step(&mut self, mut step: Step, size: usize) -> Action {
        if let Some(request) = step.upstream.take() {
            if self.call(&request) {
                return Action::Pause;
            }
            step = self.exchange.upstream_reply(&UpstreamReply::Failed);
        }
        if let Some(reply) = step.reply.take() {
            self.reply_locally(&reply);
            return Action::Pause;
        }
        if let Some(bytes) = step.body {
            let _ = abi::set_buffer(Buffer::RequestBody, 0, size, &bytes);
        }
        // A paused step keeps the held request headers waiting too.
        if step.flow == Flow::Pause {
            Action::Pause
        } else {
            Action::Continue
        }
    }

    /// Turns a step of a body or trailers callback into the callback's
    /// answer.
    fn answer(&mut self, step: Step, size: usize) -> Action {
        if self.perform(step, size) {
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
        self.waiting = false;
        let status = header(Headers::CallResponse, ":status").and_then(|s| s.parse::<u16>().ok());
        if self.exchange.awaits_upstream() {
            // A page call's re-issued tools/call.
            let reply = match status {
                Some(status) => UpstreamReply::Response {
                    status,
                    content_type: header(Headers::CallResponse, "content-type"),
                    body: abi::get_buffer(Buffer::CallResponseBody, 0, body_size)
                        .ok()
                        .flatten()
                        .unwrap_or_default(),
                },
                None => UpstreamReply::Failed,
            };
            let step = self.exchange.upstream_reply(&reply);
            let _ = self.request_step(step, 0);
            return;
        }
        let reply = match status {
            Some(status) => LlmReply::Response {
                status,
                body: abi::get_buffer(Buffer::CallResponseBody, 0, body_size)
                    .ok()
                    .flatten()
                    .unwrap_or_default(),
            },
            // A reset comes without headers (a timeout or a refused
            // connection comes as a local reply of Envoy's router, which
            // the core recognises); the core tells a reset from a timeout
            // by time.
            None => LlmReply::Failed {
                elapsed_ms: self
                    .callout_started
                    .and_then(|t| abi::now().duration_since(t).ok())
                    .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            },
        };
        let mut step = self.exchange.callout_reply(&reply, &mut SharedData);
        let was_paused = self.paused;
        if !was_paused {
            // Envoy holds nothing of ours: what the core holds goes out
            // with the next chunk.
            step.body = None;
        }
        let held = self.held;
        if !self.perform(step, held) && was_paused {
            if self.exchange.is_done() {
                self.publish();
            }
            // The response was paused for the call; it always resumes.
            let _ = abi::resume_response();
        }
        self.count(false);
    }
}

impl HttpContext for Stream {
    fn on_http_request_headers(&mut self, _headers: usize, end_of_stream: bool) -> Action {
        let get = |name: &str| header(Headers::Request, name);
        let (method, path) = (
            get(":method").unwrap_or_default(),
            get(":path").unwrap_or_default(),
        );
        let (content_type, accept) = (get("content-type"), get("accept"));
        let stream = Self::stream_info();
        let headers = abi::get_headers(Headers::Request).unwrap_or_default();
        let plan = self.exchange.request_headers(RequestHead {
            stream: &stream,
            method: &method,
            path: &path,
            content_type: content_type.as_deref(),
            accept: accept.as_deref(),
            end_of_stream,
            headers: &headers,
        });
        if plan.strip_accept_encoding {
            let _ = abi::set_header(Headers::Request, "accept-encoding", None);
        }
        if plan.remove_content_length {
            let _ = abi::set_header(Headers::Request, "content-length", None);
        }
        if plan.read_body {
            want_body(APISIX_REQUEST_BODY);
        }
        if plan.pause_headers {
            // A plain StopIteration (allow_on_headers_stop_iteration): the
            // body callbacks run, and the first that continues sends the
            // headers on.
            return Action::Pause;
        }
        Action::Continue
    }

    fn on_http_request_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        if !self.exchange.reads_request() {
            return Action::Continue;
        }
        let chunk = abi::get_buffer(Buffer::RequestBody, 0, body_size)
            .ok()
            .flatten()
            .unwrap_or_default();
        let step = self
            .exchange
            .request_chunk(&chunk, end_of_stream, &mut SharedData);
        self.request_step(step, body_size)
    }

    fn on_http_response_headers(&mut self, _headers: usize, end_of_stream: bool) -> Action {
        self.exchange.response_started(&mut SharedData);
        let get = |name: &str| header(Headers::Response, name);
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
        if matches!(plan, ResponsePlan::Rewrite { .. }) {
            want_body(APISIX_RESPONSE_BODY);
        }
        match plan {
            ResponsePlan::Pass => Action::Continue,
            // A plain StopIteration (Envoy ≥ 1.35 with
            // allow_on_headers_stop_iteration): body callbacks still run and
            // set the final content-length.
            ResponsePlan::Rewrite { hold_headers: true } => Action::Pause,
            ResponsePlan::Rewrite {
                hold_headers: false,
            } => {
                // The headers leave now and the body may change size.
                let _ = abi::set_header(Headers::Response, "content-length", None);
                Action::Continue
            }
        }
    }

    fn on_http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        if !self.exchange.reads_response() {
            return Action::Continue;
        }
        let buffer = abi::get_buffer(Buffer::ResponseBody, 0, body_size)
            .ok()
            .flatten()
            .unwrap_or_default();
        let step = self
            .exchange
            .response_chunk(&buffer, end_of_stream, &mut SharedData);
        let action = self.answer(step, body_size);
        self.count(false);
        self.metrics.observe(self.exchange.held_bytes());
        action
    }

    /// A body that ends with trailers has no last body callback: what the
    /// core holds is written back into the byte Envoy still buffers for us.
    fn on_http_response_trailers(&mut self, _trailers: usize) -> Action {
        if !self.exchange.reads_response() {
            return Action::Continue;
        }
        let step = self.exchange.response_trailers(&mut SharedData);
        let held = self.held;
        self.answer(step, held)
    }

    fn on_log(&mut self) {
        self.publish();
    }
}
