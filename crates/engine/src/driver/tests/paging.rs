//! The page tool on the scripted host: a page call answered by a local
//! reply (from the store, or after the tool is called again upstream)
//! never reaches the server; every host call refused in turn leaves that
//! reply, or the stream closed — never a stall, never the page call
//! upstream (unless the host would not hand over the body at all: then
//! nothing tells it is a page call, and it passes as any body does).

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{json, Value};

use super::{reasons, settings};
use crate::callout::{LlmReply, LlmRequest};
use crate::config::Settings;
use crate::driver::{self, HostCall, MemoryHost, Vm};
use crate::host::Direction;
use crate::outcome::Reason;
use crate::shared::{Entropy, SharedMemory};
use crate::sim::{Script, Transcript};

const KEY: &str = "0123456789abcdef0123456789abcdef";
/// 2026-07-13, in ms: handles carry an expiry.
pub(super) const NOW_MS: u64 = 1_783_900_000_000;
pub(super) const STREAM: &[(&str, &str)] = &[
    ("xds.cluster_name", "mcp_upstream"),
    ("xds.route_name", "mcp"),
];
const HEADERS: &[(&str, &str)] = &[(":authority", "localhost"), ("mcp-session-id", "s-1")];

fn paging(extra: &str) -> Arc<Settings> {
    settings(&format!(
        r#"{{"hold_headers":true,"max_body_bytes":2048,"tools":{{"rows":{{"budget":{{"tokens":300}},"paging":{{"enabled":true}}}}}},"paging":{{"key":"{KEY}"{extra}}}}}"#
    ))
}

fn rows() -> Vec<Value> {
    (0..300)
        .map(|i| json!({"seq": i, "level": "info", "message": format!("request {i} handled")}))
        .collect()
}

pub(super) fn result(id: u32) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": Value::Array(rows()).to_string()}]}})
        .to_string()
        .into_bytes()
}

pub(super) fn call(id: u32, tool: &str, args: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}})
        .to_string()
        .into_bytes()
}

pub(super) fn store() -> SharedMemory {
    let mut shared = SharedMemory::with(Entropy::Seeded(7));
    shared.now_ms = NOW_MS;
    shared
}

fn no_reply(_: &LlmRequest) -> LlmReply {
    LlmReply::NotSent
}

/// The text items of a JSON-RPC tool result.
fn texts(body: &[u8]) -> Vec<String> {
    let v: Value = serde_json::from_slice(body).unwrap();
    v["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["text"].as_str().unwrap().to_string())
        .collect()
}

pub(super) fn handle(notice: &str) -> Option<String> {
    let start = notice.find("{\"handle\":\"")? + 11;
    Some(notice[start..start + notice[start..].find('"')?].to_string())
}

fn decode(text: &str) -> Vec<Value> {
    let json = crate::convert::toon_to_json(text).unwrap_or_else(|_| text.to_string());
    serde_json::from_str(&json).unwrap()
}

/// `tools/call rows` through the plugin with `shared` as the host's
/// shared data: its result cut, its pages kept there.
fn cut(s: &Arc<Settings>, shared: SharedMemory) -> (Transcript, Vec<String>) {
    cut_as(s, shared, HEADERS)
}

/// [`cut`] with these request headers (who calls, in which session).
pub(super) fn cut_as(
    s: &Arc<Settings>,
    shared: SharedMemory,
    headers: &'static [(&'static str, &'static str)],
) -> (Transcript, Vec<String>) {
    let request = call(3, "rows", json!({"n": 300}));
    let response = result(3);
    let t = Script {
        request_chunks: &[25],
        response_chunks: &[700],
        request_headers: headers,
        properties: STREAM,
        shared,
        ..Script::new(&request, "application/json", &response)
    }
    .play(Arc::clone(s), &mut no_reply);
    assert!(!t.stalled);
    assert_eq!(
        t.request_sent, request,
        "not a page call: it reaches the server"
    );
    let texts = texts(&t.response_sent);
    (t, texts)
}

fn page_script<'a>(page_call: &'a [u8], shared: SharedMemory) -> Script<'a> {
    page_script_as(page_call, shared, HEADERS)
}

/// [`page_script`] with these request headers.
pub(super) fn page_script_as<'a>(
    page_call: &'a [u8],
    shared: SharedMemory,
    headers: &'a [(&'a str, &'a str)],
) -> Script<'a> {
    Script {
        request_chunks: &[20],
        request_headers: headers,
        properties: STREAM,
        shared,
        ..Script::new(page_call, "application/json", b"")
    }
}

/// The local reply's JSON-RPC message.
pub(super) fn replied(t: &Transcript) -> Value {
    let reply = t.local_reply.as_ref().expect("a local reply");
    assert_eq!(reply.status, 200);
    serde_json::from_slice(&reply.body).unwrap()
}

#[test]
fn pages_are_served_from_the_store_without_the_server() {
    let s = paging("");
    let (t, first) = cut(&s, store());
    assert!(
        t.report.summary().contains("cut=1"),
        "{}",
        t.report.summary()
    );
    let mut all = decode(&first[0]);
    let mut notice = first[1].clone();
    let mut shared = t.host.shared;
    let mut pages = 1;
    while let Some(h) = handle(&notice) {
        let page_call = call(4, "mcp_toon_page", json!({ "handle": h }));
        let t = page_script(&page_call, shared).play(Arc::clone(&s), &mut no_reply);
        assert!(!t.stalled);
        assert!(
            t.request_sent.is_empty(),
            "a page call never reaches the server"
        );
        assert!(t.callouts.is_empty());
        let v = replied(&t);
        assert_eq!(v["id"], json!(4));
        let content = v["result"]["content"].as_array().unwrap();
        all.extend(decode(content[0]["text"].as_str().unwrap()));
        notice = content[1]["text"].as_str().unwrap().to_string();
        assert!(t.report.summary().contains("paged=1"));
        assert_eq!(t.host.counters.get("mcp_toon_paged"), Some(&1));
        shared = t.host.shared;
        pages += 1;
    }
    assert!(pages > 2, "{pages}");
    assert_eq!(all, rows());
}

/// Where the page is not held (another gateway), the tool is called again
/// on the route's cluster; the page comes from its answer.
#[test]
fn a_page_not_held_here_is_rebuilt_by_calling_the_tool_again() {
    let s = paging(r#","reissue":"always""#);
    let (_, first) = cut(&s, store());
    let h = handle(&first[1]).unwrap();
    let page_call = call(4, "mcp_toon_page", json!({ "handle": h }));
    let t = page_script(&page_call, store()).play(Arc::clone(&s), &mut |r| {
        assert_eq!(r.cluster, "mcp_upstream");
        let sent: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(sent["params"]["name"], "rows");
        LlmReply::Response {
            status: 200,
            body: result(4),
        }
    });
    assert!(!t.stalled);
    assert!(t.request_sent.is_empty());
    assert_eq!(t.callouts.len(), 1);
    let v = replied(&t);
    let page = decode(v["result"]["content"][0]["text"].as_str().unwrap());
    assert_eq!(page[0]["seq"], json!(decode(&first[0]).len()));
    assert!(t.report.summary().contains("reissued=1"));

    // The call fails (or is never made): the agent gets the tool's error.
    for reply in [LlmReply::NotSent, LlmReply::Failed { elapsed_ms: 5 }] {
        let t = page_script(&page_call, store()).play(Arc::clone(&s), &mut |_| reply.clone());
        assert_eq!(replied(&t)["result"]["isError"], json!(true));
        assert!(reasons(&t).contains(&Reason::PageReissueFailed));
        assert!(t.request_sent.is_empty());
    }
}

/// Every host call of a page call refused in turn: the agent gets the
/// page, or the stream is closed (a refused local reply or body write,
/// counted) — never a stall, never the page call upstream once it is
/// known as one. Before its body is complete nothing tells it is a page
/// call: a body the host will not hand over (a refused read), or will not
/// let the plugin hold (a refused write of an early chunk), passes as it
/// came, as any body does (fail open; the handle is worth nothing to
/// anyone but its owner).
#[test]
fn each_host_call_refused_in_turn_during_a_page_call() {
    for extra in ["", r#","reissue":"always""#] {
        let s = paging(extra);
        let (_, first) = cut(&s, store());
        let h = handle(&first[1]).unwrap();
        let page_call = call(4, "mcp_toon_page", json!({ "handle": h }));
        // From the store, or (empty store) by calling the tool again.
        let shared = if extra.is_empty() {
            cut(&s, store()).0.host.shared
        } else {
            store()
        };
        let upstream = &mut |_: &LlmRequest| LlmReply::Response {
            status: 200,
            body: result(4),
        };
        let script = page_script(&page_call, shared);
        let clean = script.clone().play(Arc::clone(&s), upstream);
        let served = replied(&clean);
        assert!(
            served["result"].get("isError").is_none(),
            "{extra}: {served}"
        );
        for call in HostCall::ALL {
            for n in 0..clean.host.calls(call) {
                let what = format!("{extra:?}: {call:?} #{n} refused");
                let t = Script {
                    refuse: HashSet::from([(call, n)]),
                    ..script.clone()
                }
                .play(Arc::clone(&s), upstream);
                if call == HostCall::Resume {
                    continue;
                }
                assert!(!t.stalled, "{what}");
                match (&t.local_reply, t.host.closed) {
                    (Some(_), None) => assert!(t.request_sent.is_empty(), "{what}: both"),
                    (None, Some(Direction::Request)) => {
                        assert!(t.request_sent.is_empty(), "{what}: closed, yet sent");
                        assert!(reasons(&t).contains(&Reason::HostRefused), "{what}");
                        assert!(
                            matches!(call, HostCall::ReplaceBody | HostCall::SendLocalResponse),
                            "{what}"
                        );
                    }
                    (None, None) => {
                        assert!(
                            matches!(call, HostCall::Body | HostCall::ReplaceBody),
                            "{what}: only a body not held passes"
                        );
                        assert_eq!(t.request_sent, page_call, "{what}");
                    }
                    other => panic!("{what}: {other:?}"),
                }
            }
        }
    }
}

/// Paging holds a request's headers until its body is read; a request
/// that is no page call then goes on whole, with its headers.
#[test]
fn request_headers_wait_for_the_body_while_paging_is_on() {
    use std::rc::Rc;

    use crate::driver::{Driver, Vm};

    let mut driver = Driver::new(paging(""), Rc::new(Vm::default()));
    let mut host = MemoryHost::post(&[("content-type", "application/json")]);
    host.headers(&mut driver, Direction::Request, false);
    assert!(host.stopped(Direction::Request), "headers held");
    let request = call(3, "rows", json!({}));
    let (a, b) = request.split_at(10);
    host.body(&mut driver, Direction::Request, a, false);
    assert!(host.stopped(Direction::Request));
    assert!(host.sent(Direction::Request).is_empty());
    host.body(&mut driver, Direction::Request, b, true);
    assert!(!host.stopped(Direction::Request));
    assert_eq!(host.sent(Direction::Request), request);
}

/// The timer: asked for when a store is configured; it empties expired
/// pages and moves the store's metrics.
#[test]
fn the_timer_empties_expired_pages() {
    let s = paging(r#","ttl_s":60"#);
    let mut host = MemoryHost::default();
    driver::configured(&mut host, &s, &Vm::default());
    assert_eq!(host.tick_period, Some(std::time::Duration::from_secs(30)));
    let (t, _) = cut(&s, store());
    host.shared = t.host.shared;
    let held = host.shared.bytes();
    host.set_now_ms(NOW_MS + 61_000);
    driver::tick(&mut host, &s);
    assert!(host.counters.get("mcp_toon_page_expired") >= Some(&1));
    assert_eq!(host.gauges.get("mcp_toon_page_store_pages"), Some(&0));
    assert!(host.shared.bytes() < held);

    // No paging, or no store: no timer.
    let mut host = MemoryHost::default();
    driver::configured(&mut host, &settings("{}"), &Vm::default());
    driver::configured(&mut host, &paging(r#","store_bytes":0"#), &Vm::default());
    assert_eq!(host.tick_period, None);
    // A host that refuses the timer: logged, nothing else.
    let mut host = MemoryHost::default();
    host.refuse.insert((HostCall::SetTickPeriod, 0));
    driver::configured(&mut host, &s, &Vm::default());
    assert!(host
        .logs
        .borrow()
        .iter()
        .any(|l| l.contains("timer refused")));
    assert_eq!(host.tick_period, None);
}

/// A result the agent's query projected (project stage, before the
/// budget): a page rebuilt by calling the tool again applies the same
/// query, and the server never sees the query argument.
#[test]
fn a_rebuilt_page_applies_the_original_query() {
    let s = settings(&format!(
        r#"{{"hold_headers":true,"max_body_bytes":2048,"project":{{"queries":true}},"tools":{{"rows":{{"budget":{{"tokens":300}},"paging":{{"enabled":true}}}}}},"paging":{{"key":"{KEY}","reissue":"always"}}}}"#
    ));
    let request = call(3, "rows", json!({"n": 300, "jmespath": "[?seq < `200`]"}));
    let response = result(3);
    let t = Script {
        request_chunks: &[25],
        response_chunks: &[700],
        request_headers: HEADERS,
        properties: STREAM,
        shared: store(),
        ..Script::new(&request, "application/json", &response)
    }
    .play(Arc::clone(&s), &mut no_reply);
    assert!(!String::from_utf8_lossy(&t.request_sent).contains("jmespath"));
    let summary = t.report.summary();
    assert!(
        summary.contains("queried=1") && summary.contains("cut=1"),
        "{summary}"
    );
    let first = texts(&t.response_sent);
    let mut all = decode(&first[0]);
    let mut notice = first[1].clone();
    while let Some(h) = handle(&notice) {
        let page_call = call(4, "mcp_toon_page", json!({ "handle": h }));
        let t = page_script(&page_call, store()).play(Arc::clone(&s), &mut |r| {
            let sent = String::from_utf8_lossy(&r.body).to_string();
            assert!(!sent.contains("jmespath"), "{sent}");
            assert!(sent.contains("\"n\":300"), "{sent}");
            LlmReply::Response {
                status: 200,
                body: result(4),
            }
        });
        let v = replied(&t);
        assert!(v["result"].get("isError").is_none(), "{v}");
        all.extend(decode(v["result"]["content"][0]["text"].as_str().unwrap()));
        notice = v["result"]["content"][1]["text"]
            .as_str()
            .unwrap()
            .to_string();
    }
    assert_eq!(all, rows()[..200].to_vec());
}
