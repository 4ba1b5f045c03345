use super::*;
use crate::mcp::Declared;
use crate::stage::trim::LlmReply;

/// A GitHub-like search result: rows with `*_url` and `node_id` fields.
fn issues(n: usize) -> String {
    Value::Array(
        (0..n)
            .map(|i| {
                json!({"id": i, "node_id": format!("MDU6SXNzdWU{i:04}"), "title": format!("issue {i}"),
                       "html_url": format!("https://github.com/o/r/issues/{i}"),
                       "user": {"login": "octocat", "avatar_url": "https://avatars/u/1", "node_id": "MDQ"},
                       "state": if i % 3 == 0 { "closed" } else { "open" }})
            })
            .collect(),
    )
    .to_string()
}

fn request(args: &str) -> RequestInfo {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"search","arguments":{args}}}}}"#
    );
    RequestInfo::parse_declared(
        body.as_bytes(),
        Declared {
            intent: Some("expected_info"),
            query: Some("jmespath"),
        },
    )
    .unwrap()
}

fn one(config: &str, args: &str, text: &str) -> (Option<String>, Report) {
    let s = Settings::from_json(config).unwrap();
    let body = result_body("1", json!([{"type": "text", "text": text}]), "");
    run(&s, &request(args), &body)
}

fn value_of(text: &str) -> Value {
    match text.strip_prefix(crate::config::MARKER_PREFIX) {
        Some(_) => serde_json::from_str(&crate::convert::toon_to_json(text).unwrap()).unwrap(),
        None => serde_json::from_str(text).unwrap(),
    }
}

fn project_outcomes(report: &Report) -> Vec<Outcome> {
    report
        .decisions
        .iter()
        .filter(|d| d.stage == Stage::Project)
        .map(|d| d.outcome)
        .collect()
}

#[test]
fn operator_rules_drop_fields_then_toon_encodes_a_narrower_table() {
    let text = issues(20);
    let config = r#"{"project":{"drop":["**.*_url","**.node_id"]}}"#;
    let (out, report) = one(config, "{}", &text);
    let got = value_of(&text_of(&out.unwrap()));
    let want: Value = serde_json::from_str(
        &crate::stage::project::rules::apply(
            &text,
            &crate::config::Rules {
                keep: Default::default(),
                drop: vec![
                    crate::config::project::Path::parse("**.*_url").unwrap(),
                    crate::config::project::Path::parse("**.node_id").unwrap(),
                ]
                .into(),
            },
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(got, want);
    assert!(got[0].get("html_url").is_none() && got[0]["user"].get("node_id").is_none());
    assert_eq!(project_outcomes(&report), vec![Outcome::Projected]);
    let d = report
        .decisions
        .iter()
        .find(|d| d.stage == Stage::Project)
        .unwrap();
    assert!(!d.lossless && d.bytes_after < d.bytes_before);
    assert!(report.summary().contains("projected=1"));
}

#[test]
fn agent_query_replaces_the_block_and_wins_over_trim() {
    let text = issues(30);
    let config = r#"{"project":{"queries":true},"trim":{"enabled":true,"threshold_bytes":10}}"#;
    let args =
        r#"{"jmespath":"[?state=='open'].{id: id, title: title}","expected_info":"open issues"}"#;
    let s = Settings::from_json(config).unwrap();
    let mut report = Report::default();
    let body = result_body("1", json!([{"type": "text", "text": text}]), "");
    let job = start(
        &s,
        ServerScope::default(),
        &request(args),
        body.into_bytes(),
        &mut report,
        &mut |b: &mut [u8]| {
            b.fill(7);
            true
        },
    )
    .unwrap();
    // The query applied: no LLM callout.
    assert!(job.callout().is_none());
    let out = job.finish_alone(&s, None, &mut report).changed().unwrap();
    let got = value_of(&text_of(std::str::from_utf8(&out).unwrap()));
    assert_eq!(got.as_array().unwrap().len(), 20);
    assert_eq!(got[0], json!({"id": 1, "title": "issue 1"}));
    assert_eq!(project_outcomes(&report), vec![Outcome::Queried]);
    assert!(report
        .decisions
        .iter()
        .any(|d| d.outcome == Outcome::Passthrough(Reason::TrimQueryApplied)));
    // An intent alone still goes to the LLM.
    let mut report = Report::default();
    let body = result_body("1", json!([{"type": "text", "text": text}]), "");
    let job = start(
        &s,
        ServerScope::default(),
        &request(r#"{"expected_info":"x"}"#),
        body.into_bytes(),
        &mut report,
        &mut |b: &mut [u8]| {
            b.fill(7);
            true
        },
    )
    .unwrap();
    assert!(job.callout().is_some());
    let _ = job.finish_alone(&s, Some(&LlmReply::NotSent), &mut report);
}

#[test]
fn a_query_that_cannot_apply_leaves_the_result_with_a_note() {
    let text = issues(10);
    let config =
        r#"{"project":{"queries":true},"toon":{"mode":"off"},"clean":{"compact_json":false}}"#;
    for (query, reason) in [
        ("[?", Reason::QueryInvalid),
        ("[?state=='merged']", Reason::QueryEmpty),
        ("length(@[0].id)", Reason::QueryError),
        ("[@,@] | [@,@] | [@,@] | [@,@]", Reason::QueryTooComplex),
    ] {
        let args = json!({"jmespath": query}).to_string();
        let (out, report) = one(config, &args, &text);
        let got = text_of(&out.unwrap());
        let (body, note) = got.rsplit_once('\n').unwrap();
        assert_eq!(body, text, "{query}");
        assert!(
            note.starts_with(&format!(
                "[mcp-toon: query not applied ({})",
                reason.as_str()
            )) && note.ends_with("this is the full result]"),
            "{note}"
        );
        assert_eq!(
            project_outcomes(&report),
            vec![Outcome::Passthrough(reason)]
        );
    }
    // Queries off for this tool: the note says so.
    let off = r#"{"project":{"queries":true},"tools":{"search":{"project":{"queries":false}}}}"#;
    let (out, report) = one(off, r#"{"jmespath":"[0]"}"#, &text);
    assert!(text_of(&out.unwrap())
        .ends_with("(query_off): queries are off for this tool; this is the full result]"));
    assert_eq!(
        project_outcomes(&report),
        vec![Outcome::Passthrough(Reason::QueryOff)]
    );
}

#[test]
fn the_note_fits_under_the_cap() {
    let text = issues(40);
    let config =
        r#"{"project":{"queries":true},"toon":{"mode":"off"},"clean":{"max_text_bytes":1000}}"#;
    let (out, _) = one(config, r#"{"jmespath":"nope("}"#, &text);
    let got = text_of(&out.unwrap());
    assert!(got.len() <= 1000, "{}", got.len());
    assert!(got.ends_with("this is the full result]"));
    assert!(got.contains("[mcp-toon: cut "));
}

#[test]
fn listing_advertises_the_query_argument_where_queries_are_on() {
    let s = Settings::from_json(
        r#"{"tools":{"rows":{"project":{"queries":true},"trim":{"enabled":true}}}}"#,
    )
    .unwrap();
    let (out, report) = run(&s, &list_request(), &list_body());
    let v: Value = serde_json::from_str(&out.unwrap()).unwrap();
    let props = &v["result"]["tools"][0]["inputSchema"]["properties"];
    assert_eq!(props["jmespath"]["type"], "string");
    assert_eq!(
        props["jmespath"]["description"],
        crate::intent::QUERY_DESCRIPTION
    );
    assert_eq!(props["expected_info"]["type"], "string");
    assert!(v["result"]["tools"][1]["inputSchema"]
        .get("properties")
        .is_none());
    let advertised = report
        .decisions
        .iter()
        .filter(|d| d.stage == Stage::Advertise)
        .count();
    assert_eq!(advertised, 2);
}

#[test]
fn off_by_default_nothing_changes() {
    let text =
        serde_json::to_string_pretty(&serde_json::from_str::<Value>(&issues(3)).unwrap()).unwrap();
    let config = r#"{"toon":{"mode":"off"},"clean":{"compact_json":false}}"#;
    // A query argument nobody advertised is neither read nor applied.
    let (out, report) = one(config, r#"{"jmespath":"[0]"}"#, &text);
    assert_eq!(out, None);
    assert!(project_outcomes(&report).is_empty());
    let s = Settings::from_json(config).unwrap();
    assert!(s.stripped_arguments().is_empty() && !s.rewrites_listings());
    assert_eq!(run(&s, &list_request(), &list_body()).0, None);
}
