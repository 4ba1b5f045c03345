//! The exchange's side of budgets and pages: where a stream's results may
//! be held past `max_body_bytes`, whom its pages belong to, and the page
//! tool answered from the request path.
//!
//! Two step kinds live here, carried out by the driver like every other:
//! - [`Step::reply`]: answer the request locally (proxy-wasm
//!   `send_local_response`); the request never reaches the server;
//! - [`Step::upstream`]: call the tool again (a re-issued `tools/call`),
//!   then hand the answer to [`Exchange::upstream_reply`].
//!
//! While a stream might carry a page call (paging on anywhere), its request
//! headers are held until the body is complete (`RequestPlan::pause_headers`,
//! which needs Envoy's `allow_on_headers_stop_iteration`, hence the
//! `hold_headers` requirement): a page call's headers must not reach the
//! server either. Once a body is a page call, every later request callback
//! keeps the request stopped (an empty last chunk, trailers): it ends with
//! the local reply, or — should the host refuse the reply — with the
//! stream reset by the driver, never upstream.
//!
//! A re-issued call that comes back through the gateway's own listener
//! (`paging.reissue_cluster`) carries a mark ([`crate::page::mark`]); such
//! a request passes untouched, its mark removed.
//!
//! The page call itself is answered in [`serve`] (from the store, or by
//! [`reissue`]): above the pipeline, since a re-issued result meets the
//! stages again; the pages, handles and owners it reads are
//! [`crate::page`]'s, below it.

mod call;
pub(crate) mod reissue;
pub mod serve;

use super::{Exchange, Flow, Out, Phase, RequestPlan, Services, Step};
use crate::callout::LlmReply;
use crate::outcome::Reason;
use crate::page::keys;
use crate::page::owner::Owner;
use crate::page::{mark, Framing};
use crate::pipeline::{Job, Output, PageContext};
use reissue::{Reissue, UpstreamReply};
use serve::{Answer, Context, Parsed};

impl Exchange {
    /// The host should hand every request header to
    /// [`Exchange::request_headers`] (else none): a page call needs them.
    pub(crate) fn wants_request_headers(&self) -> bool {
        // The listings' added tools read `MCP-Protocol-Version` too.
        self.settings.paging_anywhere() || self.settings.listings.anywhere()
    }

    /// The property path (after `metadata.filter_metadata`) the host should
    /// read into [`super::RequestHead::owner_metadata`]: where an
    /// authentication filter left the caller's identity.
    pub(crate) fn owner_property(&self) -> Option<&[String]> {
        match &self.settings.paging.owner {
            crate::config::OwnerSource::Metadata(path) if self.settings.paging_anywhere() => {
                Some(path)
            }
            _ => None,
        }
    }

    /// A request that carries a re-issue mark: the plugin's own re-issued
    /// call, back through the gateway's listener, passes untouched (`Some`
    /// plan); a mark that does not verify is removed and counted, and the
    /// request goes on as any other (`None`).
    pub(super) fn reentrant(&mut self, head: &super::RequestHead<'_>) -> Option<RequestPlan> {
        let value = head.reissue_mark?;
        let keys = keys::derive(&self.settings.paging.keys);
        let now_s = u32::try_from(head.now_ms / 1000).unwrap_or(u32::MAX);
        let valid = mark::verify(
            &keys,
            value,
            now_s,
            head.path,
            head.stream.authority.as_deref().unwrap_or(""),
            head.stream.cluster.as_deref().unwrap_or(""),
        );
        if valid {
            self.pass_unrecorded(Reason::Reentrant);
            return Some(RequestPlan {
                remove_reissue_mark: true,
                ..RequestPlan::default()
            });
        }
        self.record(Reason::ReissueMarkInvalid);
        self.page.remove_mark = true;
        None
    }

    /// Request headers: whom pages of this stream belong to, and whether
    /// the headers wait for the body.
    pub(super) fn paging_headers(&mut self, head: &super::RequestHead<'_>) -> bool {
        self.stream_info = head.stream.clone();
        if !self.settings.paging_anywhere() {
            return false;
        }
        self.owner = Owner::of(
            &self.settings.paging.owner,
            head.headers,
            head.owner_metadata,
            head.stream,
        );
        self.page.path = head.path.to_string();
        self.page.accept = head.accept.map(str::to_string);
        self.page.headers = head.headers.to_vec();
        self.page.hold_request = true;
        true
    }

    /// The request bytes are held in the core until the body is complete:
    /// the intent argument may come out, or the body may be a page call.
    pub(super) fn holds_request(&self) -> bool {
        self.rewrites_request() || self.page.hold_request
    }

    /// A later chunk (or trailers) of a page call's request: kept out of
    /// the stream, which stays stopped until the reply.
    pub(super) fn page_call_rest(&self) -> Option<Step> {
        self.page.answering.then(|| Step::swallow(Flow::Pause))
    }

    /// The complete request body (its JSON value, then `rest`, the bytes
    /// after it): a page call is answered here. Nothing of it goes on: the
    /// step sends no bytes and keeps the request stopped.
    pub(super) fn page_call(
        &mut self,
        body: &[u8],
        _rest: &[u8],
        sessions: &mut dyn Services,
    ) -> Option<Step> {
        if !self.settings.paging_anywhere() {
            return None;
        }
        let s = &self.settings;
        let parsed = serve::parse(body, &s.paging.tool_name, s.max_id_bytes)?;
        self.phase = Phase::Done;
        self.page.answering = true;
        let held = Out::Bytes {
            bytes: Vec::new(),
            original: None,
        };
        let call = match parsed {
            Parsed::Call(call) => call,
            Parsed::IdTooLong => {
                let (reply, decision) = serve::id_too_long();
                self.report.push(decision);
                return Some(Step::new(held, Flow::Pause).with_reply(reply));
            }
        };
        let cx = Context {
            settings: &self.settings,
            scope: self.scope,
            stream: &self.stream_info,
            owner: &self.owner,
            framing: Framing::for_accept(self.page.accept.as_deref()),
            path: &self.page.path,
            headers: &self.page.headers,
        };
        match serve::answer(&call, &cx, sessions) {
            Answer::Reply(reply, decision) => {
                self.report.push(decision);
                Some(Step::new(held, Flow::Pause).with_reply(reply))
            }
            Answer::Reissue(r) => {
                let request = r.request.clone();
                self.page.reissue = Some(r);
                Some(Step::new(held, Flow::Pause).with_upstream(request))
            }
        }
    }

    /// The request is a page call the plugin answers itself: should the
    /// host refuse a call it needs (the reply, a body write), the stream
    /// must end, never go on to the server.
    pub(crate) fn answers_page_call(&self) -> bool {
        self.page.answering
    }

    /// The most bytes of a re-issued call's answer read
    /// (`paging.max_result_bytes`); a longer one is refused unread.
    pub(crate) fn max_upstream_reply_bytes(&self) -> usize {
        self.settings.paging.max_result_bytes
    }

    /// The answer to the call a [`Step::upstream`] asked for: the page, or a
    /// tool error, as a local reply. The request stays stopped.
    pub(crate) fn upstream_reply(&mut self, reply: &UpstreamReply) -> Step {
        let Some(r) = self.page.reissue.take() else {
            return Step::swallow(Flow::Pause);
        };
        let (local, decision) = r.finish(reply, &self.settings);
        self.report.push(decision);
        Step::swallow(Flow::Pause).with_reply(local)
    }

    /// The most response bytes this stream holds: `max_response_bytes`, or
    /// the paging holding limit when the request calls a tool with a budget
    /// (such results are cut, so they may be larger).
    pub(super) fn response_limit(&self) -> usize {
        // No budget anywhere: no policy to resolve per response.
        let budgeted = self.settings.budget_anywhere()
            && self.request.info.calls.iter().any(|c| {
                c.method == crate::mcp::TOOLS_CALL
                    && self
                        .settings
                        .policy(self.scope, c.tool.as_deref())
                        .budget
                        .is_some()
            });
        if budgeted {
            self.settings
                .max_response_bytes
                .max(self.settings.paging.max_result_bytes)
        } else {
            self.settings.max_response_bytes
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
        sessions: &mut dyn Services,
    ) -> (Output, Option<Vec<u8>>) {
        let mut spare = crate::stage::toon::Allowance::per_response();
        let toon = super::streaming(&mut self.phase).map_or(&mut spare, |s| &mut s.toon_budget);
        // What listings teach about tools is kept per server, not per
        // cluster (`page::tools`).
        let server = self.stream_info.server();
        let mut cx = PageContext {
            host: sessions,
            owner: &self.owner,
            cluster: Some(&server),
        };
        job.finish(&self.settings, reply, toon, &mut cx, &mut self.report)
    }

    /// The page store's figures since the driver last took them.
    pub fn take_store_figures(&mut self) -> Option<crate::report::Figures> {
        self.report.store.take()
    }
}

/// A request the plugin may answer itself (a page call), and what it
/// keeps to answer it or call the tool again.
#[derive(Debug, Default)]
pub(super) struct PageCall {
    /// Paging on: the request headers wait for the body.
    pub(super) hold_request: bool,
    /// The request is a page call the plugin answers: nothing of it goes
    /// on to the server, whatever happens.
    pub(super) answering: bool,
    /// A re-issue mark that did not verify: removed from the request.
    pub(super) remove_mark: bool,
    /// A page call's `:path`, `accept` and headers, for its reply or a
    /// re-issued call.
    pub(super) path: String,
    pub(super) accept: Option<String>,
    pub(super) headers: Vec<(String, String)>,
    /// A page call waiting for the tool to be called again.
    pub(super) reissue: Option<Box<Reissue>>,
}

#[cfg(test)]
mod tests;
