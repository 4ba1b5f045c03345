//! Every limit of the exchange at its boundary (issue 13): what waits
//! behind a callout, the intent, the request's ids and tool names, which
//! calls lose the intent argument, and results whose structured form a
//! trim would contradict.

use serde_json::{json, Value};

use super::*;
use crate::shared::SharedMemory as Store;
use crate::testkit::{exchange, passthroughs, post, sent};

fn call(id: &str, tool: &str, arguments: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": serde_json::from_str::<Value>(id).unwrap(), "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
    .to_string()
    .into_bytes()
}

fn head(media: &'static str) -> ResponseHead<'static> {
    crate::testkit::response_head(media, None)
}

fn table(n: usize) -> String {
    Value::Array(
        (0..n)
            .map(|i| json!({"id": i, "name": format!("n{i}")}))
            .collect(),
    )
    .to_string()
}

fn result(id: u32, extra: Value) -> String {
    let mut r = json!({"content": [{"type": "text", "text": table(30)}]});
    if let (Some(r), Value::Object(more)) = (r.as_object_mut(), extra) {
        r.extend(more);
    }
    json!({"jsonrpc": "2.0", "id": id, "result": r}).to_string()
}

const TRIM: &str = r#"{"trim":{"enabled":true,"threshold_bytes":100,"max_queued_bytes":1024}}"#;

fn into_trimmed_call(e: &mut Exchange, store: &mut Store) {
    post(
        e,
        &call("1", "rows", json!({"expected_info": "ids"})),
        store,
    );
}

/// An event of exactly `n` bytes.
fn event_of(n: usize) -> String {
    format!("data: {}\n\n", "x".repeat(n - 8))
}

#[test]
fn events_behind_a_callout_wait_up_to_max_queued_bytes() {
    let mut store = Store::default();
    let mut e = exchange(TRIM);
    into_trimmed_call(&mut e, &mut store);
    e.response_headers(head("text/event-stream"), &mut store);
    let result = format!("data: {}\n\n", result(1, json!({})));
    let step = e.response_chunk(result.as_bytes(), false, &mut store);
    assert!(step.callout.is_some());
    // Exactly the limit waits: the event and what queued behind it.
    let full = event_of(1024 - result.len());
    let step = e.response_chunk(full.as_bytes(), false, &mut store);
    assert_eq!((sent(&step, b""), step.flow), (vec![], Flow::Pause));
    // One more event passes it: the result goes on without its callout
    // (cleaned, TOON), then everything that waited, in order.
    let more = event_of(9);
    let step = e.response_chunk(more.as_bytes(), false, &mut store);
    assert_eq!(step.flow, Flow::Continue);
    let out = String::from_utf8(sent(&step, more.as_bytes())).unwrap();
    assert!(out.starts_with("data: {") && out.contains("[mcp-toon/v1]"));
    assert!(out.ends_with(&format!("{full}{more}")));
    assert!(passthroughs(e.report()).contains(&Reason::TrimQueueFull));
    assert!(!e.waiting());
    // The reply that comes later changes nothing.
    let late = e.callout_reply(&LlmReply::NotSent, &mut store);
    assert_eq!(sent(&late, b""), Vec::<u8>::new());
    assert_eq!(late.flow, Flow::Continue);
    let step = e.response_chunk(b": bye\n\n", true, &mut store);
    assert_eq!(step, Step::input());
}

#[test]
fn an_event_larger_than_max_queued_bytes_gets_no_callout() {
    // Held until the reply, it could not go out within the host's buffer.
    for (extra, callout) in [(0, true), (1, false)] {
        let mut store = Store::default();
        let mut e = exchange(TRIM);
        into_trimmed_call(&mut e, &mut store);
        e.response_headers(head("text/event-stream"), &mut store);
        let plain = format!("data: {}\n\n", result(1, json!({})));
        // Padded in an `id` field of the event: its data is unchanged.
        let id = format!("id: {}\n\n", "x".repeat(1024 - plain.len() - 5 + extra));
        let event = format!("{}{id}", plain.trim_end_matches('\n').to_string() + "\n");
        assert_eq!(event.len(), 1024 + extra);
        let step = e.response_chunk(event.as_bytes(), false, &mut store);
        assert_eq!(step.callout.is_some(), callout, "{extra}");
        assert_eq!(
            passthroughs(e.report()).contains(&Reason::TrimQueueFull),
            !callout
        );
        if !callout {
            assert_eq!(step.flow, Flow::Continue);
            let out = String::from_utf8(sent(&step, event.as_bytes())).unwrap();
            assert!(out.ends_with(&id) && out.contains("[mcp-toon/v1]"), "{out}");
        }
    }
}

#[test]
fn bytes_after_a_json_value_wait_up_to_max_queued_bytes() {
    let mut store = Store::default();
    let mut e = exchange(TRIM);
    into_trimmed_call(&mut e, &mut store);
    e.response_headers(head("application/json"), &mut store);
    let body = result(1, json!({}));
    let step = e.response_chunk(body.as_bytes(), false, &mut store);
    assert!(step.callout.is_some());
    let spaces = vec![b' '; 1024];
    let step = e.response_chunk(&spaces, false, &mut store);
    assert_eq!((sent(&step, b""), step.flow), (vec![], Flow::Pause));
    let step = e.response_chunk(b"\n", false, &mut store);
    assert_eq!(step.flow, Flow::Continue);
    let out = sent(&step, b"\n");
    assert!(out.ends_with(&[&spaces[..], b"\n"].concat()));
    assert!(String::from_utf8_lossy(&out).contains("[mcp-toon/v1]"));
    assert!(passthroughs(e.report()).contains(&Reason::TrimQueueFull));
}

#[test]
fn an_intent_past_its_limit_is_not_sent_but_still_taken_out() {
    let config = r#"{"trim":{"enabled":true,"threshold_bytes":100,"max_intent_bytes":16}}"#;
    for (intent, callout) in [("i".repeat(16), true), ("i".repeat(17), false)] {
        let mut store = Store::default();
        let mut e = exchange(config);
        let body = call("1", "rows", json!({"expected_info": intent, "q": 1}));
        let step = post(&mut e, &body, &mut store);
        let upstream = String::from_utf8(sent(&step, &body)).unwrap();
        assert!(!upstream.contains("expected_info"), "{upstream}");
        e.response_headers(head("application/json"), &mut store);
        let response = result(1, json!({}));
        let step = e.response_chunk(response.as_bytes(), true, &mut store);
        assert_eq!(step.callout.is_some(), callout);
        if !callout {
            assert!(passthroughs(e.report()).contains(&Reason::TrimIntentTooLong));
        }
    }
}

#[test]
fn a_result_with_structured_content_is_not_trimmed() {
    let mut store = Store::default();
    let mut e = exchange(TRIM);
    into_trimmed_call(&mut e, &mut store);
    e.response_headers(head("application/json"), &mut store);
    let response = result(1, json!({"structuredContent": {"rows": 30}}));
    let step = e.response_chunk(response.as_bytes(), true, &mut store);
    assert!(step.callout.is_none());
    assert!(passthroughs(e.report()).contains(&Reason::TrimStructuredContent));
    // `null` is no structured content.
    let mut e = exchange(TRIM);
    into_trimmed_call(&mut e, &mut store);
    e.response_headers(head("application/json"), &mut store);
    let response = result(1, json!({"structuredContent": null}));
    let step = e.response_chunk(response.as_bytes(), true, &mut store);
    assert!(step.callout.is_some());
}

#[test]
fn ids_and_tool_names_past_their_limits_are_not_followed() {
    let config = r#"{"max_id_bytes":16,"max_tool_name_bytes":16}"#;
    let id_at = format!("\"{}\"", "i".repeat(14));
    let id_past = format!("\"{}\"", "i".repeat(15));
    for (id, tool, followed, reason) in [
        (id_at.as_str(), "rows", true, None),
        (id_past.as_str(), "rows", false, Some(Reason::IdTooLong)),
        ("1", &"t".repeat(16)[..], true, None),
        (
            "1",
            &"t".repeat(17)[..],
            false,
            Some(Reason::ToolNameTooLong),
        ),
    ] {
        let mut store = Store::default();
        let mut e = exchange(config);
        post(&mut e, &call(id, tool, json!({})), &mut store);
        let plan = e.response_headers(head("application/json"), &mut store);
        assert_eq!(
            plan != ResponsePlan::Pass,
            followed,
            "{id} {tool}: the response is read only when the call is followed"
        );
        assert_eq!(passthroughs(e.report()).first().copied(), reason);
    }
}

const PER_TOOL: &str = r#"{"tools":{"rows":{"trim":{"enabled":true}}}}"#;

fn batch() -> Vec<u8> {
    let a = call("1", "rows", json!({"expected_info": "x"}));
    let b = call("2", "other", json!({"expected_info": "y"}));
    [b"[".as_slice(), &a, b",", &b, b"]"].concat()
}

#[test]
fn the_intent_argument_is_taken_out_only_where_the_tool_trims() {
    let mut store = Store::default();
    let mut e = exchange(PER_TOOL);
    let body = batch();
    let step = post(&mut e, &body, &mut store);
    let upstream: Value = serde_json::from_slice(&sent(&step, &body)).unwrap();
    assert_eq!(upstream[0]["params"]["arguments"], json!({}));
    assert_eq!(
        upstream[1]["params"]["arguments"],
        json!({"expected_info": "y"}),
        "trim is off for `other`: its argument is its own"
    );
}

fn listing(declares: bool) -> String {
    let props = if declares {
        json!({"expected_info": {"type": "string"}})
    } else {
        json!({"q": {"type": "string"}})
    };
    json!({"jsonrpc": "2.0", "id": 9, "result": {"tools": [
        {"name": "rows", "inputSchema": {"type": "object", "properties": props}}
    ]}})
    .to_string()
}

fn list_through(store: &mut Store, declares: bool) {
    let mut e = exchange(PER_TOOL);
    let body = br#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#;
    post(&mut e, body, store);
    e.response_headers(head("application/json"), store);
    e.response_chunk(listing(declares).as_bytes(), true, store);
}

#[test]
fn a_tool_that_declares_the_argument_itself_keeps_it() {
    let mut store = Store::default();
    list_through(&mut store, true);
    let mut e = exchange(PER_TOOL);
    let body = batch();
    let step = post(&mut e, &body, &mut store);
    assert_eq!(
        sent(&step, &body),
        body,
        "`rows` declares expected_info: nothing is taken out"
    );
    // A later listing without it: the argument is the plugin's again.
    list_through(&mut store, false);
    let mut e = exchange(PER_TOOL);
    let step = post(&mut e, &body, &mut store);
    let upstream: Value = serde_json::from_slice(&sent(&step, &body)).unwrap();
    assert_eq!(upstream[0]["params"]["arguments"], json!({}));
}

/// Tool names whose record (`{"name":["expected_info"],...}`, compact) is
/// exactly `bytes` long: many of one length, the last padded.
fn declaring_tools(bytes: usize) -> Vec<String> {
    let record = |names: &[String]| {
        let map: serde_json::Map<String, Value> = names
            .iter()
            .map(|n| (n.clone(), json!(["expected_info"])))
            .collect();
        Value::Object(map).to_string().len()
    };
    let mut names: Vec<String> = (0..bytes / 32 - 1)
        .map(|i| format!("tool-{i:06}"))
        .collect();
    names.push(String::new());
    let short = bytes - record(&names);
    if let Some(last) = names.last_mut() {
        *last = "x".repeat(short);
    }
    assert_eq!(record(&names), bytes);
    names
}

/// The record of declaring tools (64 KiB per server scope) at its limit:
/// a listing that fills it exactly is recorded whole, and the last tool
/// keeps its argument; one byte more and that tool is counted
/// `listing_record_full` and treated as not declaring it (its argument
/// taken out, like a tool no listing showed).
#[test]
fn the_declaring_tools_record_at_its_limit() {
    const TRIM: &str = r#"{"trim":{"enabled":true}}"#;
    let limit = super::declared::MAX_RECORD_BYTES;
    for (bytes, full) in [(limit, false), (limit + 1, true)] {
        let names = declaring_tools(bytes);
        let last = names.last().cloned().unwrap();
        let tools: Vec<Value> = names
            .iter()
            .map(|n| {
                json!({"name": n, "inputSchema": {"type": "object",
                "properties": {"expected_info": {"type": "string"}}}})
            })
            .collect();
        let listing = json!({"jsonrpc": "2.0", "id": 9, "result": {"tools": tools}}).to_string();
        let mut store = Store::default();
        let mut e = exchange(&format!(r#"{{"max_body_bytes":4194304,{}"#, &TRIM[1..]));
        post(
            &mut e,
            br#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#,
            &mut store,
        );
        e.response_headers(head("application/json"), &mut store);
        e.response_chunk(listing.as_bytes(), true, &mut store);
        let counted = passthroughs(e.report())
            .iter()
            .filter(|r| **r == Reason::ListingRecordFull)
            .count();
        assert_eq!(counted, usize::from(full), "{bytes} bytes");

        let body = call("1", &last, json!({"expected_info": "x"}));
        let mut e = exchange(TRIM);
        let step = post(&mut e, &body, &mut store);
        let upstream: Value = serde_json::from_slice(&sent(&step, &body)).unwrap();
        let kept = if full {
            json!({})
        } else {
            json!({"expected_info": "x"})
        };
        assert_eq!(upstream["params"]["arguments"], kept, "{bytes} bytes");
    }
}

/// The query argument is the plugin's on every call once queries are on
/// anywhere, except where a listing showed the tool declaring an argument
/// of that name: there it reaches the server as sent and is not run as a
/// query (a server that applied it would see it applied twice).
#[test]
fn a_tool_that_declares_the_query_argument_keeps_it() {
    const QUERIES: &str = r#"{"tools":{"rows":{"project":{"queries":true}}}}"#;
    let mut store = Store::default();
    let mut e = exchange(QUERIES);
    let list = br#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#;
    post(&mut e, list, &mut store);
    e.response_headers(head("application/json"), &mut store);
    let listing = json!({"jsonrpc": "2.0", "id": 9, "result": {"tools": [
        {"name": "rows", "inputSchema": {"type": "object", "properties": {}}},
        {"name": "search", "inputSchema": {"type": "object",
            "properties": {"jmespath": {"type": "string"}}}}
    ]}})
    .to_string();
    e.response_chunk(listing.as_bytes(), true, &mut store);

    let a = call("1", "rows", json!({"jmespath": "[].id"}));
    let b = call("2", "search", json!({"jmespath": "items[].name"}));
    let body = [b"[".as_slice(), &a, b",", &b, b"]"].concat();
    let mut e = exchange(QUERIES);
    let step = post(&mut e, &body, &mut store);
    let upstream: Value = serde_json::from_slice(&sent(&step, &body)).unwrap();
    assert_eq!(upstream[0]["params"]["arguments"], json!({}));
    assert_eq!(
        upstream[1]["params"]["arguments"],
        json!({"jmespath": "items[].name"}),
        "`search` declares jmespath: the argument is its own"
    );
    let queries: Vec<_> = e
        .request
        .info
        .calls
        .iter()
        .map(|c| c.query.as_deref())
        .collect();
    assert_eq!(queries, vec![Some("[].id"), None]);
}

/// Issue 14 decides at the request a call whose policy changes nothing;
/// with hostile's limits (issue 13) a call past one is counted once and
/// not followed, and the intent still comes out where the tool trims.
#[test]
fn a_request_decided_at_its_body_keeps_the_limits_and_the_intent_rule() {
    let config = r#"{"max_id_bytes":16,"trim":{"enabled":true},
        "tools":{"quiet":{"toon":{"mode":"off"},"clean":{"compact_json":false},"trim":{"enabled":false}}}}"#;
    let id_past = format!("\"{}\"", "i".repeat(15));
    let parts = [
        call(&id_past, "rows", json!({"expected_info": "x"})),
        call("2", "quiet", json!({"expected_info": "y"})),
    ];
    let body = [b"[".as_slice(), &parts[0], b",", &parts[1], b"]"].concat();
    let mut store = Store::default();
    let mut e = exchange(config);
    let step = post(&mut e, &body, &mut store);
    // The call past the limit is skipped; the other changes nothing.
    assert!(e.ignores_response(), "{:?}", e.report());
    assert_eq!(
        passthroughs(e.report()),
        vec![Reason::IdTooLong, Reason::ModeOff]
    );
    let upstream: Value = serde_json::from_slice(&sent(&step, &body)).unwrap();
    assert_eq!(
        upstream[0]["params"]["arguments"],
        json!({}),
        "`rows` trims: its intent comes out though its call is not followed"
    );
    assert_eq!(
        upstream[1]["params"]["arguments"],
        json!({"expected_info": "y"}),
        "trim is off for `quiet`: its argument is its own"
    );
}

/// A budget cuts after every other stage, so a tool with one is read
/// though TOON, clean, trim and projection are off; and where paging is on
/// a call of the page tool the batch form leaves to the server (a page call
/// is answered here only alone) is never decided at its request either
/// (issues 14 and 15).
#[test]
fn a_budget_or_a_page_call_keeps_a_call_read() {
    let off = r#""toon":{"mode":"off"},"clean":{"compact_json":false}"#;
    let budgeted = format!(r#"{{{off},"tools":{{"rows":{{"budget":{{"bytes":4096}}}}}}}}"#);
    let mut store = Store::default();
    let mut e = exchange(&budgeted);
    post(&mut e, &call("1", "rows", json!({})), &mut store);
    assert!(!e.ignores_response(), "{:?}", e.report());
    // Another tool on the same configuration changes nothing.
    let mut e = exchange(&budgeted);
    post(&mut e, &call("1", "cols", json!({})), &mut store);
    assert!(e.ignores_response(), "{:?}", e.report());

    let paged = format!(
        r#"{{{off},"hold_headers":true,"paging":{{"key":"0123456789abcdef0123456789abcdef"}},
            "tools":{{"rows":{{"budget":{{"bytes":4096}},"paging":{{"enabled":true}}}}}}}}"#
    );
    let page = call("1", "mcp_toon_page", json!({"handle": "x"}));
    let other = call("2", "cols", json!({}));
    let batch = [b"[".as_slice(), &page, b",", &other, b"]"].concat();
    let mut e = exchange(&paged);
    post(&mut e, &batch, &mut store);
    assert!(!e.ignores_response(), "{:?}", e.report());
    let mut e = exchange(&paged);
    let batch = [b"[".as_slice(), &other, b"]"].concat();
    post(&mut e, &batch, &mut store);
    assert!(e.ignores_response(), "{:?}", e.report());
}

/// A JSON response of `body` in chunks of 1,000 bytes, with or without its
/// `content-length`: what the client got.
fn respond(e: &mut Exchange, body: &[u8], with_length: bool, store: &mut Store) -> Vec<u8> {
    e.response_headers(
        ResponseHead {
            content_length: with_length.then_some(body.len()),
            ..head("application/json")
        },
        store,
    );
    let mut out = Vec::new();
    let chunks: Vec<&[u8]> = body.chunks(1000).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let step = e.response_chunk(chunk, i + 1 == chunks.len(), store);
        out.extend(sent(&step, chunk));
    }
    out
}

/// `max_response_bytes` at its boundary: a response of exactly that many
/// bytes is read and rewritten; one byte more passes whole, as the server
/// sent it, counted `response_too_large` — announced by `content-length`
/// or found as the body runs past it.
#[test]
fn max_response_bytes_reads_a_body_of_its_size_and_passes_a_larger_one_whole() {
    // Padded to a round size inside the result (a member the stages leave).
    let base = result(1, json!({"pad": ""})).len();
    let n = base.div_ceil(1024) * 1024 + 1024;
    let body = result(1, json!({"pad": "x".repeat(n - base)})).into_bytes();
    assert_eq!(body.len(), n);
    for with_length in [true, false] {
        let mut store = Store::default();
        let mut e = exchange(&format!(r#"{{"max_response_bytes":{n}}}"#));
        post(&mut e, &call("1", "rows", json!({})), &mut store);
        let out = respond(&mut e, &body, with_length, &mut store);
        assert!(
            e.report().summary().contains("encoded=1"),
            "at the limit ({with_length}): {}",
            e.report().summary()
        );
        assert!(out.len() < body.len());

        let mut store = Store::default();
        let mut e = exchange(&format!(r#"{{"max_response_bytes":{}}}"#, n - 1));
        post(&mut e, &call("1", "rows", json!({})), &mut store);
        let out = respond(&mut e, &body, with_length, &mut store);
        assert_eq!(
            out, body,
            "one byte past the limit ({with_length}): as sent"
        );
        assert_eq!(
            passthroughs(e.report()),
            [Reason::ResponseTooLarge],
            "({with_length})"
        );
    }
}
