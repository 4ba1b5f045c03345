use serde_json::{json, Value};

use super::*;
use crate::config::StreamInfo;

/// [`super::start`] on an owned body, its calls resolved here: `Err` hands
/// the body back.
pub(super) fn start(
    settings: &Settings,
    scope: ServerScope,
    request: &RequestInfo,
    body: Vec<u8>,
    report: &mut Report,
    random: &mut dyn FnMut(&mut [u8]) -> bool,
) -> Result<Job, Vec<u8>> {
    let resolved = Resolved::of(settings, scope, request);
    let run = Run {
        settings,
        scope,
        request,
        resolved: &resolved,
    };
    match super::start(run, body, report, random) {
        Started::Job(job) => Ok(job),
        Started::Unchanged(body) => Err(body),
    }
}

/// [`super::start`] on a borrowed body: `None` when it settled.
pub(super) fn start_borrowed(
    settings: &Settings,
    scope: ServerScope,
    request: &RequestInfo,
    resolved: &Resolved,
    body: &str,
    report: &mut Report,
    random: &mut dyn FnMut(&mut [u8]) -> bool,
) -> Option<Job> {
    let run = Run {
        settings,
        scope,
        request,
        resolved,
    };
    match super::start(run, body, report, random) {
        Started::Job(job) => Some(job),
        Started::Unchanged(()) => None,
    }
}

/// [`super::finish_without_store`] as a method, as the tests chain it.
pub(super) trait FinishAlone {
    fn finish_alone(
        self,
        settings: &Settings,
        reply: Option<&stage::trim::LlmReply>,
        report: &mut Report,
    ) -> Output;
}

impl FinishAlone for Job {
    fn finish_alone(
        self,
        settings: &Settings,
        reply: Option<&stage::trim::LlmReply>,
        report: &mut Report,
    ) -> Output {
        finish_without_store(self, settings, reply, report)
    }
}

fn table_text(n: usize) -> String {
    Value::Array(
        (0..n)
            .map(|i| json!({"id": i, "name": format!("row {i}"), "ok": true}))
            .collect(),
    )
    .to_string()
}

fn call_request(id: &str, tool: &str) -> RequestInfo {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{}}}}}}"#
    );
    RequestInfo::parse(body.as_bytes()).unwrap()
}

fn result_body(id: &str, content: Value, extra: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":{content}{extra}}}}}"#)
}

/// The first content item's text of a result body.
fn text_of(out: &str) -> String {
    let v: Value = serde_json::from_str(out).unwrap();
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

fn run(settings: &Settings, request: &RequestInfo, body: &str) -> (Option<String>, Report) {
    let mut report = Report::default();
    let out = process_response(
        settings,
        ServerScope::default(),
        request,
        body.as_bytes(),
        &mut report,
    )
    .map(|b| String::from_utf8(b).unwrap());
    (out, report)
}

#[test]
fn only_the_text_string_changes() {
    let text = table_text(30);
    // Odd spacing, a big integer and an exponent elsewhere in the message must survive byte for byte.
    let body = format!(
        "{{\"jsonrpc\":\"2.0\", \"id\" : 5,\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":{}}},{{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"}}],\"structuredContent\":{{\"big\":123456789012345678901234567890,\"e\":1E5}},\"_meta\":{{}}}}}}",
        serde_json::to_string(&text).unwrap()
    );
    let (out, report) = run(&Settings::default(), &call_request("5", "rows"), &body);
    let out = out.unwrap();
    let literal = serde_json::to_string(&text).unwrap();
    let start = body.find(&literal).unwrap();
    assert_eq!(out[..start], body[..start]);
    let tail = &body[start + literal.len()..];
    assert!(
        out.ends_with(tail),
        "everything after the text is unchanged"
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    let new_text = v["result"]["content"][0]["text"].as_str().unwrap();
    assert!(new_text.starts_with("[mcp-toon/v1] "));
    assert_eq!(report.decisions.len(), 1);
    let d = &report.decisions[0];
    assert_eq!(
        (d.stage, d.outcome, d.block),
        (Stage::Toon, Outcome::Encoded, Some(0))
    );
    assert_eq!(
        (d.bytes_before, d.bytes_after),
        (text.len(), new_text.len())
    );
    assert_eq!(d.tool.as_deref(), Some("rows"));
}

#[test]
fn untouched_shapes_pass_byte_identical_with_a_reason() {
    let s = Settings::default();
    let req = call_request("1", "t");
    let table = serde_json::to_string(&table_text(30)).unwrap();
    let cases = [
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}"#.to_string(),
            Reason::JsonRpcError,
        ),
        (
            result_body(
                "1",
                json!([{"type": "text", "text": table_text(30)}]),
                r#","isError":true"#,
            ),
            Reason::IsError,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"a":1}}}"#.to_string(),
            Reason::NoContent,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":{table},"text":{table}}}]}}}}"#
            ),
            Reason::MalformedContent,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":5}]}}"#
                .to_string(),
            Reason::MalformedContent,
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":".to_string(),
            Reason::MalformedResponse,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]},"result":{}}"#.to_string(),
            Reason::MalformedResponse,
        ),
    ];
    for (body, reason) in cases {
        let (out, report) = run(&s, &req, &body);
        assert_eq!(out, None, "{body}");
        assert!(
            report
                .decisions
                .iter()
                .any(|d| d.outcome == Outcome::Passthrough(reason)),
            "{body}: {report:?}"
        );
    }
    let mut report = Report::default();
    assert_eq!(
        process_response(&s, ServerScope::default(), &req, b"\xff\xfe", &mut report),
        None
    );
    assert_eq!(
        report.decisions[0].outcome,
        Outcome::Passthrough(Reason::InvalidUtf8)
    );
}

#[test]
fn responses_to_other_requests_are_not_touched() {
    let body = result_body("2", json!([{"type": "text", "text": table_text(30)}]), "");
    let (out, report) = run(&Settings::default(), &call_request("1", "t"), &body);
    assert_eq!(out, None);
    // Counted, without the server's id.
    assert_eq!(report.decisions.len(), 1, "{report:?}");
    assert_eq!(
        report.decisions[0].outcome,
        Outcome::Passthrough(Reason::UnknownId)
    );
    assert_eq!(report.decisions[0].id, None);
}

#[test]
fn batch_each_response_decided_on_its_own() {
    let req = RequestInfo::parse(
        br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}},
             {"jsonrpc":"2.0","method":"notifications/progress"},
             {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b"}},
             {"jsonrpc":"2.0","id":3,"method":"ping"}]"#,
    )
    .unwrap();
    let body = format!(
        "[{},{},{}]",
        result_body("1", json!([{"type": "text", "text": table_text(30)}]), ""),
        result_body("2", json!([{"type": "text", "text": "hello"}]), ""),
        r#"{"jsonrpc":"2.0","id":3,"result":{}}"#
    );
    let (out, report) = run(&Settings::default(), &req, &body);
    let v: Value = serde_json::from_str(&out.unwrap()).unwrap();
    assert!(v[0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("[mcp-toon/v1]"));
    assert_eq!(v[1]["result"]["content"][0]["text"], "hello");
    assert_eq!(v[2], json!({"jsonrpc":"2.0","id":3,"result":{}}));
    let outcomes: Vec<_> = report
        .decisions
        .iter()
        .map(|d| (d.id.clone(), d.outcome))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            (Some("1".into()), Outcome::Encoded),
            (
                Some("2".into()),
                Outcome::Passthrough(Reason::BelowMinBytes)
            )
        ]
    );
}

#[test]
fn per_tool_and_per_server_overrides_apply() {
    let s = Settings::from_json(
        r#"{"tools":{"legacy":{"toon":{"mode":"off"}}},
            "servers":[{"match":{"cluster":"strict"},"toon":{"min_savings_pct":90}}]}"#,
    )
    .unwrap();
    let body = result_body("1", json!([{"type": "text", "text": table_text(30)}]), "");
    let (out, report) = run(&s, &call_request("1", "legacy"), &body);
    assert_eq!(out, None);
    assert_eq!(
        report.decisions[0].outcome,
        Outcome::Passthrough(Reason::ModeOff)
    );
    let (out, _) = run(&s, &call_request("1", "other"), &body);
    assert!(out.is_some());
    let strict = s.server_for(&StreamInfo {
        cluster: Some("strict".into()),
        ..StreamInfo::default()
    });
    let mut report = Report::default();
    let out = process_response(
        &s,
        strict,
        &call_request("1", "other"),
        body.as_bytes(),
        &mut report,
    );
    assert_eq!(out, None);
    assert_eq!(
        report.decisions[0].outcome,
        Outcome::Passthrough(Reason::BelowThreshold)
    );
}

fn list_body() -> String {
    r#"{"jsonrpc":"2.0","id":9,"result":{"tools":[{"name":"rows","description":"Lists rows.","inputSchema":{"type":"object"}},{"name":"quiet","inputSchema":{"type":"object"}},{"name":"legacy","description":"Old.","inputSchema":{"type":"object"}}]}}"#.to_string()
}

fn list_request() -> RequestInfo {
    RequestInfo::parse(br#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#).unwrap()
}

/// An event the stages cannot change is not copied: [`start_borrowed`]
/// gives no job (and the same decisions as [`start`]); one they change
/// gives the job [`start`] gives.
#[test]
fn a_body_nothing_can_change_gives_no_job() {
    let settings = Settings::default();
    let request = call_request("1", "rows");
    let table = Value::String(table_text(30));
    let rows = json!([{"type": "text", "text": table}]);
    let idle = [
        result_body("2", rows.clone(), ""),
        result_body("1", rows.clone(), r#","isError":true"#),
        result_body("1", json!([{"type": "image", "data": "AAAA"}]), ""),
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}"#.to_string(),
    ];
    for body in &idle {
        let (mut borrowed, mut owned) = (Report::default(), Report::default());
        let job = start_borrowed(
            &settings,
            ServerScope::default(),
            &request,
            &Resolved::of(&settings, ServerScope::default(), &request),
            body,
            &mut borrowed,
            &mut |_| false,
        );
        assert!(job.is_none(), "{body}");
        let job = start(
            &settings,
            ServerScope::default(),
            &request,
            body.clone().into_bytes(),
            &mut owned,
            &mut |_| false,
        );
        let out = job.map(|j| j.finish_alone(&settings, None, &mut owned));
        assert_eq!(out.ok().and_then(Output::changed), None, "{body}");
        assert_eq!(borrowed.decisions, owned.decisions, "{body}");
    }
    let body = result_body("1", rows, "");
    let mut report = Report::default();
    let job = start_borrowed(
        &settings,
        ServerScope::default(),
        &request,
        &Resolved::of(&settings, ServerScope::default(), &request),
        &body,
        &mut report,
        &mut |_| false,
    );
    let out = job.map(|j| j.finish_alone(&settings, None, &mut report).changed());
    assert_eq!(
        out.flatten(),
        run(&settings, &request, &body).0.map(String::into_bytes)
    );
}

mod cleaning;
mod hostile;
mod listing;
mod projecting;
mod python;
mod skimming;
mod trimming;

/// Calls learnt other than from the request body (2024-11-05 records) are
/// not all there is: a response none of them answers is not "unknown", and
/// neither is one whose request was not followed (counted at the request).
#[test]
fn unknown_id_only_where_every_request_is_known() {
    let s = Settings::default();
    let body = result_body("2", json!([{"type": "text", "text": table_text(30)}]), "");
    let mut partial = call_request("1", "t");
    partial.complete = false;
    let (out, report) = run(&s, &partial, &body);
    assert_eq!(out, None);
    assert!(report.decisions.is_empty(), "{report:?}");
    let long_tool = "t".repeat(s.max_tool_name_bytes + 1);
    let req = format!(
        r#"[{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x"}}}},{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"{long_tool}"}}}}]"#
    );
    let info =
        RequestInfo::read(req.as_bytes(), crate::mcp::Declared::default(), &s.limits()).unwrap();
    assert!(!info.complete);
    let (out, report) = run(&s, &info, &body);
    assert_eq!(out, None);
    assert!(report.decisions.is_empty(), "{report:?}");
}
