//! Who gets a page, and what a page call may reach (issue 37): the
//! reproductions of the attacker's review on the scripted host.
//!
//! - A handle is bound to its owner: another caller's credentials, or
//!   none, get `page_foreign` — from the store and by calling the tool
//!   again — and no callout is made for them.
//! - A page call never goes on: not with an empty last chunk or trailers
//!   after its body while the tool is called again, not when the host
//!   refuses the reply (the stream is closed instead).
//! - The re-issued call carries the page call's own credentials, its
//!   answer is read up to `paging.max_result_bytes`, and with
//!   `paging.reissue_cluster` it goes back through the gateway's listener
//!   with a mark the plugin there recognises and removes.
//! - A page call's id is bounded by `max_id_bytes`.

use std::rc::Rc;
use std::sync::Arc;

use serde_json::{json, Value};

use super::paging::{call, cut_as, handle, page_script_as, replied, result, store, NOW_MS, STREAM};
use super::{reasons, settings};
use crate::callout::{LlmReply, LlmRequest};
use crate::config::Settings;
use crate::driver::{Driver, HostCall, MemoryHost, Vm};
use crate::host::Direction;
use crate::outcome::Reason;
use crate::page::{keys, mark};
use crate::sim::Script;

const KEY: &str = "0123456789abcdef0123456789abcdef";
const ALICE: &[(&str, &str)] = &[
    (":authority", "localhost"),
    ("authorization", "Bearer alice"),
];
const MALLORY: &[(&str, &str)] = &[
    (":authority", "localhost"),
    ("authorization", "Bearer mallory"),
];
const NOBODY: &[(&str, &str)] = &[(":authority", "localhost")];

fn paging(extra: &str) -> Arc<Settings> {
    settings(&format!(
        r#"{{"hold_headers":true,"max_body_bytes":2048,"tools":{{"rows":{{"budget":{{"tokens":300}},"paging":{{"enabled":true}}}}}},"paging":{{"key":"{KEY}"{extra}}}}}"#
    ))
}

fn upstream(_: &LlmRequest) -> LlmReply {
    LlmReply::Response {
        status: 200,
        body: result(4),
    }
}

/// Alice's first page's handle, and the shared data holding the rest.
fn alices_handle(s: &Arc<Settings>) -> (String, crate::shared::SharedMemory) {
    let (t, first) = cut_as(s, store(), ALICE);
    (handle(&first[1]).unwrap(), t.host.shared)
}

#[test]
fn another_callers_page_call_is_refused_from_the_store_and_never_reissued() {
    for extra in ["", r#","reissue":"always","store_bytes":0"#] {
        let s = paging(extra);
        let (h, shared) = alices_handle(&s);
        let page_call = call(4, "mcp_toon_page", json!({ "handle": h }));
        for who in [MALLORY, NOBODY] {
            let t =
                page_script_as(&page_call, shared.clone(), who).play(Arc::clone(&s), &mut upstream);
            let v = replied(&t);
            assert_eq!(v["result"]["isError"], json!(true), "{extra}: {v}");
            assert!(
                v["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .contains("belongs to another caller"),
                "{v}"
            );
            assert_eq!(reasons(&t), vec![Reason::PageForeign], "{extra}");
            assert!(t.callouts.is_empty(), "{extra}: nothing runs for them");
            assert!(t.request_sent.is_empty());
            assert_eq!(
                t.host.counters.get("mcp_toon_passthrough_page_foreign"),
                Some(&1)
            );
        }
        // Alice herself gets it.
        let t = page_script_as(&page_call, shared, ALICE).play(Arc::clone(&s), &mut upstream);
        assert!(replied(&t)["result"].get("isError").is_none(), "{extra}");
    }
}

#[test]
fn a_handle_is_bound_to_its_server_too() {
    let s = paging(r#","reissue":"always","store_bytes":0"#);
    let (h, shared) = alices_handle(&s);
    let page_call = call(4, "mcp_toon_page", json!({ "handle": h }));
    let elsewhere: &[(&str, &str)] = &[
        ("xds.cluster_name", "mcp_upstream"),
        ("xds.route_name", "another_route"),
    ];
    let t = Script {
        properties: elsewhere,
        ..page_script_as(&page_call, shared, ALICE)
    }
    .play(Arc::clone(&s), &mut upstream);
    assert_eq!(reasons(&t), vec![Reason::PageForeign]);
    assert!(t.callouts.is_empty());
}

/// A key rotation: a gateway whose first key is new opens handles of the
/// old one, and the handles it hands on (sealed with the new key) open for
/// the same owner on it — every page of the result, in turn.
#[test]
fn handles_survive_a_key_rotation_page_after_page() {
    let old = paging(r#","reissue":"always","store_bytes":0"#);
    let (mut h, _) = alices_handle(&old);
    let rotated = settings(&format!(
        r#"{{"hold_headers":true,"max_body_bytes":2048,"tools":{{"rows":{{"budget":{{"tokens":300}},"paging":{{"enabled":true}}}}}},"paging":{{"key":["the-new-key-0123456789abcdef0123456789","{KEY}"],"reissue":"always","store_bytes":0}}}}"#
    ));
    let mut pages = 1;
    loop {
        let page_call = call(4, "mcp_toon_page", json!({ "handle": h }));
        let t =
            page_script_as(&page_call, store(), ALICE).play(Arc::clone(&rotated), &mut upstream);
        let v = replied(&t);
        assert!(
            v["result"].get("isError").is_none(),
            "page {}: {v}",
            pages + 1
        );
        pages += 1;
        match handle(v["result"]["content"][1]["text"].as_str().unwrap()) {
            Some(next) => h = next,
            None => break,
        }
        // The old key alone no longer opens what the new one sealed.
        let page_call = call(4, "mcp_toon_page", json!({ "handle": h }));
        let t = page_script_as(&page_call, store(), ALICE).play(Arc::clone(&old), &mut upstream);
        assert_eq!(reasons(&t), vec![Reason::PageForged]);
    }
    assert!(pages > 2, "{pages}");
}

/// The re-issued call is made with the page call's credentials, not
/// anything the handle carries.
#[test]
fn the_reissued_call_carries_the_page_calls_own_credentials() {
    let s = paging(r#","reissue":"always","store_bytes":0"#);
    let (h, shared) = alices_handle(&s);
    let page_call = call(4, "mcp_toon_page", json!({ "handle": h }));
    let t = page_script_as(&page_call, shared, ALICE).play(Arc::clone(&s), &mut |r| {
        let auth: Vec<&str> = r
            .headers
            .iter()
            .filter(|(n, _)| n == "authorization")
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(auth, ["Bearer alice"]);
        assert!(r.headers.iter().all(|(n, _)| n != mark::HEADER));
        assert_eq!(r.cluster, "mcp_upstream");
        upstream(r)
    });
    assert_eq!(t.callouts.len(), 1);
}

/// The review's leak: the page call's request went upstream with an empty
/// body while the tool was called again (an empty last chunk after the
/// JSON value continued it). It now stays stopped until the reply.
#[test]
fn a_page_call_stays_stopped_through_a_later_empty_chunk_or_trailers() {
    let s = paging(r#","reissue":"always","store_bytes":0"#);
    let (h, _) = alices_handle(&s);
    let page_call = call(4, "mcp_toon_page", json!({ "handle": h }));
    for trailers in [false, true] {
        let mut driver = Driver::new(Arc::clone(&s), Rc::new(Vm::default()));
        let mut host = MemoryHost::post(&[
            ("content-type", "application/json"),
            ("accept", "application/json"),
        ]);
        for (n, v) in ALICE {
            host.set_request_header(n, v);
        }
        for (p, v) in STREAM {
            host.properties.insert(p.to_string(), v.as_bytes().to_vec());
        }
        host.shared = store();
        host.set_now_ms(NOW_MS);
        host.callouts_allowed = true;
        host.headers(&mut driver, Direction::Request, false);
        host.body(&mut driver, Direction::Request, &page_call, false);
        assert_eq!(host.callouts.len(), 1, "the tool is called again");
        if trailers {
            host.trailers(&mut driver, Direction::Request);
        } else {
            host.body(&mut driver, Direction::Request, b"", true);
        }
        assert!(host.stopped(Direction::Request), "trailers={trailers}");
        assert!(!host.went_on(Direction::Request), "trailers={trailers}");
        host.reply(
            &mut driver,
            &LlmReply::Response {
                status: 200,
                body: result(4),
            },
        );
        let reply = host.local_reply.as_ref().expect("the page");
        assert_eq!(reply.status, 200);
        assert!(!host.went_on(Direction::Request));
        assert!(host.sent(Direction::Request).is_empty());
    }
}

/// A host that refuses the reply: the stream is closed, the page call
/// never goes on (it went to the server as it came before).
#[test]
fn a_refused_reply_closes_the_stream() {
    for extra in ["", r#","reissue":"always","store_bytes":0"#] {
        let s = paging(extra);
        let (h, shared) = alices_handle(&s);
        let page_call = call(4, "mcp_toon_page", json!({ "handle": h }));
        let t = Script {
            refuse: [(HostCall::SendLocalResponse, 0)].into(),
            ..page_script_as(&page_call, shared, ALICE)
        }
        .play(Arc::clone(&s), &mut upstream);
        assert_eq!(t.host.closed, Some(Direction::Request), "{extra}");
        assert!(t.local_reply.is_none());
        assert!(t.request_sent.is_empty(), "{extra}");
        assert!(!t.host.went_on(Direction::Request), "{extra}");
        assert!(!t.stalled);
        assert!(reasons(&t).contains(&Reason::HostRefused));
    }
}

#[test]
fn a_reissued_answer_past_max_result_bytes_is_refused_unread() {
    // Cut where results are held whole; paged where 4 KiB is the most.
    let (h, shared) = alices_handle(&paging(r#","reissue":"always","store_bytes":0"#));
    let s = paging(r#","reissue":"always","store_bytes":0,"max_result_bytes":4096"#);
    let page_call = call(4, "mcp_toon_page", json!({ "handle": h }));
    let t = page_script_as(&page_call, shared, ALICE).play(Arc::clone(&s), &mut |_| {
        LlmReply::TooLarge {
            status: 200,
            bytes: 4097,
        }
    });
    let v = replied(&t);
    assert_eq!(v["result"]["isError"], json!(true));
    assert_eq!(reasons(&t), vec![Reason::PageReissueTooLarge]);
    let chunks = page_call.len().div_ceil(20);
    assert_eq!(
        t.host.calls(HostCall::Body),
        chunks,
        "the page call's chunks only"
    );
    // At the limit it is read.
    let t = page_script_as(&page_call, store(), ALICE).play(Arc::clone(&s), &mut |_| {
        LlmReply::TooLarge {
            status: 200,
            bytes: 4096,
        }
    });
    assert_eq!(
        reasons(&t),
        vec![Reason::PageReissueFailed],
        "read: not JSON"
    );
}

#[test]
fn a_page_calls_id_is_bounded_like_every_id() {
    let s = paging(r#","reissue":"always","store_bytes":0"#);
    let (h, shared) = alices_handle(&s);
    let long = "i".repeat(300);
    let page_call = json!({"jsonrpc": "2.0", "id": long, "method": "tools/call",
        "params": {"name": "mcp_toon_page", "arguments": {"handle": h}}})
    .to_string()
    .into_bytes();
    let t = page_script_as(&page_call, shared, ALICE).play(Arc::clone(&s), &mut upstream);
    let reply = t.local_reply.as_ref().unwrap();
    assert_eq!(reply.status, 400);
    let v: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(v["id"], Value::Null);
    assert_eq!(v["error"]["code"], json!(-32600));
    assert!(!String::from_utf8_lossy(&reply.body).contains(&long));
    assert!(t.callouts.is_empty() && t.request_sent.is_empty());
    assert_eq!(reasons(&t), vec![Reason::IdTooLong]);
    let record = serde_json::to_string(&t.report.decisions[0].id).unwrap();
    assert!(!record.contains(&long));
}

/// `paging.reissue_cluster`: the call goes to that cluster with a mark;
/// the plugin meets it again on the listener, lets it pass untouched and
/// takes the mark off. A mark that does not verify is taken off and
/// counted, and the request treated as any other.
#[test]
fn a_call_reissued_through_the_listener_is_marked_and_passes_untouched() {
    let s = paging(
        r#","reissue":"always","store_bytes":0,"reissue_cluster":"loopback"},"project":{"queries":true"#,
    );
    let (h, shared) = alices_handle(&s);
    let page_call = call(4, "mcp_toon_page", json!({ "handle": h }));
    let mut made = None;
    let t = page_script_as(&page_call, shared, ALICE).play(Arc::clone(&s), &mut |r| {
        made = Some(r.clone());
        upstream(r)
    });
    assert!(replied(&t)["result"].get("isError").is_none());
    let r = made.unwrap();
    assert_eq!(r.cluster, "loopback");
    let header = |n: &str| {
        r.headers
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.clone())
    };
    let value = header(mark::HEADER).expect("marked");
    let derived = keys::derive(&s.paging.keys);
    let now_s = u32::try_from(NOW_MS / 1000).unwrap();
    let path = header(":path").unwrap();
    assert!(mark::verify(
        &derived,
        &value,
        now_s,
        &path,
        "localhost",
        "mcp_upstream"
    ));

    // The marked call arrives at the listener: it passes as it is (a
    // query argument would be stripped from any other call), the mark off.
    let reentrant = String::from_utf8(r.body.clone()).unwrap();
    let with_query = reentrant.replace(r#""n":300"#, r#""n":300,"jmespath":"[0]""#);
    let headers: Vec<(&str, &str)> = vec![
        (":authority", "localhost"),
        ("authorization", "Bearer alice"),
        (mark::HEADER, value.as_str()),
    ];
    let answer = result(4);
    let arrives = Script {
        request_headers: &headers,
        properties: STREAM,
        shared: store(),
        ..Script::new(with_query.as_bytes(), "application/json", &answer)
    };
    let t = arrives.play(Arc::clone(&s), &mut upstream);
    assert_eq!(t.request_sent, with_query.as_bytes(), "untouched");
    assert_eq!(t.response_sent, result(4), "its answer untouched");
    assert_eq!(t.host.header_value(Direction::Request, mark::HEADER), None);
    assert_eq!(
        t.host.counters.get("mcp_toon_passthrough_reentrant"),
        Some(&1)
    );

    // A forged or stale mark: taken off, counted, and the call is any call
    // (its query argument stripped, its result cut).
    for bad in [
        "1.9999999999.AAAAAAAAAAAAAAAAAAAAAA".to_string(),
        value.replacen('.', ".1", 1),
    ] {
        let headers: Vec<(&str, &str)> = vec![
            (":authority", "localhost"),
            ("authorization", "Bearer alice"),
            (mark::HEADER, bad.as_str()),
        ];
        let t = Script {
            request_headers: &headers,
            ..arrives.clone()
        }
        .play(Arc::clone(&s), &mut upstream);
        assert_eq!(t.host.header_value(Direction::Request, mark::HEADER), None);
        assert!(!String::from_utf8_lossy(&t.request_sent).contains("jmespath"));
        assert!(reasons(&t).contains(&Reason::ReissueMarkInvalid), "{bad}");
    }
}
