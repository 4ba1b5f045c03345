// A failed unwrap here is a failed test.
#![allow(clippy::unwrap_used)]

use proptest::prelude::Rng;
use proptest::test_runner::{RngAlgorithm, TestRng};
use serde::de::IgnoredAny;

use super::not_json;
use crate::mcp::scan::literal::{all_escaped, read};

/// What the skim says of `literal` agrees with the full read and with
/// serde_json: a literal it takes is valid, of the length the read finds,
/// its text no JSON value, its decoded length serde_json's (or a refusal
/// where serde_json refuses). Returns whether it took it.
fn agrees(literal: &str) -> bool {
    let Some((len, decoded)) = not_json(literal.as_bytes()) else {
        return false;
    };
    let (read_len, read) = read(literal.as_bytes()).unwrap();
    assert_eq!(len, read_len, "{literal:?}");
    let serde = serde_json::from_str::<String>(literal).ok();
    assert_eq!(read.value, serde, "{literal:?}");
    assert_eq!(decoded, serde.as_ref().map(String::len), "{literal:?}");
    if let Some(v) = &serde {
        assert!(serde_json::from_str::<IgnoredAny>(v).is_err(), "{v:?}");
    }
    true
}

/// Texts as coding agents read them: the skim takes each, in every
/// spelling a server may send.
#[test]
fn source_diffs_logs_and_prose_are_skimmed() {
    let texts = [
        "def handler(request):\n    return {\"ok\": True}\n",
        "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1 @@\n-a\n+b\n",
        "2026-12-05T10:00:00Z INFO started\n2026-12-05T10:00:01Z WARN slow",
        "- first item\n- second item",
        "1. First\n2. Second",
        "42 apples",
        "-5 degrees",
        "0x1F is thirty-one",
        "01 leading zero",
        "1.x",
        "true story",
        "falsehood",
        "null pointer",
        "nul l",
        "   \n\t indented prose",
        "# Title\n\nSome *Markdown*.",
        "<!DOCTYPE html><html></html>",
        "é accents first",
        "😀 an emoji first",
        "\u{feff}{\"a\": 1}",
        "/* a comment */ {}",
        "[FILE] a.txt\n[DIR] src"
            .strip_prefix('[')
            .unwrap_or_default(),
        "tab\tand \\ backslash \"quotes\" and \u{1} a control after the start",
        "ab\u{10437}cd past the BMP, and a lone one is refused by serde",
    ];
    for text in texts {
        let literal = serde_json::to_string(text).unwrap();
        assert!(agrees(&literal), "{literal:?}");
        assert!(agrees(&literal.replace('/', "\\/")), "{literal:?}");
        assert!(agrees(&all_escaped(text)), "{text:?}");
    }
}

/// What may still be JSON, and what the prefix does not follow, is left
/// to the full read.
#[test]
fn what_may_be_json_is_read() {
    let texts = [
        "{\"a\": 1}",
        "  [1, 2]",
        "\"a string\"",
        "42",
        "-0.5e+10",
        "true",
        "null  \n",
        "  ",
        "",
        "12345678901234567890",
        "tru",
        "-",
        "1e",
        "1e+",
    ];
    for text in texts {
        let literal = serde_json::to_string(text).unwrap();
        assert!(not_json(literal.as_bytes()).is_none(), "{literal:?}");
    }
    // Spelled `\uXXXX`, read as the characters they are.
    assert!(not_json(br#""\u007b\u007d""#).is_none());
    assert_eq!(not_json(br#""\u0064ef f():""#), Some((15, Some(8))));
    // No literal at all.
    for bad in ["abc", "\"abc", "\"a\u{1}bc\"", r#""\x""#, "\"def\u{1}\""] {
        assert!(not_json(bad.as_bytes()).is_none(), "{bad:?}");
    }
}

/// The count past the verdict: lone surrogates are refusals that read on,
/// surrogate pairs four bytes, every escape and plain run at every offset
/// of the eight-byte words; a literal broken anywhere (a raw control, a
/// bad escape, cut short) is refused, as the full read refuses it.
#[test]
fn counts_and_refusals_at_every_offset() {
    for lone in [
        r#""x \ud800""#,
        r#""x a\udc00b""#,
        r#""x \ud800\u0041 more text after it""#,
        r#""x \ud800\ud800""#,
        r#""x \ud800\u12G4""#,
    ] {
        let skim = not_json(lone.as_bytes());
        let full = read(lone.as_bytes());
        match (skim, full) {
            (Some((len, decoded)), Some((read_len, d))) => {
                assert_eq!(len, read_len, "{lone:?}");
                assert_eq!(decoded, None, "{lone:?}");
                assert_eq!(d.value, None, "{lone:?}");
            }
            (None, None) => {}
            other => panic!("{lone:?}: {other:?}"),
        }
    }
    assert_eq!(
        not_json(br#""x \ud83d\ude00""#).map(|(_, n)| n),
        Some(Some(6))
    );
    let alphabet = [
        "a", "bc", " ", "\n", "\t", "\"", "\\", "/", "é", "😀", "\u{8}", "\u{c}", "\r", "\u{1}",
        "\u{7f}", "{", "1",
    ];
    let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[11; 32]);
    for round in 0..4_000 {
        let len = (rng.next_u64() % 90) as usize;
        let body: String = (0..len)
            .map(|_| alphabet[(rng.next_u64() % alphabet.len() as u64) as usize])
            .collect();
        // A verdict after a prefix of every length up to a word and more.
        let lead = " ".repeat(round % 11);
        let text = format!("{lead}x{body}");
        let literal = serde_json::to_string(&text).unwrap();
        assert!(agrees(&literal), "{literal:?}");
        // Some characters re-spelled `\uXXXX` past the verdict.
        let mut mixed = String::from("\"");
        mixed.push_str(&serde_json::to_string(&format!("{lead}x")).unwrap()[1..]);
        mixed.pop();
        for ch in body.chars() {
            if rng.next_u64() % 3 == 0 {
                mixed.push_str(&all_escaped(&ch.to_string())[1..][..ch.len_utf16() * 6]);
            } else {
                let one = serde_json::to_string(&ch.to_string()).unwrap();
                mixed.push_str(&one[1..one.len() - 1]);
            }
        }
        mixed.push('"');
        assert!(agrees(&mixed), "{mixed:?}");
        // Followed by more of a body, which the skim must not take.
        let more = format!("{literal}, \"next\": \"x\"}}");
        assert_eq!(
            not_json(more.as_bytes()).map(|(n, _)| n),
            Some(literal.len())
        );
        // Cut short, or broken, at each byte past the verdict.
        for cut in lead.len() + 2..literal.len() {
            let short = literal.get(..cut).unwrap_or("");
            assert!(not_json(short.as_bytes()).is_none(), "{short:?}");
            if literal.is_char_boundary(cut) && !literal[..cut].ends_with('\\') {
                for bad in ["\u{1}", "\\x", "\\u1G"] {
                    let broken = format!("{}{bad}{}", &literal[..cut], &literal[cut..]);
                    assert!(not_json(broken.as_bytes()).is_none(), "{broken:?}");
                    assert!(read(broken.as_bytes()).is_none(), "{broken:?}");
                }
            }
        }
    }
}

/// Scalars and keywords at every place the prefix can leave them: the
/// skim takes a text only where serde_json finds no JSON value.
#[test]
fn scalar_prefixes_agree_with_serde() {
    let pieces = [
        "-", "0", "1", "9", ".", "e", "E", "+", " ", "\n", "t", "r", "u", "f", "a", "l", "s", "n",
        "x", "true", "false", "null",
    ];
    let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[5; 32]);
    let mut taken = 0;
    for _ in 0..30_000 {
        let len = 1 + (rng.next_u64() % 7) as usize;
        let text: String = (0..len)
            .map(|_| pieces[(rng.next_u64() % pieces.len() as u64) as usize])
            .collect();
        let literal = serde_json::to_string(&text).unwrap();
        if agrees(&literal) {
            taken += 1;
        } else {
            // Left to the full read: a JSON value, or a text that ends
            // before the grammar left it (a JSON text goes on from it).
            let ends = [
                "", "0", "e0", "0e0", "rue", "ue", "e", "alse", "lse", "se", "ull", "ll", "l",
            ];
            assert!(
                ends.iter().any(|end| {
                    serde_json::from_str::<IgnoredAny>(&format!("{text}{end}")).is_ok()
                }),
                "{text:?}"
            );
        }
    }
    assert!(taken > 10_000, "{taken}");
}
