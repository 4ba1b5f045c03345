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
        // A value moved to another field.
        r#"[{"id":20}]"#,
        r#"[{"balance":3}]"#,
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
