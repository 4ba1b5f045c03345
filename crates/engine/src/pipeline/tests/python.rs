//! Python literals read as data (`clean.python_literal`): a text that is a
//! `repr` becomes TOON or compact JSON with a marker that says so, the same
//! values; what is not exactly a `repr`, or is off, passes as it came,
//! counted under its reason.

use serde_json::{json, Value};

use super::{call_request, result_body, run, text_of};
use crate::config::Settings;
use crate::marker::{python_line, python_note, MARKER_PREFIX, TUPLES_NOTE};
use crate::outcome::{Outcome, Reason, Stage};
use crate::report::Report;
use crate::stage::toon::from_toon;

/// `str(rows)` of `n` rows as `mcp-server-sqlite` sends it.
fn rows(n: usize) -> String {
    let rows: Vec<String> = (0..n)
        .map(|i| {
            format!(
                "{{'id': {i}, 'name': 'Customer {i}', 'email': 'c{i}@example.com', 'score': {}.5, 'ok': {}, 'note': None}}",
                i % 7,
                if i % 2 == 0 { "True" } else { "False" }
            )
        })
        .collect();
    format!("[{}]", rows.join(", "))
}

/// The same rows as JSON values.
fn rows_value(n: usize) -> Value {
    Value::Array(
        (0..n)
            .map(|i| {
                json!({"id": i, "name": format!("Customer {i}"), "email": format!("c{i}@example.com"),
                       "score": (i % 7) as f64 + 0.5, "ok": i % 2 == 0, "note": null})
            })
            .collect(),
    )
}

fn body(text: &str) -> String {
    result_body("1", json!([{"type": "text", "text": text}]), "")
}

fn toon_reason(report: &Report) -> Option<Reason> {
    report
        .decisions
        .iter()
        .find(|d| d.stage == Stage::Toon)
        .and_then(|d| match d.outcome {
            Outcome::Passthrough(r) => Some(r),
            _ => None,
        })
}

#[test]
fn str_rows_become_toon_with_the_python_note() {
    let text = rows(200);
    let (out, report) = run(
        &Settings::default(),
        &call_request("1", "query"),
        &body(&text),
    );
    let new = text_of(&out.unwrap());
    let (marker, toon) = new.split_once('\n').unwrap();
    assert!(marker.starts_with(MARKER_PREFIX), "{marker}");
    assert!(marker.ends_with(&python_note(false)), "{marker}");
    assert!(!marker.contains(TUPLES_NOTE));
    // The same values.
    let decoded = from_toon(toon).unwrap();
    assert!(crate::json::same_value(&decoded, &rows_value(200)));
    // Clean read it (lossless), TOON encoded the JSON.
    let d = &report.decisions;
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!((d[0].stage, d[0].outcome), (Stage::Clean, Outcome::Cleaned));
    assert_eq!(d[0].transform, Some("python_literal"));
    assert!(d[0].lossless);
    assert_eq!(d[0].bytes_before, text.len());
    assert_eq!((d[1].stage, d[1].outcome), (Stage::Toon, Outcome::Encoded));
    assert_eq!(d[1].bytes_before, d[0].bytes_after);
    assert!(new.len() * 2 < text.len());
}

/// `{'flags': (True, None, …), 'scores': [0.5, …]}`: no table, few
/// strings, so its JSON is smaller on the wire too.
fn flags(n: usize) -> String {
    let flags: Vec<&str> = (0..n)
        .map(|i| if i % 3 == 0 { "True" } else { "None" })
        .collect();
    let scores: Vec<String> = (0..n).map(|i| format!("{i}.5")).collect();
    format!(
        "{{'flags': ({}), 'scores': [{}]}}",
        flags.join(", "),
        scores.join(", ")
    )
}

#[test]
fn what_toon_leaves_is_compact_json_behind_its_line() {
    let text = flags(100);
    let (out, report) = run(&Settings::default(), &call_request("1", "q"), &body(&text));
    let new = text_of(&out.unwrap());
    let (line, json) = new.split_once('\n').unwrap();
    assert_eq!(line, python_line(true));
    assert!(line.ends_with(TUPLES_NOTE));
    let v: Value = serde_json::from_str(json).unwrap();
    assert_eq!(v["flags"][0], true);
    assert_eq!(v["flags"][1], Value::Null);
    assert_eq!(v["scores"][99].to_string(), "99.5");
    assert!(
        serde_json::to_string(&new).unwrap().len() < serde_json::to_string(&text).unwrap().len()
    );
    let d = &report.decisions;
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!(d[0].transform, Some("python_literal"));
    assert_eq!(
        (d[0].bytes_before, d[0].bytes_after),
        (text.len(), new.len())
    );
    assert_eq!(toon_reason(&report), Some(Reason::NotTabular));
}

#[test]
fn strings_make_json_larger_on_the_wire_so_it_passes() {
    // A dict of strings TOON does not encode: `'a'` is `\"a\"` on the wire.
    let names: Vec<String> = (0..100).map(|i| format!("'name {i}'")).collect();
    let text = format!(
        "{{'names': [{}], 'more': [{}]}}",
        names.join(", "),
        names.join(", ")
    );
    let (out, report) = run(&Settings::default(), &call_request("1", "q"), &body(&text));
    assert_eq!(out, None);
    assert_eq!(toon_reason(&report), Some(Reason::NotTabular));
}

#[test]
fn a_tuple_text_is_read_where_texts_are_skimmed() {
    let rows = rows(30);
    let text = format!("({})", &rows[1..rows.len() - 1]);
    let settings = Settings::default();
    let policy = settings.policy(Default::default(), Some("q"));
    assert!(policy.changes_only_json());
    let (out, report) = run(&settings, &call_request("1", "q"), &body(&text));
    let new = text_of(&out.unwrap());
    assert!(new.starts_with(MARKER_PREFIX), "{new}");
    assert!(new.lines().next().unwrap().ends_with(TUPLES_NOTE));
    assert!(report
        .decisions
        .iter()
        .any(|d| d.transform == Some("python_literal")));
}

#[test]
fn off_it_passes_and_says_what_it_is() {
    let text = rows(50);
    for config in [
        r#"{"clean":{"python_literal":false}}"#,
        r#"{"clean":{"compact_json":false}}"#,
        r#"{"tools":{"q":{"clean":{"python_literal":false}}}}"#,
    ] {
        let settings = Settings::from_json(config).unwrap();
        let (out, report) = run(&settings, &call_request("1", "q"), &body(&text));
        assert_eq!(out, None, "{config}");
        assert_eq!(
            toon_reason(&report),
            Some(Reason::PythonLiteralOff),
            "{config}"
        );
    }
    // Another tool keeps the default.
    let settings =
        Settings::from_json(r#"{"tools":{"other":{"clean":{"python_literal":false}}}}"#).unwrap();
    let (out, _) = run(&settings, &call_request("1", "q"), &body(&text));
    assert!(out.is_some());
}

#[test]
fn a_tuple_text_off_is_skimmed_as_no_json() {
    let text = format!("({}, 1)", rows(20));
    let settings = Settings::from_json(r#"{"clean":{"python_literal":false}}"#).unwrap();
    let (out, report) = run(&settings, &call_request("1", "q"), &body(&text));
    assert_eq!(out, None);
    assert_eq!(toon_reason(&report), Some(Reason::NotJson));
}

#[test]
fn a_literal_the_line_outweighs_passes() {
    let text = "[(1, True), (2, False), (3, None)]";
    let (out, report) = run(&Settings::default(), &call_request("1", "q"), &body(text));
    assert_eq!(out, None);
    assert_eq!(toon_reason(&report), Some(Reason::BelowMinBytes));
    // Without a header there is no line, and the JSON alone is smaller.
    let settings = Settings::from_json(r#"{"toon":{"header":"none"}}"#).unwrap();
    let (out, _) = run(&settings, &call_request("1", "q"), &body(text));
    assert_eq!(text_of(&out.unwrap()), "[[1,true],[2,false],[3,null]]");
}

#[test]
fn texts_that_are_not_exactly_a_repr_pass() {
    for text in [
        format!("{} ", rows(40)),
        format!("{}\n", rows(40)),
        rows(40).replace(", '", ",'"),
        rows(40).replacen("None", "datetime.date(2024, 1, 1)", 1),
        rows(40).replacen("'id': 3,", "'id': 3, 'id': 4,", 1),
        rows(40).replacen("'note': None", "'note': b'x'", 1),
        rows(40).replacen("'note': None", "'note': nan", 1),
    ] {
        let (out, report) = run(&Settings::default(), &call_request("1", "q"), &body(&text));
        assert_eq!(out, None, "{text}");
        assert_eq!(toon_reason(&report), Some(Reason::NotJson), "{text}");
    }
}

#[test]
fn with_a_marker_key_the_line_is_tagged() {
    let key = "0123456789abcdef-key";
    let settings = Settings::from_json(&format!(r#"{{"marker_key":"{key}"}}"#)).unwrap();
    let (out, _) = run(&settings, &call_request("1", "q"), &body(&flags(300)));
    let new = text_of(&out.unwrap());
    assert!(new.starts_with(&python_line(true)), "{new}");
    assert!(crate::tag::verify(&new, key.as_bytes()));
    // And the TOON marker of a table.
    let (out, _) = run(&settings, &call_request("1", "q"), &body(&rows(40)));
    let new = text_of(&out.unwrap());
    assert!(crate::tag::verify(&new, key.as_bytes()));
    assert!(new.lines().next().unwrap().contains(&python_note(false)));
}

#[test]
fn a_budget_cuts_python_json_into_pages_with_the_line() {
    // Tuples of numbers: no table for TOON, JSON smaller on the wire.
    let rows: Vec<String> = (0..400).map(|i| format!("({i}, {i}.5, True)")).collect();
    let text = format!("[{}]", rows.join(", "));
    let settings = Settings::from_json(r#"{"budget":{"tokens":600}}"#).unwrap();
    let (out, report) = run(&settings, &call_request("1", "q"), &body(&text));
    let out: Value = serde_json::from_str(&out.unwrap()).unwrap();
    let first = out["result"]["content"][0]["text"].as_str().unwrap();
    let (line, json) = first.split_once('\n').unwrap();
    assert_eq!(line, python_line(true));
    let page: Vec<Value> = serde_json::from_str(json).unwrap();
    assert!(!page.is_empty() && page.len() < 400, "{}", page.len());
    assert_eq!(page[1], json!([1, 1.5, true]));
    assert!(report
        .decisions
        .iter()
        .any(|d| d.stage == Stage::Budget && d.outcome == Outcome::Cut));
}
