use std::sync::Arc;

use serde_json::{json, Value};

use super::*;
use crate::outcome::Outcome;

fn exchange(config: &str) -> Exchange {
    Exchange::new(Arc::new(Settings::from_json(config).unwrap()))
}

fn head<'a>(stream: &'a StreamInfo, method: &'a str, ct: Option<&'a str>) -> RequestHead<'a> {
    RequestHead {
        stream,
        method,
        path: "/mcp",
        content_type: ct,
        accept: Some("application/json, text/event-stream"),
        end_of_stream: false,
    }
}

fn json_head(status: u16) -> ResponseHead<'static> {
    ResponseHead {
        status: Some(status),
        content_type: Some("application/json"),
        content_encoding: None,
        end_of_stream: false,
    }
}

const CALL: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rows"}}"#;

fn reasons(e: &Exchange) -> Vec<Outcome> {
    e.report().decisions.iter().map(|d| d.outcome).collect()
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
            remove_content_length: false
        }
    );
    assert_eq!(e.request_body(10, false), BodyStep::Wait);
    assert_eq!(e.request_body(CALL.len(), true), BodyStep::Ready);
    assert_eq!(e.request_complete(CALL, &mut NoSessions), None);
}

#[test]
fn a_tool_call_is_buffered_and_rewritten() {
    let mut e = exchange("{}");
    into_tool_call(&mut e);
    assert_eq!(e.response_headers(json_head(200)), ResponsePlan::Buffer);
    assert_eq!(e.response_body(100, false), BodyStep::Wait);
    let rows: Vec<Value> = (0..30)
        .map(|i| json!({"id": i, "name": format!("n{i}")}))
        .collect();
    let text = Value::Array(rows).to_string();
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}})
            .to_string();
    assert_eq!(e.response_body(body.len(), true), BodyStep::Ready);
    assert!(matches!(
        e.response_complete(body.into_bytes()),
        Step::Replace(_)
    ));
    assert_eq!(reasons(&e), vec![Outcome::Encoded]);
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
        assert_eq!(e.response_headers(json_head(200)), ResponsePlan::Pass);
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
    e.request_complete(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        &mut NoSessions,
    );
    assert_eq!(e.response_headers(json_head(200)), ResponsePlan::Pass);
    assert_eq!(
        reasons(&e),
        vec![Outcome::Passthrough(Reason::NotToolsCall)]
    );

    let mut e = exchange(r#"{"max_body_bytes":2048}"#);
    e.request_headers(head(&stream, "POST", Some("application/json")));
    assert_eq!(e.request_body(4096, false), BodyStep::Pass);
    assert_eq!(e.response_headers(json_head(200)), ResponsePlan::Pass);
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
    ];
    for (h, reason) in cases {
        let mut e = exchange("{}");
        into_tool_call(&mut e);
        assert_eq!(e.response_headers(h), ResponsePlan::Pass, "{reason:?}");
        assert_eq!(reasons(&e), vec![Outcome::Passthrough(reason)]);
    }
    let mut e = exchange("{}");
    into_tool_call(&mut e);
    let identity = ResponseHead {
        content_encoding: Some("identity"),
        ..json_head(200)
    };
    assert_eq!(e.response_headers(identity), ResponsePlan::Buffer);
}

#[test]
fn oversize_response_stops_buffering_and_passes() {
    let mut e = exchange(r#"{"max_body_bytes":2048}"#);
    into_tool_call(&mut e);
    assert_eq!(e.response_headers(json_head(200)), ResponsePlan::Buffer);
    assert_eq!(e.response_body(1024, false), BodyStep::Wait);
    assert_eq!(e.response_body(4096, false), BodyStep::Pass);
    assert_eq!(e.response_body(8192, true), BodyStep::Pass);
    assert_eq!(
        reasons(&e),
        vec![Outcome::Passthrough(Reason::ResponseTooLarge)]
    );
}

#[test]
fn media_type_drops_parameters() {
    assert_eq!(
        media_type("Application/JSON; charset=utf-8"),
        "application/json"
    );
    assert_eq!(media_type(""), "");
}

mod streams {
    use std::collections::HashMap;

    use super::*;
    use crate::stage::trim::LlmReply;

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

    const PROGRESS: &str = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#;

    fn sse_head() -> ResponseHead<'static> {
        ResponseHead {
            content_type: Some("text/event-stream"),
            ..json_head(200)
        }
    }

    fn text_of(out: &[u8]) -> String {
        String::from_utf8(out.to_vec()).unwrap()
    }

    /// Feeds chunks the way the host does: after `Replace` the buffer starts
    /// afresh; after `Hold` it keeps growing.
    fn feed(e: &mut Exchange, chunks: &[&[u8]]) -> Vec<Step> {
        let mut steps = Vec::new();
        let mut buffer: Vec<u8> = Vec::new();
        for (i, chunk) in chunks.iter().enumerate() {
            buffer.extend_from_slice(chunk);
            let end = i + 1 == chunks.len();
            assert_eq!(e.response_body(buffer.len(), end), BodyStep::Stream);
            let step = e.stream_body(&buffer, end, &mut NoSessions);
            if matches!(step, Step::Replace(_)) {
                buffer.clear();
            }
            steps.push(step);
        }
        steps
    }

    #[test]
    fn progress_goes_out_at_once_and_the_result_is_rewritten() {
        let mut e = exchange("{}");
        into_tool_call(&mut e);
        assert_eq!(e.response_headers(sse_head()), ResponsePlan::Stream);
        let first = format!(
            "event: message\r\ndata: {PROGRESS}\r\n\r\ndata: {}",
            &result_data(1)[..20]
        );
        let second = format!("{}\r\n\r\n", &result_data(1)[20..]);
        let steps = feed(&mut e, &[first.as_bytes(), second.as_bytes()]);
        let Step::Replace(out1) = &steps[0] else {
            panic!("{steps:?}")
        };
        assert_eq!(
            text_of(out1),
            format!("event: message\r\ndata: {PROGRESS}\r\n\r\n")
        );
        let Step::Replace(out2) = &steps[1] else {
            panic!("{steps:?}")
        };
        let out2 = text_of(out2);
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
        let whole = {
            let mut e = exchange("{}");
            into_tool_call(&mut e);
            e.response_headers(sse_head());
            let mut out = Vec::new();
            for step in feed(&mut e, &[stream.as_bytes()]) {
                if let Step::Replace(b) = step {
                    out.extend(b);
                }
            }
            out
        };
        assert_ne!(whole, stream.as_bytes());
        for cut in 0..=stream.len() {
            let mut e = exchange("{}");
            into_tool_call(&mut e);
            e.response_headers(sse_head());
            let (a, b) = stream.as_bytes().split_at(cut);
            let mut out = Vec::new();
            for step in feed(&mut e, &[a, b]) {
                if let Step::Replace(bytes) = step {
                    out.extend(bytes);
                }
            }
            assert_eq!(out, whole, "cut at {cut}");
        }
    }

    #[test]
    fn oversize_and_truncated_events_pass_unchanged_and_counted() {
        let mut e = exchange(r#"{"max_event_bytes":1024}"#);
        into_tool_call(&mut e);
        e.response_headers(sse_head());
        let big = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": table_text().repeat(3)}]}});
        let stream = format!("data: {big}\n\ndata: {{\"jsonrpc\":");
        let mut out = Vec::new();
        for step in feed(&mut e, &[stream.as_bytes()]) {
            if let Step::Replace(b) = step {
                out.extend(b);
            }
        }
        assert_eq!(out, stream.as_bytes());
        assert_eq!(
            reasons(&e),
            vec![
                Outcome::Passthrough(Reason::EventTooLarge),
                Outcome::Passthrough(Reason::StreamTruncated)
            ]
        );
    }

    #[test]
    fn a_trim_callout_holds_the_stream_until_the_reply() {
        let config = r#"{"trim":{"enabled":true,"threshold_bytes":100}}"#;
        let mut e = exchange(config);
        let stream = StreamInfo::default();
        e.request_headers(head(&stream, "POST", Some("application/json")));
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rows","arguments":{"expected_info":"ids 1 and 2"}}}"#;
        let stripped = e.request_complete(call, &mut NoSessions).unwrap();
        assert!(!text_of(&stripped).contains("expected_info"));
        e.response_headers(sse_head());
        let body = format!("data: {}\n\n", result_data(1));
        let mut buffer = body.as_bytes().to_vec();
        let step = e.stream_body(&buffer, false, &mut NoSessions);
        let Step::Callout(request) = step else {
            panic!("{step:?}")
        };
        assert_eq!(request.cluster, "llm");
        // More bytes arrive while the call is in flight: held.
        let later = format!("data: {PROGRESS}\n\n");
        buffer.extend_from_slice(later.as_bytes());
        assert_eq!(e.stream_body(&buffer, true, &mut NoSessions), Step::Hold);
        let extracted = r#"[{"id":1,"name":"n1"},{"id":2,"name":"n2"}]"#;
        let reply = LlmReply::Response {
            status: 200,
            body: json!({"choices": [{"message": {"role": "assistant", "content": extracted}}]})
                .to_string()
                .into_bytes(),
        };
        let Step::Replace(out) = e.callout_reply(&reply, &mut NoSessions) else {
            panic!()
        };
        let out = text_of(&out);
        assert!(out.ends_with(&later), "held events follow in order");
        let data = out
            .strip_prefix("data: ")
            .unwrap()
            .split("\n\n")
            .next()
            .unwrap();
        let v: Value = serde_json::from_str(data).unwrap();
        assert_eq!(v["result"]["content"][0]["text"], extracted);
        assert_eq!(
            reasons(&e),
            vec![
                Outcome::Trimmed,
                Outcome::Passthrough(Reason::BelowMinBytes)
            ]
        );
    }

    #[derive(Default)]
    struct Shared(HashMap<String, Vec<u8>>);

    impl SessionStore for Shared {
        fn get(&self, key: &str) -> Option<Vec<u8>> {
            self.0.get(key).cloned()
        }
        fn set(&mut self, key: &str, value: &[u8]) {
            self.0.insert(key.to_string(), value.to_vec());
        }
    }

    fn legacy_get(e: &mut Exchange) {
        let stream = StreamInfo::default();
        let h = RequestHead {
            method: "GET",
            path: "/sse",
            content_type: None,
            accept: Some("text/event-stream"),
            ..head(&stream, "GET", None)
        };
        assert_eq!(e.request_headers(h), RequestPlan::default());
        assert_eq!(e.response_headers(sse_head()), ResponsePlan::Stream);
    }

    fn legacy_post(e: &mut Exchange, shared: &mut Shared, tool: &str) {
        let stream = StreamInfo::default();
        let h = RequestHead {
            path: "/messages/?session_id=abc123",
            ..head(&stream, "POST", Some("application/json"))
        };
        e.request_headers(h);
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"{tool}"}}}}"#
        );
        e.request_complete(body.as_bytes(), shared);
    }

    fn legacy_stream(e: &mut Exchange, shared: &mut Shared) -> String {
        let stream = format!(
            "event: endpoint\ndata: /messages/?session_id=abc123\n\nevent: message\ndata: {}\n\n",
            result_data(7)
        );
        let Step::Replace(out) = e.stream_body(stream.as_bytes(), false, shared) else {
            panic!()
        };
        text_of(&out)
    }

    #[test]
    fn legacy_stream_uses_the_tool_recorded_by_the_post() {
        let config = r#"{"tools":{"quiet":{"toon":{"mode":"off"}}}}"#;
        let mut shared = Shared::default();
        let mut post = exchange(config);
        legacy_post(&mut post, &mut shared, "quiet");
        let mut get = exchange(config);
        legacy_get(&mut get);
        let out = legacy_stream(&mut get, &mut shared);
        assert!(
            !out.contains("mcp-toon/v1"),
            "the per-tool override applied"
        );
        assert_eq!(get.report().decisions[0].tool.as_deref(), Some("quiet"));
        assert_eq!(reasons(&get), vec![Outcome::Passthrough(Reason::ModeOff)]);
        assert!(
            shared.0.values().all(Vec::is_empty),
            "records are cleared once used"
        );
    }

    #[test]
    fn legacy_stream_without_records_recognises_tool_results_by_shape() {
        let mut get = exchange("{}");
        legacy_get(&mut get);
        let out = legacy_stream(&mut get, &mut Shared::default());
        assert!(out.starts_with(
            "event: endpoint\ndata: /messages/?session_id=abc123\n\nevent: message\ndata: "
        ));
        assert!(out.contains("[mcp-toon/v1]"));
        assert_eq!(reasons(&get), vec![Outcome::Encoded]);
    }
}
