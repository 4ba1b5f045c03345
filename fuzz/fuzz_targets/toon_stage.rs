//! The TOON stage keeps its promises on any text: in adaptive mode an
//! emission is never larger than the block (as text and as a JSON string
//! literal) and decodes back to the identical value; the size on the wire
//! the stage reports is the emission's.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_toon::config::{Header, Mode, ToonSettings};
use mcp_toon::stage::{literal_len, toon};

fuzz_target!(|data: &[u8]| {
    let Some((&knobs, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let header = [Header::Marker, Header::Fence, Header::None][usize::from(knobs % 3)];
    let mode = if knobs & 0x80 != 0 { Mode::Always } else { Mode::Adaptive };
    let s = ToonSettings { mode, header, min_bytes: 0, min_rows: 1, ..ToonSettings::default() };
    let sizes = toon::Sizes::of(text, literal_len(text));
    let measured = toon::encode_within(text, sizes, &s, &mut toon::Allowance::per_response());
    if let Ok(e) = &measured {
        assert_eq!(e.wire, literal_len(&e.text), "wire size miscounted");
    }
    let result = measured.map(|e| e.text);
    let generic = toon::encode_generic(text, literal_len(text), &s);
    if result == Err(mcp_toon::Reason::ToonBudget) {
        // Only the generic path could decide, past its budget (issue 13).
        assert!(text.len() > toon::GENERIC_BYTES, "budget refused a small block");
        assert_ne!(generic, Err(mcp_toon::Reason::ToonBudget));
        return;
    }
    assert_eq!(result, generic, "fast and generic paths differ");
    let Ok(out) = result else { return };
    if mode == Mode::Adaptive {
        assert!(out.len() * 100 <= text.len() * 85, "larger than allowed");
        assert!(literal_len(&out) <= literal_len(text), "larger on the wire");
    }
    let body = mcp_toon::marker::unwrap(&out, header).expect("header present");
    let decoded = toon::from_toon(body).expect("emission decodes");
    let original: serde_json::Value = serde_json::from_str(text).expect("encoded text was JSON");
    assert!(mcp_toon::json::same_value(&decoded, &original), "not lossless");
});
