//! The request rewrite for the project stage: the query argument is read
//! and taken out where the trim intent is, in the same one rewrite.

use super::*;

const CALL_WITH_QUERY: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rows","arguments":{"jmespath":"[?id < `2`].name","limit":5,"expected_info":"ids"}}}"#;

/// Sends the call in two chunks; returns what went upstream.
fn request(e: &mut Exchange, body: &[u8], sessions: &mut dyn Services) -> Vec<u8> {
    let (a, b) = body.split_at(40);
    let first = e.request_chunk(a, false, sessions);
    let last = e.request_chunk(b, true, sessions);
    let mut sent = sent_by(&first, a);
    sent.extend(sent_by(&last, b));
    sent
}

fn arguments(upstream: &[u8]) -> Value {
    serde_json::from_slice::<Value>(upstream).unwrap()["params"]["arguments"].clone()
}

#[test]
fn the_query_argument_is_taken_out_and_applied() {
    let mut e = exchange(r#"{"project":{"queries":true}}"#);
    let stream = StreamInfo::default();
    let plan = e.request_headers(head(&stream, "POST", Some("application/json")));
    assert!(plan.remove_content_length);
    let upstream = request(&mut e, CALL_WITH_QUERY, &mut NoServices);
    // Trim is off: its intent argument is the server's business.
    assert_eq!(
        arguments(&upstream),
        json!({"limit": 5, "expected_info": "ids"})
    );
    e.response_headers(json_head(200), &mut NoServices);
    let (sent, _) = respond(&mut e, &[result_data(1).as_bytes()]);
    let v: Value = serde_json::from_slice(&sent).unwrap();
    assert_eq!(v["result"]["content"][0]["text"], r#"["n0","n1"]"#);
    assert_eq!(
        reasons(&e),
        vec![
            Outcome::Queried,
            Outcome::Passthrough(Reason::BelowMinBytes)
        ]
    );
}

#[test]
fn the_intent_and_the_query_come_out_in_one_rewrite() {
    let config = r#"{"trim":{"enabled":true},"project":{"queries":true}}"#;
    let mut e = exchange(config);
    let stream = StreamInfo::default();
    e.request_headers(head(&stream, "POST", Some("application/json")));
    let upstream = request(&mut e, CALL_WITH_QUERY, &mut NoServices);
    assert_eq!(arguments(&upstream), json!({"limit": 5}));
}

#[test]
fn queries_off_everywhere_leave_the_request_alone() {
    let mut e = exchange("{}");
    let stream = StreamInfo::default();
    let plan = e.request_headers(head(&stream, "POST", Some("application/json")));
    assert!(!plan.remove_content_length);
    let (a, b) = CALL_WITH_QUERY.split_at(40);
    assert_eq!(e.request_chunk(a, false, &mut NoServices), Step::input());
    assert_eq!(e.request_chunk(b, true, &mut NoServices), Step::input());
}

/// 2024-11-05 HTTP+SSE: the POST carries the query, the GET stream carries
/// the result; the session record (`q`) brings them together.
#[test]
fn a_legacy_session_applies_the_query_its_post_carried() {
    let config = r#"{"project":{"queries":true}}"#;
    let mut shared = crate::shared::SharedMemory::default();
    let mut post = exchange(config);
    let stream = StreamInfo::default();
    post.request_headers(RequestHead {
        path: "/messages/?session_id=abc123",
        ..head(&stream, "POST", Some("application/json"))
    });
    let upstream = request(&mut post, CALL_WITH_QUERY, &mut shared);
    assert!(!text_of(&upstream).contains("jmespath"));
    // Recorded once the server accepts the POST.
    post.response_headers(json_head(202), &mut shared);

    let mut get = exchange(config);
    get.request_headers(RequestHead {
        path: "/sse",
        content_type: None,
        accept: Some("text/event-stream"),
        ..head(&stream, "GET", None)
    });
    get.response_headers(streams::sse_head(), &mut shared);
    let events = format!(
        "event: endpoint\ndata: /messages/?session_id=abc123\n\nevent: message\ndata: {}\n\n",
        result_data(1)
    );
    let step = get.response_chunk(events.as_bytes(), false, &mut shared);
    let out = text_of(out_of(&step).unwrap());
    // The endpoint event goes on as it came; the message is rewritten.
    let message = out
        .split("data: ")
        .nth(2)
        .and_then(|m| m.split('\n').next())
        .unwrap();
    let v: Value = serde_json::from_str(message).unwrap();
    assert_eq!(v["result"]["content"][0]["text"], r#"["n0","n1"]"#);
    assert!(
        shared
            .entries()
            .all(|(k, (v, _))| v.is_empty() || k == "mcp_toon.legacy.key"),
        "the record is used up"
    );
}

/// TOON, clean and trim off change nothing, but the project stage still
/// does: a call with the agent's query, or to a tool with operator rules,
/// is not decided at its request (issue 14 `answers_unchanged`).
#[test]
fn projection_alone_keeps_a_call_read() {
    let off = r#""toon":{"mode":"off"},"clean":{"compact_json":false}"#;
    let queried = format!(r#"{{{off},"project":{{"queries":true}}}}"#);
    let mut e = exchange(&queried);
    let stream = StreamInfo::default();
    e.request_headers(head(&stream, "POST", Some("application/json")));
    request(&mut e, CALL_WITH_QUERY, &mut NoServices);
    assert!(!e.ignores_response(), "{:?}", e.report());
    e.response_headers(json_head(200), &mut NoServices);
    let (sent, _) = respond(&mut e, &[result_data(1).as_bytes()]);
    let v: Value = serde_json::from_slice(&sent).unwrap();
    assert_eq!(v["result"]["content"][0]["text"], r#"["n0","n1"]"#);

    let ruled = format!(r#"{{{off},"project":{{"drop":["[].name"]}}}}"#);
    let mut e = exchange(&ruled);
    e.request_headers(head(&stream, "POST", Some("application/json")));
    let plain = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rows","arguments":{}}}"#;
    request(&mut e, plain, &mut NoServices);
    assert!(!e.ignores_response(), "{:?}", e.report());
    e.response_headers(json_head(200), &mut NoServices);
    let (sent, _) = respond(&mut e, &[result_data(1).as_bytes()]);
    let v: Value = serde_json::from_slice(&sent).unwrap();
    let text = v["result"]["content"][0]["text"].as_str().unwrap();
    assert!(!text.contains("\"name\""), "{text}");
    assert!(
        reasons(&e).contains(&Outcome::Projected),
        "{:?}",
        reasons(&e)
    );
}
