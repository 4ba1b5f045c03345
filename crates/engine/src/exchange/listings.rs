//! The exchange's side of `listings` (docs/listings.md): `tools/list`
//! results compacted or disclosed on the way out, the server scope's full
//! list kept in the host's shared data, and the calls of the tools the
//! plugin adds answered (search, describe) or rewritten (call) on the way
//! in.
//!
//! - Response: each `tools/list` result of the stream's request (JSON or
//!   one SSE event; one message or a batch) is read into the scope's
//!   [`Catalog`] — a first page (no `params.cursor` in the request)
//!   starts it, a later page adds to it (MCP 2025-06-18 "Pagination") —
//!   which is stored, then the result is rewritten: compacted
//!   ([`listing::compact_listing`], the describe tool on the last page),
//!   or disclosed (an empty page with its `nextCursor` until the last,
//!   which carries the hot tools and the added ones). This runs before the
//!   pipeline, which then annotates the new listing as it would the
//!   server's (decode hint, intent and query arguments, the page tool).
//! - Request: the scope's request headers wait for the body (as a page
//!   call's do, `hold_headers`); a call of the describe or search tool is
//!   answered from the stored catalog with a local reply, a call of the
//!   call tool is rewritten ([`listing::rewrite_call`]) and goes on as an
//!   ordinary `tools/call`, whose result meets every stage.
//!
//! The catalog is stored under one key per server scope and cluster (both
//! from the operator's configuration, never from a request), at most
//! `listings.max_listing_bytes` of tool text, and is used until
//! `listings.ttl_s` (or a 2026-07-28 result's `ttlMs`, when shorter) has
//! passed, or until a `notifications/tools/list_changed` crosses one of
//! the scope's event streams the plugin reads (the client's GET stream, the
//! answer to a `tools/call` or `tools/list`). Past either, or in another VM,
//! it is missing, and a call of an added tool gets a tool error telling the
//! agent to list tools again.

use std::sync::Arc;

use serde_json::value::RawValue;

use super::{Exchange, Flow, Out, Phase, RequestHead, Services, Step};
use crate::config::{ListingMode, ListingsSettings};
use crate::json::members;
use crate::listing::{self, Called, Catalog, Compaction, Index, Limits, Names, Refusal, Rewrite};
use crate::mcp::{self, Edits};
use crate::outcome::{Outcome, Reason, Stage};
use crate::page::{tool_result, Framing};
use crate::report::Decision;

/// The Traefik module is built without listings (the configuration
/// refuses them there, `Capabilities::HTTP_WASM`): with this false the
/// compiler drops the code below from it. Native builds (the tests, with
/// every feature) keep it.
const BUILT: bool = !cfg!(all(feature = "traefik", target_arch = "wasm32"));

/// The notification that ends a kept list (MCP 2025-06-18 "Tools", "List
/// Changed Notification").
const LIST_CHANGED: &str = "notifications/tools/list_changed";

/// The shortest a kept list is used, whatever `ttlMs` says.
pub(crate) const MIN_KEEP_MS: u64 = 60_000;

/// What a stream of a scope with listings on keeps from its request.
#[derive(Debug, Default)]
pub(super) struct ListingState {
    /// The scope's `listings.mode` is not `off`.
    on: bool,
    accept: Option<String>,
    /// The request's `MCP-Protocol-Version` is 2026-07-28 or later:
    /// replies carry `resultType`.
    modern: bool,
    /// The request came with `Mcp-Name` (MCP 2026-07-28, SEP-2243): a
    /// rewritten call's must name the real tool.
    named: bool,
    /// A `tools/list` request for a page after the first.
    cursor: bool,
}

/// A catalog read back from shared data.
struct Kept {
    catalog: Catalog,
    /// Its last page was seen (no `nextCursor`).
    complete: bool,
}

fn names(s: &ListingsSettings) -> Names<'_> {
    Names {
        search: &s.search_tool,
        call: &s.call_tool,
        describe: &s.describe_tool,
    }
}

fn limits(s: &ListingsSettings) -> Limits {
    Limits {
        max_tools: s.max_tools,
        max_bytes: s.max_listing_bytes,
    }
}

fn field<'a>(m: &[(String, &'a RawValue)], key: &str) -> Option<&'a RawValue> {
    m.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

/// A `tools/list` request asking for a later page: `params.cursor` that is
/// not null.
fn has_cursor(body: &[u8]) -> bool {
    let Some(text) = std::str::from_utf8(body).ok() else {
        return false;
    };
    let Ok(raw) = serde_json::from_str::<&RawValue>(text) else {
        return false;
    };
    members(raw)
        .and_then(|m| members(field(&m, "params")?))
        .and_then(|p| field(&p, "cursor").map(|c| c.get() != "null"))
        .unwrap_or(false)
}

/// A 2026-07-28 result's `ttlMs` (MCP 2026-07-28 "Caching"), when it has
/// a whole number of them.
fn ttl_ms(result: &str) -> Option<u64> {
    let raw: &RawValue = serde_json::from_str(result).ok()?;
    serde_json::from_str(field(&members(raw)?, "ttlMs")?.get()).ok()
}

/// A page before the last of a disclosed listing: no tools, every other
/// member (`nextCursor` included) as sent, so the client asks for the
/// next.
fn empty_page(result: &str) -> Option<String> {
    let raw: &RawValue = serde_json::from_str(result).ok()?;
    let mut out = String::from("{\"tools\":[]");
    for (key, value) in members(raw)? {
        if key == "tools" {
            continue;
        }
        out.push(',');
        crate::json::literal::write_literal(&mut out, &key);
        out.push(':');
        out.push_str(value.get());
    }
    out.push('}');
    Some(out)
}

/// Stored form: `<expiry ms> <complete 0|1>\n<catalog>`.
fn load(
    sessions: &dyn Services,
    key: &str,
    limits: Limits,
    now_ms: u64,
) -> Option<(Option<Kept>, u32)> {
    let (value, cas) = sessions.get(key)?;
    let text = String::from_utf8(value).ok();
    let kept = text.and_then(|text| {
        let (head, stored) = text.split_once('\n')?;
        let (expires, complete) = head.split_once(' ')?;
        let expires: u64 = expires.parse().ok()?;
        if expires <= now_ms {
            return None;
        }
        let catalog = Catalog::from_stored(stored, limits).ok()?;
        Some(Kept {
            catalog,
            complete: complete == "1",
        })
    });
    Some((kept, cas))
}

fn decision(outcome: Outcome, id: Option<&str>, tool: Option<&str>) -> Decision {
    Decision {
        stage: Stage::Listing,
        outcome,
        id: id.map(str::to_string),
        tool: tool.map(str::to_string),
        block: None,
        bytes_before: 0,
        bytes_after: 0,
        // Compaction drops what a schema's reader may want (docs/listings.md).
        lossless: false,
        transform: None,
    }
}

impl Exchange {
    /// Request headers of a scope whose listings change: the headers wait
    /// for the body, which may call a tool the plugin adds.
    pub(super) fn listing_headers(&mut self, head: &RequestHead<'_>) -> bool {
        if !BUILT || self.settings.listing_policy(self.scope).mode == ListingMode::Off {
            return false;
        }
        let version = head
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("mcp-protocol-version"))
            .map(|(_, v)| v.as_str());
        self.request.listing = ListingState {
            on: true,
            accept: head.accept.map(str::to_string),
            modern: crate::page::is_modern(version),
            named: head.mcp_name.is_some(),
            cursor: false,
        };
        self.page.hold_request = true;
        true
    }

    /// The request body may be rewritten (a call of the call tool): its
    /// `content-length` must not go upstream.
    /// The scope keeps its servers' tool lists (`listings.mode` is not
    /// `off`).
    pub(super) fn keeps_listings(&self) -> bool {
        BUILT && self.settings.listing_policy(self.scope).mode != ListingMode::Off
    }

    pub(super) fn listing_rewrites(&self) -> bool {
        self.settings.listing_policy(self.scope).mode == ListingMode::Disclose
    }

    /// `tool` is one the plugin adds to this scope's listings.
    pub(super) fn added_tool(&self, tool: Option<&str>) -> bool {
        let s = &self.settings;
        s.listing_policy(self.scope).mode != ListingMode::Off
            && tool.is_some_and(|t| s.listings.injected().contains(&t))
    }

    fn catalog_key(&self) -> String {
        format!(
            "mcp_toon.listing.{}.{}",
            ListingsSettings::scope_name(self.scope),
            self.stream_info.cluster.as_deref().unwrap_or("")
        )
    }

    /// The complete request body: a call of an added tool is answered
    /// here, or rewritten; `None` lets the request go on as usual.
    pub(super) fn listing_call(
        &mut self,
        body: &[u8],
        rest: &[u8],
        sessions: &mut dyn Services,
    ) -> Option<Step> {
        if !BUILT || !self.request.listing.on {
            return None;
        }
        self.request.listing.cursor = has_cursor(body);
        let settings = Arc::clone(&self.settings);
        let s = &settings.listings;
        let policy = settings.listing_policy(self.scope);
        let names = names(s);
        let call = listing::parse_call(body, names)?;
        let held = [body, rest].concat();
        let kept =
            load(sessions, &self.catalog_key(), limits(s), sessions.now_ms()).and_then(|(k, _)| k);
        let disclose = policy.mode == ListingMode::Disclose;
        let how = Compaction {
            level: policy.level,
            max_description_bytes: policy.max_description_bytes,
        };
        let missing = "This gateway does not hold this server's tool list any more (it expired, or the list was fetched through another gateway): list the tools again (tools/list), then retry with the names it shows.";
        match call.called {
            Called::Call if disclose && !self.request.body_fixed => {
                let (new, tool) = match listing::rewrite_call(body, names) {
                    Rewrite::Pass => return None,
                    Rewrite::Refused(why) => {
                        return Some(self.listing_reply(&call, &why, held, None, true));
                    }
                    Rewrite::Rewritten { body, tool } => (body, tool),
                };
                if let Some(k) = &kept {
                    if k.catalog.get(&tool).is_none() {
                        let mut shown = String::new();
                        crate::json::literal::write_literal(&mut shown, &tool);
                        let why = format!(
                            "This server has no tool named {shown}: find one with {}.",
                            s.search_tool
                        );
                        return Some(self.listing_reply(&call, &why, held, Some(&tool), true));
                    }
                }
                // Without a kept list the call still goes on: the server
                // knows its tools, and refuses one it has not.
                self.report
                    .push(decision(Outcome::Rewritten, Some(&call.id), Some(&tool)));
                let sent = self.request_complete(&new, sessions).unwrap_or(new);
                let mut bytes = sent;
                bytes.extend_from_slice(rest);
                let mut step = Step::new(
                    Out::Bytes {
                        bytes,
                        original: Some(held),
                    },
                    Flow::Continue,
                );
                if self.request.listing.named {
                    // MCP 2026-07-28 (SEP-2243): a server refuses a request
                    // whose `Mcp-Name` is not the body's tool.
                    step.request_header = Some(("mcp-name", tool));
                }
                Some(step)
            }
            Called::Describe { ref name } => {
                let Some(k) = kept else {
                    return Some(self.listing_reply(&call, missing, held, None, false));
                };
                let answer = listing::describe_answer(&k.catalog, name.as_deref());
                Some(match answer {
                    Ok(definition) => {
                        let text = definition.to_string();
                        self.listing_answer(&call, &text, held, name.as_deref())
                    }
                    Err(why) => self.listing_reply(&call, &why, held, name.as_deref(), true),
                })
            }
            Called::Search { ref query, limit } if disclose => {
                let Some(k) = kept else {
                    return Some(self.listing_reply(&call, missing, held, None, false));
                };
                let Some(query) = query.as_deref() else {
                    let why = "Give `query`: what you want to do, in a few words.";
                    return Some(self.listing_reply(&call, why, held, None, true));
                };
                let limit = limit
                    .and_then(|l| usize::try_from(l).ok())
                    .unwrap_or(s.search_results)
                    .clamp(1, s.max_search_results.max(1));
                let index = Index::new(&k.catalog);
                let text = listing::search_answer(&k.catalog, &index, query, limit, how);
                Some(self.listing_answer(&call, &text, held, None))
            }
            _ => None,
        }
    }

    /// A call of an added tool answered with `text`.
    fn listing_answer(
        &mut self,
        call: &listing::InjectedCall,
        text: &str,
        held: Vec<u8>,
        tool: Option<&str>,
    ) -> Step {
        self.report
            .push(decision(Outcome::Answered, Some(&call.id), tool));
        self.local(call, text, false, held)
    }

    /// A call of an added tool refused with a tool error saying `why`:
    /// `refused` when the call was wrong, else the catalog is missing.
    fn listing_reply(
        &mut self,
        call: &listing::InjectedCall,
        why: &str,
        held: Vec<u8>,
        tool: Option<&str>,
        refused: bool,
    ) -> Step {
        let reason = if refused {
            Reason::ListingCallRefused
        } else {
            Reason::CatalogMissing
        };
        self.report
            .push(decision(Outcome::Passthrough(reason), Some(&call.id), tool));
        self.local(call, why, true, held)
    }

    /// The local reply (MCP 2025-06-18 "Tools": a `CallToolResult`, as JSON
    /// or one SSE event as the client accepts); should the host refuse
    /// it, the request goes on to the server as it came.
    fn local(
        &mut self,
        call: &listing::InjectedCall,
        text: &str,
        is_error: bool,
        held: Vec<u8>,
    ) -> Step {
        self.phase = Phase::Done;
        let modern = call.modern || self.request.listing.modern;
        let message = tool_result(&call.id, &[text], is_error, modern);
        let framing = Framing::for_accept(self.request.listing.accept.as_deref());
        let out = Out::Bytes {
            bytes: Vec::new(),
            original: Some(held),
        };
        Step::new(out, Flow::Pause).with_reply(framing.reply(&message, None))
    }

    /// One event's message (or batch) on a stream of the scope: a
    /// `notifications/tools/list_changed` says the kept list is stale, so it
    /// is forgotten. A call of an added tool then tells the agent to list
    /// the tools again, and the client's next `tools/list` keeps the new
    /// list (clients list again on this notification).
    pub(super) fn listing_changed(&mut self, data: &str, sessions: &mut dyn Services) {
        if !self.keeps_listings() {
            return;
        }
        // Most events are something else: one substring search first.
        if memchr::memmem::find(data.as_bytes(), LIST_CHANGED.as_bytes()).is_none() {
            return;
        }
        let Ok(raw) = serde_json::from_str::<&RawValue>(data) else {
            return;
        };
        let messages: Vec<&RawValue> = if raw.get().starts_with('[') {
            serde_json::from_str(raw.get()).unwrap_or_default()
        } else {
            vec![raw]
        };
        let changed = messages.iter().any(|message| {
            members(message).is_some_and(|m| {
                field(&m, "id").is_none()
                    && field(&m, "method")
                        .and_then(|v| serde_json::from_str::<String>(v.get()).ok())
                        .is_some_and(|v| v == LIST_CHANGED)
            })
        });
        if changed {
            // Shared data has no delete (proxy-wasm ABI 0.2.1): an entry
            // that expired at 0 reads as missing (`load`). CAS 0 overwrites
            // whatever is there.
            let _ = sessions.set(&self.catalog_key(), b"0 0\n", 0);
        }
    }

    /// A response body (one JSON-RPC message or a batch) with each result
    /// of the request's `tools/list` calls rewritten as the scope's mode
    /// says; `None` when nothing changes.
    pub(super) fn listing_response(
        &mut self,
        body: &[u8],
        sessions: &mut dyn Services,
    ) -> Option<Vec<u8>> {
        if !BUILT || !self.request.listing.on || self.legacy.get_stream {
            return None;
        }
        let ids: Vec<String> = self
            .request
            .info
            .calls
            .iter()
            .filter(|c| c.method == mcp::TOOLS_LIST)
            .map(|c| c.id.clone())
            .collect();
        if ids.is_empty() {
            return None;
        }
        let text = std::str::from_utf8(body).ok()?;
        let raw: &RawValue = serde_json::from_str(text).ok()?;
        let messages: Vec<&RawValue> = if raw.get().starts_with('[') {
            serde_json::from_str(raw.get()).ok()?
        } else {
            vec![raw]
        };
        let mut edits = Edits::default();
        for message in messages {
            let Some(m) = members(message) else {
                continue;
            };
            let id = field(&m, "id").and_then(mcp::id_key);
            let (Some(id), Some(result)) = (id, field(&m, "result")) else {
                continue;
            };
            if !ids.contains(&id) {
                continue;
            }
            if let Some(new) = self.relist(&id, result.get(), sessions) {
                edits.replace(text, result, new);
            }
        }
        if edits.is_empty() {
            return None;
        }
        edits.apply(text).map(String::into_bytes)
    }

    /// One `tools/list` result: kept, then rewritten.
    fn relist(&mut self, id: &str, result: &str, sessions: &mut dyn Services) -> Option<String> {
        let settings = Arc::clone(&self.settings);
        let s = &settings.listings;
        let policy = settings.listing_policy(self.scope);
        let names = names(s);
        let key = self.catalog_key();
        let now = sessions.now_ms();
        let pass = |me: &mut Self, reason: Reason| {
            me.report
                .push(decision(Outcome::Passthrough(reason), Some(id), None));
        };
        // A later page adds to the list its first page began; a first page
        // begins it again, whatever is kept (CAS 0: overwritten).
        let (mut catalog, cas) = match load(sessions, &key, limits(s), now) {
            Some((Some(k), cas)) if self.request.listing.cursor && !k.complete => (k.catalog, cas),
            Some((_, cas)) if self.request.listing.cursor => (Catalog::default(), cas),
            _ => (Catalog::default(), 0),
        };
        if let Err(refusal) = catalog.add_page(result, limits(s)) {
            let reason = match refusal {
                Refusal::NotAListing | Refusal::DuplicateName => Reason::ListingNotUnderstood,
                Refusal::TooManyTools | Refusal::TooLarge => Reason::ListingTooLarge,
            };
            pass(self, reason);
            return None;
        }
        if catalog.shadowed(&s.injected()).is_some() {
            pass(self, Reason::ListingShadowed);
            return None;
        }
        let raw: &RawValue = serde_json::from_str(result).ok()?;
        let last = !mcp::next_cursor(raw);
        let ttl = s.ttl_s.saturating_mul(1000);
        // A 2026-07-28 `ttlMs` shortens the time, but not below
        // MIN_KEEP_MS: servers send `ttlMs: 0` (mcp-server-git on mcp
        // 2.x), which tells a client not to reuse the listing, and the
        // added tools could then never be answered. The server still
        // judges every call it gets.
        let hinted = ttl_ms(result).map_or(ttl, |t| t.max(MIN_KEEP_MS).min(ttl));
        let expires = now.saturating_add(hinted);
        let value = format!("{expires} {}\n{}", u8::from(last), catalog.stored());
        let kept = sessions.set(&key, value.as_bytes(), cas).is_ok();
        if !kept {
            pass(self, Reason::CatalogNotKept);
        }
        let how = Compaction {
            level: policy.level,
            max_description_bytes: policy.max_description_bytes,
        };
        let (new, outcome) = match policy.mode {
            ListingMode::Off => return None,
            ListingMode::Compact => {
                let describe = listing::describe_tool(names);
                let add: Vec<&str> = if last {
                    vec![describe.as_str()]
                } else {
                    Vec::new()
                };
                (
                    listing::compact_listing(result, how, &add)?,
                    Outcome::Compacted,
                )
            }
            // Without the kept list, searches could not be answered: the
            // listing passes as sent (counted `catalog_not_kept`).
            ListingMode::Disclose if !kept => return None,
            ListingMode::Disclose if !last => (empty_page(result)?, Outcome::Disclosed),
            ListingMode::Disclose => {
                let shown = policy
                    .hot
                    .iter()
                    .filter(|h| catalog.get(h).is_some())
                    .count();
                let hidden = catalog.len().saturating_sub(shown);
                let added = listing::added_tools(policy.mode, names, hidden, s.max_search_results);
                let add: Vec<&str> = added.iter().map(String::as_str).collect();
                let new = listing::disclose(&catalog, &policy.hot, &add, result)?;
                (new, Outcome::Disclosed)
            }
        };
        let mut d = decision(outcome, Some(id), None);
        d.bytes_before = result.len();
        d.bytes_after = new.len();
        self.report.push(d);
        Some(new)
    }
}

#[cfg(test)]
mod tests;
