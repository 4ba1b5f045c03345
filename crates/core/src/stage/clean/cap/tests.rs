// A failed unwrap or panic here is a failed test, which is what it is for.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use super::{can_hold_first_row, cap, Capped, TextKind};
use crate::marker;
use crate::marker::Header;
use crate::stage::clean::Transform;

const M: &str = "[mcp-toon/v1] TOON";

fn toon_rows(rows: usize) -> String {
    let mut t = format!("[{rows}]{{id,name}}:");
    for i in 0..rows {
        t.push_str(&format!("\n  {i},name-{i}"));
    }
    t
}

fn cut(c: Capped) -> (String, usize) {
    match c {
        Capped::Cut { text, cut } => (text, cut),
        other => panic!("expected a cut, got {other:?}"),
    }
}

#[test]
fn no_cap_or_short_text_fits() {
    assert_eq!(cap("abc", 0, TextKind::Text), Capped::Fits);
    assert_eq!(cap("abc", 3, TextKind::Text), Capped::Fits);
}

#[test]
fn text_is_cut_at_a_character_boundary_with_a_notice() {
    let text = "é".repeat(100); // 200 bytes
    let (out, n) = cut(cap(&text, 80, TextKind::Text));
    // The notice for a 200-byte text is at most 33 bytes long; that leaves
    // 47 bytes, which hold 23 two-byte characters.
    assert_eq!(
        out,
        format!("{}\n[mcp-toon: cut 154 of 200 bytes]", "é".repeat(23))
    );
    assert_eq!(n, 154);
    assert!(out.len() <= 80);
}

#[test]
fn a_cap_below_the_notice_cuts_without_one() {
    let (out, n) = cut(cap("abcdefghijklmnopqrstuvwxyz", 10, TextKind::Text));
    assert_eq!((out.as_str(), n), ("abcdefghij", 16));
    let (out, _) = cut(cap("ééééé", 3, TextKind::Text));
    assert_eq!(out, "é");
}

#[test]
fn marker_line_stays_and_rows_are_whole() {
    let text = marker::wrap(&toon_rows(50), Header::Marker, M);
    let (out, n) = cut(cap(&text, 120, TextKind::Toon(Header::Marker)));
    assert_eq!(
        out,
        format!(
            "{M}\n[50]{{id,name}}:\n  0,name-0\n  1,name-1\n  2,name-2\n  3,name-3\n[mcp-toon: cut {n} of {} bytes]",
            text.len()
        )
    );
    assert!(out.len() <= 120);
    let kept = out.len() - out.rfind('\n').unwrap();
    assert_eq!(text.len() - n + kept, out.len());
}

#[test]
fn fence_keeps_its_header_and_closing_fence() {
    let text = marker::wrap(&toon_rows(50), Header::Fence, M);
    let (out, n) = cut(cap(&text, 140, TextKind::Toon(Header::Fence)));
    assert_eq!(
        out,
        format!(
            "{M}\n```toon\n[50]{{id,name}}:\n  0,name-0\n  1,name-1\n  2,name-2\n  3,name-3\n  4,name-4\n```\n[mcp-toon: cut {n} of {} bytes]",
            text.len()
        )
    );
    // One more row would not fit.
    assert_eq!(out.len() + "\n  5,name-5".len(), 144);
}

#[test]
fn bare_toon_keeps_whole_rows() {
    let text = toon_rows(50);
    let (out, _) = cut(cap(&text, 70, TextKind::Toon(Header::None)));
    assert!(out.starts_with("[50]{id,name}:\n  0,name-0\n"), "{out}");
    assert!(out.len() <= 70);
    let body = out.rsplit_once("\n[mcp-toon: cut").unwrap().0;
    assert!(text.starts_with(body) && text[body.len()..].starts_with('\n'));
}

#[test]
fn too_small_for_header_and_first_row() {
    let text = marker::wrap(&toon_rows(50), Header::Fence, M);
    // Header, table header, first row, closing fence and notice need:
    let need = format!(
        "{M}\n```toon\n[50]{{id,name}}:\n  0,name-0\n```\n[mcp-toon: cut {0} of {0} bytes]",
        text.len()
    )
    .len();
    assert_eq!(
        cap(&text, need - 1, TextKind::Toon(Header::Fence)),
        Capped::TooSmall
    );
    assert!(!can_hold_first_row(
        &text,
        need - 1,
        TextKind::Toon(Header::Fence)
    ));
    let (out, _) = cut(cap(&text, need, TextKind::Toon(Header::Fence)));
    assert!(out.contains("\n  0,name-0\n```\n[mcp-toon: cut"), "{out}");
    assert!(!out.contains("1,name-1"));
    assert!(can_hold_first_row(
        &text,
        need,
        TextKind::Toon(Header::Fence)
    ));
    assert!(can_hold_first_row(&text, 0, TextKind::Toon(Header::Fence)));
}

#[test]
fn nested_headers_count_as_header_lines() {
    let body = "data:\n  items[40]{a}:\n".to_string() + &vec!["    1"; 40].join("\n");
    let text = marker::wrap(&body, Header::Marker, M);
    let (out, _) = cut(cap(&text, 100, TextKind::Toon(Header::Marker)));
    assert!(
        out.starts_with(&format!("{M}\ndata:\n  items[40]{{a}}:\n    1\n")),
        "{out}"
    );
}

#[test]
fn a_text_without_its_header_is_capped_as_text() {
    let text = "no marker here ".repeat(20);
    let (out, _) = cut(cap(&text, 60, TextKind::Toon(Header::Marker)));
    assert!(out.starts_with("no marker here"));
    assert!(out.len() <= 60);
}

#[test]
fn every_cap_is_respected() {
    for header in [Header::None, Header::Marker, Header::Fence] {
        let text = marker::wrap(&toon_rows(30), header, M);
        for max in 1..=text.len() + 1 {
            match cap(&text, max, TextKind::Toon(header)) {
                Capped::Fits => assert!(text.len() <= max),
                Capped::TooSmall => {}
                Capped::Cut { text: out, cut } => {
                    assert!(out.len() <= max, "{header:?} {max}");
                    assert!(
                        out.ends_with(&format!("[mcp-toon: cut {cut} of {} bytes]", text.len()))
                    );
                    if header != Header::None {
                        assert!(out.starts_with(&format!("{M}\n")));
                    }
                    if header == Header::Fence {
                        assert!(out.contains("\n```\n[mcp-toon: cut"));
                    }
                }
            }
        }
        let text = format!("{text}é😀");
        for max in 1..=text.len() {
            if let Capped::Cut { text: out, .. } = cap(&text, max, TextKind::Text) {
                assert!(out.len() <= max);
            }
        }
    }
}

#[test]
fn applied_records_the_cut() {
    let text = "x".repeat(500);
    let c = cap(&text, 100, TextKind::Text);
    let a = c.applied(text.len()).unwrap();
    assert_eq!(
        (a.transform, a.bytes_before, a.bytes_after),
        (Transform::Cap, 500, 100)
    );
    assert_eq!(Capped::Fits.applied(5), None);
}
