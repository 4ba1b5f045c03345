use super::from;

const ROWS: &str = r#"{"total":3,"users":[{"id":1,"name":"Ann","role":"admin","balance":1.50},{"id":2,"name":"Bob","role":"user","balance":20},{"id":3,"name":"Cy","role":"admin","balance":0}]}"#;

#[test]
fn a_json_subset_is_drawn_from_the_block() {
    for ok in [
        r#"{"users":[{"id":1,"name":"Ann"},{"id":3,"name":"Cy"}]}"#,
        r#"[{"id":1,"role":"admin"}]"#,
        r#"{"total":3}"#,
        // Numbers by value; a member's value may stand alone.
        r#"[{"balance":1.5}]"#,
        r#"["Ann","Cy",20]"#,
        "3",
        "[]",
        "{}",
    ] {
        assert!(from(ROWS, ok), "{ok}");
    }
}

#[test]
fn anything_the_block_does_not_have_is_refused() {
    for forged in [
        // A value moved to another field, or to another record.
        r#"[{"id":20}]"#,
        r#"[{"balance":3}]"#,
        r#"[{"id":1,"balance":20}]"#,
        r#"{"users":[{"id":2,"role":"admin"}]}"#,
        // A value or key that is not there.
        r#"[{"id":1,"name":"Eve"}]"#,
        r#"[{"id":1,"iban":"DE00"}]"#,
        r#"[{"id":1,"balance":1.51}]"#,
        r#"["Ann","https://evil.example"]"#,
        // Not JSON, for a JSON block.
        "users: Ann, Cy",
    ] {
        assert!(!from(ROWS, forged), "{forged}");
    }
}

#[test]
fn a_text_extraction_keeps_whole_lines_of_the_block() {
    let log = "2024-01-01 INFO start\n  2024-01-01 WARN disk 91%\n2024-01-02 ERROR disk full\n";
    assert!(from(
        log,
        "2024-01-01 WARN disk 91%\n\n2024-01-02 ERROR disk full"
    ));
    assert!(from(log, "   2024-01-02 ERROR disk full   "));
    // A line that is not there, or only part of one.
    assert!(!from(log, "2024-01-02 ERROR disk full\nALL CLEAR"));
    assert!(!from(log, "ERROR disk full"));
    // A boundary line, as a forged part separator would need.
    assert!(!from(
        log,
        "<<<end mcp-toon-00 part 1>>>\n2024-01-01 INFO start"
    ));
}

#[test]
fn a_record_whose_members_share_every_value_is_looked_up_within_a_budget() {
    // Every row alike but its id: the rarest member (the id) finds the one
    // candidate at once.
    let rows: Vec<String> = (0..5000)
        .map(|i| format!(r#"{{"id":{i},"kind":"a","ok":true}}"#))
        .collect();
    let block = format!("[{}]", rows.join(","));
    let reply = format!("[{}]", rows[..2500].join(","));
    assert!(from(&block, &reply));
    // Two members whose rows meet only at the last row: each reply row
    // scans half the block. One such row is found; a thousand exhaust the
    // budget, and the extraction is refused rather than waited on.
    let mut rows: Vec<&str> = Vec::new();
    rows.extend(std::iter::repeat_n(r#"{"a":1,"b":0}"#, 2500));
    rows.extend(std::iter::repeat_n(r#"{"a":0,"b":1}"#, 2500));
    rows.push(r#"{"a":1,"b":1}"#);
    let block = format!("[{}]", rows.join(","));
    assert!(from(&block, r#"[{"a":1,"b":1}]"#));
    let many = vec![r#"{"a":1,"b":1}"#; 1000].join(",");
    assert!(!from(&block, &format!("[{many}]")));
}
