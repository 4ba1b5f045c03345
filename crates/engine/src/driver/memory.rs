//! A host that keeps one exchange in memory and moves its bytes the way
//! Envoy's wasm host does (proxy-wasm ABI 0.2.1 as Envoy implements it):
//! - a body callback's buffer holds the new chunk, after whatever the
//!   previous callback kept by pausing; `Continue` sends the buffer on;
//! - outside a body callback the body is writable only while paused;
//! - a paused response goes on when resumed, after the callback that asked;
//! - headers are writable until they go out: when their callback
//!   continues, or, when it paused them, with the first body callback that
//!   continues;
//! - a local reply answers the stream while its response has not started;
//!   the request then never goes on;
//! - shared data keeps a version per key for compare-and-swap.
//!
//! The component and the CLI run the driver on it; the scripted test host
//! ([`crate::sim`]) adds chunking, callout replies and refusals. Any host
//! call can be made to fail ([`MemoryHost::refuse`]), which Envoy cannot be
//! made to do on demand.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::Driver;
use crate::callout::{LlmReply, LlmRequest};
use crate::host::{
    Action, Body, Direction, HeaderMap, Headers, Host, HostError, HostResult, LogLevel,
};
use crate::shared::{Services, SharedMemory, Unstored};

/// The host calls, for refusing some of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostCall {
    Header,
    Headers,
    SetHeader,
    RemoveHeader,
    Body,
    ReplaceBody,
    Property,
    SetProperty,
    Dispatch,
    Resume,
    Close,
    SendLocalResponse,
    SharedGet,
    SharedSet,
    Random,
    SetTickPeriod,
    Count,
    Gauge,
}

impl HostCall {
    pub const ALL: [HostCall; 18] = [
        HostCall::Header,
        HostCall::Headers,
        HostCall::SetHeader,
        HostCall::RemoveHeader,
        HostCall::Body,
        HostCall::ReplaceBody,
        HostCall::Property,
        HostCall::SetProperty,
        HostCall::Dispatch,
        HostCall::Resume,
        HostCall::Close,
        HostCall::SendLocalResponse,
        HostCall::SharedGet,
        HostCall::SharedSet,
        HostCall::Random,
        HostCall::SetTickPeriod,
        HostCall::Count,
        HostCall::Gauge,
    ];
}

/// A response the plugin sent itself: the one type the exchange builds
/// ([`crate::page::LocalReply`]), recorded as sent.
pub use crate::page::LocalReply;

/// The status a refused call returns (proxy-wasm `BadArgument`, what Envoy
/// answers for a body it has no buffer for).
pub const REFUSED: HostError = HostError(2);

/// Everything about one direction of the exchange.
#[derive(Debug, Default)]
struct Side {
    headers: Vec<(String, String)>,
    /// Headers went out: no more changes.
    headers_sent: bool,
    /// The headers callback paused them.
    headers_held: bool,
    /// What the host's buffer holds now.
    buffer: Vec<u8>,
    /// What went on, in order.
    sent: Vec<u8>,
    paused: bool,
    resumed: bool,
    trailers: bool,
    trailers_waiting: bool,
    trailers_sent: bool,
}

/// The reply to a callout, while the driver reads it.
#[derive(Debug)]
struct Reply {
    /// `None`: no response (a reset or a timeout).
    status: Option<u16>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

#[derive(Debug, Default)]
pub struct MemoryHost {
    request: Side,
    response: Side,
    /// `xds.route_name` and the like, keyed by the path's segments joined
    /// with `.`.
    pub properties: HashMap<String, Vec<u8>>,
    /// Shared data (and the random bytes: none unless its entropy says);
    /// a host of many streams moves it from one to the next.
    pub shared: SharedMemory,
    /// The local reply sent, if any.
    pub local_reply: Option<LocalReply>,
    /// The stream was closed (reset) from this direction's side.
    pub closed: Option<Direction>,
    /// The plugin-wide timer asked for.
    pub tick_period: Option<Duration>,
    pub counters: HashMap<String, u64>,
    pub gauges: HashMap<String, u64>,
    /// What the VM's memory reads as.
    pub memory: usize,
    /// Accept callouts (else `dispatch` is refused: a host without an HTTP
    /// client, where trim fails open at once).
    pub callouts_allowed: bool,
    /// Callouts made, in order; the last may await its reply.
    pub callouts: Vec<LlmRequest>,
    /// The reply being handed to the driver.
    reply: Option<Reply>,
    /// The body callback running, if any.
    in_body: Option<Direction>,
    now: Cell<u64>,
    /// Calls to refuse: (call, n) refuses the n-th call of that kind
    /// (0-based); (call, usize::MAX) refuses all of them.
    pub refuse: HashSet<(HostCall, usize)>,
    calls: RefCell<HashMap<HostCall, usize>>,
    pub logs: RefCell<Vec<String>>,
}

impl MemoryHost {
    /// A POST to `/mcp` with these extra request headers.
    pub fn post(headers: &[(&str, &str)]) -> Self {
        let mut host = MemoryHost::default();
        host.request.headers = [(":method", "POST"), (":path", "/mcp")]
            .iter()
            .chain(headers)
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        host
    }

    /// Sets (or adds) one request header before the request starts.
    pub fn set_request_header(&mut self, name: &str, value: &str) {
        self.request.headers.retain(|(n, _)| n != name);
        self.request
            .headers
            .push((name.to_string(), value.to_string()));
    }

    /// Sets the response headers the server sends.
    pub fn respond(&mut self, headers: &[(&str, &str)]) {
        self.response.headers = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
    }

    fn side(&mut self, d: Direction) -> &mut Side {
        match d {
            Direction::Request => &mut self.request,
            Direction::Response => &mut self.response,
        }
    }

    fn side_ref(&self, d: Direction) -> &Side {
        match d {
            Direction::Request => &self.request,
            Direction::Response => &self.response,
        }
    }

    /// What went on in one direction.
    pub fn sent(&self, d: Direction) -> &[u8] {
        &self.side_ref(d).sent
    }

    /// A header as it went out (or as it stands now).
    pub fn header_value(&self, d: Direction, name: &str) -> Option<&str> {
        let side = self.side_ref(d);
        side.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The headers of one direction arrive.
    pub fn headers(&mut self, driver: &mut Driver, d: Direction, end_of_stream: bool) -> Action {
        let action = match d {
            Direction::Request => driver.request_headers(self, end_of_stream),
            Direction::Response => driver.response_headers(self, end_of_stream),
        };
        let side = self.side(d);
        match action {
            Action::Continue => side.headers_sent = true,
            Action::Pause => side.headers_held = true,
        }
        action
    }

    /// One chunk of a body arrives.
    pub fn body(&mut self, driver: &mut Driver, d: Direction, chunk: &[u8], end: bool) -> Action {
        let side = self.side(d);
        side.buffer.extend_from_slice(chunk);
        let size = side.buffer.len();
        self.in_body = Some(d);
        let action = match d {
            Direction::Request => driver.request_body(self, size, end),
            Direction::Response => driver.response_body(self, size, end),
        };
        self.in_body = None;
        let side = self.side(d);
        match action {
            Action::Continue => {
                side.headers_sent = true;
                side.paused = false;
                let bytes = std::mem::take(&mut side.buffer);
                side.sent.extend(bytes);
            }
            Action::Pause => side.paused = true,
        }
        self.apply_resume(d);
        action
    }

    /// Trailers end a body.
    pub fn trailers(&mut self, driver: &mut Driver, d: Direction) -> Action {
        self.side(d).trailers = true;
        let action = match d {
            Direction::Request => driver.request_trailers(self),
            Direction::Response => driver.response_trailers(self),
        };
        match action {
            Action::Continue => self.go_on(d),
            Action::Pause => self.side(d).trailers_waiting = true,
        }
        self.apply_resume(d);
        action
    }

    /// Hands the reply to the callout in flight to the driver, a JSON
    /// body when it has one.
    pub fn reply(&mut self, driver: &mut Driver, reply: &LlmReply) {
        self.reply_with(driver, reply, "application/json");
    }

    /// [`MemoryHost::reply`] with this `content-type`.
    pub fn reply_with(&mut self, driver: &mut Driver, reply: &LlmReply, content_type: &str) {
        self.now.set(self.now.get() + 1);
        let (status, body) = match reply {
            LlmReply::Response { status, body } => (Some(*status), body.clone()),
            LlmReply::Failed { elapsed_ms } => {
                self.now.set(self.now.get() + elapsed_ms);
                (None, Vec::new())
            }
            LlmReply::NotSent => (None, Vec::new()),
            // A body that large, for the driver to measure and not read.
            LlmReply::TooLarge { status, bytes } => (Some(*status), vec![b' '; *bytes]),
        };
        let size = body.len();
        let headers = vec![("content-type".to_string(), content_type.to_string())];
        self.reply = Some(Reply {
            status,
            headers,
            body,
        });
        driver.callout_reply(self, size);
        self.reply = None;
        self.apply_resume(Direction::Request);
        self.apply_resume(Direction::Response);
    }

    /// Sets the clock (milliseconds since the Unix epoch).
    pub fn set_now_ms(&self, ms: u64) {
        self.now.set(ms);
    }

    /// The stream ends (completed or reset).
    pub fn end(&mut self, driver: &mut Driver) {
        driver.log(self);
    }

    /// A buffered body (and waiting trailers) go on.
    fn go_on(&mut self, d: Direction) {
        let side = self.side(d);
        side.headers_sent = true;
        side.paused = false;
        let bytes = std::mem::take(&mut side.buffer);
        side.sent.extend(bytes);
        if side.trailers {
            side.trailers_waiting = false;
            side.trailers_sent = true;
        }
    }

    fn apply_resume(&mut self, d: Direction) {
        if std::mem::take(&mut self.side(d).resumed) {
            self.go_on(d);
        }
    }

    /// The direction's headers went on (to the server, for the request).
    #[cfg(test)]
    pub fn went_on(&self, d: Direction) -> bool {
        self.side_ref(d).headers_sent
    }

    /// The headers callback paused the direction's headers.
    pub fn headers_held(&self, d: Direction) -> bool {
        self.side_ref(d).headers_held
    }

    /// Whether the direction's trailers went on.
    pub fn trailers_sent(&self, d: Direction) -> bool {
        self.side_ref(d).trailers_sent
    }

    /// The direction is stopped (paused body or trailers waiting), and no
    /// local reply or close ended the stream.
    pub fn stopped(&self, d: Direction) -> bool {
        let s = self.side_ref(d);
        self.local_reply.is_none()
            && self.closed.is_none()
            && (s.paused || s.trailers_waiting || (s.headers_held && !s.headers_sent))
    }

    fn check(&self, call: HostCall) -> HostResult<()> {
        let mut calls = self.calls.borrow_mut();
        let n = calls.entry(call).or_insert(0);
        let this = *n;
        *n += 1;
        if self.refuse.contains(&(call, this)) || self.refuse.contains(&(call, usize::MAX)) {
            return Err(REFUSED);
        }
        Ok(())
    }

    /// How many calls of a kind the driver made.
    pub fn calls(&self, call: HostCall) -> usize {
        self.calls.borrow().get(&call).copied().unwrap_or(0)
    }

    fn headers_of(&self, map: Headers) -> Option<&Side> {
        match map {
            Headers::Request => Some(&self.request),
            Headers::Response => Some(&self.response),
            Headers::CalloutReply => None,
        }
    }

    fn writable_headers(&mut self, map: Headers) -> HostResult<&mut Side> {
        let side = match map {
            Headers::Request => &mut self.request,
            Headers::Response => &mut self.response,
            Headers::CalloutReply => return Err(REFUSED),
        };
        if side.headers_sent {
            return Err(REFUSED);
        }
        Ok(side)
    }

    fn buffer_of(&mut self, body: Body) -> HostResult<&mut Vec<u8>> {
        let d = match body {
            Body::Request => Direction::Request,
            Body::Response => Direction::Response,
            Body::CalloutReply => return Err(REFUSED),
        };
        let in_body = self.in_body == Some(d);
        let side = self.side(d);
        if in_body || side.paused {
            Ok(&mut side.buffer)
        } else {
            Err(REFUSED)
        }
    }
}

impl Host for MemoryHost {
    fn header(&self, map: Headers, name: &str) -> HostResult<Option<String>> {
        self.check(HostCall::Header)?;
        if map == Headers::CalloutReply {
            let Some(Reply {
                status, headers, ..
            }) = self.reply.as_ref()
            else {
                return Ok(None);
            };
            if name == ":status" {
                return Ok(status.map(|s| s.to_string()));
            }
            // A reply without a status is no response: no headers either.
            return Ok(status.and_then(|_| {
                headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.clone())
            }));
        }
        Ok(self
            .headers_of(map)
            .and_then(|s| s.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)))
            .map(|(_, v)| v.clone()))
    }

    fn headers(&self, map: Headers) -> HostResult<HeaderMap> {
        self.check(HostCall::Headers)?;
        Ok(self
            .headers_of(map)
            .map(|s| HeaderMap::of(s.headers.iter().map(|(n, v)| (n.as_str(), v.as_str()))))
            .unwrap_or_default())
    }

    fn set_header(&mut self, map: Headers, name: &str, value: &str) -> HostResult<()> {
        self.check(HostCall::SetHeader)?;
        let side = self.writable_headers(map)?;
        side.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        side.headers.push((name.to_string(), value.to_string()));
        Ok(())
    }

    fn remove_header(&mut self, map: Headers, name: &str) -> HostResult<()> {
        self.check(HostCall::RemoveHeader)?;
        let side = self.writable_headers(map)?;
        side.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        Ok(())
    }

    fn body(&self, body: Body, start: usize, len: usize) -> HostResult<Vec<u8>> {
        self.check(HostCall::Body)?;
        let bytes: &[u8] = match body {
            Body::CalloutReply => self
                .reply
                .as_ref()
                .map(|r| r.body.as_slice())
                .ok_or(REFUSED)?,
            Body::Request => &self.request.buffer,
            Body::Response => &self.response.buffer,
        };
        let end = start.saturating_add(len).min(bytes.len());
        Ok(bytes.get(start.min(end)..end).unwrap_or_default().to_vec())
    }

    fn replace_body(&mut self, body: Body, size: usize, bytes: &[u8]) -> HostResult<()> {
        self.check(HostCall::ReplaceBody)?;
        let buffer = self.buffer_of(body)?;
        // Envoy: drain `size` bytes, then prepend.
        let size = size.min(buffer.len());
        buffer.splice(..size, bytes.iter().copied());
        Ok(())
    }

    fn property(&self, path: &[&str]) -> HostResult<Option<Vec<u8>>> {
        self.check(HostCall::Property)?;
        Ok(self.properties.get(&path.join(".")).cloned())
    }

    fn set_property(&mut self, path: &[&str], value: &[u8]) -> HostResult<()> {
        self.check(HostCall::SetProperty)?;
        self.properties.insert(path.join("."), value.to_vec());
        Ok(())
    }

    fn dispatch(&mut self, call: &LlmRequest) -> HostResult<()> {
        self.check(HostCall::Dispatch)?;
        if !self.callouts_allowed {
            return Err(REFUSED);
        }
        self.callouts.push(call.clone());
        Ok(())
    }

    fn resume(&mut self, direction: Direction) -> HostResult<()> {
        self.check(HostCall::Resume)?;
        self.side(direction).resumed = true;
        Ok(())
    }

    /// Envoy's `closeStream`: the stream is reset; nothing more goes on.
    fn close(&mut self, direction: Direction) -> HostResult<()> {
        self.check(HostCall::Close)?;
        self.closed = Some(direction);
        Ok(())
    }

    /// Envoy's `sendLocalReply`: refused once the response started (or a
    /// reply was sent).
    fn send_local_response(
        &mut self,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
    ) -> HostResult<()> {
        self.check(HostCall::SendLocalResponse)?;
        if self.response.headers_sent || self.local_reply.is_some() {
            return Err(REFUSED);
        }
        self.local_reply = Some(LocalReply {
            status,
            headers: headers.to_vec(),
            body: body.to_vec(),
        });
        Ok(())
    }

    fn shared_get(&self, key: &str) -> HostResult<Option<(Vec<u8>, u32)>> {
        self.check(HostCall::SharedGet)?;
        Ok(self.shared.get(key))
    }

    fn shared_set(&mut self, key: &str, value: &[u8], cas: u32) -> HostResult<()> {
        self.check(HostCall::SharedSet)?;
        match self.shared.set(key, value, cas) {
            Ok(()) => Ok(()),
            Err(Unstored::Changed) => Err(crate::host::CAS_MISMATCH),
            Err(Unstored::Refused) => Err(REFUSED),
        }
    }

    fn random(&mut self, out: &mut [u8]) -> HostResult<()> {
        self.check(HostCall::Random)?;
        if self.shared.random(out) {
            Ok(())
        } else {
            Err(REFUSED)
        }
    }

    fn set_tick_period(&mut self, period: Duration) -> HostResult<()> {
        self.check(HostCall::SetTickPeriod)?;
        self.tick_period = Some(period);
        Ok(())
    }

    fn count(&mut self, metric: &str, by: u64) -> HostResult<()> {
        self.check(HostCall::Count)?;
        *self.counters.entry(metric.to_string()).or_insert(0) += by;
        Ok(())
    }

    fn gauge(&mut self, metric: &str, value: u64) -> HostResult<()> {
        self.check(HostCall::Gauge)?;
        self.gauges.insert(metric.to_string(), value);
        Ok(())
    }

    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.now.get())
    }

    fn memory_bytes(&self) -> usize {
        self.memory
    }

    fn log(&self, level: LogLevel, message: &str) {
        self.logs.borrow_mut().push(format!("{level:?} {message}"));
    }
}
