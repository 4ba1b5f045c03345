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
        content_type: ct,
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
    assert_eq!(e.request_complete(CALL), None);
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
        Completion::Done(Some(_))
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
        assert_eq!(
            e.request_headers(head(&stream, method, ct)),
            RequestPlan::default()
        );
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
    e.request_complete(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
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
                content_type: Some("text/event-stream"),
                ..json_head(200)
            },
            Reason::EventStream,
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
