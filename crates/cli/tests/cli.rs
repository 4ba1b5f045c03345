//! The `mcp-toon` binary, run as a user would, on the captured payloads in
//! the repository's `tests/fixtures/payloads/`:
//!
//! | file                  | shape                                   | expected        |
//! |-----------------------|-----------------------------------------|-----------------|
//! | `tabular-list.json`   | JSON-RPC response, pretty JSON users    | cleaned+encoded |
//! | `paged-envelope.json` | bare CallToolResult, `{items:[..],..}`  | cleaned+encoded |
//! | `stream.sse`          | SSE: progress notification, then table  | cleaned+encoded |
//! | `nested.json`         | JSON-RPC response, nested config object | cleaned, not_tabular |
//! | `prose.txt`           | plain text                              | not_json        |
//! | `page.html`           | an HTML page                            | unchanged; cleaned (lossy) when opted in |
//! | `error.json`          | JSON-RPC error                          | jsonrpc_error   |

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mcp-toon"))
}

fn payloads() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/payloads")
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn run_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = bin()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A process that exits before reading (a refused config) closes the pipe.
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-toon-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Clean transforms off, for a table whose lines do not depend on them.
const TOON_ONLY: &str = r#"{"clean":{"html_to_markdown":false,"strip_base64":false,"collapse_whitespace":false,"compact_json":false}}"#;

fn toon_only_config() -> String {
    let path = temp("toon-only.json");
    std::fs::write(&path, TOON_ONLY).unwrap();
    path.to_str().unwrap().to_string()
}

/// `measure --format json` on the corpus with the default configuration
/// (every stage as the plugin runs it) unless `extra` says otherwise.
fn measure_json(extra: &[&str]) -> Value {
    let dir = payloads();
    let mut args = vec!["measure", "--format", "json"];
    args.extend_from_slice(extra);
    args.push(dir.to_str().unwrap());
    let out = run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

fn payload<'a>(m: &'a Value, file: &str) -> &'a Value {
    m["payloads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["payload"].as_str().unwrap().ends_with(file))
        .unwrap_or_else(|| panic!("{file} not measured"))
}

/// The decision a stage made about a row's block, as (outcome, reason).
fn stage<'a>(row: &'a Value, name: &str) -> Option<(&'a str, Option<&'a str>)> {
    row["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["stage"] == name)
        .map(|d| (d["outcome"].as_str().unwrap(), d["reason"].as_str()))
}

#[test]
fn measure_reports_each_payload_with_its_outcome() {
    let m = measure_json(&[]);
    assert_eq!(m["tokenizer"], "o200k_base");
    assert_eq!(m["payloads"].as_array().unwrap().len(), 7);
    // (file, shape, clean changes it, TOON outcome and reason, lossless)
    let cases = [
        (
            "tabular-list.json",
            "jsonrpc",
            true,
            ("encoded", None),
            true,
        ),
        // Compacted first (any saving: it is lossless), then TOON.
        (
            "paged-envelope.json",
            "call_tool_result",
            true,
            ("encoded", None),
            true,
        ),
        ("stream.sse", "sse", true, ("encoded", None), true),
        (
            "nested.json",
            "jsonrpc",
            true,
            ("passthrough", Some("not_tabular")),
            true,
        ),
        (
            "prose.txt",
            "text",
            false,
            ("passthrough", Some("not_json")),
            true,
        ),
        // HTML → Markdown is opt-in: by default the page keeps its bytes.
        (
            "page.html",
            "text",
            false,
            ("passthrough", Some("not_json")),
            true,
        ),
    ];
    for (file, kind, cleaned, toon, lossless) in cases {
        let p = payload(&m, file);
        assert_eq!(p["kind"], kind, "{file}");
        let rows = p["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{file}");
        let row = &rows[0];
        assert_eq!(row["block"], 0, "{file}");
        assert_eq!(stage(row, "toon"), Some(toon), "{file}");
        assert_eq!(
            stage(row, "clean").is_some_and(|(o, _)| o == "cleaned"),
            cleaned,
            "{file}"
        );
        assert_eq!(row["lossless"], lossless, "{file}");
        let outcome = row["outcome"].as_str().unwrap();
        assert_eq!(outcome.contains("encoded"), toon.0 == "encoded", "{file}");
        assert_eq!(row["reason"].as_str(), toon.1, "{file}");
        let n = |k: &str| row[k].as_u64().unwrap();
        assert!(n("tokens_before") > 0 && n("tokens_after") > 0, "{file}");
        if cleaned || toon.0 == "encoded" {
            assert!(
                n("tokens_after") < n("tokens_before") && n("bytes_after") < n("bytes_before"),
                "{file}: smaller after"
            );
        } else {
            assert_eq!(outcome, "passthrough", "{file}");
            assert_eq!(n("tokens_after"), n("tokens_before"), "{file}");
            assert_eq!(n("bytes_after"), n("bytes_before"), "{file}");
        }
    }
    let error = &payload(&m, "error.json")["rows"][0];
    assert_eq!(
        (
            &error["outcome"],
            &error["reason"],
            &error["block"],
            &error["id"]
        ),
        (
            &Value::from("passthrough"),
            &Value::from("jsonrpc_error"),
            &Value::Null,
            &Value::from("12")
        )
    );
    // The SSE capture's response pairs with its own id.
    assert_eq!(payload(&m, "stream.sse")["rows"][0]["id"], "9");
    assert_eq!(payload(&m, "nested.json")["rows"][0]["id"], "\"req-17\"");
}

#[test]
fn measure_totals_add_up() {
    let m = measure_json(&[]);
    let payloads = m["payloads"].as_array().unwrap();
    for key in [
        "blocks",
        "changed",
        "bytes_before",
        "bytes_after",
        "tokens_before",
        "tokens_after",
    ] {
        let sum: u64 = payloads
            .iter()
            .map(|p| p["totals"][key].as_u64().unwrap())
            .sum();
        assert_eq!(m["totals"][key].as_u64().unwrap(), sum, "{key}");
    }
    assert_eq!(m["totals"]["blocks"], 6);
    let changed = payloads
        .iter()
        .flat_map(|p| p["rows"].as_array().unwrap())
        .filter(|r| r["outcome"] != "passthrough")
        .count();
    assert_eq!(m["totals"]["changed"].as_u64().unwrap(), changed as u64);
    assert!(changed >= 3);
    let t = &m["totals"];
    assert!(t["tokens_after"].as_u64().unwrap() < t["tokens_before"].as_u64().unwrap());
}

#[test]
fn measure_follows_the_configuration() {
    let config = temp("off.json");
    std::fs::write(
        &config,
        r#"{"toon":{"mode":"adaptive"},"clean":{"compact_json":false,"collapse_whitespace":false},"tools":{"list_users":{"toon":{"mode":"off"}}}}"#,
    )
    .unwrap();
    let c = config.to_str().unwrap();
    let m = measure_json(&["--config", c, "--tool", "list_users"]);
    let row = &payload(&m, "tabular-list.json")["rows"][0];
    assert_eq!(stage(row, "toon"), Some(("passthrough", Some("mode_off"))));
    assert_eq!(row["tool"], "list_users");
    let m = measure_json(&["--config", c, "--tool", "other"]);
    let row = &payload(&m, "tabular-list.json")["rows"][0];
    assert_eq!(stage(row, "toon"), Some(("encoded", None)));
}

/// A configuration under which nothing changes passes each stream at its
/// request headers, its bodies never read by the plugin; the CLI still
/// measures each block, as passing, with its tokens.
#[test]
fn measure_counts_the_blocks_of_a_call_decided_at_its_request() {
    let config = temp("all-off.json");
    std::fs::write(
        &config,
        r#"{"toon":{"mode":"off"},"clean":{"compact_json":false}}"#,
    )
    .unwrap();
    let m = measure_json(&["--config", config.to_str().unwrap()]);
    let rows = payload(&m, "tabular-list.json")["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    for row in rows {
        assert_eq!(
            stage(row, "response"),
            Some(("passthrough", Some("policy_off"))),
            "{row}"
        );
        assert!(row["block"].is_u64(), "{row}");
        assert!(row["tokens_before"].as_u64().unwrap() > 0, "{row}");
        assert_eq!(row["tokens_before"], row["tokens_after"], "{row}");
    }
}

#[test]
fn measure_text_table_has_a_line_per_block_and_totals() {
    let dir = payloads();
    let config = toon_only_config();
    let out = run(&["measure", "--config", &config, dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("PAYLOAD"));
    assert_eq!(lines.len(), 1 + 7 + 1, "{text}");
    let tabular = lines
        .iter()
        .find(|l| l.contains("tabular-list.json"))
        .unwrap();
    assert!(tabular.contains("encoded"), "{tabular}");
    let last = lines.last().unwrap();
    assert!(last.starts_with("TOTAL: 7 payloads, 6 blocks, "), "{last}");
    assert!(last.contains("o200k_base tokens"), "{last}");
}

#[test]
fn measure_writes_a_self_contained_html_report() {
    let report = temp("report.html");
    let dir = payloads();
    let out = run(&[
        "measure",
        "--report",
        report.to_str().unwrap(),
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<svg"));
    assert_eq!(
        html.matches("<rect ").count(),
        2 * 7,
        "two bars per payload"
    );
    assert!(html.contains("tabular-list.json"));
    for external in ["<script", "<link", "src=", "url("] {
        assert!(!html.contains(external), "no external assets: {external}");
    }
}

#[test]
fn bad_configuration_exits_2_with_the_plugin_message() {
    let config = temp("bad.json");
    std::fs::write(&config, r#"{"toon":{"min_savings_pct":95}}"#).unwrap();
    let dir = payloads();
    let out = run(&[
        "measure",
        "--config",
        config.to_str().unwrap(),
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).trim(),
        mcp_toon_engine::Settings::from_json(r#"{"toon":{"min_savings_pct":95}}"#)
            .unwrap_err()
            .to_string()
    );
    assert!(stderr(&out).starts_with("mcp-toon configuration: toon.min_savings_pct: "));
    let out = run_stdin(&["encode", "--config", config.to_str().unwrap()], b"[]");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn missing_payload_exits_1() {
    let out = run(&["measure", "/nonexistent/payload.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("cannot read /nonexistent/payload.json"));
}

#[test]
fn encode_then_decode_gives_the_input_value() {
    let inputs = [
        r#"[{"id":1,"name":"Ada","tags":"a,b"},{"id":2,"name":"Bob: \"B\"","tags":""}]"#,
        r#"{"items":[{"sku":"A-1","qty":2,"price":9.99}],"next_cursor":null,"total":18446744073709551615}"#,
        r#"{"z":{"deep":[1,[2,3],{"x":"ünïcödé 😀"}]},"a":true}"#,
    ];
    for header in ["marker", "fence", "none"] {
        let config = temp(&format!("{header}.json"));
        std::fs::write(&config, format!(r#"{{"toon":{{"header":"{header}"}}}}"#)).unwrap();
        for input in inputs {
            let enc = run_stdin(
                &["encode", "--config", config.to_str().unwrap()],
                input.as_bytes(),
            );
            assert!(enc.status.success(), "{}", stderr(&enc));
            let toon = stdout(&enc);
            assert_eq!(toon.starts_with("[mcp-toon/v1]"), header != "none");
            assert_eq!(toon.contains("```toon\n"), header == "fence");
            let dec = run_stdin(&["decode"], toon.as_bytes());
            assert!(dec.status.success(), "{}", stderr(&dec));
            assert_eq!(stdout(&dec).trim_end(), input, "{header}");
        }
    }
}

#[test]
fn encode_output_is_the_plugins_emission() {
    let rows: Vec<Value> = (0..30)
        .map(|i| serde_json::json!({"id": i, "name": format!("row {i}")}))
        .collect();
    let text = Value::Array(rows).to_string();
    let enc = run_stdin(&["encode"], text.as_bytes());
    let body = serde_json::json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":text}]}}).to_string();
    let request = mcp_toon_engine::mcp::RequestInfo::parse(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#,
    )
    .unwrap();
    let mut report = mcp_toon_engine::Report::default();
    let out = mcp_toon_engine::pipeline::process_response(
        &mcp_toon_engine::Settings::default(),
        Default::default(),
        &request,
        body.as_bytes(),
        &mut report,
    )
    .unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        stdout(&enc),
        format!("{}\n", v["result"]["content"][0]["text"].as_str().unwrap())
    );
}

#[test]
fn invalid_input_is_refused_with_a_clear_message() {
    let cases: [(&[&str], &[u8], &str); 5] = [
        (
            &["encode"],
            b"{\"a\":",
            "mcp-toon encode: input is not one JSON value",
        ),
        (&["encode"], br#"{"a":1,"a":2}"#, "same key twice"),
        (&["encode"], b"[1e400]", "cannot carry exactly"),
        (
            &["decode"],
            b"items[3]: a,b",
            "mcp-toon decode: input is not valid TOON",
        ),
        (&["decode"], &[0xff, 0xfe], "standard input is not UTF-8"),
    ];
    for (args, input, needle) in cases {
        let out = run_stdin(args, input);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(stderr(&out).contains(needle), "{}", stderr(&out));
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(run(&["measure"]).status.code(), Some(2));
    assert_eq!(
        run(&["measure", "--format", "yaml", "x"]).status.code(),
        Some(2)
    );
    let help = run(&["--help"]);
    assert!(help.status.success());
    for cmd in ["measure", "encode", "decode"] {
        assert!(stdout(&help).contains(cmd));
    }
}

#[test]
fn measure_cleans_where_the_configuration_opts_in() {
    let config = temp("html.json");
    std::fs::write(&config, r#"{"clean":{"html_to_markdown":true}}"#).unwrap();
    let m = measure_json(&["--config", config.to_str().unwrap()]);
    let page = &payload(&m, "page.html")["rows"][0];
    let stages: Vec<&str> = page["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["stage"].as_str())
        .collect();
    assert!(stages.contains(&"clean"), "{page}");
    assert!(page["bytes_after"].as_u64().unwrap() < page["bytes_before"].as_u64().unwrap());
}

#[test]
fn measure_reads_standard_input_for_dash() {
    let rows: Vec<Value> = (0..30)
        .map(|i| serde_json::json!({"id": i, "name": format!("row {i}"), "ok": true}))
        .collect();
    let text = Value::Array(rows).to_string();
    let out = run_stdin(&["measure", "--format", "json", "-"], text.as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    let m: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let p = &m["payloads"][0];
    assert_eq!(
        (&p["payload"], &p["kind"]),
        (&Value::from("-"), &Value::from("json"))
    );
    assert_eq!(p["rows"][0]["outcome"], "encoded");
}

#[test]
fn measure_project_applies_the_query_and_counts_fewer_tokens() {
    let plain = measure_json(&[]);
    let queried = measure_json(&["--project", "[?role=='admin'].{id: id, name: name}"]);
    let before = &payload(&plain, "tabular-list.json")["rows"][0];
    let row = &payload(&queried, "tabular-list.json")["rows"][0];
    assert_eq!(stage(row, "project"), Some(("queried", None)));
    assert!(
        row["outcome"].as_str().unwrap().contains("queried"),
        "{row}"
    );
    assert_eq!(row["lossless"], false);
    assert!(
        row["tokens_after"].as_u64().unwrap() < before["tokens_after"].as_u64().unwrap(),
        "{row}"
    );
    // A block the query cannot apply to keeps its text and gets the note.
    let prose = &payload(&queried, "prose.txt")["rows"][0];
    assert_eq!(
        stage(prose, "project"),
        Some(("passthrough", Some("not_json")))
    );
}

#[test]
fn measure_project_with_operator_rules_from_the_config() {
    let path = temp("drop-rules.json");
    std::fs::write(
        &path,
        r#"{"project":{"drop":["[].email","[].created_at"]}}"#,
    )
    .unwrap();
    let m = measure_json(&["--config", path.to_str().unwrap()]);
    let row = &payload(&m, "tabular-list.json")["rows"][0];
    assert_eq!(stage(row, "project"), Some(("projected", None)));
    let plain = measure_json(&[]);
    let before = &payload(&plain, "tabular-list.json")["rows"][0];
    assert!(row["tokens_after"].as_u64().unwrap() < before["tokens_after"].as_u64().unwrap());
}

/// A JSON-RPC result holding one text item: a 300-row table, with
/// `structuredContent` when `structured`.
fn big_table_result(structured: bool) -> String {
    let rows: Vec<Value> = (0..300)
        .map(|i| serde_json::json!({"id": i, "sku": format!("SKU-{i:05}"), "name": format!("item number {i}"), "qty": i % 17}))
        .collect();
    let text = Value::Array(rows.clone()).to_string();
    let mut result = serde_json::json!({"content": [{"type": "text", "text": text}]});
    if structured {
        result["structuredContent"] = serde_json::json!({"rows": rows});
    }
    serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": result}).to_string()
}

/// `measure --config` with a budget shows what the budget cuts: the row's
/// tokens after are what an agent reads (first page and notice), within the
/// budget by o200k_base, and the decision is `stage: budget`, `cut`. A
/// result that carries `structuredContent` is not cut (issue 13), counted.
#[test]
fn measure_shows_what_a_budget_cuts() {
    let config = temp("budget.json");
    std::fs::write(&config, r#"{"budget":{"tokens":500}}"#).unwrap();
    let plain = temp("big-table.json");
    std::fs::write(&plain, big_table_result(false)).unwrap();
    let structured = temp("big-table-structured.json");
    std::fs::write(&structured, big_table_result(true)).unwrap();
    // The payload's rows: its block's, then any of the result as a whole.
    let measure = |extra: &[&str], file: &PathBuf| -> Vec<Value> {
        let mut args = vec!["measure", "--format", "json"];
        args.extend_from_slice(extra);
        args.push(file.to_str().unwrap());
        let out = run(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let m: Value = serde_json::from_str(&stdout(&out)).unwrap();
        m["payloads"][0]["rows"].as_array().unwrap().clone()
    };
    let c = config.to_str().unwrap();

    let [uncut] = &measure(&[], &plain)[..] else {
        panic!("one row")
    };
    assert_eq!(stage(uncut, "budget"), None, "no budget by default");
    assert!(uncut["tokens_after"].as_u64().unwrap() > 2000, "{uncut}");

    let [cut] = &measure(&["--config", c], &plain)[..] else {
        panic!("one row")
    };
    assert_eq!(stage(cut, "budget"), Some(("cut", None)), "{cut}");
    assert!(cut["outcome"].as_str().unwrap().contains("cut"), "{cut}");
    assert_eq!(cut["lossless"], false);
    assert_eq!(cut["tokens_before"], uncut["tokens_before"]);
    let after = cut["tokens_after"].as_u64().unwrap();
    assert!(
        after <= 500,
        "the first page and its notice fit the budget: {after}"
    );
    assert!(after > 250, "most of the budget is used: {after}");

    // A decision about the result as a whole has a row of its own (no
    // block), as `budget_too_small` does.
    let [block, result] = &measure(&["--config", c], &structured)[..] else {
        panic!("a row for the block and one for the result")
    };
    assert_eq!(stage(block, "budget"), None, "{block}");
    assert_eq!(block["tokens_after"], uncut["tokens_after"], "passed whole");
    assert_eq!(result["block"], Value::Null);
    assert_eq!(
        stage(result, "budget"),
        Some(("passthrough", Some("budget_structured_content"))),
        "{result}"
    );
}

/// The CLI goes through the gates the plugin does: a body past
/// `max_response_bytes` passes whole, as in Envoy, counted
/// `response_too_large`, and measures as unchanged.
#[test]
fn measure_passes_a_body_past_max_response_bytes_as_the_plugin_does() {
    let config = temp("small-body.json");
    std::fs::write(&config, r#"{"max_response_bytes":1024}"#).unwrap();
    let m = measure_json(&["--config", config.to_str().unwrap()]);
    let p = payload(&m, "tabular-list.json");
    let rows = p["rows"].as_array().unwrap();
    assert!(!rows.is_empty(), "{p}");
    for row in rows {
        assert_eq!(
            stage(row, "response"),
            Some(("passthrough", Some("response_too_large"))),
            "{row}"
        );
    }
    let whole = measure_json(&[]);
    assert_ne!(
        payload(&whole, "tabular-list.json")["rows"][0]["outcome"],
        "passthrough",
        "under the default limit the same payload is encoded"
    );
}
