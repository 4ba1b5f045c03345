#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

//! The TOON spec v4.0 encode fixtures (tests/fixtures/toon-spec-v4.0, MIT,
//! see its SOURCE) run through the generic encoder (`to_toon_with`:
//! toon-format's own, which the plugin falls back to; the fast path is held
//! to the same emissions in `stage/toon/fast/tests.rs`). A failing case
//! prints its file, name and spec section.

use std::fs;
use std::path::Path;

use mcp_toon::stage::toon::{from_toon, to_toon_with};
use serde_json::Value;
use toon_format::{Delimiter, EncodeOptions, Indent};

fn options(opts: Option<&Value>) -> EncodeOptions {
    let mut o = EncodeOptions::default();
    if let Some(opts) = opts {
        match opts.get("delimiter").and_then(Value::as_str) {
            Some("\t") => o = o.with_delimiter(Delimiter::Tab),
            Some("|") => o = o.with_delimiter(Delimiter::Pipe),
            _ => {}
        }
        if let Some(n) = opts.get("indentSize").and_then(Value::as_u64) {
            o = o.with_indent(Indent::Spaces(n as usize));
        }
    }
    o
}

#[test]
fn all_encode_fixtures_pass() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/toon-spec-v4.0/fixtures/encode");
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut count = 0;
    let mut failures = Vec::new();
    for file in files {
        let doc: Value = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
        let fname = file.file_name().unwrap().to_string_lossy().to_string();
        for case in doc["tests"].as_array().unwrap() {
            count += 1;
            let name = case["name"].as_str().unwrap_or("?");
            let section = case["specSection"].as_str().unwrap_or("?");
            let opts = options(case.get("options"));
            let got = to_toon_with(&case["input"], &opts);
            if case.get("shouldError").and_then(Value::as_bool) == Some(true) {
                if got.is_some() {
                    failures.push(format!(
                        "{fname}: {name} (§{section}): expected an error, got {got:?}"
                    ));
                }
                continue;
            }
            let expected = case["expected"].as_str().unwrap();
            if got.as_deref() != Some(expected) {
                failures.push(format!(
                    "{fname}: {name} (§{section}):\n  expected {expected:?}\n  got      {got:?}"
                ));
            }
        }
    }
    assert_eq!(count, 173, "the v4.0 suite has 173 encode fixtures");
    assert!(
        failures.is_empty(),
        "{} of {count} fixtures failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn default_option_fixtures_decode_back() {
    // Every fixture encoded with default options decodes back to its input
    // (numbers compared as exact decimals), the plugin's verify step.
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/toon-spec-v4.0/fixtures/encode");
    for entry in fs::read_dir(&dir).unwrap() {
        let doc: Value =
            serde_json::from_str(&fs::read_to_string(entry.unwrap().path()).unwrap()).unwrap();
        for case in doc["tests"].as_array().unwrap() {
            if case.get("options").is_some() || case.get("shouldError").is_some() {
                continue;
            }
            let toon = case["expected"].as_str().unwrap();
            let decoded = from_toon(toon).unwrap_or(Value::Null);
            let input = &case["input"];
            // Inputs TOON cannot carry exactly (-0, rows with differently
            // ordered keys) are what the plugin's exactness guard refuses.
            if mcp_toon::stage::toon::exact(input).is_ok() {
                assert!(
                    mcp_toon::json::same_value(&decoded, input),
                    "{}: decoded {decoded} != input {input}",
                    case["name"]
                );
            }
        }
    }
}
