use super::*;

fn one(config: &str, tool: &str, text: &str) -> (Option<String>, Report) {
    let s = Settings::from_json(config).unwrap();
    let body = result_body("1", json!([{"type": "text", "text": text}]), "");
    run(&s, &call_request("1", tool), &body)
}

fn transforms(report: &Report) -> Vec<&'static str> {
    report
        .decisions
        .iter()
        .filter_map(|d| d.transform)
        .collect()
}

#[test]
fn pretty_table_is_compacted_then_toon_competes_with_the_compact_text() {
    let rows: Vec<Value> = (0..30)
        .map(|i| json!({"id": i, "name": format!("row {i}"), "note": null}))
        .collect();
    let pretty = serde_json::to_string_pretty(&Value::Array(rows)).unwrap();
    let (out, report) = one("{}", "t", &pretty);
    let text = text_of(&out.unwrap());
    assert!(text.starts_with("[mcp-toon/v1]"));
    assert_eq!(transforms(&report), vec!["compact_json"]);
    let toon = report
        .decisions
        .iter()
        .find(|d| d.stage == Stage::Toon)
        .unwrap();
    let compact = report
        .decisions
        .iter()
        .find(|d| d.stage == Stage::Clean)
        .unwrap();
    assert_eq!(
        toon.bytes_before, compact.bytes_after,
        "TOON measured against the compact text"
    );
    assert!(compact.lossless && !report.decisions.iter().any(|d| !d.lossless));
}

#[test]
fn per_tool_override_changes_the_outcome() {
    let html = format!(
        "<html><body><h1>Title</h1><p>{}</p><ul><li>a</li><li>b</li></ul></body></html>",
        "text ".repeat(150)
    );
    // Off by default: an HTML file an agent edits keeps every byte.
    let (out, report) = one("{}", "page", &html);
    assert_eq!(out, None, "{report:?}");
    assert!(transforms(&report).is_empty());
    let (out, report) = one(
        r#"{"tools":{"page":{"clean":{"html_to_markdown":true}}}}"#,
        "page",
        &html,
    );
    assert!(text_of(&out.unwrap()).starts_with("# Title"));
    assert_eq!(transforms(&report)[0], "html_to_markdown");
    let (out, _) = one(
        r#"{"clean":{"html_to_markdown":true},"tools":{"page":{"clean":{"html_to_markdown":false}}}}"#,
        "page",
        &html,
    );
    assert_eq!(out, None);
}

#[test]
fn cap_keeps_the_header_or_leaves_the_block_unencoded() {
    let rows: Vec<Value> = (0..200)
        .map(|i| json!({"id": i, "name": format!("row {i}")}))
        .collect();
    let table = Value::Array(rows).to_string();
    let (out, report) = one(r#"{"clean":{"max_text_bytes":600}}"#, "t", &table);
    let text = text_of(&out.unwrap());
    assert!(
        text.len() <= 600 && text.starts_with("[mcp-toon/v1]") && text.contains("[mcp-toon: cut "),
        "{text}"
    );
    assert!(transforms(&report).contains(&"max_text_bytes"));
    // Too small for the marker and a row: sent unencoded, cut as text.
    let marker = format!("[mcp-toon/v1] {}", "TOON follows. ".repeat(20));
    let config = format!(
        r#"{{"clean":{{"max_text_bytes":256}},"toon":{{"header":"fence","marker":"{marker}"}}}}"#
    );
    let (out, report) = one(&config, "t", &table);
    let text = text_of(&out.unwrap());
    assert!(text.len() <= 256 && text.starts_with("[{"), "{text}");
    assert!(report
        .decisions
        .iter()
        .any(|d| d.outcome == Outcome::Passthrough(Reason::CapTooSmall)));
}

#[test]
fn all_off_is_byte_identical() {
    let config = r#"{"toon":{"mode":"off"},"clean":{"html_to_markdown":false,"strip_base64":false,"collapse_whitespace":false,"compact_json":false}}"#;
    let pretty =
        serde_json::to_string_pretty(&json!({"a": [1, 2, {"b": null}], "c": "x    y\n\n\n\nz"}))
            .unwrap();
    assert_eq!(one(config, "t", &pretty.repeat(20)).0, None);
}

/// Issue 11: JSON written with `", "` and `": "` separators saves under
/// `toon.min_savings_pct` when compacted, and compaction is still taken
/// (lossless, so any saving), below `clean.min_bytes` too.
#[test]
fn compaction_below_the_toon_threshold_is_taken() {
    let s = Settings::default();
    let value = json!({"dark_mode": true, "beta": false, "max_items": 50, "locale": "en-GB"});
    // Python's json.dumps default layout.
    let text = value
        .to_string()
        .replace("\",\"", "\", \"")
        .replace("\":", "\": ")
        .replace(",\"", ", \"");
    let compact = value.to_string();
    let policy = s.policy(Default::default(), Some("t"));
    let saved = 100 * (text.len() - compact.len()) / text.len();
    assert!(
        saved > 0 && (saved as u64) < policy.toon.min_savings_pct,
        "{saved}"
    );
    assert!(text.len() < policy.clean.min_bytes);
    let (out, report) = one("{}", "t", &text);
    assert_eq!(text_of(&out.unwrap()), compact, "{report:?}");
    assert_eq!(transforms(&report), vec!["compact_json"]);
}

/// A lone block the clean stage would only compact is read by TOON as it
/// is, measured as its compact form (`block::Form::Deferred`): its text
/// and its records are what compacting it first, then encoding the
/// compact text, gives, for tables pretty or spaced at the root or below
/// it, and for blocks TOON leaves (no table, too small, not JSON, a `\u` escape, a
/// table whose rows differ).
#[test]
fn a_block_compacted_only_if_toon_leaves_it_gets_the_compact_texts_answer() {
    let rows: Vec<Value> = (0..40)
        .map(|i| json!({"id": i, "name": format!("row {i}"), "price": 1.5 * i as f64, "ok": i % 2 == 0}))
        .collect();
    let table = Value::Array(rows.clone());
    let nested = json!({"success": true, "data": {"statements": [{"sql": "SELECT 1", "rows": table, "rowCount": 40}]}});
    let mut uneven = rows.clone();
    uneven[7] = json!({"id": 7});
    let spaced = |v: &Value| {
        v.to_string()
            .replace("\",\"", "\", \"")
            .replace("\":", "\": ")
            .replace("},{", "}, {")
    };
    let texts = [
        serde_json::to_string_pretty(&table).unwrap(),
        spaced(&table),
        serde_json::to_string_pretty(&nested).unwrap(),
        spaced(&nested),
        serde_json::to_string_pretty(&json!({"title": "t", "tags": ["a", "b"], "n": 1})).unwrap(),
        serde_json::to_string_pretty(&json!([{"a": 1}])).unwrap(),
        serde_json::to_string_pretty(&Value::Array(uneven)).unwrap(),
        serde_json::to_string_pretty(&table)
            .unwrap()
            .replace("row 3", "r\\u00f3w 3"),
        "[ {\"a\": 1}, {\"a\": 2} ".repeat(30),
        "  \"a string\"  ".to_string(),
    ];
    let settings = Settings::from_json("{}").unwrap();
    for text in &texts {
        let (out, report) = one("{}", "t", text);
        // By hand: compact, then encode the compact text.
        let policy = settings.policy(ServerScope::default(), Some("t"));
        let cleaned = clean::clean(text, &policy.clean);
        let compact = cleaned.text_or(text);
        let wire = stage::literal_len(compact);
        let toon = stage::toon::encode(compact, wire, &policy.toon);
        let expected_text = toon.as_deref().unwrap_or(compact);
        let mut expected: Vec<(Stage, Option<&str>, usize, usize)> = cleaned
            .applied
            .iter()
            .map(|a| {
                (
                    Stage::Clean,
                    Some(a.transform.name()),
                    a.bytes_before,
                    a.bytes_after,
                )
            })
            .collect();
        expected.push(match &toon {
            Ok(t) => (Stage::Toon, None, compact.len(), t.len()),
            Err(_) => (Stage::Toon, None, compact.len(), compact.len()),
        });
        let got: Vec<(Stage, Option<&str>, usize, usize)> = report
            .decisions
            .iter()
            .map(|d| (d.stage, d.transform, d.bytes_before, d.bytes_after))
            .collect();
        assert_eq!(got, expected, "{text}");
        let toon_outcome = report.decisions.last().map(|d| d.outcome);
        match &toon {
            Ok(_) => assert_eq!(toon_outcome, Some(Outcome::Encoded), "{text}"),
            Err(r) => assert_eq!(toon_outcome, Some(Outcome::Passthrough(*r)), "{text}"),
        }
        match out {
            Some(out) => assert_eq!(text_of(&out), expected_text, "{text}"),
            None => assert_eq!(expected_text, text.as_str()),
        }
    }
}
