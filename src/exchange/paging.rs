//! The exchange's side of budgets and pages: where a stream's results may
//! be held past `max_body_bytes`, and the page tool answered from the
//! request path.
//!
//! Two plan kinds live here, each carried out in one place of an adapter:
//! - [`Step::reply`]: answer the request locally (proxy-wasm
//!   `send_http_response`); the request never reaches the server;
//! - [`Step::upstream`]: call the route's cluster with this request (a
//!   re-issued `tools/call`), then hand the answer to
//!   [`Exchange::upstream_reply`].
//!
//! While a stream might carry a page call (paging on anywhere), its request
//! headers are held until the body is complete (`RequestPlan::pause_headers`,
//! which needs Envoy's `allow_on_headers_stop_iteration`, hence the
//! `hold_headers` requirement): a page call's headers must not reach the
//! server either.

use super::{Exchange, Flow, Phase, SessionStore, Step};
use crate::page::reissue::UpstreamReply;
use crate::page::serve::{self, Answer, Context};
use crate::page::{self, Framing};
use crate::pipeline::{Job, Output, PageContext};
use crate::stage::trim::LlmReply;

impl Exchange {
    /// Request headers: what pages of this stream belong to, and whether
    /// the headers wait for the body.
    pub(super) fn paging_headers(&mut self, head: &super::RequestHead<'_>) -> bool {
        let session = head
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("mcp-session-id"))
            .map(|(_, v)| v.as_str());
        self.binding = page::binding(session, head.stream.cluster.as_deref());
        self.stream_info = head.stream.clone();
        if !self.settings.paging_anywhere() {
            return false;
        }
        self.path = head.path.to_string();
        self.accept = head.accept.map(str::to_string);
        self.request_headers = head.headers.to_vec();
        self.hold_request = true;
        true
    }

    /// The complete request body: a page call is answered here.
    pub(super) fn page_call(
        &mut self,
        body: &[u8],
        sessions: &mut dyn SessionStore,
    ) -> Option<Step> {
        if !self.settings.paging_anywhere() {
            return None;
        }
        let call = serve::parse(body, &self.settings.paging.tool_name)?;
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
        match serve::answer(&call, &cx, sessions) {
            Answer::Reply(reply, decision) => {
                self.report.push(decision);
                Some(Step::new(None, Flow::Pause).with_reply(reply))
            }
            Answer::Reissue(r) => {
                let request = r.request.clone();
                self.reissue = Some(r);
                Some(Step::new(None, Flow::Pause).with_upstream(request))
            }
        }
    }

    /// A re-issued call is in flight: its answer goes to
    /// [`Exchange::upstream_reply`], not [`Exchange::callout_reply`].
    pub fn awaits_upstream(&self) -> bool {
        self.reissue.is_some()
    }

    /// The answer to the call a [`Step::upstream`] asked for: the page, or a
    /// tool error. Always ends in a local reply.
    pub fn upstream_reply(&mut self, reply: &UpstreamReply) -> Step {
        let Some(r) = self.reissue.take() else {
            return Step::pass();
        };
        let (local, decision) = r.finish(reply, &self.settings);
        self.report.push(decision);
        Step::new(None, Flow::Pause).with_reply(local)
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
    /// the host's shared data.
    pub(super) fn finish_job(
        &mut self,
        job: Job,
        reply: Option<&LlmReply>,
        sessions: &mut dyn SessionStore,
    ) -> Output {
        let mut cx = PageContext {
            host: sessions,
            binding: self.binding,
            cluster: self.stream_info.cluster.as_deref(),
        };
        job.finish_with(&self.settings, reply, &mut cx, &mut self.report)
    }

    /// The page store's figures since the host last took them.
    pub fn take_store_figures(&mut self) -> Option<crate::page::store::Figures> {
        self.report.store.take()
    }
}

#[cfg(test)]
mod tests;
