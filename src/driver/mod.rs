//! The one executor of the core's plans. A host hands each stream event to
//! a [`Driver`] (one per stream) and returns what it answers; the driver
//! asks the [`Exchange`] what to do, carries it out through the [`Host`],
//! and keeps every piece of bookkeeping: what the host holds for the stream
//! and what the core holds, whether a direction is paused, the callout in
//! flight, the decisions counted and the record published.
//!
//! How bytes move (proxy-wasm semantics, which every host here follows):
//! in a body callback the host's buffer holds the new chunk (after what it
//! kept when the previous callback paused); the driver replaces it with
//! what the core sends on. Outside a body callback the body is writable
//! only while paused. Envoy counts a paused body against the listener's
//! `per_connection_buffer_limit_bytes` and resets a stream whose buffered
//! body passes it, so the driver leaves a paused buffer empty while it
//! waits (bytes the core let go wait in the driver's backlog, the rest in
//! the core) and fills it in one write when the direction goes on. The driver does not bound that write:
//! the core does, by what it holds — `max_body_bytes` for a collected JSON
//! body, or `paging.max_result_bytes` when the request calls a tool with a
//! budget (its result is cut; `Exchange::response_limit`), and
//! `trim.max_queued_bytes` for an event and those queued behind its
//! callout (README "Buffering and Envoy's buffer limit").
//!
//! Nothing is lost on the driver's side of the host:
//! - a body ends at its JSON value's closing bracket or its last SSE event,
//!   so trailers after a well-formed message find nothing held;
//! - a refused host call that moves bytes turns the rest of the direction
//!   into a byte-identical pass-through (`host_refused`): the bytes the
//!   core held go in front of the host's buffer, as they came;
//! - what the host cannot be given (trailers arriving after an unfinished
//!   message with no buffer to write into, a stream reset while bytes are
//!   held, a host that refuses to take them back at its last callback) is
//!   counted (`lost_at_trailers`, `lost_at_reset`, `lost_at_refusal`).
//!
//! On the request path the driver also answers a page call without the
//! server: the request's headers wait with its body, then the driver sends
//! the core's local reply, or first calls the route's cluster with the
//! re-issued tool call and sends the reply the core makes of its answer. A
//! host that refuses the reply gets the request on to the server as it
//! came. Plugin-wide, [`configured`] and [`tick`] keep the page store.

mod carry;
mod memory;
mod plugin;
mod record;
mod shared;
mod side;

use std::borrow::Cow;
use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::SystemTime;

pub use memory::{Call, LocalReply, MemoryHost};
pub use plugin::{all_gauges, configured, tick, ENVOY_PROPERTY};
use shared::Shared;
use side::{Side, Site};

use crate::callout::LlmReply;
use crate::config::{Settings, StreamInfo};
use crate::exchange::{Exchange, RequestHead, ResponseHead, ResponsePlan};
use crate::host::{Action, Body, Direction, HeaderMap, Headers, Host, LogLevel};
use crate::outcome::Reason;
use crate::page::reissue::UpstreamReply;

/// Gauge: the most response bytes one stream held between callbacks on
/// this VM (an incomplete trailing SSE event, events queued behind a
/// callout, a collected JSON body).
pub const HELD_BYTES_MAX: &str = "mcp_toon_held_bytes_max";
/// Gauge: this VM's memory in bytes (for wasm its peak: it never shrinks).
pub const VM_MEMORY_BYTES: &str = "mcp_toon_vm_memory_bytes";
/// Filter-state key of the decision record; Envoy stores it as
/// `wasm.mcp_toon`, readable with `%FILTER_STATE(wasm.mcp_toon:PLAIN)%`.
pub const RECORD_PROPERTY: &str = "mcp_toon";
/// Response header summarising the decisions when headers were held.
pub const SUMMARY_HEADER: &str = "x-mcp-toon";
/// APISIX (wasm-nginx-module) runs a plugin's body callbacks only when the
/// plugin sets these properties to a non-empty value in the matching header
/// callback (APISIX docs, "Wasm"). Other hosts treat them as ordinary
/// properties: Envoy stores them as filter state nobody reads, at several
/// thousand instructions of its own per write (issue 14: 1 KB tables 2 %
/// fewer instructions per request without them), so they are set only
/// where the host may need them ([`Vm::bodies_unasked`]).
const APISIX_BODY: [&str; 2] = ["wasm_process_req_body", "wasm_process_resp_body"];

/// What the streams of one VM share.
#[derive(Debug, Default)]
pub struct Vm {
    held_peak: Cell<usize>,
    /// The memory last set in [`VM_MEMORY_BYTES`]: a wasm VM's memory only
    /// grows, so the gauge is set when it does, not after every callback.
    memory_set: Cell<usize>,
    /// The host runs body callbacks without being asked: it answered
    /// Envoy's plugin property at configuration ([`configured`]). Until
    /// then, and on any other host, the APISIX body flags are set.
    bodies_unasked: Cell<bool>,
}

/// One stream.
pub struct Driver {
    vm: Rc<Vm>,
    exchange: Exchange,
    request: Side,
    response: Side,
    /// Decisions already counted: a long-lived event stream is counted as
    /// it goes, not when it closes.
    counted: usize,
    published: bool,
    /// A callout is in flight, since then, for this direction: a trim
    /// callout for the response, a re-issued tool call for the request.
    callout: Option<(SystemTime, Direction)>,
}

/// Observability and hints are best effort: a refusal is logged, and the
/// stream goes on.
fn best_effort(host: &dyn Host, what: &str, result: crate::host::HostResult<()>) {
    if let Err(e) = result {
        host.log(
            LogLevel::Debug,
            &format!("mcp-toon: {what} refused ({e:?})"),
        );
    }
}

/// A header as the host gives it; one it refuses to read reads as absent.
fn header(host: &dyn Host, map: Headers, name: &str) -> Option<String> {
    host.header(map, name).unwrap_or_else(|e| {
        host.log(
            LogLevel::Debug,
            &format!("mcp-toon: header {name} unreadable ({e:?})"),
        );
        None
    })
}

/// A header from the map read whole (one host call: each crosses the
/// wasm boundary and has the host allocate in the VM), or, where the host
/// refused the whole map, asked for alone.
fn lookup<'m>(
    host: &dyn Host,
    map: Headers,
    pairs: Option<&'m HeaderMap>,
    name: &str,
) -> Option<Cow<'m, str>> {
    match pairs {
        Some(pairs) => pairs.get(name).map(Cow::Borrowed),
        None => header(host, map, name).map(Cow::Owned),
    }
}

/// The body of the reply to the callout in flight.
fn read_reply(host: &dyn Host, size: usize) -> crate::host::HostResult<Vec<u8>> {
    if size == 0 {
        return Ok(Vec::new());
    }
    host.body(Body::CalloutReply, 0, size)
}

/// A stream property as text; one that is empty, not UTF-8 or that the
/// host refuses to read reads as absent, like a header.
fn text_property(host: &dyn Host, path: &[&str]) -> Option<String> {
    host.property(path)
        .unwrap_or_else(|e| {
            host.log(
                LogLevel::Debug,
                &format!("mcp-toon: property {} unreadable ({e:?})", path.join(".")),
            );
            None
        })
        .and_then(|b| String::from_utf8(b).ok())
        .filter(|s| !s.is_empty())
}

impl Driver {
    pub fn new(settings: Arc<Settings>, vm: Rc<Vm>) -> Self {
        Self {
            exchange: Exchange::new(settings),
            vm,
            request: Side::default(),
            response: Side::default(),
            counted: 0,
            published: false,
            callout: None,
        }
    }

    pub fn report(&self) -> &crate::report::Report {
        self.exchange.report()
    }

    pub fn request_headers(&mut self, host: &mut dyn Host, end_of_stream: bool) -> Action {
        if self.exchange.idle_everywhere() {
            // Nothing of any stream can change: not a header is read.
            self.exchange.pass_unrecorded(Reason::PolicyOff);
            return self.settle(host);
        }
        let pairs = host.headers(Headers::Request).ok();
        let get = |name: &str| lookup(host, Headers::Request, pairs.as_ref(), name);
        let (method, path) = (
            get(":method").unwrap_or_default(),
            get(":path").unwrap_or_default(),
        );
        let (content_type, accept) = (get("content-type"), get("accept"));
        let (mcp_method, mcp_name) = (get("mcp-method"), get("mcp-name"));
        let accept_encoding = pairs.is_none() || get("accept-encoding").is_some();
        // Only `servers[]` entries match on these, and paging binds pages
        // to the cluster and calls the tool again there: without either,
        // two host calls saved on every request.
        let settings = self.exchange.settings();
        let stream = if settings.matches_servers() || settings.paging_anywhere() {
            StreamInfo {
                route: text_property(host, &["xds", "route_name"]),
                cluster: text_property(host, &["xds", "cluster_name"]),
                authority: get(":authority").map(Cow::into_owned),
            }
        } else {
            StreamInfo::default()
        };
        let headers = match (&pairs, self.exchange.wants_request_headers()) {
            (_, false) => Vec::new(),
            (Some(pairs), true) => pairs.to_vec(),
            // Refused: read as none (a page call then has no session).
            (None, true) => {
                host.log(LogLevel::Debug, "mcp-toon: request headers unreadable");
                Vec::new()
            }
        };
        let plan = self.exchange.request_headers(RequestHead {
            stream: &stream,
            method: &method,
            path: &path,
            content_type: content_type.as_deref(),
            accept: accept.as_deref(),
            end_of_stream,
            headers: &headers,
            mcp_method: mcp_method.as_deref(),
            mcp_name: mcp_name.as_deref(),
        });
        if plan.strip_accept_encoding && accept_encoding {
            // Refused: the server may compress, and a compressed response
            // passes through unchanged.
            let r = host.remove_header(Headers::Request, "accept-encoding");
            best_effort(host, "removing accept-encoding", r);
        }
        if plan.remove_content_length {
            if let Err(e) = host.remove_header(Headers::Request, "content-length") {
                host.log(
                    LogLevel::Debug,
                    &format!("mcp-toon: request length fixed ({e:?})"),
                );
                self.exchange.request_keeps_length();
            }
        }
        if plan.read_body {
            self.ask_for_body(host, Direction::Request);
        }
        if plan.pause_headers {
            // A plain StopIteration (allow_on_headers_stop_iteration): the
            // body callbacks run, and the first that continues sends the
            // headers on.
            return Action::Pause;
        }
        Action::Continue
    }

    pub fn request_body(&mut self, host: &mut dyn Host, size: usize, end: bool) -> Action {
        self.body(host, Direction::Request, size, end)
    }

    pub fn request_trailers(&mut self, host: &mut dyn Host) -> Action {
        self.trailers(host, Direction::Request)
    }

    pub fn response_headers(&mut self, host: &mut dyn Host, end_of_stream: bool) -> Action {
        self.response.started = true;
        self.response.ended = end_of_stream;
        let held_back = self.exchange.response_started(&mut Shared(host));
        self.request.backlog.extend(held_back);
        if self.exchange.ignores_response() {
            // Decided already (at the request): the headers are not read,
            // and no response body callback reads a byte.
            if let Some(summary) = self.exchange.summary_at_headers() {
                let r = host.set_header(Headers::Response, SUMMARY_HEADER, &summary);
                best_effort(host, "the summary header", r);
            }
            self.exchange
                .response_headers(ResponseHead::default(), &mut Shared(host));
            return self.settle(host);
        }
        let pairs = host.headers(Headers::Response).ok();
        let get = |name: &str| lookup(host, Headers::Response, pairs.as_ref(), name);
        let status = get(":status").and_then(|s| s.parse::<u16>().ok());
        let (content_type, content_encoding) = (get("content-type"), get("content-encoding"));
        let content_length = get("content-length").and_then(|v| v.trim().parse::<usize>().ok());
        let head = ResponseHead {
            status,
            content_type: content_type.as_deref(),
            content_encoding: content_encoding.as_deref(),
            content_length,
            end_of_stream,
        };
        let plan = self.exchange.response_headers(head, &mut Shared(host));
        let ResponsePlan::Rewrite { hold_headers } = plan else {
            return self.settle(host);
        };
        self.ask_for_body(host, Direction::Response);
        if hold_headers {
            // A plain StopIteration (Envoy ≥ 1.35 with
            // allow_on_headers_stop_iteration): body callbacks still run and
            // set the final content-length.
            return Action::Pause;
        }
        // The headers leave now and the body may change size.
        if let Err(e) = host.remove_header(Headers::Response, "content-length") {
            host.log(
                LogLevel::Debug,
                &format!("mcp-toon: response length fixed ({e:?})"),
            );
            self.exchange.response_headers_refused(Reason::HostRefused);
        }
        self.settle(host)
    }

    pub fn response_body(&mut self, host: &mut dyn Host, size: usize, end: bool) -> Action {
        self.body(host, Direction::Response, size, end)
    }

    pub fn response_trailers(&mut self, host: &mut dyn Host) -> Action {
        self.trailers(host, Direction::Response)
    }

    /// The reply to the callout in flight: its headers and `body_size`
    /// bytes of body are readable from the host now. A reply without a
    /// status is a failure (a reset, or a timeout some hosts report so).
    pub fn callout_reply(&mut self, host: &mut dyn Host, body_size: usize) {
        let (started, direction) = match self.callout.take() {
            Some((since, direction)) => (Some(since), direction),
            None => (None, Direction::Response),
        };
        let status = header(host, Headers::CalloutReply, ":status").and_then(|s| s.parse().ok());
        if direction == Direction::Request {
            // A page call's re-issued tool call.
            let reply = match status {
                Some(status) => match read_reply(host, body_size) {
                    Ok(body) => UpstreamReply::Response {
                        status,
                        content_type: header(host, Headers::CalloutReply, "content-type"),
                        body,
                    },
                    Err(_) => UpstreamReply::Failed,
                },
                None => UpstreamReply::Failed,
            };
            let step = self.exchange.upstream_reply(&reply);
            self.carry(host, Direction::Request, step, Site::Reply);
            return;
        }
        let elapsed_ms = || {
            started
                .and_then(|t| host.now().duration_since(t).ok())
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        };
        let reply = match status {
            Some(status) if body_size == 0 => LlmReply::Response {
                status,
                body: Vec::new(),
            },
            // Not read: the VM would hold it whole.
            Some(status) if body_size > self.exchange.max_reply_bytes() => LlmReply::TooLarge {
                status,
                bytes: body_size,
            },
            Some(status) => match host.body(Body::CalloutReply, 0, body_size) {
                Ok(body) => LlmReply::Response { status, body },
                // A reply it cannot read is a reply it did not get.
                Err(_) => LlmReply::Failed {
                    elapsed_ms: elapsed_ms(),
                },
            },
            None => LlmReply::Failed {
                elapsed_ms: elapsed_ms(),
            },
        };
        let step = self.exchange.callout_reply(&reply, &mut Shared(host));
        self.carry(host, Direction::Response, step, Site::Reply);
    }

    /// The stream is over (completed or reset): count what is left and
    /// publish the record.
    pub fn log(&mut self, host: &mut dyn Host) {
        let request_held = self.exchange.held_request_bytes();
        let response_held = self.exchange.held_bytes();
        if self.request.cut_short(request_held) || self.response.cut_short(response_held) {
            // Reset mid-body: the host dropped the stream, and with it the
            // bytes held for it.
            self.exchange.record(Reason::LostAtReset);
        }
        self.publish(host);
    }

    /// Sets the APISIX flag for `direction`'s body, unless the host runs
    /// body callbacks unasked ([`Vm::bodies_unasked`]).
    fn ask_for_body(&self, host: &mut dyn Host, direction: Direction) {
        if self.vm.bodies_unasked.get() {
            return;
        }
        let (flag, what) = match direction {
            Direction::Request => (APISIX_BODY[0], "asking for the request body"),
            Direction::Response => (APISIX_BODY[1], "asking for the response body"),
        };
        let r = host.set_property(&[flag], b"true");
        best_effort(host, what, r);
    }

    fn side(&mut self, direction: Direction) -> &mut Side {
        match direction {
            Direction::Request => &mut self.request,
            Direction::Response => &mut self.response,
        }
    }

    fn reads(&self, direction: Direction) -> bool {
        match direction {
            Direction::Request => self.exchange.reads_request(),
            Direction::Response => self.exchange.reads_response(),
        }
    }
}

#[cfg(test)]
mod tests;
