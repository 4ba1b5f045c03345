//! The core's [`Host`] on Envoy's proxy-wasm ABI: each call is one host
//! call through the panic-free wrappers, its status turned into a
//! [`HostError`]. Nothing is decided here.

use std::cell::RefCell;
use std::rc::Rc;

use rustc_hash::FxHashMap;
use std::time::{Duration, SystemTime};

use super::abi::{self, Buffer, Headers as Map};
use crate::callout::LlmRequest;
use crate::driver::all_gauges;
use crate::host::{Body, Direction, HeaderMap, Headers, Host, HostError, HostResult, LogLevel};
use crate::report::all_metrics;

thread_local! {
    /// Callout token → the stream that made the call (Envoy's ids).
    static CALLOUTS: RefCell<FxHashMap<u32, u32>> = RefCell::new(FxHashMap::default());
}

/// The stream a callout's reply belongs to, forgotten as it is read.
pub(super) fn callout_stream(token: u32) -> Option<u32> {
    CALLOUTS.with(|c| c.borrow_mut().remove(&token))
}

/// `NotFound` of the ABI: a metric this VM did not define.
const NOT_FOUND: HostError = HostError(1);

/// Metric ids by name, defined once per VM; Envoy shows them in `/stats`
/// and `/stats/prometheus`.
#[derive(Default)]
pub struct Metrics {
    counters: FxHashMap<&'static str, u32>,
    gauges: FxHashMap<&'static str, u32>,
}

impl Metrics {
    /// Defines every metric the core may move. One Envoy refuses to
    /// define is then refused when moved, which the driver logs.
    pub fn define() -> Self {
        let counters = all_metrics()
            .into_iter()
            .filter_map(|name| abi::define_counter(name).ok().map(|id| (name, id)))
            .collect();
        let gauges = all_gauges()
            .into_iter()
            .filter_map(|name| abi::define_gauge(name).ok().map(|id| (name, id)))
            .collect();
        Self { counters, gauges }
    }
}

/// One stream's view of Envoy.
pub struct Envoy {
    /// The stream's context id: a callout's reply finds its way back by it.
    id: u32,
    metrics: Rc<Metrics>,
    /// A resume the driver asked for, made once its callback returned
    /// (`exports.rs` says why).
    resume: Option<Direction>,
}

impl Envoy {
    pub fn new(id: u32, metrics: Rc<Metrics>) -> Self {
        Self {
            id,
            metrics,
            resume: None,
        }
    }

    pub fn take_resume(&mut self) -> Option<Direction> {
        self.resume.take()
    }
}

fn map(h: Headers) -> Map {
    match h {
        Headers::Request => Map::Request,
        Headers::Response => Map::Response,
        Headers::CalloutReply => Map::CallResponse,
    }
}

fn buffer(b: Body) -> Buffer {
    match b {
        Body::Request => Buffer::RequestBody,
        Body::Response => Buffer::ResponseBody,
        Body::CalloutReply => Buffer::CallResponseBody,
    }
}

impl Host for Envoy {
    fn header(&self, h: Headers, name: &str) -> HostResult<Option<String>> {
        abi::get_header(map(h), name)
    }

    fn headers(&self, h: Headers) -> HostResult<HeaderMap> {
        abi::get_headers(map(h))
    }

    fn set_header(&mut self, h: Headers, name: &str, value: &str) -> HostResult<()> {
        abi::set_header(map(h), name, Some(value))
    }

    fn remove_header(&mut self, h: Headers, name: &str) -> HostResult<()> {
        abi::set_header(map(h), name, None)
    }

    /// `NotFound`: the host has no such buffer now — not an empty one.
    fn body(&self, b: Body, start: usize, len: usize) -> HostResult<Vec<u8>> {
        abi::get_buffer(buffer(b), start, len)?.ok_or(NOT_FOUND)
    }

    /// Always from offset 0: Envoy drains `size` bytes, then prepends.
    fn replace_body(&mut self, b: Body, size: usize, bytes: &[u8]) -> HostResult<()> {
        abi::set_buffer(buffer(b), 0, size, bytes)
    }

    fn property(&self, path: &[&str]) -> HostResult<Option<Vec<u8>>> {
        abi::get_property(path)
    }

    fn set_property(&mut self, path: &[&str], value: &[u8]) -> HostResult<()> {
        abi::set_property(path, value)
    }

    fn dispatch(&mut self, call: &LlmRequest) -> HostResult<()> {
        let headers: Vec<(&str, &str)> = call
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let timeout = Duration::from_millis(call.timeout_ms);
        let token = abi::http_call(&call.cluster, &headers, &call.body, timeout)?;
        CALLOUTS.with(|c| c.borrow_mut().insert(token, self.id));
        Ok(())
    }

    /// Deferred to the end of the callback, as Envoy defers its own.
    fn resume(&mut self, direction: Direction) -> HostResult<()> {
        self.resume = Some(direction);
        Ok(())
    }

    fn close(&mut self, direction: Direction) -> HostResult<()> {
        abi::close(direction)
    }

    fn send_local_response(
        &mut self,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
    ) -> HostResult<()> {
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        // The details show in Envoy's access logs (`%RESPONSE_CODE_DETAILS%`):
        // the page tool is the one local reply.
        abi::send_local_response(status, "mcp_toon_page", &headers, body)
    }

    fn shared_get(&self, key: &str) -> HostResult<Option<(Vec<u8>, u32)>> {
        abi::get_shared_data(key)
    }

    fn shared_set(&mut self, key: &str, value: &[u8], cas: u32) -> HostResult<()> {
        abi::set_shared_data(key, value, cas)
    }

    fn random(&mut self, out: &mut [u8]) -> HostResult<()> {
        abi::random(out)
    }

    fn set_tick_period(&mut self, period: Duration) -> HostResult<()> {
        abi::set_tick_period(period)
    }

    fn count(&mut self, metric: &str, by: u64) -> HostResult<()> {
        let id = self.metrics.counters.get(metric).ok_or(NOT_FOUND)?;
        abi::increment(*id, i64::try_from(by).unwrap_or(i64::MAX))
    }

    fn gauge(&mut self, metric: &str, value: u64) -> HostResult<()> {
        let id = self.metrics.gauges.get(metric).ok_or(NOT_FOUND)?;
        abi::record(*id, value)
    }

    fn now(&self) -> SystemTime {
        abi::now()
    }

    fn memory_bytes(&self) -> usize {
        abi::memory_bytes()
    }

    /// A host that cannot say writes everything (the ABI's default).
    fn logs(&self, level: LogLevel) -> bool {
        let at = match level {
            LogLevel::Debug => abi::Level::Debug,
            LogLevel::Info => abi::Level::Info,
            LogLevel::Warn => abi::Level::Warn,
        };
        abi::log_level().map_or(true, |lowest| at as u32 >= lowest)
    }

    fn log(&self, level: LogLevel, message: &str) {
        let level = match level {
            LogLevel::Debug => abi::Level::Debug,
            LogLevel::Info => abi::Level::Info,
            LogLevel::Warn => abi::Level::Warn,
        };
        // A line the host refuses has nowhere else to go.
        abi::log(level, message).ok();
    }
}
