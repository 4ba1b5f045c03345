use super::*;
use crate::stage::trim::{self, LlmReply};

const CONFIG: &str = r#"{"trim":{"enabled":true,"threshold_bytes":200}}"#;

/// The host's randomness, as the tests see it.
fn rnd(b: &mut [u8]) -> bool {
    b.fill(7);
    true
}

/// A text of `n` numbered lines.
fn lines(n: usize) -> String {
    (0..n)
        .map(|i| format!("line {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A trimmed block's text when TOON leaves it alone.
fn noted(intent: &str, extracted: &str) -> String {
    format!("{}\n{extracted}", trim::header(intent, "expected_info"))
}

fn request(intent: Option<&str>) -> RequestInfo {
    let args = match intent {
        Some(i) => format!(r#"{{"q":1,"expected_info":"{i}"}}"#),
        None => r#"{"q":1}"#.to_string(),
    };
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"rows","arguments":{args}}}}}"#
    );
    RequestInfo::parse_with_intent(body.as_bytes(), Some("expected_info")).unwrap()
}

fn body(texts: &[String]) -> Vec<u8> {
    let content: Vec<Value> = texts
        .iter()
        .map(|t| json!({"type": "text", "text": t}))
        .collect();
    result_body("1", Value::Array(content), "").into_bytes()
}

fn reply(content: &str) -> LlmReply {
    LlmReply::Response {
        status: 200,
        body: json!({"choices": [{"message": {"content": content}}]})
            .to_string()
            .into_bytes(),
    }
}

fn outcomes(report: &Report, stage: Stage) -> Vec<Outcome> {
    report
        .decisions
        .iter()
        .filter(|d| d.stage == stage)
        .map(|d| d.outcome)
        .collect()
}

fn text_of(out: &[u8], i: usize) -> String {
    let v: Value = serde_json::from_slice(out).unwrap();
    v["result"]["content"][i]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn trims_then_encodes_the_extraction() {
    let s = Settings::from_json(CONFIG).unwrap();
    let mut report = Report::default();
    let job = start(
        &s,
        ServerScope::default(),
        &request(Some("ids under 10")),
        body(&[table_text(60)]),
        &mut report,
        &mut rnd,
    )
    .unwrap();
    let call = job.callout().unwrap();
    let sent: Value = serde_json::from_slice(&call.body).unwrap();
    assert!(sent["messages"][1]["content"]
        .as_str()
        .unwrap()
        .contains(r#": "ids under 10""#));
    let extracted = table_text(25);
    let out = job
        .finish_alone(&s, Some(&reply(&extracted)), &mut report)
        .changed()
        .unwrap();
    let text = text_of(&out, 0);
    assert!(
        text.starts_with("[mcp-toon/v1]"),
        "the trimmed table is still TOON-encoded"
    );
    let first_line = text.lines().next().unwrap();
    assert!(
        first_line.ends_with(&format!(
            " {}",
            trim::header("ids under 10", "expected_info")
        )),
        "the note is on the marker line: {first_line}"
    );
    assert_eq!(outcomes(&report, Stage::Trim), vec![Outcome::Trimmed]);
    assert_eq!(outcomes(&report, Stage::Toon), vec![Outcome::Encoded]);
    let trim = report
        .decisions
        .iter()
        .find(|d| d.stage == Stage::Trim)
        .unwrap();
    assert_eq!(
        (trim.bytes_before, trim.bytes_after, trim.lossless),
        (
            table_text(60).len(),
            trim::header("ids under 10", "expected_info").len() + 1 + extracted.len(),
            false
        )
    );
    assert_eq!(report.block_bytes(), (table_text(60).len(), text.len()));
}

#[test]
fn every_fail_open_leaves_the_cleaned_block() {
    let s = Settings::from_json(CONFIG).unwrap();
    let prose = lines(100);
    let cases = [
        (
            Some(LlmReply::Response {
                status: 503,
                body: vec![],
            }),
            Reason::TrimStatus,
        ),
        (
            Some(LlmReply::Response {
                status: 200,
                body: b"<html>".to_vec(),
            }),
            Reason::TrimMalformed,
        ),
        (Some(reply(&"longer ".repeat(100))), Reason::TrimLarger),
        (Some(reply("")), Reason::TrimMalformed),
        (
            Some(LlmReply::Failed { elapsed_ms: 10_000 }),
            Reason::TrimTimeout,
        ),
        (Some(LlmReply::NotSent), Reason::TrimUnavailable),
        (None, Reason::TrimUnavailable),
    ];
    for (r, reason) in cases {
        let mut report = Report::default();
        let job = start(
            &s,
            ServerScope::default(),
            &request(Some("x")),
            body(std::slice::from_ref(&prose)),
            &mut report,
            &mut rnd,
        )
        .unwrap();
        assert!(job.callout().is_some());
        assert_eq!(
            job.finish_alone(&s, r.as_ref(), &mut report).changed(),
            None,
            "{reason:?}"
        );
        assert_eq!(
            outcomes(&report, Stage::Trim),
            vec![Outcome::Passthrough(reason)]
        );
    }
}

#[test]
fn no_callout_without_intent_or_below_threshold_or_when_off() {
    let s = Settings::from_json(CONFIG).unwrap();
    let cases = [
        (request(None), table_text(60), Some(Reason::TrimNoIntent)),
        (
            request(Some("x")),
            "small".to_string(),
            Some(Reason::TrimBelowThreshold),
        ),
    ];
    for (req, text, reason) in cases {
        let mut report = Report::default();
        let job = start(
            &s,
            ServerScope::default(),
            &req,
            body(&[text]),
            &mut report,
            &mut rnd,
        )
        .unwrap();
        assert!(job.callout().is_none());
        assert_eq!(
            outcomes(&report, Stage::Trim),
            reason
                .map(Outcome::Passthrough)
                .into_iter()
                .collect::<Vec<_>>()
        );
    }
    let off = Settings::default();
    let mut report = Report::default();
    let job = start(
        &off,
        ServerScope::default(),
        &request(Some("x")),
        body(&[table_text(60)]),
        &mut report,
        &mut rnd,
    )
    .unwrap();
    assert!(job.callout().is_none());
    assert!(outcomes(&report, Stage::Trim).is_empty());
}

#[test]
fn first_trims_content_zero_and_all_trims_every_block() {
    let prose = lines(100);
    let s = Settings::from_json(CONFIG).unwrap();
    let mut report = Report::default();
    let job = start(
        &s,
        ServerScope::default(),
        &request(Some("x")),
        body(&[prose.clone(), prose.clone()]),
        &mut report,
        &mut rnd,
    )
    .unwrap();
    let out = job
        .finish_alone(&s, Some(&reply("line 3")), &mut report)
        .changed()
        .unwrap();
    assert_eq!(
        (text_of(&out, 0), text_of(&out, 1)),
        (noted("x", "line 3"), prose.clone())
    );

    let all =
        Settings::from_json(r#"{"trim":{"enabled":true,"threshold_bytes":200,"blocks":"all"}}"#)
            .unwrap();
    let mut report = Report::default();
    let job = start(
        &all,
        ServerScope::default(),
        &request(Some("x")),
        body(&[prose.clone(), prose.clone()]),
        &mut report,
        &mut rnd,
    )
    .unwrap();
    let out = job
        .finish_alone(
            &all,
            Some(&reply(r#"["line 1","line 2\nline 7"]"#)),
            &mut report,
        )
        .changed()
        .unwrap();
    assert_eq!(
        (text_of(&out, 0), text_of(&out, 1)),
        (noted("x", "line 1"), noted("x", "line 2\nline 7"))
    );
    assert_eq!(
        outcomes(&report, Stage::Trim),
        vec![Outcome::Trimmed, Outcome::Trimmed]
    );
}

#[test]
fn listing_advertises_the_intent_argument_where_trim_is_on() {
    let s = Settings::from_json(r#"{"tools":{"rows":{"trim":{"enabled":true}}}}"#).unwrap();
    let (out, report) = run(&s, &list_request(), &list_body());
    let v: Value = serde_json::from_str(&out.unwrap()).unwrap();
    assert_eq!(
        v["result"]["tools"][0]["inputSchema"]["properties"]["expected_info"]["type"],
        "string"
    );
    assert!(v["result"]["tools"][1]["inputSchema"]
        .get("properties")
        .is_none());
    assert_eq!(
        outcomes(&report, Stage::Advertise),
        vec![Outcome::Annotated]
    );
    let quiet = Settings::from_json(
        r#"{"trim":{"advertise_intent":false},"tools":{"rows":{"trim":{"enabled":true}}}}"#,
    )
    .unwrap();
    assert_eq!(run(&quiet, &list_request(), &list_body()).0, None);
}
