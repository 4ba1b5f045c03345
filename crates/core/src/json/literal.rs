//! JSON string literals (RFC 8259 §7) written and measured eight bytes at
//! a time. A rewritten text item is one long literal, mostly plain runs
//! between a few escapes (TOON rows: one `\n` per row); serde_json's
//! writer looks at every byte and copies each run with a call of its own.
//! Both functions give serde_json's bytes (`serde_json::to_string` of a
//! `&str`: `\"`, `\\`, `\b \f \n \r \t`, other C0 controls as lowercase
//! `\u00XX`, everything else as it is), which the tests hold them to.

use super::lex::stops;

/// The escape of a byte [`stops`] flags.
fn escape(b: u8) -> Escape {
    match b {
        b'"' => Escape::Short(b'"'),
        b'\\' => Escape::Short(b'\\'),
        b'\n' => Escape::Short(b'n'),
        b'\r' => Escape::Short(b'r'),
        b'\t' => Escape::Short(b't'),
        0x08 => Escape::Short(b'b'),
        0x0c => Escape::Short(b'f'),
        _ => Escape::Unicode,
    }
}

enum Escape {
    Short(u8),
    Unicode,
}

/// Bytes of `s` as a JSON string literal, quotes included.
pub(crate) fn literal_len(s: &str) -> usize {
    let b = s.as_bytes();
    let mut n = 2 + b.len();
    let mut at = 0;
    while let Some(word) = b.get(at..at + 8) {
        let w = <[u8; 8]>::try_from(word).map_or(0, u64::from_le_bytes);
        if stops(w) != 0 {
            n += word.iter().map(|&c| extra(c)).sum::<usize>();
        }
        at += 8;
    }
    n + b
        .get(at..)
        .unwrap_or(&[])
        .iter()
        .map(|&c| extra(c))
        .sum::<usize>()
}

/// What escaping adds to one byte.
fn extra(c: u8) -> usize {
    if c >= 0x20 && c != b'"' && c != b'\\' {
        return 0;
    }
    match escape(c) {
        Escape::Short(_) => 1,
        Escape::Unicode => 5,
    }
}

/// Appends `s` as a JSON string literal, quotes included.
pub fn write_literal(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b = s.as_bytes();
    out.push('"');
    let mut at = 0;
    loop {
        // The plain run from `at` to the next byte that needs an escape.
        let end = super::lex::to_stop(b, at).unwrap_or(b.len());
        // `at` and `end` sit on ASCII bytes (or the end): char boundaries.
        out.push_str(s.get(at..end).unwrap_or(""));
        let Some(&c) = b.get(end) else {
            break;
        };
        match escape(c) {
            Escape::Short(e) => {
                out.push('\\');
                out.push(char::from(e));
            }
            Escape::Unicode => {
                out.push_str("\\u00");
                let hex = |d: u8| char::from(HEX.get(usize::from(d)).copied().unwrap_or(b'0'));
                out.push(hex(c >> 4));
                out.push(hex(c & 0xf));
            }
        }
        at = end + 1;
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::{literal_len, write_literal};

    /// serde_json's bytes and length, at every offset of every escape in
    /// and around the eight-byte words.
    #[test]
    fn literals_are_serde_jsons() {
        let pieces = [
            "",
            "a",
            "plain text",
            "\"",
            "\\",
            "\n",
            "\r",
            "\t",
            "\u{8}",
            "\u{c}",
            "\u{1}",
            "\u{1f}",
            "\u{7f}",
            "é",
            "€",
            "😀",
            "ab\"cd",
            "abcdefgh",
            "abcdefg\\",
        ];
        for a in pieces {
            for b in pieces {
                for pad in 0..10 {
                    let s = format!("{}{a}{}{b}", "x".repeat(pad), "y".repeat(pad % 3));
                    let expected = serde_json::to_string(&s).unwrap();
                    let mut out = String::new();
                    write_literal(&mut out, &s);
                    assert_eq!(out, expected, "{s:?}");
                    assert_eq!(literal_len(&s), expected.len(), "{s:?}");
                }
            }
        }
    }
}
