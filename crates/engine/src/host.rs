//! The one door between the core and the proxy that runs it.
//!
//! The [`crate::driver::Driver`] carries out every plan of the core through
//! this trait, and only through it. A host (the proxy-wasm adapter, the
//! in-memory host of the component and the CLI, the scripted test host)
//! implements each call as one host call and turns the host's status into a
//! [`HostError`]; it decides nothing. Every call that can fail returns a
//! `Result`, and the driver acts on each one: a refused body write turns the
//! rest of the stream into a byte-identical pass-through, a refused callout
//! fails the trim open (or the page call with a tool error), a refused
//! local reply ends the stream (a page call never reaches the server), a
//! refused shared-data write keeps no page, a refused metric or property
//! is logged.
//!
//! Callouts go to any cluster [`LlmRequest::cluster`] names: the trim
//! endpoint, or the route's own cluster for a re-issued tool call.
//!
//! Shared data carries a compare-and-swap version (proxy-wasm
//! `proxy_get_shared_data` / `proxy_set_shared_data`): a writer that read a
//! key at version `cas` replaces it only if nobody wrote it since, which is
//! what keeps one stream from overwriting another's record or page index.

use std::time::{Duration, SystemTime};

use crate::callout::LlmRequest;

/// A host status other than success (for proxy-wasm, the ABI's
/// `WasmResult` code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostError(pub u32);

/// `CasMismatch` of the proxy-wasm ABI: a shared-data key changed since it
/// was read.
pub const CAS_MISMATCH: HostError = HostError(8);

pub type HostResult<T> = Result<T, HostError>;

/// One direction of the proxied exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    Request,
    Response,
}

/// The header maps the core reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Headers {
    Request,
    Response,
    /// The headers of the reply to the callout in flight.
    CalloutReply,
}

/// The body buffers the core reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Body {
    Request,
    Response,
    /// The body of the reply to the callout in flight (read only).
    CalloutReply,
}

impl From<Direction> for Body {
    fn from(d: Direction) -> Self {
        match d {
            Direction::Request => Body::Request,
            Direction::Response => Body::Response,
        }
    }
}

/// What a body or trailers callback answers: let the bytes (and the stream)
/// go on, or keep them and stop until a later callback or a resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Continue,
    /// For a body callback: the host keeps what its buffer holds and hands
    /// it back, with the next chunk appended, to the next callback
    /// (proxy-wasm `StopIterationAndBuffer`). For headers and trailers:
    /// they wait.
    Pause,
}

/// A header map as read in one host call: every name and value in one
/// buffer, in order. Reading a map was two allocations per header, and a
/// copy per header the core looked up (issue 14: a request the plugin
/// leaves alone once its headers are read cost four times as many of the
/// module's instructions as one it never reads).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderMap {
    text: String,
    /// Each pair's name and value, as ends in `text` (each starts where
    /// the one before ends).
    ends: Vec<(u32, u32)>,
}

impl HeaderMap {
    /// A map of `pairs`, in order.
    pub fn of<'p>(pairs: impl IntoIterator<Item = (&'p str, &'p str)>) -> Self {
        let mut map = Self::default();
        for (name, value) in pairs {
            map.push(name, value);
        }
        map
    }

    /// Appends a pair (a map past 4 GiB, which no host sends, keeps none
    /// more).
    pub fn push(&mut self, name: &str, value: &str) {
        let name_end = self.text.len().saturating_add(name.len());
        let value_end = name_end.saturating_add(value.len());
        let (Ok(n), Ok(v)) = (u32::try_from(name_end), u32::try_from(value_end)) else {
            return;
        };
        self.text.push_str(name);
        self.text.push_str(value);
        self.ends.push((n, v));
    }

    /// The pairs, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        let mut start = 0;
        self.ends.iter().filter_map(move |&(n, v)| {
            let (n, v) = (n as usize, v as usize);
            let pair = (self.text.get(start..n)?, self.text.get(n..v)?);
            start = v;
            Some(pair)
        })
    }

    /// The first value of `name` (ASCII case ignored, as HTTP does): names
    /// of another length are passed over without a look at their bytes.
    pub fn get(&self, name: &str) -> Option<&str> {
        let mut start = 0;
        for &(n, v) in &self.ends {
            let (n, v) = (n as usize, v as usize);
            if n - start == name.len() {
                let found = self.text.get(start..n)?;
                if found.eq_ignore_ascii_case(name) {
                    return self.text.get(n..v);
                }
            }
            start = v;
        }
        None
    }

    /// The pairs as owned strings.
    pub fn to_vec(&self) -> Vec<(String, String)> {
        self.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Debug,
    Info,
    Warn,
}

/// The calls the core makes. Body calls address the buffer of the current
/// callback; outside a body callback (a callout reply, trailers) the
/// response body is writable only while the response is paused, and a host
/// refuses otherwise. Stream calls made outside any stream (a timer) are
/// refused.
pub trait Host {
    /// One header value; `None` when absent (or not UTF-8).
    fn header(&self, map: Headers, name: &str) -> HostResult<Option<String>>;
    /// Every header of a map, in order (pairs that are not UTF-8 left out).
    fn headers(&self, map: Headers) -> HostResult<HeaderMap>;
    fn set_header(&mut self, map: Headers, name: &str, value: &str) -> HostResult<()>;
    fn remove_header(&mut self, map: Headers, name: &str) -> HostResult<()>;

    /// Bytes `start..start + len` of a body buffer (fewer when it holds
    /// fewer).
    fn body(&self, body: Body, start: usize, len: usize) -> HostResult<Vec<u8>>;
    /// Replaces the first `size` bytes of a body buffer with `bytes`
    /// (`size` 0 inserts them in front).
    fn replace_body(&mut self, body: Body, size: usize, bytes: &[u8]) -> HostResult<()>;

    /// A stream property (`["xds", "route_name"]`); `None` when absent.
    fn property(&self, path: &[&str]) -> HostResult<Option<Vec<u8>>>;
    fn set_property(&mut self, path: &[&str], value: &[u8]) -> HostResult<()>;

    /// Starts the HTTP call; its reply comes back as
    /// [`crate::driver::Driver::callout_reply`].
    fn dispatch(&mut self, call: &LlmRequest) -> HostResult<()>;
    /// Lets a paused direction go on (after the callback that calls it).
    fn resume(&mut self, direction: Direction) -> HostResult<()>;
    /// Answers the request with this response instead of the server's
    /// (proxy-wasm `send_local_response`): the request never reaches the
    /// server. Only while the request has not gone on.
    fn send_local_response(
        &mut self,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
    ) -> HostResult<()>;

    /// Ends the stream without an answer (proxy-wasm `proxy_close_stream`;
    /// Envoy resets it): what is left for a page call whose reply the host
    /// refused, since it must not go on to the server.
    fn close(&mut self, direction: Direction) -> HostResult<()>;

    /// Data shared by every stream of the host (all workers of one Envoy):
    /// the value and its version (never 0), `None` when the key is absent.
    fn shared_get(&self, key: &str) -> HostResult<Option<(Vec<u8>, u32)>>;
    /// Stores `value` if the key is still at version `cas` (0: whatever it
    /// holds, or a new key); [`CAS_MISMATCH`] otherwise. An empty value
    /// clears the key (proxy-wasm cannot delete one).
    fn shared_set(&mut self, key: &str, value: &[u8], cas: u32) -> HostResult<()>;

    /// Fills `out` with random bytes fit for secrets (proxy-wasm: WASI
    /// `random_get`, which Envoy backs with BoringSSL's `RAND_bytes`).
    fn random(&mut self, out: &mut [u8]) -> HostResult<()>;
    /// Calls [`crate::driver::tick`] every `period` (a plugin-wide timer).
    fn set_tick_period(&mut self, period: Duration) -> HostResult<()>;

    /// Adds `by` to a counter of [`crate::report::all_metrics`].
    fn count(&mut self, metric: &str, by: u64) -> HostResult<()>;
    /// Sets a gauge of the VM (see [`crate::driver::HELD_BYTES_MAX`]).
    fn gauge(&mut self, metric: &str, value: u64) -> HostResult<()>;

    fn now(&self) -> SystemTime;
    /// Bytes of memory the plugin's VM holds (0 where unknown).
    fn memory_bytes(&self) -> usize;
    fn log(&self, level: LogLevel, message: &str);
    /// Whether a line at `level` would be written: a message nobody reads
    /// is not worth formatting on every stream.
    fn logs(&self, _level: LogLevel) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::HeaderMap;

    /// Pairs come back in order, a name in any case finds its first value,
    /// and empty names and values keep their places.
    #[test]
    fn a_header_map_keeps_its_pairs_in_order() {
        let pairs = [
            (":method", "POST"),
            ("Content-Type", "application/json"),
            ("x-empty", ""),
            ("", "no name"),
            ("content-type", "text/plain"),
            ("é", "ü"),
        ];
        let map = HeaderMap::of(pairs);
        assert_eq!(map.iter().collect::<Vec<_>>(), pairs);
        assert_eq!(map.get("content-type"), Some("application/json"));
        assert_eq!(map.get("CONTENT-TYPE"), Some("application/json"));
        assert_eq!(map.get("x-empty"), Some(""));
        assert_eq!(map.get("é"), Some("ü"));
        assert_eq!(map.get("accept"), None);
        assert_eq!(
            map.to_vec(),
            pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        );
        assert_eq!(HeaderMap::default().iter().count(), 0);
    }
}
