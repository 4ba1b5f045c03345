//! The driver on the scripted host: what Envoy cannot be made to do on
//! demand — every host call refused in turn, trailers after any chunk,
//! resets — must never lose, duplicate or reorder a byte.

use std::collections::HashSet;
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{json, Value};

use crate::callout::{LlmReply, LlmRequest};
use crate::config::Settings;
use crate::driver::HostCall;
use crate::outcome::{Outcome, Reason};
use crate::sim::{Script, Transcript};

mod memory;
mod owner;
mod paging;
mod pull;

/// A call with both arguments the gateway may take out: the trim intent
/// and the project query (each stays where its stage is off).
const CALL: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rows","arguments":{"expected_info":"id 1","jmespath":"[?id < `3`]"}}}"#;

fn table() -> Vec<u8> {
    let rows: Vec<Value> = (0..40)
        .map(|i| json!({"id": i, "name": format!("é{i}€"), "active": i % 2 == 0}))
        .collect();
    json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": Value::Array(rows).to_string()}]}})
        .to_string()
        .into_bytes()
}

fn sse() -> Vec<u8> {
    let mut s = b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\ndata: ".to_vec();
    s.extend(table());
    s.extend(b"\n\n: bye\n\n");
    s
}

/// A host for a JSON POST that accepts either answer.
fn json_post() -> crate::driver::MemoryHost {
    crate::driver::MemoryHost::post(&[
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ])
}

/// [`CALL`] sent whole and answered with JSON headers: the response body
/// is next.
fn call_answered(driver: &mut crate::driver::Driver, host: &mut crate::driver::MemoryHost) {
    use crate::host::Direction;
    host.headers(driver, Direction::Request, false);
    host.body(driver, Direction::Request, CALL, true);
    host.respond(&[(":status", "200"), ("content-type", "application/json")]);
    host.headers(driver, Direction::Response, false);
}

fn settings(config: &str) -> Arc<Settings> {
    Arc::new(Settings::from_json(config).unwrap())
}

fn trimmed(_: &LlmRequest) -> LlmReply {
    let content = json!([{"id": 1, "name": "é1€", "active": false}]).to_string();
    LlmReply::Response {
        status: 200,
        body: json!({"choices": [{"message": {"content": content}}]})
            .to_string()
            .into_bytes(),
    }
}

fn reasons(t: &Transcript) -> Vec<Reason> {
    crate::testkit::passthroughs(&t.report)
}

const CONFIGS: &[&str] = &[
    "{}",
    r#"{"hold_headers":true}"#,
    r#"{"trim":{"enabled":true,"threshold_bytes":10}}"#,
    r#"{"hold_headers":true,"project":{"queries":true,"drop":["[].active"]}}"#,
];

const TYPES: &[&str] = &["application/json", "text/event-stream"];

fn body_for(content_type: &str) -> Vec<u8> {
    if content_type == "text/event-stream" {
        sse()
    } else {
        table()
    }
}

/// Every host call, refused once at each of its occurrences: the client
/// gets either what it gets when nothing is refused, or exactly what the
/// server sent (a trim callout refused: what it gets when trim fails
/// open); the server gets either request. Never a stall, never a mix.
#[test]
fn each_host_call_refused_in_turn_loses_nothing() {
    for config in CONFIGS {
        for content_type in TYPES {
            let response = body_for(content_type);
            let script = Script {
                request_chunks: &[40],
                response_chunks: &[300],
                ..Script::new(CALL, content_type, &response)
            };
            let clean = script.play(settings(config), &mut trimmed);
            let fail_open = script.play(settings(config), &mut |_| LlmReply::NotSent);
            assert_ne!(clean.response_sent, response, "{config} {content_type}");
            for call in HostCall::ALL {
                for n in 0..clean.host.calls(call) {
                    let refused = Script {
                        refuse: HashSet::from([(call, n)]),
                        ..script.clone()
                    };
                    let what = format!("{config} {content_type}: {call:?} #{n} refused");
                    let t = refused.play(settings(config), &mut trimmed);
                    if call == HostCall::Resume {
                        // Nothing else lets a paused stream go on: it waits
                        // for Envoy's timeouts, counted.
                        assert!(
                            t.stalled && reasons(&t).contains(&Reason::HostRefused),
                            "{what}"
                        );
                        continue;
                    }
                    assert!(!t.stalled, "{what}");
                    let r = &t.response_sent;
                    assert!(
                        *r == clean.response_sent
                            || *r == response
                            || *r == fail_open.response_sent,
                        "{what}: {}",
                        String::from_utf8_lossy(r)
                    );
                    assert!(
                        t.request_sent == clean.request_sent || t.request_sent == CALL,
                        "{what}"
                    );
                    if call == HostCall::ReplaceBody && *r == response {
                        assert!(reasons(&t).contains(&Reason::HostRefused), "{what}");
                    }
                    if let Some(length) = t.content_length {
                        assert_eq!(length, r.len(), "{what}: content-length");
                    }
                }
            }
        }
    }
}

/// A host that refuses every body write: everything passes as it came.
#[test]
fn a_host_that_never_writes_bodies_passes_everything() {
    for config in CONFIGS {
        for content_type in TYPES {
            let response = body_for(content_type);
            let t = Script {
                request_chunks: &[17],
                response_chunks: &[100, 7],
                refuse: HashSet::from([(HostCall::ReplaceBody, usize::MAX)]),
                ..Script::new(CALL, content_type, &response)
            }
            .play(settings(config), &mut trimmed);
            assert_eq!(t.response_sent, response, "{config} {content_type}");
            assert_eq!(t.request_sent, CALL, "{config} {content_type}");
        }
    }
}

/// Two refusals in a row: the bytes the core held wait in front of the
/// host's buffer until a write goes through.
#[test]
fn held_bytes_go_back_at_the_next_write_that_is_taken() {
    let response = table();
    let t = Script {
        response_chunks: &[200],
        // The 2nd body write (a swallow) and the 3rd (putting back what
        // was taken) are refused; the 4th goes through.
        refuse: HashSet::from([(HostCall::ReplaceBody, 1), (HostCall::ReplaceBody, 2)]),
        ..Script::new(CALL, "application/json", &response)
    }
    .play(settings("{}"), &mut trimmed);
    assert_eq!(t.response_sent, response);
    assert_eq!(reasons(&t), vec![Reason::HostRefused]);
}

/// Held headers whose `content-length` the host will not set: the body
/// keeps its bytes, the server's length stands.
#[test]
fn a_refused_length_keeps_the_original_body() {
    let response = table();
    let t = Script {
        response_chunks: &[200],
        refuse: HashSet::from([(HostCall::SetHeader, 0)]),
        ..Script::new(CALL, "application/json", &response)
    }
    .play(settings(r#"{"hold_headers":true}"#), &mut trimmed);
    assert!(t.held_headers);
    assert_eq!(t.response_sent, response);
    assert_eq!(t.content_length, Some(response.len()));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Trailers instead of a last empty-handed chunk, after any cut:
    /// request and response arrive as they do without trailers.
    #[test]
    fn trailers_after_any_chunk_change_nothing(
        req_chunks in prop::collection::vec(1usize..64, 1..5),
        resp_chunks in prop::collection::vec(1usize..900, 1..6),
        config in prop::sample::select(CONFIGS.to_vec()),
        content_type in prop::sample::select(TYPES.to_vec()),
    ) {
        let response = body_for(content_type);
        let script = Script {
            request_chunks: &req_chunks,
            response_chunks: &resp_chunks,
            ..Script::new(CALL, content_type, &response)
        };
        let plain = script.play(settings(config), &mut trimmed);
        let with = Script { request_trailers: true, response_trailers: true, ..script }
            .play(settings(config), &mut trimmed);
        prop_assert_eq!(&with.response_sent, &plain.response_sent);
        prop_assert_eq!(&with.request_sent, &plain.request_sent);
        prop_assert!(with.trailers_sent);
        prop_assert!(!reasons(&with).contains(&Reason::LostAtTrailers));
    }

    /// A reset after any chunk: no panic; a loss is counted exactly when
    /// the core held bytes of an unfinished message; what went out is a
    /// prefix of what goes out without the reset.
    #[test]
    fn a_reset_after_any_chunk_is_counted_when_it_drops_bytes(
        resp_chunks in prop::collection::vec(1usize..900, 1..6),
        cut in 0usize..6,
        config in prop::sample::select(CONFIGS.to_vec()),
        content_type in prop::sample::select(TYPES.to_vec()),
    ) {
        let response = body_for(content_type);
        let script = Script {
            response_chunks: &resp_chunks,
            ..Script::new(CALL, content_type, &response)
        };
        let whole = script.play(settings(config), &mut trimmed);
        let t = Script { reset_after: Some(cut), ..script }.play(settings(config), &mut trimmed);
        prop_assert!(whole.response_sent.starts_with(&t.response_sent));
        let chunks = crate::sim::split(&response, &resp_chunks).len();
        let lost = reasons(&t).contains(&Reason::LostAtReset);
        if cut >= chunks {
            prop_assert!(!lost);
        } else if cut > 0 && content_type == "application/json" {
            prop_assert!(lost, "a JSON body cut after {} of {} chunks", cut, chunks);
        }
    }
}

/// A response that starts before the request ended (HTTP/2: the end may
/// come in a frame of its own): the request bytes trim held back go
/// upstream first, as they came, with the rest of the request.
#[test]
fn request_bytes_held_back_go_upstream_when_the_response_comes_first() {
    use std::rc::Rc;

    use crate::driver::{Driver, Vm};
    use crate::host::Direction;

    let mut driver = Driver::new(
        settings(r#"{"trim":{"enabled":true,"threshold_bytes":10}}"#),
        Rc::new(Vm::default()),
    );
    let mut host = json_post();
    host.headers(&mut driver, Direction::Request, false);
    let (a, b) = CALL.split_at(30);
    host.body(&mut driver, Direction::Request, a, false);
    assert!(host.sent(Direction::Request).is_empty(), "held back");
    host.respond(&[(":status", "200"), ("content-type", "application/json")]);
    host.headers(&mut driver, Direction::Response, false);
    host.body(&mut driver, Direction::Request, b, true);
    assert_eq!(host.sent(Direction::Request), CALL);
}

/// A tool whose policy changes nothing is decided at its request: its
/// response passes without a header or a byte of it read, counted once as
/// `mode_off`; with held headers the summary still goes out. A
/// configuration under which nothing can change (every stage off for every
/// tool) reads not even the request: counted `policy_off`, no record.
#[test]
fn a_call_under_a_policy_that_changes_nothing_is_not_read() {
    let off = r#"{"toon":{"mode":"off"},"clean":{"compact_json":false}}"#;
    let held = r#"{"hold_headers":true,"tools":{"rows":{"toon":{"mode":"off"},"clean":{"compact_json":false}}}}"#;
    for config in [off, held] {
        for content_type in TYPES {
            let response = body_for(content_type);
            let t = Script {
                response_chunks: &[300],
                ..Script::new(CALL, content_type, &response)
            }
            .play(settings(config), &mut trimmed);
            let what = format!("{config} {content_type}");
            assert_eq!(t.response_sent, response, "{what}");
            assert_eq!(t.request_sent, CALL, "{what}");
            assert_eq!(t.host.calls(HostCall::ReplaceBody), 0, "{what}");
            let summary = t
                .host
                .header_value(crate::host::Direction::Response, "x-mcp-toon");
            if config == off {
                assert_eq!(t.host.calls(HostCall::Body), 0, "{what}");
                assert_eq!(t.host.calls(HostCall::Headers), 0, "{what}");
                assert_eq!(reasons(&t), vec![Reason::PolicyOff], "{what}");
                assert_eq!(t.host.calls(HostCall::SetProperty), 0, "no record: {what}");
                assert_eq!(summary, None, "{what}");
            } else {
                // The request body is read (it names the tool); nothing else.
                assert_eq!(t.host.calls(HostCall::Body), 1, "{what}");
                assert_eq!(reasons(&t), vec![Reason::ModeOff], "{what}");
                assert_eq!(summary, Some("encoded=0 passthrough=mode_off:1"), "{what}");
            }
        }
    }
    // Another tool on the same configuration is read and encoded.
    let other = String::from_utf8_lossy(CALL)
        .replace("\"rows\"", "\"cols\"")
        .into_bytes();
    let response = table();
    let t = Script::new(&other, "application/json", &response).play(settings(held), &mut trimmed);
    assert_ne!(t.response_sent, response);
}

/// `trim.max_reply_bytes` at its boundary: a reply of exactly that size is
/// read and used; one byte more is not read at all (issue 13).
#[test]
fn a_callout_reply_past_max_reply_bytes_is_not_read() {
    let config = r#"{"trim":{"enabled":true,"threshold_bytes":10,"max_reply_bytes":2048}}"#;
    for (size, used) in [(2048, true), (2049, false)] {
        let mut reply = |r: &LlmRequest| {
            let LlmReply::Response { status, mut body } = trimmed(r) else {
                unreachable!()
            };
            body.resize(size, b' ');
            LlmReply::Response { status, body }
        };
        let t = crate::sim::run(
            settings(config),
            CALL,
            &[],
            "application/json",
            &table(),
            &[],
            &mut reply,
        );
        let trimmed = t
            .report
            .decisions
            .iter()
            .any(|d| d.outcome == Outcome::Trimmed);
        assert_eq!(trimmed, used, "{size}");
        assert_eq!(
            reasons(&t).contains(&Reason::TrimReplyTooLarge),
            !used,
            "{size}"
        );
    }
}

/// Projection through the driver: the query argument never goes upstream
/// (the intent, with trim off, does), and the client gets the operator's
/// rule and then the query applied, with an exact `content-length`.
#[test]
fn a_query_is_taken_out_upstream_and_applied_downstream() {
    let config = r#"{"hold_headers":true,"project":{"queries":true,"drop":["[].active"]}}"#;
    for content_type in TYPES {
        let response = body_for(content_type);
        let t = Script {
            request_chunks: &[25, 40],
            response_chunks: &[300],
            ..Script::new(CALL, content_type, &response)
        }
        .play(settings(config), &mut trimmed);
        let upstream: Value = serde_json::from_slice(&t.request_sent).unwrap();
        assert_eq!(
            upstream["params"]["arguments"],
            json!({"expected_info": "id 1"}),
            "{content_type}"
        );
        let sent = String::from_utf8(t.response_sent.clone()).unwrap();
        let json = sent
            .lines()
            .find_map(|l| l.strip_prefix("data: ").filter(|d| d.contains("result")))
            .unwrap_or(&sent);
        let v: Value = serde_json::from_str(json).unwrap();
        let text = v["result"]["content"][0]["text"].as_str().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(text).unwrap(),
            json!([{"id": 0, "name": "é0€"}, {"id": 1, "name": "é1€"}, {"id": 2, "name": "é2€"}]),
            "{content_type}"
        );
        let outcomes: Vec<Outcome> = t.report.decisions.iter().map(|d| d.outcome).collect();
        assert!(
            outcomes.contains(&Outcome::Projected) && outcomes.contains(&Outcome::Queried),
            "{outcomes:?}"
        );
        if *content_type == "application/json" {
            assert_eq!(t.content_length, Some(t.response_sent.len()));
        }
    }
}

/// A write refused at the last chunk, and the write that puts back the
/// bytes the core held refused too: no later callback can take them, so
/// they are dropped, counted, and what the host held goes on.
#[test]
fn held_bytes_refused_at_the_last_chunk_are_counted_lost() {
    use std::rc::Rc;

    use crate::driver::{Driver, Vm};
    use crate::host::Direction;

    let response = table();
    let (first, last) = response.split_at(200);
    let mut driver = Driver::new(settings("{}"), Rc::new(Vm::default()));
    let mut host = json_post();
    call_answered(&mut driver, &mut host);
    host.body(&mut driver, Direction::Response, first, false);
    assert!(host.sent(Direction::Response).is_empty(), "collected");
    // The rewritten body's write, then the original's in its place.
    let n = host.calls(HostCall::ReplaceBody);
    host.refuse = HashSet::from([(HostCall::ReplaceBody, n), (HostCall::ReplaceBody, n + 1)]);
    host.body(&mut driver, Direction::Response, last, true);
    host.end(&mut driver);
    assert_eq!(host.sent(Direction::Response), last);
    assert_eq!(host.calls(HostCall::ReplaceBody), n + 2);
    let reasons: Vec<Reason> = driver
        .report()
        .decisions
        .iter()
        .filter_map(|d| match d.outcome {
            Outcome::Passthrough(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(reasons, vec![Reason::HostRefused, Reason::LostAtRefusal]);
    assert_eq!(
        host.counters.get("mcp_toon_passthrough_lost_at_refusal"),
        Some(&1)
    );
}

/// A property the host refuses to read reads as absent, and the refusal
/// is logged (the stream matches no server by it).
#[test]
fn a_refused_property_reads_as_absent_and_is_logged() {
    let config = r#"{"servers":[{"match":{"cluster":"c"},"toon":{"mode":"off"}}]}"#;
    let response = table();
    let script = Script {
        properties: &[("xds.cluster_name", "c")],
        ..Script::new(CALL, "application/json", &response)
    };
    let matched = script.play(settings(config), &mut trimmed);
    assert_eq!(matched.response_sent, response, "mode off on cluster c");
    let t = Script {
        refuse: HashSet::from([(HostCall::Property, usize::MAX)]),
        ..script
    }
    .play(settings(config), &mut trimmed);
    assert_ne!(t.response_sent, response, "no cluster: the default applies");
    let logs = t.host.logs.borrow();
    assert!(
        logs.iter()
            .any(|l| l.contains("property xds.cluster_name unreadable")),
        "{logs:?}"
    );
}

/// MCP 2026-07-28 (SEP-2243): `Mcp-Method` and `Mcp-Name` name what the
/// body asks, and a server refuses a request whose headers disagree with
/// it. Where they say nothing can change, not even the request body is
/// read; where they name a call that may change, or are absent, the body
/// is read as before.
#[test]
fn routing_headers_decide_before_the_body() {
    let held = r#"{"hold_headers":true,"tools":{"rows":{"toon":{"mode":"off"},"clean":{"compact_json":false}}}}"#;
    let response = table();
    let cols = String::from_utf8_lossy(CALL)
        .replace("\"rows\"", "\"cols\"")
        .into_bytes();
    let play = |headers: &[(&str, &str)], config: &str| {
        let call = if headers.contains(&("mcp-name", "cols")) {
            cols.as_slice()
        } else {
            CALL
        };
        Script {
            request_headers: headers,
            ..Script::new(call, "application/json", &response)
        }
        .play(settings(config), &mut trimmed)
    };
    // Another method: not read, counted `not_tools_call`, no record.
    let t = play(&[("mcp-method", "resources/read")], "{}");
    assert_eq!(
        (t.host.calls(HostCall::Body), t.response_sent.as_slice()),
        (0, response.as_slice())
    );
    assert_eq!(reasons(&t), vec![Reason::NotToolsCall]);
    assert_eq!(t.host.calls(HostCall::SetProperty), 0);
    // A tool whose policy changes nothing, named in Mcp-Name.
    let t = play(&[("mcp-method", "tools/call"), ("mcp-name", "rows")], held);
    assert_eq!(
        (t.host.calls(HostCall::Body), t.response_sent.as_slice()),
        (0, response.as_slice())
    );
    assert_eq!(reasons(&t), vec![Reason::ModeOff]);
    assert_eq!(t.report.decisions[0].tool.as_deref(), Some("rows"));
    assert_eq!(
        t.host
            .header_value(crate::host::Direction::Response, "x-mcp-toon"),
        Some("encoded=0 passthrough=mode_off:1")
    );
    // A tool that may change, no Mcp-Name, or a listing that changes: read.
    for (headers, config) in [
        (
            &[("mcp-method", "tools/call"), ("mcp-name", "cols")][..],
            held,
        ),
        (&[("mcp-method", "tools/call")][..], "{}"),
        (&[][..], "{}"),
    ] {
        let t = play(headers, config);
        assert_eq!(t.host.calls(HostCall::Body), 2, "{headers:?}");
        assert_ne!(t.response_sent, response, "{headers:?}");
    }
    let listing = play(
        &[("mcp-method", "tools/list")],
        r#"{"annotate_tools":true}"#,
    );
    assert!(listing.host.calls(HostCall::Body) >= 1);
}

/// The APISIX body flags: set where a body is read, on a host that did not
/// answer Envoy's plugin property at configuration (APISIX refuses it);
/// never on Envoy, whose filter-state write each costs and nobody reads.
/// Either way the response is read and encoded.
#[test]
fn body_flags_are_set_only_where_the_host_is_not_envoy() {
    use std::rc::Rc;

    use crate::driver::{configured, Driver, MemoryHost, Vm, APISIX_BODY, ENVOY_PROPERTY};
    use crate::host::Direction;
    for envoy in [false, true] {
        let s = settings("{}");
        let vm = Rc::new(Vm::default());
        let mut root = MemoryHost::default();
        if envoy {
            root.properties.insert(ENVOY_PROPERTY.into(), Vec::new());
        } else {
            root.refuse.insert((HostCall::Property, 0));
        }
        configured(&mut root, &s, &vm);
        let response = table();
        let mut driver = Driver::new(s, Rc::clone(&vm));
        let mut host = json_post();
        call_answered(&mut driver, &mut host);
        host.body(&mut driver, Direction::Response, &response, true);
        host.end(&mut driver);
        assert_ne!(host.sent(Direction::Response), response, "encoded");
        for flag in APISIX_BODY {
            let set = host.properties.get(flag).map(Vec::as_slice);
            let want = if envoy { None } else { Some(&b"true"[..]) };
            assert_eq!(set, want, "{flag}, envoy: {envoy}");
        }
    }
}

/// The VM's memory gauge is set after a response callback in which the
/// memory grew, and not again while it stays: a wasm VM's memory never
/// shrinks, and every gauge write is a host call.
#[test]
fn the_memory_gauge_is_set_when_the_memory_grows() {
    use std::rc::Rc;

    use crate::driver::{Driver, Vm, VM_MEMORY_BYTES};
    use crate::host::Direction;

    let vm = Rc::new(Vm::default());
    let response = table();
    let mut gauge_calls = Vec::new();
    for memory in [65_536, 65_536, 131_072] {
        let mut driver = Driver::new(settings("{}"), Rc::clone(&vm));
        let mut host = json_post();
        host.memory = memory;
        call_answered(&mut driver, &mut host);
        host.body(&mut driver, Direction::Response, &response, true);
        host.end(&mut driver);
        assert_ne!(host.sent(Direction::Response), response, "encoded");
        gauge_calls.push(host.calls(HostCall::Gauge));
        let set = host.gauges.get(VM_MEMORY_BYTES).copied();
        let grew = gauge_calls.len() != 2;
        assert_eq!(set, grew.then_some(memory as u64), "{memory}");
    }
    // The memory gauge is the only one moved: each body came in one
    // callback, so no stream held bytes between callbacks.
    assert_eq!(gauge_calls, vec![1, 0, 1]);
}
