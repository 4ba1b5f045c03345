//! The exchange's side of budgets and pages: where a stream's results may
//! be held past `max_body_bytes`, and the page tool answered from the
//! request path.
//!
//! Two step kinds live here, carried out by the driver like every other:
//! - [`Step::reply`]: answer the request locally (proxy-wasm
//!   `send_local_response`); the request never reaches the server;
//! - [`Step::upstream`]: call the route's cluster with this request (a
//!   re-issued `tools/call`), then hand the answer to
//!   [`Exchange::upstream_reply`].
//!
//! While a stream might carry a page call (paging on anywhere), its request
//! headers are held until the body is complete (`RequestPlan::pause_headers`,
//! which needs Envoy's `allow_on_headers_stop_iteration`, hence the
//! `hold_headers` requirement): a page call's headers must not reach the
//! server either.

use super::{Exchange, Flow, Out, Phase, SessionStore, Step};
use crate::callout::LlmReply;
use crate::page::reissue::UpstreamReply;
use crate::page::serve::{self, Answer, Context};
use crate::page::{self, Framing};
use crate::pipeline::{Job, Output, PageContext};

impl Exchange {
    /// The host should hand every request header to
    /// [`Exchange::request_headers`] (else none): a page call needs them.
    pub fn wants_request_headers(&self) -> bool {
        self.settings.paging_anywhere()
    }

    /// Request headers: what pages of this stream belong to, and whether
    /// the headers wait for the body.
    pub(super) fn paging_headers(&mut self, head: &super::RequestHead<'_>) -> bool {
        self.stream_info = head.stream.clone();
        if !self.settings.paging_anywhere() {
            return false;
        }
        let session = head
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("mcp-session-id"))
            .map(|(_, v)| v.as_str());
        self.binding = page::binding(session, head.stream.cluster.as_deref());
        self.path = head.path.to_string();
        self.accept = head.accept.map(str::to_string);
        self.request_headers = head.headers.to_vec();
        self.hold_request = true;
        true
    }

    /// The request bytes are held in the core until the body is complete:
    /// the intent argument may come out, or the body may be a page call.
    pub(super) fn holds_request(&self) -> bool {
        self.rewrites_request() || self.hold_request
    }

    /// The complete request body (its JSON value, then `rest`, the bytes
    /// after it): a page call is answered here. The step sends nothing
    /// unless the host refuses what it asks for; the page call's bytes are
    /// its original.
    pub(super) fn page_call(
        &mut self,
        body: &[u8],
        rest: &[u8],
        sessions: &mut dyn SessionStore,
    ) -> Option<Step> {
        if !self.settings.paging_anywhere() {
            return None;
        }
        let call = serve::parse(body, &self.settings.paging.tool_name)?;
        let body = [body, rest].concat();
        self.phase = Phase::Done;
        let cx = Context {
            settings: &self.settings,
            scope: self.scope,
            stream: &self.stream_info,
            binding: self.binding,
            framing: Framing::for_accept(self.accept.as_deref()),
            path: &self.path,
            headers: &self.request_headers,
        };
        let held = Out::Bytes {
            bytes: Vec::new(),
            original: Some(body.clone()),
        };
        match serve::answer(&call, &cx, sessions) {
            Answer::Reply(reply, decision) => {
                self.report.push(decision);
                Some(Step::new(held, Flow::Pause).with_reply(reply))
            }
            Answer::Reissue(r) => {
                let request = r.request.clone();
                self.reissue = Some((r, body));
                Some(Step::new(held, Flow::Pause).with_upstream(request))
            }
        }
    }

    /// The answer to the call a [`Step::upstream`] asked for: the page, or a
    /// tool error, as a local reply; should the host refuse it, the page
    /// call goes to the server as it came.
    pub fn upstream_reply(&mut self, reply: &UpstreamReply) -> Step {
        let Some((r, body)) = self.reissue.take() else {
            return Step::send(Vec::new());
        };
        let (local, decision) = r.finish(reply, &self.settings);
        self.report.push(decision);
        Step::send(body).with_reply(local)
    }

    /// The most response bytes this stream holds: `max_body_bytes`, or the
    /// paging holding limit when the request calls a tool with a budget
    /// (such results are cut, so they may be larger).
    pub(super) fn response_limit(&self) -> usize {
        // No budget anywhere: no policy to resolve per response.
        let budgeted = self.settings.budget_anywhere()
            && self.request.calls.iter().any(|c| {
                c.method == crate::mcp::TOOLS_CALL
                    && self
                        .settings
                        .policy(self.scope, c.tool.as_deref())
                        .budget
                        .is_some()
            });
        if budgeted {
            self.settings
                .max_body_bytes
                .max(self.settings.paging.max_result_bytes)
        } else {
            self.settings.max_body_bytes
        }
    }

    /// Runs the rest of the stages on a job, keeping cut results' pages in
    /// the host's shared data; an event stream draws TOON work from its
    /// one budget. Returns the original body too when a new one replaces
    /// it.
    pub(super) fn finish_job(
        &mut self,
        job: Job,
        reply: Option<&LlmReply>,
        sessions: &mut dyn SessionStore,
    ) -> (Output, Option<Vec<u8>>) {
        let mut spare = crate::stage::toon::Budget::per_response();
        let toon = self
            .stream
            .as_mut()
            .map_or(&mut spare, |s| &mut s.toon_budget);
        let mut cx = PageContext {
            host: sessions,
            binding: self.binding,
            cluster: self.stream_info.cluster.as_deref(),
        };
        job.finish_keeping_original(&self.settings, reply, toon, &mut cx, &mut self.report)
    }

    /// The page store's figures since the driver last took them.
    pub fn take_store_figures(&mut self) -> Option<crate::page::store::Figures> {
        self.report.store.take()
    }
}

#[cfg(test)]
mod tests;
