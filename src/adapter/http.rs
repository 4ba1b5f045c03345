//! One HTTP stream. Each callback hands the event to the core and acts on
//! its answer.

use std::rc::Rc;
use std::sync::Arc;

use proxy_wasm::traits::{Context, HttpContext};
use proxy_wasm::types::Action;

use super::body::Collected;
use super::host::Metrics;
use crate::config::{Settings, StreamInfo};
use crate::exchange::{BodyStep, Exchange, RequestHead, ResponseHead, ResponsePlan};

/// Filter-state key of the decision record; Envoy stores it as
/// `wasm.mcp_toon`, readable with `%FILTER_STATE(wasm.mcp_toon:PLAIN)%`.
const RECORD_PROPERTY: &str = "mcp_toon";
/// Response header summarising the decisions when headers could be held.
const SUMMARY_HEADER: &str = "x-mcp-toon";

pub struct Stream {
    metrics: Rc<Metrics>,
    exchange: Exchange,
    /// The operator says Envoy runs with `allow_on_headers_stop_iteration`.
    may_hold_headers: bool,
    max_body_bytes: usize,
    /// Response headers are paused: they can still change from the body
    /// callback.
    headers_held: bool,
    request: Collected,
    response: Collected,
    reported: bool,
}

impl Stream {
    pub fn new(settings: Arc<Settings>, metrics: Rc<Metrics>) -> Self {
        Self {
            metrics,
            may_hold_headers: settings.hold_headers,
            max_body_bytes: settings.max_body_bytes,
            exchange: Exchange::new(settings),
            headers_held: false,
            request: Collected::default(),
            response: Collected::default(),
            reported: false,
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
        log::debug!("mcp-toon: {summary} {}", report.to_json());
        self.set_property(vec![RECORD_PROPERTY], Some(report.to_json().as_bytes()));
        if self.headers_held {
            self.set_http_response_header(SUMMARY_HEADER, Some(&summary));
        }
    }

    /// How to buffer a response the core wants whole. Holding the headers
    /// keeps an exact `content-length`; it needs Envoy's
    /// `allow_on_headers_stop_iteration` and a declared length the plugin
    /// will buffer: the whole body then ends in one buffer of at most
    /// `max_body_bytes`, below Envoy's limit. A body without a length
    /// already goes chunked, and holding it could end with one oversize
    /// final chunk on top of what is held, past Envoy's limit.
    fn buffer_response(&mut self) -> Action {
        let length = self
            .get_http_response_header("content-length")
            .and_then(|v| v.trim().parse::<usize>().ok());
        match length {
            Some(n) if n <= self.max_body_bytes && self.may_hold_headers => {
                // A plain StopIteration: the body callbacks still run and can
                // set the final content-length and x-mcp-toon.
                self.headers_held = true;
                Action::Pause
            }
            // Longer than the core ever buffers: the body passes unchanged,
            // so its length stays true.
            Some(n) if n > self.max_body_bytes => Action::Continue,
            _ => {
                // The headers leave now and the body may change size: the
                // old length must not go out (the body goes chunked).
                self.set_http_response_header("content-length", None);
                Action::Continue
            }
        }
    }

    /// Hands the rest of the stream to Envoy: anything kept goes out ahead
    /// of the current chunk.
    fn release_response(&mut self, chunk_size: usize) {
        if !self.response.is_empty() {
            let chunk = self
                .get_http_response_body(0, chunk_size)
                .unwrap_or_default();
            let out = self.response.take_with(&chunk);
            self.set_http_response_body(0, chunk_size, &out);
        }
    }
}

impl Context for Stream {}

impl HttpContext for Stream {
    fn on_http_request_headers(&mut self, _headers: usize, end_of_stream: bool) -> Action {
        let method = self.get_http_request_header(":method").unwrap_or_default();
        let content_type = self.get_http_request_header("content-type");
        let stream = self.stream_info();
        let plan = self.exchange.request_headers(RequestHead {
            stream: &stream,
            method: &method,
            content_type: content_type.as_deref(),
            end_of_stream,
        });
        if plan.strip_accept_encoding {
            self.set_http_request_header("accept-encoding", None);
        }
        Action::Continue
    }

    fn on_http_request_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        // The request is only read, never changed: each chunk is copied and
        // goes upstream at once (see body.rs for why Envoy's buffer is not
        // used).
        let seen = self.request.count(body_size);
        match self.exchange.request_body(seen, end_of_stream) {
            BodyStep::Pass => self.request.drop_kept(),
            BodyStep::Wait => {
                let chunk = self.get_http_request_body(0, body_size).unwrap_or_default();
                self.request.keep(&chunk);
            }
            BodyStep::Ready => {
                let chunk = self.get_http_request_body(0, body_size).unwrap_or_default();
                let body = self.request.take_with(&chunk);
                self.exchange.request_complete(&body);
            }
        }
        Action::Continue
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
            ResponsePlan::Pass => Action::Continue,
            ResponsePlan::Buffer => self.buffer_response(),
        }
    }

    fn on_http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        let seen = self.response.count(body_size);
        match self.exchange.response_body(seen, end_of_stream) {
            BodyStep::Wait => {
                let chunk = self
                    .get_http_response_body(0, body_size)
                    .unwrap_or_default();
                self.response.keep(&chunk);
                // Envoy's copy is emptied so its buffer never grows (body.rs).
                self.set_http_response_body(0, body_size, &[]);
                if self.headers_held {
                    // Releasing the chunk would release the held headers.
                    Action::Pause
                } else {
                    Action::Continue
                }
            }
            BodyStep::Pass => {
                // Oversize (or nothing to do): what was kept goes out first,
                // unchanged; held headers keep the server's content-length.
                self.release_response(body_size);
                self.publish();
                Action::Continue
            }
            BodyStep::Ready => {
                let chunk = self
                    .get_http_response_body(0, body_size)
                    .unwrap_or_default();
                let kept = !self.response.is_empty();
                let body = self.response.take_with(&chunk);
                let out = match self.exchange.response_complete(&body) {
                    Some(new) => Some(new),
                    None if kept => Some(body),
                    None => None,
                };
                let length = match &out {
                    // Always replace the whole chunk size (Envoy keeps the
                    // tail otherwise).
                    Some(bytes) => {
                        self.set_http_response_body(0, body_size, bytes);
                        bytes.len()
                    }
                    None => body_size,
                };
                if self.headers_held {
                    self.set_http_response_header("content-length", Some(&length.to_string()));
                }
                self.publish();
                Action::Continue
            }
        }
    }

    fn on_log(&mut self) {
        self.publish();
    }
}
