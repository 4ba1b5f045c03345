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
//! the core) and fills it in one write when the direction goes on. The
//! driver does not bound that write: the core does, by what it holds while
//! paused — `max_body_bytes` for a JSON body with held headers or a trim
//! callout, `trim.max_queued_bytes` for an event and those queued behind
//! its callout. A body that never pauses (up to `max_response_bytes`, or
//! `paging.max_result_bytes` when the request calls a tool with a budget:
//! `Exchange::response_limit`) goes out in the body callback that completes
//! it, which continues, and Envoy does not buffer it (README "Buffering and
//! Envoy's buffer limit"). What all streams of the VM hold together is
//! bounded by its memory budget ([`Vm`]).
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
//! the core's local reply, or first makes the re-issued tool call and
//! sends the reply the core makes of its answer. Nothing of a page call
//! ever goes on: a host that refuses the reply gets the stream closed.
//! Plugin-wide, [`configured`] and [`tick`] keep the page store.

mod carry;
mod ledger;
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

pub use memory::{HostCall, LocalReply, MemoryHost};
pub use plugin::{all_gauges, configured, tick, ENVOY_PROPERTY};
use shared::Shared;
use side::{Side, Site};

use crate::callout::LlmReply;
use crate::config::{Settings, StreamInfo, VM_WORK_FACTOR};
use crate::exchange::UpstreamReply;
use crate::exchange::{Exchange, RequestHead, ResponseHead, ResponsePlan};
use crate::host::{Action, Body, Direction, HeaderMap, Headers, Host, LogLevel};
use crate::outcome::Reason;

/// Gauge: the most response bytes one stream held between callbacks on
/// this VM (an incomplete trailing SSE event, events queued behind a
/// callout, a collected JSON body).
pub const HELD_BYTES_MAX: &str = "mcp_toon_held_bytes_max";
/// Gauge: the bytes all streams of this VM hold now ([`Vm`]'s ledger), as
/// the memory budget (`max_vm_held_bytes`) counts them.
pub const VM_HELD_BYTES: &str = "mcp_toon_vm_held_bytes";
/// Gauge: the most that sum has been, with the working memory reserved for
/// the largest stream's stages ([`Vm::reserved`]): what the budget bounds.
pub const VM_HELD_BYTES_MAX: &str = "mcp_toon_vm_held_bytes_max";
/// Gauge: this VM's memory in bytes (for wasm its peak: it never shrinks).
pub const VM_MEMORY_BYTES: &str = "mcp_toon_vm_memory_bytes";
/// Filter-state key of the decision record; Envoy stores it as
/// `wasm.mcp_toon`, readable with `%FILTER_STATE(wasm.mcp_toon:PLAIN)%`.
pub const RECORD_PROPERTY: &str = "mcp_toon";
/// Response header summarising the decisions when headers were held.
pub use crate::report::SUMMARY_HEADER;
/// APISIX (wasm-nginx-module) runs a plugin's body callbacks only when the
/// plugin sets these properties to a non-empty value in the matching header
/// callback (APISIX docs, "Wasm"). Other hosts treat them as ordinary
/// properties: Envoy stores them as filter state nobody reads, at several
/// thousand instructions of its own per write (issue 14: 1 KB tables 2 %
/// fewer instructions per request without them), so they are set only
/// where the host may need them ([`Vm::bodies_unasked`]).
const APISIX_BODY: [&str; 2] = ["wasm_process_req_body", "wasm_process_resp_body"];

/// What the streams of one VM share: every Envoy worker runs its own VM,
/// so the adapter keeps one per thread, whatever plugin configurations
/// (root contexts) the VM serves.
///
/// **The memory budget.** The driver drains Envoy's buffers into the VM's
/// memory (see above), so Envoy's flow control never bounds what the
/// plugin holds; this ledger does. Each stream's charge is what its core
/// and its backlogs take now ([`Exchange::memory`]); while the stages run
/// on a body they need [`VM_WORK_FACTOR`] times it, and only one stream's
/// stages run at a time on a VM (a callback runs to its end). So the
/// budget bounds the sum of the charges plus that working memory for the
/// largest charge: a stream may grow only where the sum with its new size,
/// and the working memory of the largest stream then, fit
/// `max_vm_held_bytes` ([`Vm::room`]). A stream that would not fit is not
/// read further: what it holds goes on as it came (`vm_memory_budget`).
#[derive(Debug, Default)]
pub struct Vm {
    /// Sum of the streams' charges.
    held: Cell<usize>,
    /// The streams' charges, one per stream holding bytes (the largest is
    /// the one whose stages need the most working memory). A VM serves a
    /// few hundred streams at most: a list, scanned.
    charges: std::cell::RefCell<Vec<usize>>,
    /// The most [`Vm::reserved`] has been, and the values last set in the
    /// held gauges.
    reserved_peak: Cell<usize>,
    held_set: Cell<usize>,
    held_peak: Cell<usize>,
    /// The memory last set in [`VM_MEMORY_BYTES`]: a wasm VM's memory only
    /// grows, so the gauge is set when it does, not after every callback.
    memory_set: Cell<usize>,
    /// The host runs body callbacks without being asked: it answered
    /// Envoy's plugin property at configuration ([`configured`]). Until
    /// then, and on any other host, the APISIX body flags are set.
    bodies_unasked: Cell<bool>,
}

impl Vm {
    /// Moves one stream's charge from `old` to `new` bytes.
    fn charge(&self, old: usize, new: usize) {
        if old == new {
            return;
        }
        let mut charges = self.charges.borrow_mut();
        if let Some(i) = charges.iter().position(|&c| c == old).filter(|_| old > 0) {
            charges.swap_remove(i);
        }
        if new > 0 {
            charges.push(new);
        }
        self.held
            .set(self.held.get().saturating_sub(old).saturating_add(new));
    }

    /// The largest charge other than one of `own` bytes.
    fn largest_other(&self, own: usize) -> usize {
        let charges = self.charges.borrow();
        let mut skipped = own == 0;
        let mut largest = 0;
        for &c in charges.iter() {
            if c == own && !skipped {
                skipped = true;
                continue;
            }
            largest = largest.max(c);
        }
        largest
    }

    /// What the budget counts: the charges, and the working memory the
    /// stages of the largest would need on top of it.
    pub fn reserved(&self) -> usize {
        let largest = self.charges.borrow().iter().copied().max().unwrap_or(0);
        self.held
            .get()
            .saturating_add(largest.saturating_mul(VM_WORK_FACTOR - 1))
    }

    /// The most one stream charged `own` bytes now may hold under `budget`:
    /// the largest size `b` for which the other streams' charges, `b`, and
    /// the working memory of the largest of them all still fit. At or above
    /// the largest other charge, its own working memory bounds it;
    /// below, the largest other's does.
    fn room(&self, own: usize, budget: usize) -> usize {
        let others = self.held.get().saturating_sub(own);
        let largest = self.largest_other(own);
        let free = budget.saturating_sub(others);
        let alone = free / VM_WORK_FACTOR;
        if alone >= largest {
            alone
        } else {
            free.saturating_sub(largest.saturating_mul(VM_WORK_FACTOR - 1))
        }
    }
}

/// One stream.
pub struct Driver {
    vm: Rc<Vm>,
    /// What this stream is charged in the VM's ledger ([`Vm`]).
    charged: usize,
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
            charged: 0,
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
        // Only `servers[]` entries match on these, paging binds pages to
        // the cluster and calls the tool again there, and what listings
        // teach about the plugin's arguments is kept per server: without
        // any of them, two host calls saved on every request.
        let settings = self.exchange.settings();
        let stream = if settings.matches_servers()
            || settings.paging_anywhere()
            || !settings.stripped_arguments().is_empty()
        {
            StreamInfo {
                route: text_property(host, &["xds", "route_name"]),
                cluster: text_property(host, &["xds", "cluster_name"]),
                authority: get(":authority").map(Cow::into_owned),
            }
        } else {
            StreamInfo::default()
        };
        let reissue_mark = get(crate::page::mark::HEADER);
        // Where an authentication filter left the caller's identity
        // (`paging.owner` from metadata): read only when configured.
        let owner_metadata = self.exchange.owner_property().and_then(|path| {
            let mut full = vec!["metadata", "filter_metadata"];
            full.extend(path.iter().map(String::as_str));
            host.property(&full).unwrap_or_else(|e| {
                host.log(
                    LogLevel::Debug,
                    &format!("mcp-toon: owner metadata unreadable ({e:?})"),
                );
                None
            })
        });
        // The clock only for a mark's expiry: a host call saved elsewhere.
        let now_ms = reissue_mark.as_ref().map_or(0, |_| {
            host.now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        });
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
            owner_metadata: owner_metadata.as_deref(),
            reissue_mark: reissue_mark.as_deref(),
            now_ms,
        });
        if plan.remove_reissue_mark {
            // A refusal leaves the mark on: the server sees a header it
            // ignores, which no one but this gateway's key can make.
            let r = host.remove_header(Headers::Request, crate::page::mark::HEADER);
            best_effort(host, "removing the re-issue mark", r);
        }
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
        self.grant();
        let action = self.body(host, Direction::Request, size, end);
        self.recharge(host);
        action
    }

    pub fn request_trailers(&mut self, host: &mut dyn Host) -> Action {
        let action = self.trailers(host, Direction::Request);
        self.recharge(host);
        action
    }

    pub fn response_headers(&mut self, host: &mut dyn Host, end_of_stream: bool) -> Action {
        self.grant();
        let action = self.response_head(host, end_of_stream);
        self.recharge(host);
        action
    }

    fn response_head(&mut self, host: &mut dyn Host, end_of_stream: bool) -> Action {
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
            let head = ResponseHead {
                end_of_stream,
                ..ResponseHead::default()
            };
            self.exchange.response_headers(head, &mut Shared(host));
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
        self.grant();
        let action = self.body(host, Direction::Response, size, end);
        self.recharge(host);
        action
    }

    pub fn response_trailers(&mut self, host: &mut dyn Host) -> Action {
        let action = self.trailers(host, Direction::Response);
        self.recharge(host);
        action
    }

    /// The reply to the callout in flight: its headers and `body_size`
    /// bytes of body are readable from the host now. A reply without a
    /// status is a failure (a reset, or a timeout some hosts report so).
    pub fn callout_reply(&mut self, host: &mut dyn Host, body_size: usize) {
        self.grant();
        self.reply(host, body_size);
        self.recharge(host);
    }

    fn reply(&mut self, host: &mut dyn Host, body_size: usize) {
        let (started, direction) = match self.callout.take() {
            Some((since, direction)) => (Some(since), direction),
            None => (None, Direction::Response),
        };
        let status = header(host, Headers::CalloutReply, ":status").and_then(|s| s.parse().ok());
        if direction == Direction::Request {
            // A page call's re-issued tool call.
            let reply = match status {
                // Not read: the VM would hold it whole.
                Some(_) if body_size > self.exchange.max_upstream_reply_bytes() => {
                    UpstreamReply::TooLarge
                }
                // Not read: the VM would pass its memory budget holding it
                // (the page tool answers with its error).
                Some(_) if self.exchange.over_room_by(body_size) => {
                    self.exchange.record(Reason::VmMemoryBudget);
                    UpstreamReply::Failed
                }
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
            // Nor where the VM would pass its memory budget holding it: the
            // block goes on untrimmed.
            Some(_) if self.exchange.over_room_by(body_size) => {
                self.exchange.record(Reason::VmMemoryBudget);
                LlmReply::NotSent
            }
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
        self.discharge(host);
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

    /// For a host that holds a whole body and hands it over in pieces it
    /// pulls (http-wasm buffers a body; the plugin reads it with
    /// `read_body`): whether the core still wants `direction`'s bytes or
    /// holds some of them. False: the rest may stay as the host holds it,
    /// unread. (Compiled only where a host asks: the Envoy module's code
    /// stays as it was, byte for byte.)
    #[cfg(any(test, feature = "traefik"))]
    pub fn wants_body(&self, direction: Direction) -> bool {
        let side = match direction {
            Direction::Request => &self.request,
            Direction::Response => &self.response,
        };
        self.reads(direction) || !side.idle()
    }

    /// After the request: whether the response is worth reading, for a
    /// host that must choose before the request goes on whether to buffer
    /// the response (http-wasm's `buffer_response`). False: nothing in it
    /// can change, and its headers need not be read either.
    #[cfg(any(test, feature = "traefik"))]
    pub fn wants_response(&self) -> bool {
        !self.exchange.ignores_response()
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
