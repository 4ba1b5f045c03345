// A failed unwrap or panic here is a failed test, which is what it is for.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use super::{decoded_len, is_handle_key, strip};
use crate::stage::clean::tests::{encode_base64, random_bytes};

const MIN: usize = 256;

fn blob(bytes: usize, seed: u64) -> String {
    encode_base64(&random_bytes(bytes, seed), false)
}

#[test]
fn strips_a_standard_run_with_its_decoded_size() {
    for bytes in [300, 301, 302] {
        let b = blob(bytes, 7);
        assert!(
            b.contains('+') || b.contains('/'),
            "standard alphabet in use"
        );
        let text = format!("image follows: {b} (end)");
        assert_eq!(
            strip(&text, MIN).as_deref(),
            Some(format!("image follows: <stripped: {bytes} bytes> (end)").as_str()),
            "{bytes} bytes, padding {:?}",
            b.bytes().filter(|&c| c == b'=').count()
        );
    }
}

#[test]
fn strips_encoded_text_and_json() {
    let text = encode_base64(
        &b"The quick brown fox jumps over the lazy dog. ".repeat(8),
        false,
    );
    assert_eq!(strip(&text, MIN).as_deref(), Some("<stripped: 360 bytes>"));
    let json = encode_base64(br#"[{"id":1,"name":"user1"},{"id":2,"name":"user2"},{"id":3,"name":"user3"},{"id":4,"name":"user4"},{"id":5,"name":"user5"},{"id":6,"name":"user6"},{"id":7,"name":"user7"},{"id":8,"name":"user8"}]"#, false);
    assert!(json.len() >= MIN);
    assert!(strip(&json, MIN).is_some());
}

#[test]
fn strips_url_safe_runs() {
    let b = encode_base64(&random_bytes(400, 3), true);
    assert!(b.contains('-') || b.contains('_'));
    let text = format!("payload={b}");
    assert_eq!(
        strip(&text, MIN).as_deref(),
        Some("payload=<stripped: 400 bytes>")
    );
}

#[test]
fn strips_a_whole_data_uri() {
    let b = blob(600, 11);
    let text = format!("![chart](data:image/png;base64,{b}) and <img src=\"DATA:image/svg+xml;charset=utf-8;BASE64,{b}\">");
    assert_eq!(
        strip(&text, MIN).as_deref(),
        Some("![chart](<stripped: 600 bytes>) and <img src=\"<stripped: 600 bytes>\">")
    );
}

#[test]
fn short_data_uri_and_non_base64_data_uri_stay() {
    let small = format!("data:image/gif;base64,{}", blob(30, 1));
    assert_eq!(strip(&small, MIN), None);
    let percent = format!("data:text/plain,{}", "hello%20world".repeat(40));
    assert_eq!(strip(&percent, MIN), None);
}

#[test]
fn wrapped_lines_are_one_blob() {
    let b = blob(1000, 5);
    let lines: Vec<&str> = b
        .as_bytes()
        .chunks(76)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    assert!(lines.last().unwrap().ends_with('='), "padded last line");
    let text = format!(
        "Content-Transfer-Encoding: base64\r\n\r\n{}\r\n\r\n--boundary--",
        lines.join("\r\n")
    );
    assert_eq!(
        strip(&text, MIN).as_deref(),
        Some("Content-Transfer-Encoding: base64\r\n\r\n<stripped: 1000 bytes>\r\n\r\n--boundary--")
    );
}

#[test]
fn pem_body_is_stripped_between_its_armour_lines() {
    let b = blob(1200, 9); // 1600 chars: 25 full lines of 64, no padding
    let body: Vec<&str> = b
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let text = format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        body.join("\n")
    );
    assert_eq!(
        strip(&text, MIN).as_deref(),
        Some("-----BEGIN CERTIFICATE-----\n<stripped: 1200 bytes>\n-----END CERTIFICATE-----\n")
    );
}

#[test]
fn a_short_unpadded_line_after_wrapped_lines_stays() {
    let b = blob(600, 2); // 800 chars: 10 full lines of 76 and one of 40
    let lines: Vec<&str> = b
        .as_bytes()
        .chunks(76)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let text = format!("{}\nThanks", lines.join("\n"));
    let out = strip(&text, MIN).unwrap();
    let last = *lines.last().unwrap();
    assert_eq!(out, format!("<stripped: 570 bytes>\n{last}\nThanks"));
}

#[test]
fn leaves_words_identifiers_and_hex_alone() {
    let word = "Pneumonoultramicroscopicsilicovolcanoconiosis".repeat(8);
    let camel = "getUserAccountSettingsByIdV2AndRefreshTheCache".repeat(8);
    let sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    let long_hex = sha256.repeat(5); // 320 chars of lower-case hex
    let upper_hex = sha256.to_ascii_uppercase().repeat(5);
    let zeros = "A".repeat(400); // base64 of zero bytes: no entropy signal
    let camel2 = "HTTPServerConfigV2ForTLS13HandshakeWithALPN".repeat(8);
    let title = "ThisIsATitleCaseSentenceWithoutSpaces2024Edition".repeat(6);
    let path = "/usr/lib/x86_64-linux-gnu/".repeat(12);
    for text in [word, camel, camel2, title, long_hex, upper_hex, zeros, path] {
        assert!(text.len() >= MIN);
        assert_eq!(strip(&text, MIN), None, "{text}");
    }
    let digest = format!("sha256:{sha256} id=6f1c2a9e-6d3b-4c55-9a7e-0d1b2c3d4e5f");
    assert_eq!(strip(&digest, MIN), None);
}

#[test]
fn tokens_below_the_limit_stay() {
    let jwt = format!(
        "{}.{}.{}",
        encode_base64(br#"{"alg":"HS256","typ":"JWT"}"#, true),
        encode_base64(&random_bytes(120, 4), true),
        encode_base64(&random_bytes(32, 8), true)
    );
    assert!(jwt.len() < MIN);
    assert_eq!(strip(&format!("Authorization: Bearer {jwt}"), MIN), None);
    let api_key = encode_base64(&random_bytes(48, 6), true);
    assert_eq!(strip(&api_key, MIN), None);
}

#[test]
fn dotted_tokens_stay_whatever_their_length() {
    let jwt = format!(
        "eyJhbGciOiJSUzI1NiJ9.{}.{}",
        encode_base64(&random_bytes(600, 4), true),
        encode_base64(&random_bytes(256, 8), true)
    );
    assert_eq!(strip(&format!("token: {jwt}."), MIN), None);
}

#[test]
fn runs_inside_urls_stay() {
    let b = blob(300, 12);
    assert!(strip(&b, MIN).is_some(), "the run alone is a blob");
    let text = format!("see https://cdn.example.com/get?key={b}&v=2 or (https://x.test/#{b})");
    assert_eq!(strip(&text, MIN), None);
}

#[test]
fn a_run_mixing_both_alphabets_is_not_base64() {
    let b = blob(300, 13).replace('A', "-");
    assert!(b.contains('-') && (b.contains('+') || b.contains('/')));
    assert_eq!(strip(&b, MIN), None);
}

#[test]
fn impossible_lengths_are_not_base64() {
    // 4k + 1 characters cannot be base64; padding must complete a quartet.
    let b = blob(300, 14); // 400 characters
    assert_eq!(strip(&format!("{b}A"), MIN), None);
    assert_eq!(strip(&format!("{}=", &b[..397]), MIN), None);
}

#[test]
fn the_placeholder_must_be_shorter() {
    let b = blob(9, 15); // 12 characters
    assert_eq!(strip(&b, 8), None, "`<stripped: 9 bytes>` is longer");
}

#[test]
fn handle_keys() {
    for k in [
        "nextPageToken",
        "cursor",
        "endCursor",
        "continuation_token",
        "ETag",
    ] {
        assert!(is_handle_key(k), "{k}");
    }
    for k in ["image", "data", "content", "context"] {
        assert!(!is_handle_key(k), "{k}");
    }
}

#[test]
fn decoded_length_follows_rfc_4648() {
    assert_eq!(decoded_len(0), 0);
    assert_eq!(decoded_len(2), 1);
    assert_eq!(decoded_len(3), 2);
    assert_eq!(decoded_len(4), 3);
    assert_eq!(decoded_len(402), 301);
}

#[test]
fn unicode_around_blobs_survives() {
    let b = blob(300, 16);
    let text = format!("é😀{b}ü");
    assert_eq!(
        strip(&text, MIN).as_deref(),
        Some("é😀<stripped: 300 bytes>ü")
    );
}

/// The wrapped-line detector as it was before issue 13: every line of a
/// group read on to the group's end, so `n` lines cost `n²`. The one-pass
/// detector must find exactly the blobs this one finds.
mod reference {
    use super::super::{
        data_uri, decoded_len, line_break, replace, scan_run, single_at, valid_length, Blob, Run,
        Stats, MIN_WRAP_WIDTH,
    };

    fn wrapped_at(b: &[u8], run: Run, min_chars: usize) -> Option<Blob> {
        let width = run.len();
        let at_line_start = run.start == 0 || b.get(run.start - 1) == Some(&b'\n');
        if !at_line_start || run.pad != 0 || width < MIN_WRAP_WIDTH || width % 4 != 0 {
            return None;
        }
        let mut next = line_break(b, run.end)?;
        let mut stats = Stats::default();
        stats.feed(b.get(run.start..run.end)?);
        let mut end = run.end;
        let mut lines = 1;
        while b.get(next).copied().is_some_and(super::super::is_alphabet) {
            let line = scan_run(b, next);
            let line_end = line.end_with_padding();
            let after = line_break(b, line_end);
            if after.is_none() && line_end != b.len() {
                break;
            }
            let full = line.len() == width && line.pad == 0;
            let short_last =
                line.len() < width && line.pad > 0 && valid_length(line.len(), line.pad);
            if !full && !short_last {
                break;
            }
            stats.feed(b.get(line.start..line.end)?);
            end = line_end;
            lines += 1;
            match after {
                Some(n) if full => next = n,
                _ => break,
            }
        }
        if lines < 2 || stats.chars < min_chars || !stats.looks_encoded() {
            return None;
        }
        Some(Blob {
            end,
            decoded: decoded_len(stats.chars),
        })
    }

    /// `strip` with the old detector.
    pub(crate) fn strip(text: &str, min_chars: usize) -> Option<String> {
        let b = text.as_bytes();
        let mut out = String::new();
        let mut copied = 0;
        let mut i = 0;
        while i < b.len() {
            let at = |k: usize| b.get(k).copied().unwrap_or(0);
            if at(i).eq_ignore_ascii_case(&b'd') && (i == 0 || !at(i - 1).is_ascii_alphanumeric()) {
                if let Some((end, decoded)) = data_uri(b, i, min_chars) {
                    if replace(text, &mut out, &mut copied, i, end, decoded) {
                        i = end;
                        continue;
                    }
                }
            }
            if !super::super::is_alphabet(at(i)) {
                i += 1;
                continue;
            }
            let run = scan_run(b, i);
            let blob = wrapped_at(b, run, min_chars).or_else(|| single_at(b, run, min_chars));
            if let Some(blob) = blob {
                if replace(text, &mut out, &mut copied, i, blob.end, blob.decoded) {
                    i = blob.end;
                    continue;
                }
            }
            i = run.end_with_padding();
        }
        if copied == 0 {
            return None;
        }
        out.push_str(text.get(copied..).unwrap_or(""));
        Some(out)
    }
}

#[test]
fn a_group_of_lines_is_read_once_and_judged_from_every_line() {
    // Plain lines of one width, then encoded lines of that width: the blob
    // starts at the first line from which the rest looks encoded.
    let plain = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    let b = blob(900, 4); // 1200 chars: 15 lines of 76 and one of 60
    let mut text = String::new();
    for _ in 0..3 {
        text.push_str(plain);
        text.push('\n');
    }
    let lines: Vec<&str> = b
        .as_bytes()
        .chunks(76)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    text.push_str(&lines.join("\n"));
    let out = strip(&text, MIN);
    assert_eq!(out, reference::strip(&text, MIN));
    assert!(out.unwrap().contains("<stripped:"));
    // The shape of issue 13: many lines of one letter are no blob.
    let lines = "AAAAAAAAAAAAAAAA\n".repeat(5000);
    assert_eq!(strip(&lines, MIN), None);
    assert_eq!(reference::strip(&lines, MIN), None);
}

mod props {
    use proptest::prelude::*;

    use super::{reference, strip};
    use crate::stage::clean::tests::{encode_base64, random_bytes};

    /// A line of a text made to hit the wrapped detector: encoded lines,
    /// plain letters, short and padded lines, words, all often of one width.
    fn line() -> impl Strategy<Value = String> {
        prop_oneof![
            (1u64..1000).prop_map(|seed| encode_base64(&random_bytes(12, seed), false)),
            (1u64..1000)
                .prop_map(|seed| encode_base64(&random_bytes(57, seed), false)[..76].to_string()),
            Just("A".repeat(16)),
            Just(
                "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                    .to_string()
            ),
            (1u64..1000).prop_map(|seed| encode_base64(&random_bytes(10, seed), false)), // padded
            Just("Thanks".to_string()),
            Just(String::new()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        #[test]
        fn finds_the_blobs_the_old_detector_found(
            lines in prop::collection::vec(line(), 0..40),
            crlf in any::<bool>(),
            min in prop::sample::select(vec![16usize, 64, 256]),
        ) {
            let text = lines.join(if crlf { "\r\n" } else { "\n" });
            prop_assert_eq!(strip(&text, min), reference::strip(&text, min));
        }
    }
}
