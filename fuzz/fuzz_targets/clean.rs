//! The clean stage with every transform opted in, on any text: never a
//! panic, a change only when it makes the block smaller, and the records
//! of one block chain from the input's size to the output's. Run with a
//! libFuzzer `-timeout` (fuzz/run.sh): every transform is linear in its
//! input or stops at its work budget, so a slow input is a finding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_toon::stage::clean::{clean, CleanSettings};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let s = CleanSettings {
        html_to_markdown: true,
        strip_base64: true,
        remove_nulls: true,
        collapse_whitespace: true,
        compact_json: true,
        python_literal: true,
        min_bytes: 0,
        base64_min_chars: 16,
        max_text_bytes: 0,
    };
    let out = clean(text, &s);
    let mut size = text.len();
    for a in &out.applied {
        assert_eq!(a.bytes_before, size, "records chain");
        assert!(a.bytes_after < a.bytes_before, "a kept transform shrinks the block");
        size = a.bytes_after;
    }
    match &out.text {
        Some(new) => {
            assert_eq!(new.len(), size, "the last record is the output");
            assert!(new.len() < text.len(), "a change makes the block smaller");
        }
        None => assert!(out.applied.is_empty(), "no record without a change"),
    }
});
