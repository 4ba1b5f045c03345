//! The core's [`Host`] on the http-wasm ABI: each call one host call (or,
//! for a body, the piece the adapter pulled, [`super::pump`]), nothing
//! decided. Calls the ABI has no counterpart for are refused, and the
//! driver acts on the refusal as on any other host's: no HTTP calls (trim
//! and re-issue are refused at load, [`mcp_toon_engine::config::Capabilities`]), no
//! properties (the decision record goes to the log and the summary
//! header), no timer (the adapter runs the driver's tick at the first
//! request after its period). Counters and gauges are kept per instance
//! and written to the log ([`super::instance::COUNTERS_EVERY`]).

use std::time::{Duration, SystemTime};

use super::instance::Instance;
use super::io::{HeaderKind, HttpWasm, Level};
use mcp_toon_engine::callout::LlmRequest;
use mcp_toon_engine::host::{
    Body, Direction, HeaderMap, Headers, Host, HostError, HostResult, LogLevel, CAS_MISMATCH,
};
use mcp_toon_engine::shared::{Services, Unstored};

/// proxy-wasm's `Unimplemented`: the ABI has no such call.
pub const UNSUPPORTED: HostError = HostError(12);
/// proxy-wasm's `BadArgument`: the message went on, it is no longer
/// writable (the host would trap).
pub const GONE: HostError = HostError(2);

/// A reply the plugin sends instead of the next handler's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// One request as the adapter carries it.
#[derive(Debug, Default)]
pub struct Request {
    /// The next handler ran: request headers are fixed, and response
    /// headers are writable only when the response is buffered.
    pub after_next: bool,
    /// The host buffers this request's response (`buffer_response`).
    pub buffered_response: bool,
    /// What a body "buffer" of the driver's holds: the pieces pulled and
    /// not yet let go.
    pub request_buffer: Vec<u8>,
    pub response_buffer: Vec<u8>,
    /// The reply the driver sent (a page call), to be written.
    pub reply: Option<Reply>,
}

impl Request {
    pub fn buffer(&mut self, direction: Direction) -> &mut Vec<u8> {
        match direction {
            Direction::Request => &mut self.request_buffer,
            Direction::Response => &mut self.response_buffer,
        }
    }
}

/// The host as one callback of one request sees it.
pub struct Traefik<'a> {
    pub io: &'a mut dyn HttpWasm,
    pub instance: &'a mut Instance,
    pub request: &'a mut Request,
}

fn level(l: LogLevel) -> Level {
    match l {
        LogLevel::Debug => Level::Debug,
        LogLevel::Info => Level::Info,
        LogLevel::Warn => Level::Warn,
    }
}

impl Traefik<'_> {
    /// `:method`, `:path`, `:authority` and `:status`, as proxy-wasm names
    /// them; `None` for one the host cannot give now.
    fn pseudo(&self, map: Headers, name: &str) -> Option<Option<String>> {
        match (map, name) {
            (Headers::Request, ":method") => Some(Some(self.io.method())),
            (Headers::Request, ":path") => Some(Some(self.io.uri())),
            (Headers::Request, ":authority") => Some(
                self.io
                    .header_values(HeaderKind::Request, "host")
                    .into_iter()
                    .next(),
            ),
            // The host knows the status only of a response it buffers,
            // once the next handler ran (it traps otherwise).
            (Headers::Response, ":status") => Some(
                (self.request.buffered_response && self.request.after_next)
                    .then(|| self.io.status().to_string()),
            ),
            (_, n) if n.starts_with(':') => Some(None),
            _ => None,
        }
    }

    /// A message's headers are writable: the request's until it goes on,
    /// the response's before or, when buffered, after the next handler.
    fn writable(&self, map: Headers, name: &str) -> HostResult<HeaderKind> {
        if name.is_empty() || name.starts_with(':') {
            return Err(UNSUPPORTED);
        }
        match map {
            Headers::Request if !self.request.after_next => Ok(HeaderKind::Request),
            Headers::Response if !self.request.after_next || self.request.buffered_response => {
                Ok(HeaderKind::Response)
            }
            Headers::CalloutReply => Err(UNSUPPORTED),
            _ => Err(GONE),
        }
    }
}

impl Host for Traefik<'_> {
    fn header(&self, map: Headers, name: &str) -> HostResult<Option<String>> {
        if let Some(value) = self.pseudo(map, name) {
            return Ok(value);
        }
        let kind = match map {
            Headers::Request => HeaderKind::Request,
            Headers::Response => HeaderKind::Response,
            Headers::CalloutReply => return Ok(None),
        };
        Ok(self.io.header_values(kind, name).into_iter().next())
    }

    fn headers(&self, map: Headers) -> HostResult<HeaderMap> {
        let (kind, pseudo): (HeaderKind, &[&str]) = match map {
            Headers::Request => (HeaderKind::Request, &[":method", ":path", ":authority"]),
            Headers::Response => (HeaderKind::Response, &[":status"]),
            Headers::CalloutReply => return Err(UNSUPPORTED),
        };
        let mut out = HeaderMap::default();
        for name in pseudo {
            if let Some(Some(value)) = self.pseudo(map, name) {
                out.push(name, &value);
            }
        }
        for name in self.io.header_names(kind) {
            for value in self.io.header_values(kind, &name) {
                out.push(&name, &value);
            }
        }
        Ok(out)
    }

    fn set_header(&mut self, map: Headers, name: &str, value: &str) -> HostResult<()> {
        let kind = self.writable(map, name)?;
        self.io.set_header(kind, name, value);
        Ok(())
    }

    fn remove_header(&mut self, map: Headers, name: &str) -> HostResult<()> {
        let kind = self.writable(map, name)?;
        self.io.remove_header(kind, name);
        Ok(())
    }

    fn body(&self, body: Body, start: usize, len: usize) -> HostResult<Vec<u8>> {
        let bytes = match body {
            Body::Request => &self.request.request_buffer,
            Body::Response => &self.request.response_buffer,
            Body::CalloutReply => return Err(UNSUPPORTED),
        };
        let end = start.saturating_add(len).min(bytes.len());
        Ok(bytes.get(start.min(end)..end).unwrap_or_default().to_vec())
    }

    /// proxy-wasm's semantics on the pulled pieces: drain `size` bytes,
    /// then put `bytes` in front.
    fn replace_body(&mut self, body: Body, size: usize, bytes: &[u8]) -> HostResult<()> {
        let buffer = match body {
            Body::Request => &mut self.request.request_buffer,
            Body::Response => &mut self.request.response_buffer,
            Body::CalloutReply => return Err(UNSUPPORTED),
        };
        let size = size.min(buffer.len());
        buffer.splice(..size, bytes.iter().copied());
        Ok(())
    }

    /// No stream properties in http-wasm: route and cluster names read as
    /// absent (`servers[].match.route` and `.cluster` are refused at load).
    fn property(&self, _path: &[&str]) -> HostResult<Option<Vec<u8>>> {
        Ok(None)
    }

    fn set_property(&mut self, _path: &[&str], _value: &[u8]) -> HostResult<()> {
        Err(UNSUPPORTED)
    }

    fn dispatch(&mut self, _call: &LlmRequest) -> HostResult<()> {
        Err(UNSUPPORTED)
    }

    /// Nothing is ever paused on this host: every body is pulled whole
    /// within one export call.
    fn resume(&mut self, _direction: Direction) -> HostResult<()> {
        Ok(())
    }

    fn send_local_response(
        &mut self,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
    ) -> HostResult<()> {
        if self.request.after_next || self.request.reply.is_some() {
            return Err(GONE);
        }
        self.request.reply = Some(Reply {
            status,
            headers: headers.to_vec(),
            body: body.to_vec(),
        });
        Ok(())
    }

    /// http-wasm cannot reset a request: before the next handler runs, not
    /// calling it is what keeps a request from the server, so the request
    /// is answered with an empty 502 instead (a page call must never reach
    /// the server). Afterwards nothing can stop it.
    fn close(&mut self, _direction: Direction) -> HostResult<()> {
        if self.request.after_next {
            return Err(GONE);
        }
        if self.request.reply.is_none() {
            self.request.reply = Some(Reply {
                status: 502,
                headers: Vec::new(),
                body: Vec::new(),
            });
        }
        Ok(())
    }

    fn shared_get(&self, key: &str) -> HostResult<Option<(Vec<u8>, u32)>> {
        Ok(self.instance.shared.get(key))
    }

    fn shared_set(&mut self, key: &str, value: &[u8], cas: u32) -> HostResult<()> {
        match self.instance.shared.set(key, value, cas) {
            Ok(()) => Ok(()),
            Err(Unstored::Changed) => Err(CAS_MISMATCH),
            Err(Unstored::Refused) => Err(UNSUPPORTED),
        }
    }

    fn random(&mut self, out: &mut [u8]) -> HostResult<()> {
        self.instance.random.fill(out);
        Ok(())
    }

    fn set_tick_period(&mut self, period: Duration) -> HostResult<()> {
        self.instance.tick = Some((period, self.io.now() + period));
        Ok(())
    }

    fn count(&mut self, metric: &str, by: u64) -> HostResult<()> {
        let c = self
            .instance
            .counters
            .entry(metric.to_string())
            .or_insert(0);
        *c = c.saturating_add(by);
        Ok(())
    }

    fn gauge(&mut self, metric: &str, value: u64) -> HostResult<()> {
        self.instance.gauges.insert(metric.to_string(), value);
        Ok(())
    }

    fn now(&self) -> SystemTime {
        self.io.now()
    }

    fn memory_bytes(&self) -> usize {
        self.io.memory_bytes()
    }

    fn log(&self, l: LogLevel, message: &str) {
        if self.instance.logs(l) {
            self.io.log(level(l), message);
        }
    }

    fn logs(&self, l: LogLevel) -> bool {
        self.instance.logs(l)
    }
}
