use std::collections::HashMap;

use serde_json::{json, Value};

use super::*;
use crate::outcome::Outcome;
use crate::testkit::{exchange, request_head as head, sent as sent_by};

fn json_head(status: u16) -> ResponseHead<'static> {
    ResponseHead {
        status: Some(status),
        content_type: Some("application/json"),
        content_encoding: None,
        content_length: None,
        end_of_stream: false,
    }
}

const CALL: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rows"}}"#;

fn reasons(e: &Exchange) -> Vec<Outcome> {
    e.report().decisions.iter().map(|d| d.outcome).collect()
}

fn table_text() -> String {
    Value::Array(
        (0..30)
            .map(|i| json!({"id": i, "name": format!("n{i}")}))
            .collect(),
    )
    .to_string()
}

fn result_data(id: u32) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": table_text()}]}}).to_string()
}

fn text_of(out: &[u8]) -> String {
    String::from_utf8(out.to_vec()).unwrap()
}

fn into_tool_call(e: &mut Exchange) {
    let stream = StreamInfo::default();
    let plan = e.request_headers(head(
        &stream,
        "POST",
        Some("application/json; charset=utf-8"),
    ));
    assert_eq!(
        plan,
        RequestPlan {
            strip_accept_encoding: true,
            read_body: true,
            remove_content_length: false,
            pause_headers: false,
            remove_reissue_mark: false,
        }
    );
    let (a, b) = CALL.split_at(10);
    // Without trim the request is only read: chunks go upstream untouched.
    assert_eq!(e.request_chunk(a, false, &mut NoServices), Step::input());
    assert_eq!(e.request_chunk(b, true, &mut NoServices), Step::input());
}

/// The bytes of a step that is not the input unchanged.
fn out_of(step: &Step) -> Option<&[u8]> {
    match &step.out {
        Out::Input => None,
        Out::Bytes { bytes, .. } => Some(bytes),
    }
}

/// Sends a response body in chunks; returns what goes on, in order, and
/// the steps.
fn respond(e: &mut Exchange, chunks: &[&[u8]]) -> (Vec<u8>, Vec<Step>) {
    let mut sent = Vec::new();
    let mut steps = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        let end = i + 1 == chunks.len();
        let step = e.response_chunk(chunk, end, &mut NoServices);
        sent.extend(sent_by(&step, chunk));
        steps.push(step);
    }
    (sent, steps)
}

#[test]
fn a_json_tool_result_is_collected_and_rewritten() {
    let mut e = exchange("{}");
    into_tool_call(&mut e);
    assert_eq!(
        e.response_headers(json_head(200), &mut NoServices),
        ResponsePlan::Rewrite {
            hold_headers: false
        }
    );
    let body = result_data(1);
    let (a, b) = body.as_bytes().split_at(100);
    let (sent, steps) = respond(&mut e, &[a, b]);
    assert_eq!(
        steps[0],
        Step::swallow(Flow::Continue),
        "the chunk is taken out of Envoy's buffer"
    );
    let v: Value = serde_json::from_slice(&sent).unwrap();
    assert!(v["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("[mcp-toon/v1]"));
    assert_eq!(steps[1].content_length, None);
    assert_eq!(reasons(&e), vec![Outcome::Encoded]);
    assert!(e.is_done());
}

/// HTTP/2 clients may end the request in a frame of its own, after the
/// server answered (e2e: test_bad_input.py, HTTP/2): the kept body decides.
#[test]
fn a_response_before_the_request_ended_uses_the_body_so_far() {
    let stream = StreamInfo::default();
    let mut e = exchange("{}");
    e.request_headers(head(&stream, "POST", Some("application/json")));
    assert_eq!(e.request_chunk(CALL, false, &mut NoServices), Step::input());
    e.response_started(&mut NoServices);
    assert!(!e.reads_request());
    assert_eq!(
        e.response_headers(json_head(200), &mut NoServices),
        ResponsePlan::Rewrite {
            hold_headers: false
        }
    );
    // The request's end arriving late changes nothing.
    assert_eq!(e.request_chunk(b"", true, &mut NoServices), Step::input());
    let body = result_data(1);
    let (sent, _) = respond(&mut e, &[body.as_bytes()]);
    assert!(String::from_utf8(sent).unwrap().contains("[mcp-toon/v1]"));
    assert_eq!(reasons(&e), vec![Outcome::Encoded]);

    // Half a request: counted, the response passes.
    let mut e = exchange("{}");
    e.request_headers(head(&stream, "POST", Some("application/json")));
    e.request_chunk(&CALL[..20], false, &mut NoServices);
    e.response_started(&mut NoServices);
    assert_eq!(
        e.response_headers(json_head(200), &mut NoServices),
        ResponsePlan::Pass
    );
    assert_eq!(
        reasons(&e),
        vec![Outcome::Passthrough(Reason::RequestNotJsonRpc)]
    );

    // After a normal end, response_started is a no-op.
    let mut e = exchange("{}");
    into_tool_call(&mut e);
    e.response_started(&mut NoServices);
    assert!(matches!(
        e.response_headers(json_head(200), &mut NoServices),
        ResponsePlan::Rewrite { .. }
    ));
}

#[test]
fn unchanged_bodies_go_back_exactly() {
    let mut e = exchange("{}");
    into_tool_call(&mut e);
    e.response_headers(json_head(200), &mut NoServices);
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi"}]}})
            .to_string();
    let (a, b) = body.as_bytes().split_at(7);
    let (sent, _) = respond(&mut e, &[a, b]);
    assert_eq!(sent, body.as_bytes());
    // One chunk: nothing was taken out, nothing to replace.
    let mut e = exchange("{}");
    into_tool_call(&mut e);
    e.response_headers(json_head(200), &mut NoServices);
    let (_, steps) = respond(&mut e, &[body.as_bytes()]);
    assert_eq!(steps[0], Step::input());
}

#[test]
fn held_headers_get_an_exact_length() {
    let mut e = exchange(r#"{"hold_headers":true}"#);
    into_tool_call(&mut e);
    let body = result_data(1);
    let head = ResponseHead {
        content_length: Some(body.len()),
        ..json_head(200)
    };
    assert_eq!(
        e.response_headers(head, &mut NoServices),
        ResponsePlan::Rewrite { hold_headers: true }
    );
    let (a, b) = body.as_bytes().split_at(50);
    let (sent, steps) = respond(&mut e, &[a, b]);
    assert_eq!(
        steps[0].flow,
        Flow::Pause,
        "continuing would release the held headers"
    );
    assert_eq!(steps[1].content_length, Some(sent.len()));
    assert!(sent.len() < body.len());
    // An unknown length never holds; an oversize one passes at once, its
    // content-length intact.
    let mut e = exchange(r#"{"hold_headers":true}"#);
    into_tool_call(&mut e);
    let head = ResponseHead {
        content_length: None,
        ..json_head(200)
    };
    assert_eq!(
        e.response_headers(head, &mut NoServices),
        ResponsePlan::Rewrite {
            hold_headers: false
        }
    );
    let mut e = exchange(r#"{"hold_headers":true}"#);
    into_tool_call(&mut e);
    let head = ResponseHead {
        content_length: Some((16 << 20) + 1),
        ..json_head(200)
    };
    assert_eq!(
        e.response_headers(head, &mut NoServices),
        ResponsePlan::Pass
    );
    assert_eq!(
        reasons(&e),
        vec![Outcome::Passthrough(Reason::ResponseTooLarge)]
    );
}

#[test]
fn requests_that_are_not_json_rpc_posts_pass() {
    let stream = StreamInfo::default();
    for (method, ct) in [
        ("GET", Some("application/json")),
        ("POST", Some("text/plain")),
        ("POST", None),
    ] {
        let mut e = exchange("{}");
        let h = RequestHead {
            accept: Some("application/json"),
            ..head(&stream, method, ct)
        };
        assert_eq!(e.request_headers(h), RequestPlan::default());
        assert!(!e.reads_request());
        assert_eq!(
            e.response_headers(json_head(200), &mut NoServices),
            ResponsePlan::Pass
        );
        assert!(!e.reads_response());
        assert_eq!(
            reasons(&e),
            vec![Outcome::Passthrough(Reason::RequestNotJsonRpc)]
        );
    }
    let mut e = exchange(r#"{"strip_accept_encoding":false}"#);
    let plan = e.request_headers(head(&stream, "POST", Some("application/json")));
    assert!(!plan.strip_accept_encoding && plan.read_body);
}

#[test]
fn other_methods_and_oversize_requests_pass() {
    let stream = StreamInfo::default();
    let mut e = exchange("{}");
    e.request_headers(head(&stream, "POST", Some("application/json")));
    e.request_chunk(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        true,
        &mut NoServices,
    );
    assert_eq!(
        e.response_headers(json_head(200), &mut NoServices),
        ResponsePlan::Pass
    );
    assert_eq!(
        reasons(&e),
        vec![Outcome::Passthrough(Reason::NotToolsCall)]
    );

    let mut e = exchange(r#"{"max_body_bytes":2048}"#);
    e.request_headers(head(&stream, "POST", Some("application/json")));
    assert_eq!(
        e.request_chunk(&[b' '; 4096], false, &mut NoServices),
        Step::input()
    );
    assert_eq!(
        e.response_headers(json_head(200), &mut NoServices),
        ResponsePlan::Pass
    );
    assert_eq!(
        reasons(&e),
        vec![Outcome::Passthrough(Reason::RequestTooLarge)]
    );
}

#[test]
fn response_heads_that_pass() {
    let cases = [
        (
            ResponseHead {
                status: Some(500),
                ..json_head(200)
            },
            Reason::HttpStatus,
        ),
        (
            ResponseHead {
                content_encoding: Some("gzip"),
                ..json_head(200)
            },
            Reason::ContentEncoding,
        ),
        (
            ResponseHead {
                content_type: Some("text/html"),
                ..json_head(200)
            },
            Reason::NotJsonResponse,
        ),
        (
            ResponseHead {
                end_of_stream: true,
                ..json_head(202)
            },
            Reason::NotJsonResponse,
        ),
        // An empty 200 JSON body is malformed, as it is when an empty
        // chunk ends it (e2e: test_bad_input.py, empty_body).
        (
            ResponseHead {
                end_of_stream: true,
                ..json_head(200)
            },
            Reason::MalformedResponse,
        ),
    ];
    for (h, reason) in cases {
        let mut e = exchange("{}");
        into_tool_call(&mut e);
        assert_eq!(
            e.response_headers(h, &mut NoServices),
            ResponsePlan::Pass,
            "{reason:?}"
        );
        assert_eq!(reasons(&e), vec![Outcome::Passthrough(reason)]);
    }
    let mut e = exchange("{}");
    into_tool_call(&mut e);
    let identity = ResponseHead {
        content_encoding: Some("identity"),
        ..json_head(200)
    };
    assert_eq!(
        e.response_headers(identity, &mut NoServices),
        ResponsePlan::Rewrite {
            hold_headers: false
        }
    );
}

#[test]
fn oversize_response_releases_what_it_took_and_passes() {
    let mut e = exchange(r#"{"max_response_bytes":2048}"#);
    into_tool_call(&mut e);
    e.response_headers(json_head(200), &mut NoServices);
    // A JSON string that never ends within the limit.
    let body: Vec<u8> = b"{\"t\":\""
        .iter()
        .copied()
        .chain((0..4993u32).map(|i| b'a' + (i % 26) as u8))
        .collect();
    let chunks: Vec<&[u8]> = body.chunks(1000).collect();
    let (sent, steps) = respond(&mut e, &chunks);
    assert_eq!(sent, body, "every byte arrives, in order");
    assert_eq!(
        out_of(&steps[2]).map(<[u8]>::len),
        Some(3000),
        "what was taken goes back in front of the chunk"
    );
    assert_eq!(steps[3], Step::input());
    assert_eq!(
        reasons(&e),
        vec![Outcome::Passthrough(Reason::ResponseTooLarge)]
    );
}

#[test]
fn media_type_drops_parameters() {
    assert_eq!(
        media_type(" Application/JSON ; charset=utf-8"),
        "Application/JSON"
    );
    assert_eq!(media_type(""), "");
    assert!(is_media(
        "Application/JSON; charset=utf-8",
        "application/json"
    ));
    assert!(is_media("TEXT/event-stream", "text/event-stream"));
    assert!(!is_media("application/json-seq", "application/json"));
    assert!(!is_media("", "application/json"));
}

mod trim {
    use super::*;
    use crate::shared::SharedMemory as Store;
    use crate::stage::trim::LlmReply;

    /// The text of a trimmed block that TOON left alone: its note, then the
    /// extraction.
    fn noted(extracted: &str) -> String {
        format!(
            "{}\n{extracted}",
            crate::stage::trim::header("ids 1 and 2", "expected_info")
        )
    }

    const CONFIG: &str = r#"{"trim":{"enabled":true,"threshold_bytes":100}}"#;
    const CALL_WITH_INTENT: &[u8] =
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rows","arguments":{"expected_info":"ids 1 and 2"}}}"#;

    fn reply() -> (String, LlmReply) {
        let extracted = r#"[{"id":1,"name":"n1"},{"id":2,"name":"n2"}]"#.to_string();
        let body = json!({"choices": [{"message": {"role": "assistant", "content": extracted}}]})
            .to_string()
            .into_bytes();
        (extracted, LlmReply::Response { status: 200, body })
    }

    fn into_trimmed_call(e: &mut Exchange) {
        let stream = StreamInfo::default();
        let plan = e.request_headers(head(&stream, "POST", Some("application/json")));
        assert!(plan.remove_content_length);
        let (a, b) = CALL_WITH_INTENT.split_at(30);
        assert_eq!(
            e.request_chunk(a, false, &mut NoServices),
            Step::swallow(Flow::Continue)
        );
        let step = e.request_chunk(b, true, &mut NoServices);
        let sent = text_of(out_of(&step).unwrap());
        assert!(
            !sent.contains("expected_info") && sent.contains(r#""name":"rows""#),
            "{sent}"
        );
    }

    #[test]
    fn json_body_waits_for_the_callout_then_goes_whole() {
        let mut e = exchange(CONFIG);
        into_trimmed_call(&mut e);
        e.response_headers(json_head(200), &mut NoServices);
        let body = result_data(1);
        let (a, b) = body.as_bytes().split_at(100);
        assert_eq!(
            e.response_chunk(a, false, &mut Store::default()),
            Step::swallow(Flow::Continue)
        );
        let step = e.response_chunk(b, true, &mut Store::default());
        assert_eq!(
            (out_of(&step), step.flow),
            (Some(&b""[..]), Flow::Pause),
            "everything waits for the reply"
        );
        let call = step.callout.unwrap();
        assert!(text_of(&call.body).contains("ids 1 and 2"));
        assert!(!e.is_done());
        let (extracted, reply) = reply();
        let done = e.callout_reply(&reply, &mut NoServices);
        assert_eq!(done.flow, Flow::Continue);
        let v: Value = serde_json::from_slice(out_of(&done).unwrap()).unwrap();
        assert_eq!(v["result"]["content"][0]["text"], noted(&extracted));
        assert_eq!(
            reasons(&e),
            vec![
                Outcome::Trimmed,
                Outcome::Passthrough(Reason::BelowMinBytes)
            ]
        );
        assert!(e.is_done());
    }

    #[test]
    fn a_failed_call_sends_the_original_whole() {
        let mut e = exchange(CONFIG);
        into_trimmed_call(&mut e);
        e.response_headers(json_head(200), &mut NoServices);
        let body = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "word ".repeat(50)}]}}).to_string();
        let (a, b) = body.as_bytes().split_at(100);
        e.response_chunk(a, false, &mut Store::default());
        assert!(e
            .response_chunk(b, true, &mut Store::default())
            .callout
            .is_some());
        let done = e.callout_reply(&LlmReply::NotSent, &mut NoServices);
        assert_eq!(out_of(&done), Some(body.as_bytes()));
        assert_eq!(
            reasons(&e),
            vec![
                Outcome::Passthrough(Reason::TrimUnavailable),
                Outcome::Passthrough(Reason::BelowMinBytes)
            ]
        );
    }

    #[test]
    fn sse_result_held_while_the_call_runs() {
        let mut e = exchange(CONFIG);
        into_trimmed_call(&mut e);
        e.response_headers(super::streams::sse_head(), &mut NoServices);
        let progress = format!("data: {}\n\n", super::streams::PROGRESS);
        let result = format!("data: {}\n\n", result_data(1));
        // Progress, then the result: progress goes out, the call starts.
        let chunk = format!("{progress}{result}");
        let step = e.response_chunk(chunk.as_bytes(), false, &mut Store::default());
        assert_eq!(out_of(&step), Some(progress.as_bytes()));
        assert_eq!(step.flow, Flow::Pause, "what follows waits for the reply");
        assert!(step.callout.is_some());
        // The stream ends while the call runs: its last events queue.
        let tail = format!("data: {}\n\n", super::streams::PROGRESS);
        let step = e.response_chunk(tail.as_bytes(), true, &mut NoServices);
        assert_eq!(
            (out_of(&step), step.flow, step.callout.is_some()),
            (Some(&b""[..]), Flow::Pause, false)
        );
        let (extracted, reply) = reply();
        let done = e.callout_reply(&reply, &mut NoServices);
        assert_eq!(done.flow, Flow::Continue);
        let out = text_of(out_of(&done).unwrap());
        assert!(out.ends_with(&tail), "held events follow in order");
        let data = out
            .strip_prefix("data: ")
            .unwrap()
            .split("\n\n")
            .next()
            .unwrap();
        let v: Value = serde_json::from_str(data).unwrap();
        assert_eq!(v["result"]["content"][0]["text"], noted(&extracted));
    }

    /// Issue 13: on a long-lived stream the next upstream byte may never
    /// come; the reply's step sends the result itself.
    #[test]
    fn sse_reply_before_the_end_goes_out_with_the_reply() {
        let mut e = exchange(CONFIG);
        into_trimmed_call(&mut e);
        e.response_headers(super::streams::sse_head(), &mut NoServices);
        let result = format!("data: {}\n\n", result_data(1));
        let step = e.response_chunk(result.as_bytes(), false, &mut Store::default());
        assert!(step.callout.is_some());
        let (extracted, reply) = reply();
        let after = e.callout_reply(&reply, &mut NoServices);
        assert_eq!(after.flow, Flow::Continue);
        let out = text_of(out_of(&after).unwrap());
        assert!(
            out.starts_with("data: {")
                && out.contains(&serde_json::to_string(&noted(&extracted)).unwrap()),
            "{out}"
        );
        let last = b": bye\n\n";
        let step = e.response_chunk(last, true, &mut NoServices);
        assert_eq!(step, Step::input());
    }
}

mod streams {
    use super::*;

    pub(super) const PROGRESS: &str = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#;

    pub(super) fn sse_head() -> ResponseHead<'static> {
        ResponseHead {
            content_type: Some("text/event-stream"),
            ..json_head(200)
        }
    }

    #[test]
    fn progress_goes_out_at_once_and_the_result_is_rewritten() {
        let mut e = exchange("{}");
        into_tool_call(&mut e);
        assert_eq!(
            e.response_headers(sse_head(), &mut NoServices),
            ResponsePlan::Rewrite {
                hold_headers: false
            }
        );
        let data = result_data(1);
        let first = format!(
            "event: message\r\ndata: {PROGRESS}\r\n\r\ndata: {}",
            &data[..20]
        );
        let second = format!("{}\r\n\r\n", &data[20..]);
        let (_, steps) = respond(&mut e, &[first.as_bytes(), second.as_bytes()]);
        assert_eq!(
            text_of(out_of(&steps[0]).unwrap()),
            format!("event: message\r\ndata: {PROGRESS}\r\n\r\n")
        );
        let out2 = text_of(out_of(&steps[1]).unwrap());
        let data = out2
            .strip_prefix("data: ")
            .unwrap()
            .strip_suffix("\r\n\r\n")
            .unwrap();
        let v: Value = serde_json::from_str(data).unwrap();
        assert!(v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("[mcp-toon/v1]"));
        assert_eq!(reasons(&e), vec![Outcome::Encoded]);
    }

    #[test]
    fn every_split_gives_the_same_output() {
        let stream = format!(
            "data: {PROGRESS}\n\n: keepalive\n\ndata: {}\n\n",
            result_data(1)
        );
        let run = |chunks: &[&[u8]]| {
            let mut e = exchange("{}");
            into_tool_call(&mut e);
            e.response_headers(sse_head(), &mut NoServices);
            respond(&mut e, chunks).0
        };
        let whole = run(&[stream.as_bytes()]);
        assert_ne!(whole, stream.as_bytes());
        for cut in 0..=stream.len() {
            let (a, b) = stream.as_bytes().split_at(cut);
            assert_eq!(run(&[a, b]), whole, "cut at {cut}");
        }
    }

    #[test]
    fn oversize_and_truncated_events_pass_unchanged_and_counted() {
        let mut e = exchange(r#"{"max_event_bytes":1024}"#);
        into_tool_call(&mut e);
        e.response_headers(sse_head(), &mut NoServices);
        let big = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": table_text().repeat(3)}]}});
        let stream = format!("data: {big}\n\ndata: {{\"jsonrpc\":");
        let (sent, _) = respond(&mut e, &[stream.as_bytes()]);
        assert_eq!(sent, stream.as_bytes());
        assert_eq!(
            reasons(&e),
            vec![
                Outcome::Passthrough(Reason::EventTooLarge),
                Outcome::Passthrough(Reason::StreamTruncated)
            ]
        );
    }

    use crate::shared::SharedMemory as Store;

    fn legacy_get(e: &mut Exchange) {
        let stream = StreamInfo::default();
        let h = RequestHead {
            path: "/sse",
            content_type: None,
            accept: Some("text/event-stream"),
            ..head(&stream, "GET", None)
        };
        assert_eq!(e.request_headers(h), RequestPlan::default());
        assert_eq!(
            e.response_headers(sse_head(), &mut NoServices),
            ResponsePlan::Rewrite {
                hold_headers: false
            }
        );
    }

    fn legacy_post(e: &mut Exchange, shared: &mut Store, tool: &str) {
        let stream = StreamInfo::default();
        let h = RequestHead {
            path: "/messages/?session_id=abc123",
            ..head(&stream, "POST", Some("application/json"))
        };
        e.request_headers(h);
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"{tool}"}}}}"#
        );
        e.request_chunk(body.as_bytes(), true, shared);
        let accepted = ResponseHead {
            content_type: Some("text/plain"),
            content_length: Some(8),
            ..json_head(202)
        };
        assert_eq!(e.response_headers(accepted, shared), ResponsePlan::Pass);
    }

    fn legacy_stream(e: &mut Exchange, shared: &mut Store) -> String {
        let stream = format!(
            "event: endpoint\ndata: /messages/?session_id=abc123\n\nevent: message\ndata: {}\n\n",
            result_data(7)
        );
        let step = e.response_chunk(stream.as_bytes(), false, shared);
        text_of(out_of(&step).unwrap())
    }

    #[test]
    fn legacy_stream_uses_the_tool_recorded_by_the_post() {
        let config = r#"{"tools":{"quiet":{"toon":{"mode":"off"}}}}"#;
        let mut shared = Store::default();
        let mut post = exchange(config);
        legacy_post(&mut post, &mut shared, "quiet");
        let mut get = exchange(config);
        legacy_get(&mut get);
        let stream = format!(
            "event: endpoint\ndata: /messages/?session_id=abc123\n\nevent: message\ndata: {}\n\n",
            result_data(7)
        );
        let step = get.response_chunk(stream.as_bytes(), false, &mut shared);
        assert_eq!(
            step,
            Step::input(),
            "the per-tool override applied: nothing changed"
        );
        assert_eq!(get.report().decisions[0].tool.as_deref(), Some("quiet"));
        assert_eq!(reasons(&get), vec![Outcome::Passthrough(Reason::ModeOff)]);
        assert_eq!(
            shared.values(),
            vec![&shared.get("mcp_toon.legacy.key").unwrap().0[..]],
            "records are cleared once used; the slot hash's key stays"
        );
    }

    #[test]
    fn legacy_stream_without_records_recognises_tool_results_by_shape() {
        let mut get = exchange("{}");
        legacy_get(&mut get);
        let out = legacy_stream(&mut get, &mut Store::default());
        assert!(out.starts_with(
            "event: endpoint\ndata: /messages/?session_id=abc123\n\nevent: message\ndata: "
        ));
        assert!(out.contains("[mcp-toon/v1]"));
        assert_eq!(reasons(&get), vec![Outcome::Encoded]);
    }

    #[test]
    fn legacy_post_accepted_leaves_the_count_to_the_get_stream() {
        // Regression: each 2024-11-05 tools/call POST (answered `202
        // Accepted`, empty) was counted `not_json_response` on top of the
        // decision its result gets on the GET stream.
        let mut shared = Store::default();
        let mut post = exchange("{}");
        legacy_post(&mut post, &mut shared, "rows");
        assert!(post.report().is_empty(), "{:?}", post.report());
        assert!(post.is_done());
        let mut get = exchange("{}");
        legacy_get(&mut get);
        legacy_stream(&mut get, &mut shared);
        assert_eq!(reasons(&get), vec![Outcome::Encoded]);
    }

    /// A 2024-11-05 POST is not decided at its request, even under a policy
    /// that changes nothing: its result is counted where it travels, on the
    /// GET stream, once.
    #[test]
    fn legacy_post_under_a_policy_that_changes_nothing_is_counted_once() {
        let config =
            r#"{"tools":{"quiet":{"toon":{"mode":"off"},"clean":{"compact_json":false}}}}"#;
        let mut shared = Store::default();
        let mut post = exchange(config);
        let stream = StreamInfo::default();
        post.request_headers(RequestHead {
            path: "/messages/?session_id=abc123",
            ..head(&stream, "POST", Some("application/json"))
        });
        let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"quiet"}}"#;
        post.request_chunk(body.as_bytes(), true, &mut shared);
        assert!(post.report().is_empty(), "{:?}", post.report());
        assert_eq!(
            post.response_headers(json_head(202), &mut shared),
            ResponsePlan::Pass
        );
        assert!(post.report().is_empty(), "{:?}", post.report());
        let mut get = exchange(config);
        legacy_get(&mut get);
        let stream = format!(
            "event: endpoint\ndata: /messages/?session_id=abc123\n\nevent: message\ndata: {}\n\n",
            result_data(7)
        );
        let step = get.response_chunk(stream.as_bytes(), false, &mut shared);
        assert_eq!(step, Step::input());
        assert_eq!(reasons(&get), vec![Outcome::Passthrough(Reason::ModeOff)]);
    }

    #[test]
    fn held_bytes_stay_at_one_incomplete_event_however_long_the_stream() {
        let mut e = exchange("{}");
        into_tool_call(&mut e);
        e.response_headers(sse_head(), &mut NoServices);
        let progress = |i: usize| {
            format!(
                "event: message\r\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":1,\"progress\":{i}}}}}\r\n\r\n"
            )
        };
        let mut most = 0;
        for i in 0..5000 {
            let event = progress(i);
            // Each chunk ends inside the next event.
            let (head, tail) = event.split_at(event.len() / 2);
            let first = e.response_chunk(head.as_bytes(), false, &mut NoServices);
            assert_eq!(
                out_of(&first),
                Some(&b""[..]),
                "an incomplete event is held"
            );
            most = most.max(e.held_bytes());
            let second = e.response_chunk(tail.as_bytes(), false, &mut NoServices);
            assert_eq!(out_of(&second), Some(event.as_bytes()));
            assert_eq!(e.held_bytes(), 0, "a complete event goes out at once");
        }
        assert!(most <= progress(4999).len() / 2, "{most}");
        assert!(e.report().is_empty(), "notifications are no decisions");
    }

    #[test]
    fn metrics_counted_in_cuts_add_up_to_the_whole() {
        // A legacy GET stream: results of many calls, counted as they pass.
        let mut e = exchange("{}");
        legacy_get(&mut e);
        let mut cuts = Vec::new();
        let mut counted = 0;
        for id in [7, 8] {
            let event = format!("data: {}\n\n", result_data(id));
            e.response_chunk(event.as_bytes(), false, &mut NoServices);
            cuts.extend(e.report().metrics_since(counted));
            counted = e.report().decisions.len();
        }
        let sum = |list: &[(&'static str, u64)]| {
            let mut m: HashMap<&str, u64> = HashMap::new();
            for (k, v) in list {
                *m.entry(*k).or_default() += v;
            }
            m
        };
        assert_eq!(sum(&cuts), sum(&e.report().metrics()));
        assert_eq!(sum(&cuts)["mcp_toon_encoded"], 2);
    }

    #[test]
    fn a_long_legacy_stream_keeps_a_bounded_record() {
        let mut e = exchange("{}");
        legacy_get(&mut e);
        let mut counted = 0;
        let mut encoded = 0;
        for id in 0..1000 {
            let event = format!("data: {}\n\n", result_data(id));
            e.response_chunk(event.as_bytes(), false, &mut NoServices);
            // What a host does after each callback: count, then forget.
            encoded += e
                .report()
                .metrics_since(counted)
                .iter()
                .filter(|(name, _)| *name == "mcp_toon_encoded")
                .map(|(_, n)| n)
                .sum::<u64>();
            counted = e.report().decisions.len();
            counted -= e.forget_counted(counted);
            assert!(e.report().decisions.len() <= RECORD_DECISIONS);
        }
        assert_eq!(encoded, 1000, "every result counted once");
        assert_eq!(e.report().omitted + e.report().decisions.len(), 1000);
        let record: Value = serde_json::from_str(&e.report().to_json()).unwrap();
        assert_eq!(record["omitted"], 1000 - RECORD_DECISIONS);
        assert_eq!(
            record["decisions"].as_array().unwrap().len(),
            RECORD_DECISIONS
        );
    }
}

mod project;
