//! The request side: which requests the core reads, and the one rewrite it
//! makes to them: the arguments the gateway advertised for itself (the trim
//! intent, the project query) taken out of `tools/call`
//! ([`Settings::stripped_arguments`](crate::config::Settings::stripped_arguments)).

use super::collect::{Collected, Collecting};
use super::declared::Declared;
use super::listings::ListingState;
use super::{is_media, Exchange, Flow, Out, Phase, RequestHead, RequestPlan, Services, Step};
use crate::mcp::{self, RequestInfo};
use crate::outcome::{Reason, Stage};
use crate::report::Decision;

impl Exchange {
    /// Streamable HTTP: every client message is a POST with a JSON body.
    /// HTTP+SSE (2024-11-05): the client opens a GET event stream first.
    pub fn request_headers(&mut self, head: RequestHead<'_>) -> RequestPlan {
        let plan = self.request_plan(&head);
        RequestPlan {
            remove_reissue_mark: plan.remove_reissue_mark || self.page.remove_mark,
            ..plan
        }
    }

    fn request_plan(&mut self, head: &RequestHead<'_>) -> RequestPlan {
        self.scope = self.settings.server_for(head.stream);
        // The server what its listings teach belongs to (`declared.rs`).
        self.stream_info = head.stream.clone();
        if let Some(plan) = self.reentrant(head) {
            return plan;
        }
        if self.settings.idle(self.scope) {
            self.pass_unrecorded(Reason::PolicyOff);
            return RequestPlan::default();
        }
        let is = |v: Option<&str>, media: &str| v.is_some_and(|ct| is_media(ct, media));
        let accepts_sse = head
            .accept
            .is_some_and(|a| a.split(',').any(|m| is_media(m, "text/event-stream")));
        if head.method.eq_ignore_ascii_case("GET") && accepts_sse {
            self.legacy.get_stream = true;
            self.phase = Phase::Interested;
            return RequestPlan::default();
        }
        if !head.method.eq_ignore_ascii_case("POST")
            || !is(head.content_type, "application/json")
            || head.end_of_stream
        {
            self.pass_unrecorded(Reason::RequestNotJsonRpc);
            return RequestPlan::default();
        }
        self.session_of(head.path);
        if self.unchanged_by_routing_headers(head.mcp_method, head.mcp_name) {
            return RequestPlan::default();
        }
        let pause_headers = self.paging_headers(head) | self.listing_headers(head);
        RequestPlan {
            strip_accept_encoding: self.settings.strip_accept_encoding,
            read_body: true,
            remove_content_length: self.strips_arguments() || self.listing_rewrites(),
            pause_headers,
            remove_reissue_mark: false,
        }
    }

    /// MCP 2026-07-28 (SEP-2243, "Standard Headers"): every request names
    /// its JSON-RPC method in `Mcp-Method` and a `tools/call` its tool in
    /// `Mcp-Name`, and a server MUST refuse a request whose headers do not
    /// match its body (HTTP 400, `-32020` HeaderMismatch). So where they
    /// say no stage can change the answer — a method other than
    /// `tools/call` (and `tools/list` where listings change), or a tool
    /// whose policy changes nothing and that takes no query and is not the
    /// page tool — the body is not read either: a client that lies gets
    /// the server's refusal, which passes as it would anyway. A request
    /// without the headers (earlier revisions) is read as before.
    fn unchanged_by_routing_headers(&mut self, method: Option<&str>, name: Option<&str>) -> bool {
        let Some(method) = method.filter(|m| !m.is_empty()) else {
            return false;
        };
        let s = &self.settings;
        // A call's tool must be named, within the limit the body's would
        // be held to; whether it carries a query is not known before the
        // body, so where queries are taken anywhere it may.
        let named = name.is_some_and(|tool| tool.len() <= s.max_tool_name_bytes);
        if method == mcp::TOOLS_CALL && !named {
            return false;
        }
        if !self.call_unchanged(method, name, s.queries_anywhere()) {
            return false;
        }
        if method == mcp::TOOLS_CALL {
            // Counted as a call read from the body would be, by the tool
            // the header names (no id: the body is not read).
            self.decided_at_request(std::iter::once((None, name)));
        } else {
            self.pass_unrecorded(Reason::NotToolsCall);
        }
        true
    }

    /// A stream that concerns no tool call or listing (not a JSON-RPC
    /// request, no `tools/call`, or nothing of it can change:
    /// [`Settings::idle`]) passes, counted under `reason`, and leaves no
    /// decision record: there is no block to record, and the record is a
    /// host write (filter state) every such request would pay for.
    pub(crate) fn pass_unrecorded(&mut self, reason: Reason) {
        self.pass_rest(reason);
        self.recorded = false;
    }

    /// The request's `content-length` could not be removed: its body must
    /// keep its length, so it is read but never rewritten.
    pub(crate) fn request_keeps_length(&mut self) {
        self.request.body_fixed = true;
    }

    /// One chunk of the request body. The request is only held back when
    /// the intent or query argument may need to come out or the body may be
    /// a page call (then the request headers wait too: [`Flow::Pause`]);
    /// otherwise every chunk goes upstream at once and the core keeps a
    /// copy. The body is complete at the end of its JSON value, which may
    /// come before the end of the stream (a body followed by trailers).
    pub fn request_chunk(
        &mut self,
        chunk: &[u8],
        end_of_stream: bool,
        sessions: &mut dyn Services,
    ) -> Step {
        if let Some(step) = self.page_call_rest() {
            return step;
        }
        if !matches!(self.phase, Phase::Request) {
            return Step::input();
        }
        let rewrites = self.rewrites_request();
        let holds = self.holds_request();
        let swallowed = holds && !self.request.body.bytes.is_empty();
        let max = self.settings.max_body_bytes;
        let body = &self.request.body.bytes;
        if self.memory().saturating_add(super::growth::grown(
            body.capacity(),
            body.len(),
            chunk.len(),
        )) > self.room.saturating_add(body.capacity())
        {
            // Past the stream's share of the VM's memory: not read further.
            self.pass_rest(Reason::VmMemoryBudget);
            let body = self.request.body.take_with(chunk);
            return if swallowed {
                Step::send(body)
            } else {
                Step::input()
            };
        }
        match self.request.body.push(chunk, end_of_stream, max) {
            // Held request headers wait with the body.
            Collecting::Open if holds => Step::swallow(if self.page.hold_request {
                Flow::Pause
            } else {
                Flow::Continue
            }),
            Collecting::Open => Step::input(),
            Collecting::TooLarge | Collecting::NotOneValue => {
                let reason = if self.request.body.seen > max {
                    Reason::RequestTooLarge
                } else {
                    Reason::RequestNotJsonRpc
                };
                self.pass_rest(reason);
                let body = self.request.body.take_with(chunk);
                if swallowed {
                    Step::send(body)
                } else {
                    Step::input()
                }
            }
            Collecting::Closed(body, rest) => {
                if let Some(step) = self.page_call(&body, &rest, sessions) {
                    return step;
                }
                if let Some(step) = self.listing_call(&body, &rest, sessions) {
                    return step;
                }
                let new = self.request_complete(&body, sessions);
                match new {
                    Some(mut new) if rewrites => {
                        new.extend_from_slice(&rest);
                        let mut original = body;
                        original.extend_from_slice(&rest);
                        Step::new(
                            Out::Bytes {
                                bytes: new,
                                original: Some(original),
                            },
                            Flow::Continue,
                        )
                    }
                    _ if swallowed => {
                        let mut all = body;
                        all.extend_from_slice(&rest);
                        Step::send(all)
                    }
                    _ => Step::input(),
                }
            }
        }
    }

    /// Request trailers arrived: the body ended without a last chunk.
    pub(crate) fn request_trailers(&mut self, sessions: &mut dyn Services) -> Step {
        if let Some(step) = self.page_call_rest() {
            return step;
        }
        if !matches!(self.phase, Phase::Request) {
            return Step::input();
        }
        self.request_chunk(&[], true, sessions)
    }

    pub(super) fn strips_arguments(&self) -> bool {
        !self.settings.stripped_arguments().is_empty()
    }

    pub(super) fn rewrites_request(&self) -> bool {
        self.strips_arguments() && !self.request.body_fixed
    }

    /// The complete request body; returns the body to send upstream if it
    /// changed (the plugin's arguments taken out of `tools/call` arguments:
    /// see [`Exchange::strip_arguments`]).
    pub(super) fn request_complete(
        &mut self,
        body: &[u8],
        sessions: &mut dyn Services,
    ) -> Option<Vec<u8>> {
        let s = &self.settings;
        let declared = mcp::Declared {
            intent: s.trim_anywhere().then_some(s.trim.intent_argument.as_str()),
            query: s
                .queries_anywhere()
                .then_some(s.project.query_argument.as_str()),
        };
        let Some(mut info) = RequestInfo::read(body, declared, &s.limits()) else {
            self.pass_unrecorded(Reason::RequestNotJsonRpc);
            return None;
        };
        let strips = self.rewrites_request() && info.has_method(mcp::TOOLS_CALL);
        // What listings taught: read once, for the query and for stripping.
        let own = if s.queries_anywhere() || strips {
            self.declared(sessions)
        } else {
            Declared::default()
        };
        if s.queries_anywhere() {
            // A tool whose own schema has an argument of the query's name
            // gets it as sent; the plugin does not run it as a query.
            let query = s.project.query_argument.as_str();
            for call in &mut info.calls {
                if declares(&own, call.tool.as_deref(), query) {
                    call.query = None;
                }
            }
        }
        for reason in &info.skipped {
            self.report.push(Decision::response(*reason));
        }
        let rewritten = if strips {
            self.strip_arguments(body, &own)
        } else {
            None
        };
        self.note_calls(&info);
        // A listen stream is read where listings are kept: its
        // `notifications/tools/list_changed` ends the kept list.
        let listening = self.keeps_listings() && info.has_method(mcp::SUBSCRIPTIONS_LISTEN);
        let wanted = info.has_method(mcp::TOOLS_CALL)
            || (self.settings.rewrites_listings() && info.has_method(mcp::TOOLS_LIST))
            || listening;
        if !wanted {
            if info.skipped.is_empty() {
                self.pass_unrecorded(Reason::NotToolsCall);
            } else {
                // The calls past a limit are counted already.
                self.phase = Phase::Done;
            }
        } else if self.legacy.session.is_none() && self.answers_unchanged(&info) {
            // A 2024-11-05 POST's answer travels on the GET stream, which
            // decides (and counts) it there.
            self.decided_at_request(
                info.calls
                    .iter()
                    .filter(|c| c.method == mcp::TOOLS_CALL)
                    .map(|c| (Some(c.id.as_str()), c.tool.as_deref())),
            );
        } else {
            self.request.info = info;
            self.request.resolved = None;
            self.phase = Phase::Interested;
        }
        rewritten
    }

    /// No stage can change any answer to these calls: each is a
    /// `tools/call` whose tool's policy changes nothing, that carries no
    /// query (answered, or refused with a note, by the project stage) and
    /// is no call of the page tool where paging is on (the plugin's own
    /// tool, never the server's to answer as it likes), no listing is
    /// rewritten, and no listen stream may end a kept list. Then the
    /// response is never read (DESIGN "Off means off, and costs (almost)
    /// nothing").
    fn answers_unchanged(&self, info: &RequestInfo) -> bool {
        info.calls
            .iter()
            .all(|c| self.call_unchanged(&c.method, c.tool.as_deref(), c.query.is_some()))
    }

    /// No stage can change the answer to one request: a `tools/call` of a
    /// tool whose policy changes nothing, without a query (`query`: it
    /// carries one, or may) and other than the page tool where paging is
    /// on; `tools/list` where no listing changes; `subscriptions/listen`
    /// where no list is kept; any other method.
    fn call_unchanged(&self, method: &str, tool: Option<&str>, query: bool) -> bool {
        let s = &self.settings;
        match method {
            mcp::TOOLS_CALL => {
                let page_tool = s.paging_anywhere() && tool == Some(s.paging.tool_name.as_str());
                !query
                    && !page_tool
                    && !self.added_tool(tool)
                    && s.policy(self.scope, tool).changes_nothing()
            }
            mcp::TOOLS_LIST => !s.rewrites_listings(),
            mcp::SUBSCRIPTIONS_LISTEN => !self.keeps_listings(),
            _ => true,
        }
    }

    /// Records each `tools/call` (its id, where the body was read, and its
    /// tool) as TOON `mode_off` (the one reason a block under such a policy
    /// would get), once per call since no block is looked at, and stops.
    fn decided_at_request<'a>(
        &mut self,
        calls: impl Iterator<Item = (Option<&'a str>, Option<&'a str>)>,
    ) {
        for (id, tool) in calls {
            // Measured: the record gives the size of the response that
            // passed (`Exchange::passed`), though no byte of it is read.
            self.push_measured(Decision {
                stage: Stage::Toon,
                id: id.map(str::to_string),
                tool: tool.map(str::to_string),
                ..Decision::response(Reason::ModeOff)
            });
        }
        self.phase = Phase::Done;
        self.response.summary_at_headers = self.settings.hold_headers;
    }

    /// The body without the plugin's arguments
    /// ([`Settings::stripped_arguments`](crate::config::Settings::stripped_arguments)):
    /// the query from every call, the intent from the calls whose tool
    /// trims (its resolved policy), each unless a listing showed the tool
    /// declaring an argument of that name itself (issue 13: there it is
    /// the tool's).
    fn strip_arguments(&self, body: &[u8], declared: &Declared) -> Option<Vec<u8>> {
        let s = &self.settings;
        let intent = s.trim.intent_argument.as_str();
        let strips = |tool: Option<&str>, arg: &str| {
            let own = declares(declared, tool, arg);
            if arg != intent {
                return !own;
            }
            s.policy(self.scope, tool).trim && !own
        };
        let text = std::str::from_utf8(body).ok()?;
        crate::intent::strip(text, s.stripped_arguments(), &strips).map(String::into_bytes)
    }

    /// The response began before the request body ended. A server may
    /// answer as soon as it has read what it needs: over HTTP/2 a client
    /// can send the end of its stream in a frame of its own, after the body
    /// reached the server. What was kept of the request decides when it is
    /// a whole JSON-RPC message (any byte after a whole JSON value would
    /// make the request invalid anyway); otherwise the stream passes.
    /// Call before [`Exchange::response_headers`]; a no-op once the
    /// request ended. Returns the request bytes the core held back (trim
    /// and project take their arguments out): the request may still go on,
    /// and they go upstream first, as they came — the server answered
    /// without them, so a rewrite would be too late.
    pub(crate) fn response_started(&mut self, sessions: &mut dyn Services) -> Vec<u8> {
        if !matches!(self.phase, Phase::Request) {
            return Vec::new();
        }
        let held_back = self.rewrites_request();
        let body = std::mem::take(&mut self.request.body.bytes);
        self.request.body_fixed = true;
        self.request_complete(&body, sessions);
        if held_back {
            body
        } else {
            Vec::new()
        }
    }
}

/// A listing showed `tool` declaring `arg` in its own schema.
fn declares(declared: &Declared, tool: Option<&str>, arg: &str) -> bool {
    tool.and_then(|t| declared.get(t))
        .is_some_and(|args| args.iter().any(|a| a == arg))
}

/// The request as read: its calls and their policies, its body while it
/// is read, and what `listings` keeps of it.
#[derive(Debug, Default)]
pub(super) struct RequestSide {
    pub(super) info: RequestInfo,
    /// The calls with their policies, resolved at the first response body
    /// that needs them (`pipeline::Resolved`).
    pub(super) resolved: Option<crate::pipeline::Resolved>,
    /// The body while it is read.
    pub(super) body: Collected,
    /// The request's `content-length` stays: its body is never rewritten.
    pub(super) body_fixed: bool,
    /// What `listings` keeps of the request.
    pub(super) listing: ListingState,
}
