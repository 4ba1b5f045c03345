//! A stateless page: the original `tools/call` re-issued upstream (an HTTP
//! callout), its result run through the same stages and cut the same way,
//! and the requested page returned — if the result's digest is the one the
//! handle carries.
//!
//! It runs only for the handle's owner ([`super::serve`] checks the owner
//! first), with the page call's own credentials — which passed the filter
//! chain before the plugin, and belong to that owner — on the server the
//! handle was cut on (the binding includes the cluster, route and
//! authority). The re-issued request is the page call's own request made
//! into the original call: same `:path` and `:authority`, the client's
//! credentials and MCP headers (`authorization`, `cookie`, the
//! `paging.owner` header, `mcp-session-id`, `mcp-protocol-version`;
//! `mcp-method`/`mcp-name` rewritten for the original tool, as MCP
//! 2026-07-28 servers check them against the body), and the page call's
//! `params._meta` (2026-07-28 carries the protocol version there).
//!
//! Where it goes: straight to the route's cluster, which skips every filter
//! listed after the plugin (an HTTP callout enters at the cluster); or,
//! with `paging.reissue_cluster`, to a cluster that reaches the gateway's
//! own listener, carrying a mark ([`crate::page::mark`]) so the plugin there
//! lets it pass untouched while every other filter runs on it again. The
//! answer is read up to `paging.max_result_bytes` (past it: refused,
//! `page_reissue_too_large`).

use super::call::{refuse, Context, PageCall};
use crate::config::{ServerScope, Settings};
use crate::outcome::{Outcome, Reason, Stage};
use crate::page::cut::{page_of, Rebuilt};
use crate::page::handle::Handle;
use crate::page::keys::Key;
use crate::page::{tool_result, Framing, LocalReply};
use crate::report::Decision;
use crate::sse::{SseFramer, Unit};
use crate::stage::budget::Item;
use crate::stage::trim::LlmRequest;

/// Request headers a re-issued call carries over from the page call.
const FORWARDED: &[&str] = &[
    "authorization",
    "cookie",
    "mcp-session-id",
    "mcp-protocol-version",
];

/// The upstream's answer to a re-issued call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UpstreamReply {
    Response {
        status: u16,
        content_type: Option<String>,
        body: Vec<u8>,
    },
    /// An answer longer than `paging.max_result_bytes`: not read.
    TooLarge,
    /// No answer: not sent, reset, timed out.
    Failed,
}

/// A page call waiting for its re-issued call.
#[derive(Debug, Clone)]
pub(crate) struct Reissue {
    call: PageCall,
    handle: Handle,
    framing: Framing,
    scope: ServerScope,
    /// The agent's query in the original arguments: the project stage
    /// applies it to the new result as it did to the first.
    query: Option<String>,
    /// The callout to make.
    pub(crate) request: LlmRequest,
}

impl Reissue {
    /// The callout for `handle`'s call; `None` when the route has no
    /// cluster to send it to or the handle carries no call. `mark_key`
    /// (the sealing key's mark key) marks a call sent back through the
    /// gateway's listener, at `now_s`.
    pub(crate) fn new(
        call: &PageCall,
        handle: &Handle,
        cx: &Context<'_>,
        mark_key: Option<&Key>,
        now_s: u32,
    ) -> Option<Self> {
        let signed = handle.call.as_ref()?;
        let route_cluster = cx.stream.cluster.clone()?;
        let authority = cx.stream.authority.clone()?;
        let raw = |s: &str| serde_json::value::RawValue::from_string(s.to_string()).ok();
        let mut body = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"tools/call\",\"params\":{{\"name\":{}",
            call.id,
            serde_json::to_string(&signed.tool).ok()?
        );
        if !signed.arguments.is_empty() {
            body.push_str(",\"arguments\":");
            body.push_str(raw(&signed.arguments)?.get());
        }
        if let Some(meta) = call.meta.as_deref().and_then(raw) {
            body.push_str(",\"_meta\":");
            body.push_str(meta.get());
        }
        body.push_str("}}");
        let s = cx.settings;
        let declared = crate::mcp::Declared {
            intent: None,
            query: s
                .queries_anywhere()
                .then_some(s.project.query_argument.as_str()),
        };
        let query = crate::mcp::RequestInfo::parse_declared(body.as_bytes(), declared)
            .and_then(|r| r.calls.into_iter().next())
            .and_then(|c| c.query);
        // The handle signs the arguments as the agent sent them; the
        // gateway's own never reach the server, as on the original call:
        // the query always, the intent where the tool trims. (A tool whose
        // listing declares an argument named like the intent keeps it on
        // the original call; the re-issued call cannot see that listing,
        // so a changed result is caught by the digest, never mixed.)
        let intent = s.trim.intent_argument.as_str();
        let strips = |tool: Option<&str>, arg: &str| arg != intent || s.policy(cx.scope, tool).trim;
        let body = crate::intent::strip(&body, s.stripped_arguments(), &strips).unwrap_or(body);
        let mut headers = vec![
            (":method".to_string(), "POST".to_string()),
            (":path".to_string(), cx.path.to_string()),
            (":authority".to_string(), authority),
            ("content-type".to_string(), "application/json".to_string()),
            (
                "accept".to_string(),
                "application/json, text/event-stream".to_string(),
            ),
        ];
        let mut has_mcp_method = false;
        let owner_header = match &s.paging.owner {
            crate::config::OwnerSource::Header(name) => Some(name.as_str()),
            _ => None,
        };
        for (name, value) in cx.headers {
            let lower = name.to_ascii_lowercase();
            if FORWARDED.contains(&lower.as_str()) || owner_header == Some(lower.as_str()) {
                headers.push((lower, value.clone()));
            } else if lower == "mcp-method" {
                has_mcp_method = true;
            }
        }
        if has_mcp_method {
            headers.push(("mcp-method".into(), "tools/call".into()));
            headers.push(("mcp-name".into(), signed.tool.clone()));
        }
        let via = &s.paging.reissue_cluster;
        let cluster = if via.is_empty() {
            route_cluster
        } else {
            let mark = crate::page::mark::make(
                mark_key?,
                now_s,
                s.paging.reissue_timeout_ms,
                cx.path,
                &authority_of(&headers),
                &route_cluster,
            );
            headers.push((crate::page::mark::HEADER.to_string(), mark));
            via.clone()
        };
        Some(Reissue {
            call: call.clone(),
            handle: handle.clone(),
            framing: cx.framing,
            scope: cx.scope,
            query,
            request: LlmRequest {
                cluster,
                headers,
                body: body.into_bytes(),
                timeout_ms: cx.settings.paging.reissue_timeout_ms,
            },
        })
    }

    pub(crate) fn tool(&self) -> Option<&str> {
        self.handle.call.as_ref().map(|c| c.tool.as_str())
    }

    /// The page from the upstream's answer, or a tool error.
    pub(crate) fn finish(
        &self,
        reply: &UpstreamReply,
        settings: &Settings,
    ) -> (LocalReply, Decision) {
        let tool = self.tool();
        let refused = |reason: Reason| refuse(&self.call, self.framing, reason, tool);
        let (status, content_type, body) = match reply {
            UpstreamReply::Response {
                status,
                content_type,
                body,
            } => (status, content_type, body),
            UpstreamReply::TooLarge => return refused(Reason::PageReissueTooLarge),
            UpstreamReply::Failed => return refused(Reason::PageReissueFailed),
        };
        if body.len() > settings.paging.max_result_bytes {
            return refused(Reason::PageReissueTooLarge);
        }
        if !(200..300).contains(status) {
            return refused(Reason::PageReissueFailed);
        }
        let Some(message) = response_message(content_type.as_deref(), body, &self.call.id) else {
            return refused(Reason::PageReissueFailed);
        };
        let Some(blocks) = crate::pipeline::final_items(
            settings,
            self.scope,
            &self.call.id,
            tool,
            self.query.as_deref(),
            &message,
        ) else {
            return refused(Reason::PageChanged);
        };
        let items: Vec<Item<'_>> = blocks
            .iter()
            .map(|b| Item {
                text: &b.text,
                framing: b.framing,
            })
            .collect();
        let indexes: Vec<usize> = blocks.iter().map(|b| b.index).collect();
        match page_of(&items, &indexes, &self.handle, &settings.paging) {
            Ok((text, notice)) => {
                let message =
                    tool_result(&self.call.id, &[&text, &notice], false, self.call.modern);
                let d = Decision {
                    stage: Stage::Page,
                    outcome: Outcome::Reissued,
                    id: Some(self.call.id.clone()),
                    tool: tool.map(str::to_string),
                    block: None,
                    bytes_before: 0,
                    bytes_after: text.len(),
                    lossless: false,
                    transform: None,
                };
                let summary = settings.hold_headers.then(|| "reissued=1".to_string());
                (self.framing.reply(&message, summary), d)
            }
            Err(Rebuilt::Changed) => refused(Reason::PageChanged),
        }
    }
}

fn authority_of(headers: &[(String, String)]) -> String {
    headers
        .iter()
        .find(|(n, _)| n == ":authority")
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

/// The JSON-RPC response with id `id` in an upstream body: the body itself
/// (JSON), or the data of the `message` event that carries it (SSE).
fn response_message(content_type: Option<&str>, body: &[u8], id: &str) -> Option<String> {
    let sse = content_type.is_some_and(|ct| crate::media::is_media(ct, "text/event-stream"));
    let answers = |data: &str| {
        crate::mcp::parse_messages(data)
            .is_some_and(|ms| ms.iter().any(|m| m.id.as_deref() == Some(id)))
    };
    if sse {
        let mut framer = SseFramer::new(usize::MAX);
        let mut units = framer.push(body);
        units.extend(framer.finish());
        return units.into_iter().find_map(|u| match u {
            Unit::Event(e) if e.event_type() == "message" => {
                e.data().filter(|d| answers(d)).map(str::to_string)
            }
            _ => None,
        });
    }
    let text = std::str::from_utf8(body).ok()?;
    answers(text).then(|| text.to_string())
}
