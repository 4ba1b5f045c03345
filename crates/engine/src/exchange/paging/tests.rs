use std::sync::Arc;

use serde_json::{json, Value};

use super::super::{Exchange, Flow, Out, RequestHead, ResponseHead, ResponsePlan};
use crate::config::{Settings, StreamInfo};
use crate::exchange::UpstreamReply;
use crate::shared::SharedMemory;

use crate::testkit::{request_head, shared};
use crate::Reason;

const KEY: &str = "0123456789abcdef0123456789abcdef";

fn settings(paging: &str) -> Arc<Settings> {
    Arc::new(
        Settings::from_json(&format!(
            r#"{{"hold_headers":true,"max_body_bytes":2048,"max_response_bytes":2048,"tools":{{"rows":{{"budget":{{"tokens":500}},"paging":{{"enabled":true}}}}}},"paging":{{{paging}}}}}"#
        ))
        .unwrap(),
    )
}

fn stream() -> StreamInfo {
    StreamInfo {
        route: Some("mcp".into()),
        cluster: Some("mcp_upstream".into()),
        authority: Some("localhost".into()),
    }
}

fn rows() -> String {
    let rows: Vec<Value> = (0..400)
        .map(|i| json!({"seq": i, "level": "info", "message": format!("request {i} handled")}))
        .collect();
    Value::Array(rows).to_string()
}

fn result_body(id: u32) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": rows()}]}})
        .to_string()
        .into_bytes()
}

fn call(tool: &str, args: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": tool, "arguments": args}})
        .to_string()
        .into_bytes()
}

fn request(
    e: &mut Exchange,
    body: &[u8],
    accept: &str,
    session: Option<&str>,
    shared: &mut SharedMemory,
) -> super::super::Step {
    let stream = stream();
    let headers: Vec<(String, String)> = session
        .map(|s| vec![("mcp-session-id".to_string(), s.to_string())])
        .unwrap_or_default();
    let plan = e.request_headers(RequestHead {
        accept: Some(accept),
        headers: &headers,
        ..request_head(&stream, "POST", Some("application/json"))
    });
    assert!(plan.pause_headers, "paging holds request headers");
    let (a, b) = body.split_at(body.len() / 2);
    let first = e.request_chunk(a, false, shared);
    // The first half waits, taken out of Envoy's buffer, headers held.
    assert_eq!(first.flow, Flow::Pause);
    assert!(matches!(&first.out, Out::Bytes { bytes, .. } if bytes.is_empty()));
    e.request_chunk(b, true, shared)
}

/// Cuts a result; returns the text items the client got.
fn cut(settings: &Arc<Settings>, session: Option<&str>, shared: &mut SharedMemory) -> Vec<String> {
    let mut e = Exchange::new(Arc::clone(settings));
    let body = call("rows", json!({"n": 400}));
    let step = request(
        &mut e,
        &body,
        "application/json, text/event-stream",
        session,
        shared,
    );
    // Not a page call: the whole body goes on and the headers resume.
    assert_eq!(step.flow, Flow::Continue);
    assert!(matches!(&step.out, Out::Bytes { bytes, .. } if bytes == &body));
    let response = result_body(3);
    assert!(response.len() > 2048, "larger than max_body_bytes");
    let plan = e.response_headers(
        ResponseHead {
            status: Some(200),
            content_type: Some("application/json"),
            content_encoding: None,
            content_length: Some(response.len()),
            end_of_stream: false,
        },
        shared,
    );
    assert_eq!(
        plan,
        ResponsePlan::Rewrite {
            hold_headers: false
        }
    );
    let mut sent = Vec::new();
    for (i, chunk) in response.chunks(1000).enumerate() {
        let end = (i + 1) * 1000 >= response.len();
        let step = e.response_chunk(chunk, end, shared);
        sent.extend(match step.out {
            Out::Input => chunk.to_vec(),
            Out::Bytes { bytes, .. } => bytes,
        });
    }
    assert!(
        e.report().summary().contains("cut=1"),
        "{}",
        e.report().summary()
    );
    let v: Value = serde_json::from_slice(&sent).unwrap();
    v["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["text"].as_str().unwrap().to_string())
        .collect()
}

/// A page's rows: TOON (the marker first) or JSON.
fn decode(text: &str) -> Vec<Value> {
    let json = crate::convert::toon_to_json(text).unwrap_or_else(|_| text.to_string());
    serde_json::from_str(&json).unwrap()
}

fn handle(notice: &str) -> String {
    let start = notice.find("{\"handle\":\"").unwrap() + 11;
    notice[start..start + notice[start..].find('"').unwrap()].to_string()
}

fn page_call(
    settings: &Arc<Settings>,
    h: &str,
    accept: &str,
    session: Option<&str>,
    shared: &mut SharedMemory,
) -> (Exchange, super::super::Step) {
    let mut e = Exchange::new(Arc::clone(settings));
    let step = request(
        &mut e,
        &call("mcp_toon_page", json!({"handle": h})),
        accept,
        session,
        shared,
    );
    (e, step)
}

fn reply_json(step: &super::super::Step) -> Value {
    let reply = step.reply.as_ref().expect("a local reply");
    assert_eq!(reply.status, 200);
    let body = String::from_utf8(reply.body.clone()).unwrap();
    let data = body
        .strip_prefix("event: message\ndata: ")
        .map(|d| d.trim_end().to_string())
        .unwrap_or(body);
    serde_json::from_str(&data).unwrap()
}

#[test]
fn a_page_call_is_answered_from_the_store_without_the_server() {
    let s = settings("");
    let mut shared = shared();
    let texts = cut(&s, None, &mut shared);
    assert_eq!(texts.len(), 2);
    assert!(texts[0].starts_with("[mcp-toon/v1]"), "a TOON table");
    let mut all = decode(&texts[0]);
    let mut notice = texts[1].clone();
    let mut pages = 1;
    for accept in ["application/json, text/event-stream", "text/event-stream"]
        .iter()
        .cycle()
    {
        if !notice.contains("\"handle\"") {
            break;
        }
        let (e, step) = page_call(&s, &handle(&notice), accept, None, &mut shared);
        assert_eq!(step.flow, Flow::Pause);
        assert!(step.upstream.is_none());
        let reply = step.reply.as_ref().unwrap();
        let ct = &reply
            .headers
            .iter()
            .find(|(n, _)| n == "content-type")
            .unwrap()
            .1;
        assert_eq!(
            ct,
            if *accept == "text/event-stream" {
                "text/event-stream"
            } else {
                "application/json"
            }
        );
        let v = reply_json(&step);
        assert_eq!(v["id"], json!(3));
        assert!(v["result"].get("isError").is_none());
        let content = v["result"]["content"].as_array().unwrap();
        all.extend(decode(content[0]["text"].as_str().unwrap()));
        notice = content[1]["text"].as_str().unwrap().to_string();
        assert!(
            e.report().summary().contains("paged=1"),
            "{}",
            e.report().summary()
        );
        assert!(!e.reads_response());
        pages += 1;
    }
    assert!(pages > 3, "{pages}");
    assert_eq!(Value::Array(all).to_string(), rows());
}

#[test]
fn forged_foreign_and_missing_handles_get_a_tool_error() {
    let s = settings("");
    let mut shared = shared();
    let texts = cut(&s, Some("session-a"), &mut shared);
    let good = handle(&texts[1]);
    let mut forged = good.clone();
    forged.replace_range(10..11, if &good[10..11] == "A" { "B" } else { "A" });
    for (h, session, reason) in [
        (good.as_str(), Some("session-b"), Reason::PageForeign),
        (good.as_str(), None, Reason::PageForeign),
        (forged.as_str(), Some("session-a"), Reason::PageUnknown),
        ("not a handle", Some("session-a"), Reason::PageForged),
    ] {
        let (e, step) = page_call(&s, h, "application/json", session, &mut shared);
        let v = reply_json(&step);
        assert_eq!(v["result"]["isError"], json!(true), "{h}");
        let text = v["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("Call the original tool again with narrower arguments"),
            "{text}"
        );
        let d = e.report().decisions.last().unwrap();
        assert_eq!(
            d.outcome,
            crate::Outcome::Passthrough(reason),
            "{h} {session:?}"
        );
    }
    // The right session still gets its page.
    let (_, step) = page_call(
        &s,
        &good,
        "application/json",
        Some("session-a"),
        &mut shared,
    );
    assert!(reply_json(&step)["result"].get("isError").is_none());
}

#[test]
fn a_signed_handle_calls_the_tool_again_where_the_page_is_not_held() {
    let s = settings(&format!(r#""key":"{KEY}","reissue":"always""#));
    let mut cutter = shared();
    let texts = cut(&s, None, &mut cutter);
    let h = handle(&texts[1]);
    // Another gateway: an empty store.
    let mut other = shared();
    let (mut e, step) = page_call(&s, &h, "application/json", None, &mut other);
    let up = step.upstream.clone().expect("a call upstream");
    assert!(step.reply.is_none());
    assert_eq!(up.cluster, "mcp_upstream");
    let sent: Value = serde_json::from_slice(&up.body).unwrap();
    assert_eq!(sent["params"]["name"], "rows");
    assert_eq!(sent["params"]["arguments"], json!({"n": 400}));
    assert_eq!(sent["id"], json!(3));
    let same = e.upstream_reply(&UpstreamReply::Response {
        status: 200,
        content_type: Some("application/json".into()),
        body: result_body(3),
    });
    let v = reply_json(&same);
    let page = decode(v["result"]["content"][0]["text"].as_str().unwrap());
    let first = decode(&texts[0]);
    assert_eq!(page[0]["seq"], json!(first.len()));
    assert!(e.report().summary().contains("reissued=1"));

    // The tool now answers something else: reported, not mixed.
    let (mut e, _) = page_call(&s, &h, "application/json", None, &mut other);
    let mut changed: Value = serde_json::from_slice(&result_body(3)).unwrap();
    changed["result"]["content"][0]["text"] = json!("[{\"seq\":0}]");
    let step = e.upstream_reply(&UpstreamReply::Response {
        status: 200,
        content_type: Some("application/json".into()),
        body: changed.to_string().into_bytes(),
    });
    let v = reply_json(&step);
    assert_eq!(v["result"]["isError"], json!(true));
    assert_eq!(
        e.report().decisions.last().unwrap().outcome,
        crate::Outcome::Passthrough(Reason::PageChanged)
    );
    let (mut e, _) = page_call(&s, &h, "application/json", None, &mut other);
    let step = e.upstream_reply(&UpstreamReply::Failed);
    assert_eq!(reply_json(&step)["result"]["isError"], json!(true));
}

#[test]
fn without_paging_nothing_waits_and_nothing_is_answered_locally() {
    let s =
        Arc::new(Settings::from_json(r#"{"tools":{"rows":{"budget":{"tokens":500}}}}"#).unwrap());
    let mut e = Exchange::new(Arc::clone(&s));
    let stream = stream();
    let plan = e.request_headers(RequestHead {
        accept: Some("application/json"),
        ..request_head(&stream, "POST", Some("application/json"))
    });
    assert!(!plan.pause_headers);
    let step = e.request_chunk(
        &call("mcp_toon_page", json!({"handle": "x"})),
        true,
        &mut shared(),
    );
    assert!(step.reply.is_none() && step.flow == Flow::Continue);
}

/// A budgeted tool's JSON response, with or without its `content-length`,
/// in chunks of 1,000 bytes: what the client got, and the exchange.
fn answer(settings: &Arc<Settings>, response: &[u8], with_length: bool) -> (Vec<u8>, Exchange) {
    let mut shared = shared();
    let mut e = Exchange::new(Arc::clone(settings));
    let body = call("rows", json!({"n": 400}));
    request(&mut e, &body, "application/json", None, &mut shared);
    let plan = e.response_headers(
        ResponseHead {
            status: Some(200),
            content_type: Some("application/json"),
            content_encoding: None,
            content_length: with_length.then_some(response.len()),
            end_of_stream: false,
        },
        &mut shared,
    );
    if plan == ResponsePlan::Pass {
        return (response.to_vec(), e);
    }
    let mut sent = Vec::new();
    let chunks: Vec<&[u8]> = response.chunks(1000).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let step = e.response_chunk(chunk, i + 1 == chunks.len(), &mut shared);
        sent.extend(match step.out {
            Out::Input => chunk.to_vec(),
            Out::Bytes { bytes, .. } => bytes,
        });
    }
    (sent, e)
}

/// `paging.max_result_bytes` at its boundary: a budgeted tool's response of
/// exactly that many bytes is held and cut; one byte more passes through
/// whole, as the server sent it, counted `response_too_large` — whether
/// its `content-length` says so up front or the body runs past the limit.
#[test]
fn max_result_bytes_holds_a_result_of_its_size_and_passes_a_larger_one_whole() {
    let response = result_body(3);
    let n = response.len();
    assert!(
        n > 2048,
        "larger than max_body_bytes, so only the holding limit lets it be cut"
    );
    for with_length in [true, false] {
        let at = settings(&format!(r#""max_result_bytes":{n}"#));
        let (sent, e) = answer(&at, &response, with_length);
        let summary = e.report().summary();
        assert!(
            summary.contains("cut=1"),
            "at the limit ({with_length}): {summary}"
        );
        assert_ne!(sent, response);
        let v: Value = serde_json::from_slice(&sent).unwrap();
        let content = v["result"]["content"].as_array().unwrap();
        assert!(content.last().unwrap()["text"]
            .as_str()
            .unwrap()
            .starts_with("[mcp-toon] Result cut to fit 500 tokens."));

        let under = settings(&format!(r#""max_result_bytes":{}"#, n - 1));
        let (sent, e) = answer(&under, &response, with_length);
        assert_eq!(
            sent, response,
            "one byte past the limit ({with_length}): as sent"
        );
        assert!(!e.report().summary().contains("cut="));
        let reasons: Vec<Reason> = e
            .report()
            .decisions
            .iter()
            .filter_map(|d| match d.outcome {
                crate::Outcome::Passthrough(r) => Some(r),
                _ => None,
            })
            .collect();
        assert_eq!(reasons, [Reason::ResponseTooLarge], "({with_length})");
    }
}
