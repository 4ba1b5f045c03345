//! One HTTP stream: each proxy-wasm callback hands the event to the core's
//! [`Driver`] with the Envoy host, and returns its answer.

use proxy_wasm::traits::{Context, HttpContext};
use proxy_wasm::types::Action as Answer;

use super::host::Envoy;
use crate::driver::Driver;
use crate::host::Action;

pub struct Stream {
    pub driver: Driver,
    pub host: Envoy,
}

/// Pause is `StopIteration` for headers and trailers and
/// `StopIterationAndBuffer` for a body: Envoy keeps the bytes and hands
/// them back with the next chunk.
fn answer(action: Action) -> Answer {
    match action {
        Action::Continue => Answer::Continue,
        Action::Pause => Answer::Pause,
    }
}

impl Context for Stream {
    fn on_http_call_response(
        &mut self,
        _token: u32,
        _headers: usize,
        body: usize,
        _trailers: usize,
    ) {
        self.driver.callout_reply(&mut self.host, body);
    }
}

impl HttpContext for Stream {
    fn on_http_request_headers(&mut self, _headers: usize, end_of_stream: bool) -> Answer {
        answer(self.driver.request_headers(&mut self.host, end_of_stream))
    }

    fn on_http_request_body(&mut self, size: usize, end_of_stream: bool) -> Answer {
        answer(
            self.driver
                .request_body(&mut self.host, size, end_of_stream),
        )
    }

    fn on_http_request_trailers(&mut self, _trailers: usize) -> Answer {
        answer(self.driver.request_trailers(&mut self.host))
    }

    fn on_http_response_headers(&mut self, _headers: usize, end_of_stream: bool) -> Answer {
        answer(self.driver.response_headers(&mut self.host, end_of_stream))
    }

    fn on_http_response_body(&mut self, size: usize, end_of_stream: bool) -> Answer {
        answer(
            self.driver
                .response_body(&mut self.host, size, end_of_stream),
        )
    }

    fn on_http_response_trailers(&mut self, _trailers: usize) -> Answer {
        answer(self.driver.response_trailers(&mut self.host))
    }

    fn on_log(&mut self) {
        self.driver.log(&mut self.host);
    }
}
