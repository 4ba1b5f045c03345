//! The Python-literal reader (`json::python`) against CPython itself, the
//! Python of the project's `.venv` (`make bootstrap` makes it):
//!
//! - the printable table (`json::printable`) gives `str.isprintable` for
//!   every code point;
//! - on the cases of `bench/python/literal_cases.py` (`repr` of random
//!   values and mutations of it, judged by `ast.literal_eval`, `repr` and
//!   `json.loads`), the reader reads exactly the texts CPython says are
//!   canonical literals it may read, and writes JSON of the same value.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::PathBuf;
use std::process::Command;

use mcp_toon::json::printable::is_printable;
use mcp_toon::json::{python, same_value};
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the project's Python; a missing `.venv` is a failure with the way
/// to make it, not a skip.
fn python(args: &[&str]) -> String {
    let exe = root().join(".venv/bin/python");
    assert!(
        exe.exists(),
        "{} is missing: run `make bootstrap`",
        exe.display()
    );
    let out = Command::new(exe)
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn printable_table_is_pythons() {
    let script = "import sys\n\
        print(sys.version_info[:2], __import__('unicodedata').unidata_version)\n\
        print(''.join('1' if chr(c).isprintable() else '0' for c in range(0x110000)))";
    let out = python(&["-c", script]);
    let (head, bits) = out.split_once('\n').unwrap();
    let bits = bits.trim_end().as_bytes();
    assert_eq!(bits.len(), 0x110000);
    assert!(
        head.ends_with(mcp_toon::json::printable::UNICODE_VERSION),
        "the table is for Unicode {}, the Python is {head}: rerun bench/python/make_printable.py",
        mcp_toon::json::printable::UNICODE_VERSION
    );
    let mut wrong = Vec::new();
    for (cp, &bit) in bits.iter().enumerate() {
        if let Some(c) = char::from_u32(cp as u32) {
            if is_printable(c) != (bit == b'1') {
                wrong.push(format!("U+{cp:04X}"));
            }
        }
    }
    assert!(wrong.is_empty(), "differs from Python at {wrong:?}");
}

#[test]
fn reader_agrees_with_cpython() {
    let mut read = 0;
    let mut refused = 0;
    let mut tuples = 0;
    for seed in ["1", "2"] {
        let out = python(&[
            "bench/python/literal_cases.py",
            "--seed",
            seed,
            "--count",
            "1500",
        ]);
        for line in out.lines() {
            let case: Value = serde_json::from_str(line).unwrap();
            let Some(text) = case["text"].as_str() else {
                // A text with a lone surrogate: no `str` in Rust, and no
                // body the plugin reads holds one.
                continue;
            };
            let got = python::read(text);
            match case["json"].as_str() {
                None => {
                    refused += 1;
                    assert_eq!(got, None, "CPython refuses {text:?}");
                }
                Some(want) => {
                    read += 1;
                    let got = got.unwrap_or_else(|| panic!("CPython reads {text:?}"));
                    let a: Value = serde_json::from_str(&got.json)
                        .unwrap_or_else(|e| panic!("{text:?} gave {:?}: {e}", got.json));
                    let b: Value = serde_json::from_str(want).unwrap();
                    assert!(same_value(&a, &b), "{text:?}: {} != {want}", got.json);
                    assert_eq!(got.tuples, case["tuples"].as_bool().unwrap(), "{text:?}");
                    tuples += usize::from(got.tuples);
                }
            }
        }
    }
    println!("read {read} (with tuples {tuples}), refused {refused}");
    // The generator must exercise both sides.
    assert!(
        read > 2000 && refused > 20_000 && tuples > 500,
        "{read} {refused} {tuples}"
    );
}
