//! One HTTP stream. Each callback hands the event to the core and acts on
//! its answer.

use std::rc::Rc;
use std::sync::Arc;

use proxy_wasm::traits::{Context, HttpContext};
use proxy_wasm::types::Action;

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
    headers_held: bool,
    reported: bool,
}

impl Stream {
    pub fn new(settings: Arc<Settings>, metrics: Rc<Metrics>) -> Self {
        Self {
            metrics,
            exchange: Exchange::new(settings),
            headers_held: false,
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
        match self.exchange.request_body(body_size, end_of_stream) {
            BodyStep::Wait => Action::Pause,
            BodyStep::Pass => Action::Continue,
            BodyStep::Ready => {
                let body = self.get_http_request_body(0, body_size).unwrap_or_default();
                self.exchange.request_complete(&body);
                Action::Continue
            }
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
            ResponsePlan::Pass => Action::Continue,
            ResponsePlan::Buffer => {
                // The body may change size: the old length must not go out.
                self.set_http_response_header("content-length", None);
                Action::Continue
            }
        }
    }

    fn on_http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        match self.exchange.response_body(body_size, end_of_stream) {
            BodyStep::Wait => Action::Pause,
            BodyStep::Pass => Action::Continue,
            BodyStep::Ready => {
                let body = self
                    .get_http_response_body(0, body_size)
                    .unwrap_or_default();
                if let Some(new) = self.exchange.response_complete(&body) {
                    // Always replace the whole buffered size (Envoy keeps
                    // the tail otherwise).
                    self.set_http_response_body(0, body_size, &new);
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
