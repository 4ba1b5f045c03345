//! The stream's share of the VM's memory budget ([`Exchange::allow`]) at its
//! boundary and one past it, what the record of a response that passes
//! whole says, and what one server's listing may teach about another's
//! tools.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::outcome::Outcome;
use crate::shared::SharedMemory as Store;
use crate::testkit::{
    exchange, passthroughs, post, post_on, request_head, response_head as head, sent,
};

fn call(id: u32, tool: &str) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": {}}})
    .to_string()
    .into_bytes()
}

/// A tool result whose text is a table of `rows` rows (TOON encodes it).
fn result(id: u32, rows: usize) -> Vec<u8> {
    let table: Vec<Value> = (0..rows)
        .map(|i| json!({"id": i, "name": format!("row {i}"), "ok": i % 2 == 0}))
        .collect();
    json!({"jsonrpc": "2.0", "id": id,
           "result": {"content": [{"type": "text", "text": Value::Array(table).to_string()}]}})
    .to_string()
    .into_bytes()
}

/// Answers `e`'s call with `body` in chunks of `chunk` bytes, the room
/// set to `room` before each (as the driver does); checks after every step
/// that the stream holds no more than its room. Returns what went on.
fn answer(
    e: &mut Exchange,
    media: &'static str,
    body: &[u8],
    announced: bool,
    chunk: usize,
    room: usize,
    store: &mut Store,
) -> Vec<u8> {
    e.allow(room);
    let plan = e.response_headers(head(media, announced.then_some(body.len())), store);
    assert!(e.memory() <= room, "{} > {room} at the headers", e.memory());
    let mut out = Vec::new();
    let chunks: Vec<&[u8]> = body.chunks(chunk).collect();
    for (i, c) in chunks.iter().enumerate() {
        e.allow(room);
        let step = if plan == ResponsePlan::Pass {
            Step::input()
        } else {
            e.response_chunk(c, i + 1 == chunks.len(), store)
        };
        assert!(
            e.memory() <= room,
            "{} > {room} after chunk {i}",
            e.memory()
        );
        out.extend(sent(&step, c));
    }
    out
}

/// A JSON body that announced its length is held from its headers on: a
/// room of exactly its length reads it; one byte less passes it at the
/// headers, before a byte is copied, as the server sent it.
#[test]
fn a_body_of_known_length_is_read_within_the_room_and_passes_one_byte_past() {
    let body = result(1, 200);
    let n = body.len();
    for (room, read) in [(n, true), (n - 1, false)] {
        let mut store = Store::default();
        let mut e = exchange("{}");
        post(&mut e, &call(1, "rows"), &mut store);
        let out = answer(
            &mut e,
            "application/json",
            &body,
            true,
            1000,
            room,
            &mut store,
        );
        if read {
            assert!(out.len() < n, "encoded at room {room}");
            assert!(e.report().summary().contains("encoded=1"));
        } else {
            assert_eq!(out, body, "room {room}: as sent");
            assert_eq!(passthroughs(e.report()), [Reason::VmMemoryBudget]);
        }
    }
}

/// Whatever the room, a body is read within it or passes byte-identical,
/// counted, and the stream never holds more than its room: JSON chunked or
/// announced, and an event stream.
#[test]
fn the_room_bounds_what_a_stream_holds_and_nothing_is_lost() {
    let json = result(1, 300);
    let mut sse = b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\ndata: ".to_vec();
    sse.extend(&json);
    sse.extend(b"\n\n");
    let cases: [(&'static str, &[u8], bool); 3] = [
        ("application/json", &json, true),
        ("application/json", &json, false),
        ("text/event-stream", &sse, false),
    ];
    proptest!(ProptestConfig::with_cases(64), |(room in 0usize..4 * 32768, chunk in 1usize..4000)| {
        for (media, body, announced) in cases {
            let mut store = Store::default();
            let mut e = exchange("{}");
            post(&mut e, &call(1, "rows"), &mut store);
            let out = answer(&mut e, media, body, announced, chunk, room, &mut store);
            let reasons = passthroughs(e.report());
            if reasons.contains(&Reason::VmMemoryBudget) {
                prop_assert_eq!(&out[..], body, "{} {}", media, room);
            } else {
                prop_assert!(out.len() < body.len(), "{} read at room {}", media, room);
            }
        }
    });
}

/// An event stream past its room releases the event it held, then the
/// rest as it comes; events before it were rewritten.
#[test]
fn an_event_stream_past_its_room_releases_what_it_held() {
    let event = |id: u32| {
        let mut e = b"data: ".to_vec();
        e.extend(result(id, 100));
        e.extend(b"\n\n");
        e
    };
    let (first, second) = (event(1), event(1));
    let mut store = Store::default();
    let mut e = exchange("{}");
    post(&mut e, &call(1, "rows"), &mut store);
    let room = second.len() * 3;
    e.allow(room);
    e.response_headers(head("text/event-stream", None), &mut store);
    let step = e.response_chunk(&first, false, &mut store);
    assert!(
        sent(&step, &first).len() < first.len(),
        "the first is rewritten"
    );
    // Half of the second event is held; then a chunk that would pass the
    // room: what was held goes out with it, unchanged.
    let (a, b) = second.split_at(second.len() / 2);
    let step = e.response_chunk(a, false, &mut store);
    assert_eq!(sent(&step, a), b"");
    e.allow(second.len() / 2 + 10);
    let step = e.response_chunk(b, false, &mut store);
    assert_eq!(sent(&step, b), second);
    let step = e.response_chunk(&first, true, &mut store);
    assert_eq!(step, Step::input());
    assert!(passthroughs(e.report()).contains(&Reason::VmMemoryBudget));
    assert_eq!(e.memory(), 0);
}

/// A request body is held within the room; past it, it goes on as it came.
#[test]
fn a_request_past_its_room_passes() {
    let body = call(7, "rows");
    for (room, kept) in [(body.len() * 2, true), (body.len() / 2, false)] {
        let mut store = Store::default();
        let mut e = exchange(r#"{"trim":{"enabled":true}}"#);
        e.allow(room);
        let stream = StreamInfo::default();
        e.request_headers(RequestHead {
            accept: None,
            ..request_head(&stream, "POST", Some("application/json"))
        });
        let (a, b) = body.split_at(body.len() / 3);
        let first = e.request_chunk(a, false, &mut store);
        let second = e.request_chunk(b, true, &mut store);
        let mut out = sent(&first, a);
        out.extend(sent(&second, b));
        assert_eq!(out, body, "room {room}");
        assert_eq!(
            passthroughs(e.report()).contains(&Reason::VmMemoryBudget),
            !kept,
            "room {room}"
        );
    }
}

/// The decision of a response that passes whole names its call (id and
/// tool) and its size: announced, or counted to its end.
#[test]
fn a_response_that_passes_whole_names_its_call_and_its_bytes() {
    let too_large = r#"{"max_response_bytes":1024}"#;
    let body = result(4, 200);
    let n = body.len();
    let cases: [(&str, ResponseHead<'static>, Reason); 4] = [
        (
            too_large,
            head("application/json", Some(n)),
            Reason::ResponseTooLarge,
        ),
        (
            too_large,
            head("application/json", None),
            Reason::ResponseTooLarge,
        ),
        (
            "{}",
            ResponseHead {
                content_encoding: Some("gzip"),
                ..head("application/json", None)
            },
            Reason::ContentEncoding,
        ),
        (
            "{}",
            ResponseHead {
                status: Some(500),
                ..head("application/json", Some(n))
            },
            Reason::HttpStatus,
        ),
    ];
    for (config, response_head, reason) in cases {
        let mut store = Store::default();
        let mut e = exchange(config);
        post(&mut e, &call(4, "export"), &mut store);
        let plan = e.response_headers(response_head, &mut store);
        for (i, chunk) in body.chunks(700).enumerate() {
            let end = (i + 1) * 700 >= n;
            if plan == ResponsePlan::Pass || e.is_done() {
                e.passed(chunk.len(), end);
            } else {
                e.response_chunk(chunk, end, &mut store);
            }
        }
        let d = e.report().decisions.last().unwrap().clone();
        assert_eq!(d.outcome, Outcome::Passthrough(reason));
        assert_eq!(
            (
                d.id.as_deref(),
                d.tool.as_deref(),
                d.bytes_before,
                d.bytes_after
            ),
            (Some("4"), Some("export"), n, n),
            "{reason:?}"
        );
        assert!(
            e.is_done(),
            "the record is complete once the response ended"
        );
    }
}

/// A batch's response that passes whole: one decision per call.
#[test]
fn a_batch_that_passes_whole_names_every_call() {
    let mut store = Store::default();
    let mut e = exchange("{}");
    let batch = format!(
        "[{},{}]",
        String::from_utf8(call(1, "a")).unwrap(),
        String::from_utf8(call(2, "b")).unwrap()
    );
    post(&mut e, batch.as_bytes(), &mut store);
    let response_head = ResponseHead {
        status: Some(502),
        ..head("text/plain", Some(12))
    };
    e.response_headers(response_head, &mut store);
    let named: Vec<(Option<&str>, Option<&str>, usize)> = e
        .report()
        .decisions
        .iter()
        .map(|d| (d.id.as_deref(), d.tool.as_deref(), d.bytes_before))
        .collect();
    assert_eq!(
        named,
        [(Some("1"), Some("a"), 12), (Some("2"), Some("b"), 12)]
    );
}

/// A `GET` (the 2024-11-05 event stream, or Streamable HTTP's) answered
/// otherwise than with an event stream concerns no tool call: counted, no
/// record.
#[test]
fn a_get_answered_405_leaves_no_record() {
    for (status, media) in [(405, "text/plain"), (200, "application/json")] {
        let mut e = exchange("{}");
        let stream = StreamInfo::default();
        e.request_headers(RequestHead {
            accept: Some("text/event-stream"),
            end_of_stream: true,
            ..request_head(&stream, "GET", None)
        });
        let response_head = ResponseHead {
            status: Some(status),
            ..head(media, Some(18))
        };
        assert_eq!(
            e.response_headers(response_head, &mut Store::default()),
            ResponsePlan::Pass
        );
        assert!(!e.recorded(), "{status}");
        assert!(e.is_done());
    }
}

/// A call decided at its request reports the size of its response, which
/// is never read.
#[test]
fn a_call_decided_at_its_request_reports_its_response_bytes() {
    let mut store = Store::default();
    let mut e =
        exchange(r#"{"tools":{"rows":{"toon":{"mode":"off"},"clean":{"compact_json":false}}}}"#);
    post(&mut e, &call(3, "rows"), &mut store);
    assert!(!e.is_done(), "waits for its response's size");
    e.response_headers(ResponseHead::default(), &mut store);
    assert!(!e.passed(1000, false));
    assert!(e.passed(234, true));
    assert!(e.is_done());
    let d = &e.report().decisions[0];
    assert_eq!(d.outcome, Outcome::Passthrough(Reason::ModeOff));
    assert_eq!((d.id.as_deref(), d.bytes_before), (Some("3"), 1234));
}

const QUERIES: &str = r#"{"project":{"queries":true}}"#;

fn listing(tools: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 9, "result": {"tools": tools}})
        .to_string()
        .into_bytes()
}

fn stream_of(authority: &str) -> StreamInfo {
    StreamInfo {
        route: Some("mcp".into()),
        cluster: Some("shared".into()),
        authority: Some(authority.into()),
    }
}

/// Lists `tools` through a stream of `server`.
fn list_on(server: &StreamInfo, tools: Value, store: &mut Store) {
    let mut e = exchange(QUERIES);
    post_on(
        &mut e,
        server,
        br#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#,
        store,
    );
    e.response_headers(head("application/json", None), store);
    e.response_chunk(&listing(tools), true, store);
}

/// What a call of `tool` with a `jmespath` argument sends on, through a
/// stream of `server`.
fn call_on(server: &StreamInfo, tool: &str, store: &mut Store) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": {"jmespath": "own", "q": 1}}})
    .to_string();
    let mut e = exchange(QUERIES);
    let step = post_on(&mut e, server, body.as_bytes(), store);
    serde_json::from_slice(&sent(&step, body.as_bytes())).unwrap()
}

/// A tool that declares the query argument itself keeps it on its own
/// server, whatever another server behind the same cluster lists.
#[test]
fn another_servers_listing_never_strips_a_tools_own_argument() {
    let mut store = Store::default();
    let (a, b) = (stream_of("a.example"), stream_of("b.example"));
    let declares = json!([{"name": "search", "inputSchema": {"type": "object",
        "properties": {"jmespath": {"type": "string"}}}}]);
    list_on(&a, declares, &mut store);
    assert_eq!(
        call_on(&a, "search", &mut store)["params"]["arguments"]["jmespath"],
        "own"
    );
    // Server b lists a tool of the same name without the argument: a's
    // record does not change.
    list_on(
        &b,
        json!([{"name": "search", "inputSchema": {"type": "object"}}]),
        &mut store,
    );
    assert_eq!(
        call_on(&a, "search", &mut store)["params"]["arguments"]["jmespath"],
        "own",
        "still the tool's own"
    );
    // On server b the argument is the gateway's, taken out.
    assert!(call_on(&b, "search", &mut store)["params"]["arguments"]
        .get("jmespath")
        .is_none());
}

/// A server's record is kept in a slot of its own: a server whose slot
/// another server's live record holds learns nothing (counted), and the
/// record stays.
#[test]
fn a_servers_slot_is_not_taken_by_another_server() {
    let mut store = Store::default();
    let declares = |name: &str| {
        json!([{"name": name, "inputSchema": {"type": "object",
            "properties": {"jmespath": {"type": "string"}}}}])
    };
    let a = stream_of("a.example");
    list_on(&a, declares("search"), &mut store);
    let key = super::session::hash_key(&mut store, false).unwrap();
    let target = super::declared::slot(&key, &a.server());
    let b = (0..)
        .map(|i| stream_of(&format!("h{i}.example")))
        .find(|s| super::declared::slot(&key, &s.server()) == target)
        .unwrap();
    let mut e = exchange(QUERIES);
    post_on(
        &mut e,
        &b,
        br#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#,
        &mut store,
    );
    e.response_headers(head("application/json", None), &mut store);
    e.response_chunk(&listing(declares("lookup")), true, &mut store);
    assert_eq!(passthroughs(e.report()), [Reason::ListingRecordFull]);
    assert_eq!(
        call_on(&a, "search", &mut store)["params"]["arguments"]["jmespath"],
        "own"
    );
    // A day without a listing of a: b takes the slot.
    store.now_ms = super::declared::STALE_S * 1000;
    list_on(&b, declares("lookup"), &mut store);
    assert_eq!(
        call_on(&b, "lookup", &mut store)["params"]["arguments"]["jmespath"],
        "own"
    );
}
