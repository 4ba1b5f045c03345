use super::*;

#[test]
fn listings_stay_byte_identical_without_annotate_tools() {
    let (out, report) = run(&Settings::default(), &list_request(), &list_body());
    assert_eq!(out, None);
    assert!(report.is_empty());
}

#[test]
fn annotate_tools_appends_the_hint_where_toon_is_on() {
    let s = Settings::from_json(
        r#"{"annotate_tools":true,"tools":{"legacy":{"toon":{"mode":"off"}}}}"#,
    )
    .unwrap();
    let (out, report) = run(&s, &list_request(), &list_body());
    let out = out.unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    let tools = v["result"]["tools"].as_array().unwrap();
    assert_eq!(
        tools[0]["description"],
        format!("Lists rows. {DECODE_HINT}")
    );
    assert_eq!(tools[1]["description"], DECODE_HINT);
    assert_eq!(tools[2]["description"], "Old.");
    assert_eq!(report.decisions.len(), 2);
    assert!(report
        .decisions
        .iter()
        .all(|d| d.outcome == Outcome::Annotated));
    // Annotating twice changes nothing more.
    let mut again = Report::default();
    assert_eq!(
        process_response(
            &s,
            ServerScope::default(),
            &list_request(),
            out.as_bytes(),
            &mut again
        ),
        None
    );
}
