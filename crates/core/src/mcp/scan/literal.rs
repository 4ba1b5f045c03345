//! A text item's string literal read once (RFC 8259 §7): checked as the
//! scan checks every literal, decoded to serde_json's answer (what
//! `serde_json::from_str::<String>` gives, or no value where it refuses: a
//! lone surrogate escape), and, on the way, whether the decoded text read
//! as JSON has whitespace between its tokens (what
//! [`crate::stage::clean::compact::has_layout`] answers) and an escape in
//! a string (where compaction may write a `\uXXXX` as its character).
//!
//! A tool result's text is one long literal, escaped throughout (`\"`
//! every few bytes when it holds JSON): checking it, decoding it and
//! looking for layout were three passes and a large share of reading a
//! result (issue 14). Here the plain runs between escapes are copied eight
//! bytes at a time, and the layout is read off the escapes: a text of JSON
//! in a literal has every one of its quotes and backslashes escaped, so it
//! enters and leaves its strings only at an escape, and a plain run is
//! wholly inside a string or wholly outside.

use crate::json::lex::{equal_bytes, stops, to_stop};

/// What reading a text literal found.
#[derive(Debug, Default)]
pub(crate) struct Decoded {
    /// The value; `None` where serde_json refuses the literal (a lone
    /// surrogate escape).
    pub(crate) value: Option<String>,
    /// The value, read as JSON, has whitespace between its tokens. Exact
    /// when it is one JSON value; on other text the answer is whatever
    /// the walk found, which compaction does not use.
    pub(crate) layout: bool,
    /// The value, read as JSON, has an escape in a string (a backslash:
    /// in one JSON value there is none elsewhere). Read off the escapes of
    /// the literal at no cost, so that compaction does not look for
    /// escapes where there are none.
    pub(crate) escapes: bool,
}

/// Where the decoded text is, read as JSON, at the current byte.
#[derive(Default)]
struct Layout {
    /// Inside a string of the decoded text.
    in_string: bool,
    /// Inside a string, right after its backslash: the next character is
    /// escaped.
    escaped: bool,
    found: bool,
    /// A backslash inside a string of the decoded text.
    escapes: bool,
}

impl Layout {
    /// A plain run of `len` bytes (no quote, backslash or control);
    /// `spaces` tells whether one of them is a space, asked only outside a
    /// string (most of a text's bytes are inside one).
    fn run(&mut self, len: usize, spaces: impl FnOnce() -> bool) {
        if len == 0 {
            return;
        }
        if self.in_string {
            self.escaped = false;
        } else if !self.found {
            self.found = spaces();
        }
    }

    /// A character an escape decoded to.
    fn escape(&mut self, ch: char) {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if ch == '\\' {
                self.escaped = true;
                self.escapes = true;
            } else if ch == '"' {
                self.in_string = false;
            }
        } else if ch == '"' {
            self.in_string = true;
        } else {
            self.found |= matches!(ch, ' ' | '\t' | '\n' | '\r');
        }
    }
}

/// Whether a space is among the first `bytes` bytes of `word`.
fn spaces_below(word: u64, bytes: usize) -> bool {
    let flags = equal_bytes(word, b' ');
    // The lowest flag is exact: a space lies below `bytes` when it is.
    flags != 0 && (flags.trailing_zeros() as usize) < bytes * 8
}

/// Reads the literal at the start of `b` (its opening quote): its length,
/// quotes included, and what it holds; `None` when it is no valid literal
/// (no closing quote, a raw control character, a bad escape).
pub(super) fn read(b: &[u8]) -> Option<(usize, Decoded)> {
    if b.first() != Some(&b'"') {
        return None;
    }
    // Sized for the rest of the body at most once per literal: for the
    // one large text of a result that is its size; a short literal gives
    // the rest back below.
    let mut out: Vec<u8> = Vec::with_capacity(b.len() - 1);
    // The plain runs and `\"` escapes go first to a buffer on the stack,
    // eight bytes at a time, and into `out` a kilobyte at a time: written
    // to `out` itself, each word paid for `Vec`'s capacity check and length
    // update, and its cut back to the run. Reading a 64 KB table's literal
    // natively: 61.6M → 51.7M instructions per 50; through Envoy the
    // module's share of the request went 5,846.8k → 5,736.2k (a smaller
    // buffer copies out more often, and each copy is a call out of wasm).
    let mut staged = [0u8; 1024];
    let mut held = 0;
    let mut layout = Layout::default();
    let mut refused = false;
    let mut at = 1;
    loop {
        // Copy the plain run from `at` to the next stop.
        let mut stop = None;
        while let Some(word) = b.get(at..at + 8) {
            let w = <[u8; 8]>::try_from(word).ok()?;
            let found = stops(u64::from_le_bytes(w));
            // Room for the word and a quote after it.
            if held + 9 > staged.len() {
                out.extend_from_slice(staged.get(..held)?);
                held = 0;
            }
            staged.get_mut(held..held + 8)?.copy_from_slice(&w);
            if found != 0 {
                let k = (found.trailing_zeros() / 8) as usize;
                held += k;
                layout.run(k, || spaces_below(u64::from_le_bytes(w), k));
                // A one-byte escape is taken here and the run after it
                // read on in this loop: `\"` every few bytes in a text of
                // JSON, `\n` every line of source code or prose. Leaving
                // the loop at each `\n` cost a copy into `out` and a push:
                // a 64 KB source file's exchange natively (benches/core_time
                // under callgrind), 953k -> 875k instructions; the quote
                // keeps its own test first: the 1 KB and 64 KB tables and
                // a 1 KB document take 0.8 % more instructions than with
                // `\"` alone, 1.3 % with one test for every escape.
                let pair = b.get(at + k..at + k + 2);
                if pair == Some(b"\\\"") {
                    layout.escape('"');
                    *staged.get_mut(held)? = b'"';
                    held += 1;
                    at += k + 2;
                    continue;
                }
                if let Some(ch) = short_escape(pair) {
                    layout.escape(char::from(ch));
                    *staged.get_mut(held)? = ch;
                    held += 1;
                    at += k + 2;
                    continue;
                }
                stop = Some(at + k);
                break;
            }
            layout.run(8, || spaces_below(u64::from_le_bytes(w), 8));
            held += 8;
            at += 8;
        }
        out.extend_from_slice(staged.get(..held)?);
        held = 0;
        let stop = match stop {
            Some(stop) => stop,
            None => {
                let rest = b.get(at..)?;
                let k = rest
                    .iter()
                    .position(|&c| c < 0x20 || c == b'"' || c == b'\\')?;
                let run = rest.get(..k)?;
                out.extend_from_slice(run);
                layout.run(k, || run.contains(&b' '));
                at + k
            }
        };
        at = stop + 1;
        match *b.get(stop)? {
            b'"' => break,
            b'\\' => {}
            // A raw control character.
            _ => return None,
        }
        let c = *b.get(at)?;
        at += 1;
        let ch = match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = hex4(b.get(at..at + 4)?)?;
                at += 4;
                match unit {
                    // A leading surrogate must be followed by `\u` and a
                    // trailing one (RFC 8259 §7: UTF-16 surrogate pairs);
                    // else serde_json refuses the literal, which is still
                    // one: read on to its end.
                    0xD800..=0xDBFF => {
                        let low = match b.get(at..at + 2) {
                            Some(b"\\u") => hex4(b.get(at + 2..at + 6)?),
                            _ => None,
                        };
                        match low {
                            Some(low @ 0xDC00..=0xDFFF) => {
                                at += 6;
                                let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                                char::from_u32(code)?
                            }
                            _ => {
                                refused = true;
                                continue;
                            }
                        }
                    }
                    0xDC00..=0xDFFF => {
                        refused = true;
                        continue;
                    }
                    _ => char::from_u32(unit)?,
                }
            }
            _ => return None,
        };
        layout.escape(ch);
        if ch.is_ascii() {
            out.push(ch as u8);
        } else {
            out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
        }
    }
    let value = if refused {
        None
    } else {
        if out.capacity() - out.len() > out.len() / 8 {
            // A text of JSON is escaped every few bytes, and a short
            // literal was given the rest of the body: give back the slack
            // rather than hold it while the stages run.
            out.shrink_to_fit();
        }
        // The body is UTF-8 and escapes add whole characters.
        String::from_utf8(out).ok()
    };
    Some((
        at,
        Decoded {
            value,
            layout: layout.found,
            escapes: layout.escapes,
        },
    ))
}

/// What each two-byte escape stands for (RFC 8259 §7), by the byte after
/// the backslash; 0 where that byte makes no two-byte escape (`\u`, a bad
/// escape). A table, not a `match`: with a match the tables' exchanges
/// took 3.1 % more instructions than with `\"` alone, with the table 1.3 %.
pub(super) static SHORT: [u8; 256] = short_table();

// Indexing in a constant initialiser: an index out of range fails the
// build, never the plugin.
#[allow(clippy::indexing_slicing)]
const fn short_table() -> [u8; 256] {
    let mut t = [0u8; 256];
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t[b'/' as usize] = b'/';
    t[b'b' as usize] = 0x08;
    t[b'f' as usize] = 0x0c;
    t[b'n' as usize] = b'\n';
    t[b'r' as usize] = b'\r';
    t[b't' as usize] = b'\t';
    t
}

/// The byte a two-byte escape stands for, given the stop and the byte
/// after it; `None` for a quote, a control, `\u` or a bad escape.
fn short_escape(pair: Option<&[u8]>) -> Option<u8> {
    match pair? {
        [b'\\', c] => match SHORT.get(usize::from(*c)) {
            Some(0) | None => None,
            ch => ch.copied(),
        },
        _ => None,
    }
}

pub(super) fn hex4(digits: &[u8]) -> Option<u32> {
    let digits: &[u8; 4] = digits.try_into().ok()?;
    digits.iter().try_fold(0u32, |n, &d| {
        let v = char::from(d).to_digit(16)?;
        Some(n << 4 | v)
    })
}

/// A literal checked and measured, not decoded, from `start` (inside it)
/// to its closing quote (RFC 8259 §7: no raw control character; escapes
/// `\" \\ \/ \b \f \n \r \t \uXXXX`): the index past that quote, and the
/// decoded length of what lies between, or `None` for a lone surrogate,
/// which serde_json refuses to decode. `None` outside when the literal is
/// invalid, as [`read`] refuses it. The decoded length is the bytes read
/// less what each escape spends past its character, so a plain run costs
/// one test per eight bytes and an escape a few more. Every string the
/// scanner skips goes through here, and the skim's texts
/// ([`super::skim`]).
pub(super) fn measure(b: &[u8], start: usize) -> Option<(usize, Option<usize>)> {
    let mut at = start;
    // Bytes the escapes take past the characters they stand for.
    let mut spent = 0usize;
    let mut refused = false;
    loop {
        // To the next quote, backslash or control.
        at = to_stop(b, at)?;
        match *b.get(at)? {
            b'"' => {
                let len = (at - start).checked_sub(spent)?;
                return Some((at + 1, (!refused).then_some(len)));
            }
            b'\\' => {}
            // A raw control character.
            _ => return None,
        }
        let c = *b.get(at + 1)?;
        if c != b'u' {
            if SHORT.get(usize::from(c)).is_none_or(|&ch| ch == 0) {
                return None;
            }
            spent += 1;
            at += 2;
            continue;
        }
        let unit = hex4(b.get(at + 2..at + 6)?)?;
        at += 6;
        spent += match unit {
            // RFC 8259 §7: a leading surrogate and a trailing one are one
            // character past the BMP, four bytes in UTF-8; alone, serde_json
            // refuses the literal, which the read still reads to its end.
            0xD800..=0xDBFF => match b.get(at..at + 2) {
                Some(b"\\u") if matches!(hex4(b.get(at + 2..at + 6)?), Some(0xDC00..=0xDFFF)) => {
                    at += 6;
                    12 - 4
                }
                _ => {
                    refused = true;
                    6
                }
            },
            0xDC00..=0xDFFF => {
                refused = true;
                6
            }
            0..=0x7F => 6 - 1,
            0x80..=0x7FF => 6 - 2,
            _ => 6 - 3,
        };
    }
}

/// Every character of `text` escaped as `\uXXXX` (surrogate pairs past
/// the BMP), as some servers write it: a literal the tests read.
#[cfg(test)]
pub(super) fn all_escaped(text: &str) -> String {
    let mut out = String::from("\"");
    for unit in text.encode_utf16() {
        out.push_str(&format!("\\u{unit:04x}"));
    }
    out.push('"');
    out
}

#[cfg(test)]
// A failed unwrap here is a failed test.
#[allow(clippy::unwrap_used)]
mod tests {
    use proptest::prelude::Rng;
    use proptest::test_runner::{RngAlgorithm, TestRng};

    use super::{all_escaped, read};
    use crate::stage::clean::compact::has_layout;

    /// `literal` read: serde_json's value, and where that value is one
    /// JSON text, compaction's answer on layout.
    fn agrees(literal: &str) {
        let (len, d) = read(literal.as_bytes()).unwrap();
        assert_eq!(len, literal.len(), "{literal:?}");
        let serde = serde_json::from_str::<String>(literal).ok();
        assert_eq!(d.value, serde, "{literal:?}");
        if let Some(v) = &serde {
            if serde_json::from_str::<serde::de::IgnoredAny>(v).is_ok() {
                assert_eq!(d.layout, has_layout(v), "{v:?}");
                assert_eq!(d.escapes, v.contains('\\'), "{v:?}");
            }
        }
    }

    #[test]
    fn json_texts_in_both_spellings() {
        let more = [
            "[1]\r\n",
            r#"{"é":"😀 x","long key with spaces":"and a long value with spaces"}"#,
            r#"[{"id":1,"name":"Widget 1"},{"id":2,"name":"Widget 2"}]"#,
            r#"[{"id":1,"name":"Widget 1"}, {"id":2,"name":"Widget 2"}]"#,
            "",
            "plain prose, not JSON at all",
        ];
        for &text in crate::stage::clean::compact::LAYOUT_CASES
            .iter()
            .chain(&more)
        {
            agrees(&serde_json::to_string(text).unwrap());
            agrees(&all_escaped(text));
        }
    }

    /// Texts drawn from the characters that move the walk (quotes,
    /// backslashes, whitespace, structure), each as serde_json writes it
    /// and with some characters spelled `\uXXXX`.
    #[test]
    fn generated_texts() {
        let alphabet = [
            "\"", "\\", " ", "\n", "\t", "\r", "a", "é", "😀", "{", "}", "[", "]", ":", ",", "1",
            "\u{1}", "/", "\"x\"", "\"a b\"",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            let len = (next() % 24) as usize;
            let text: String = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            let literal = serde_json::to_string(&text).unwrap();
            agrees(&literal);
            // Re-spell one character in three as `\uXXXX`.
            let mut mixed = String::from("\"");
            for ch in text.chars() {
                if next() % 3 == 0 {
                    mixed.push_str(&all_escaped(&ch.to_string())[1..][..ch.len_utf16() * 6]);
                } else {
                    let one = serde_json::to_string(&ch.to_string()).unwrap();
                    mixed.push_str(&one[1..one.len() - 1]);
                }
            }
            mixed.push('"');
            agrees(&mixed);
        }
    }

    /// Longer texts, so that whole words of plain bytes and `\"` escapes
    /// meet every other stop at every offset in a word, and the staging
    /// buffer fills at every offset too: JSON tables (with and without
    /// layout, spaces inside and outside strings), and JSON with escapes of
    /// its own; each followed by more of a body, which the read must not
    /// take.
    #[test]
    fn long_texts_at_every_offset() {
        let alphabet = [
            "\"", "\"", "\"", "\\", " ", "\n", "a", "bc", "é", "😀", "{", "}", ":", ",", "1",
            "\u{1}", "/", "\"x\"", "\"a b\"", "\t", "\u{7f}", "\u{8}", "\u{c}", "\r",
        ];
        let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
        let mut next = || rng.next_u64();
        let mut texts: Vec<String> = Vec::new();
        for pad in 0..9 {
            let key = "k".repeat(pad);
            texts.push(format!(
                r#"[{{"id":1,"{key}":"Widget 1","p":3.5}},{{"id":2,"{key}":"W 2","p":4}}]"#
            ));
            texts.push(format!(r#"[{{"id":1, "{key}": "Widget 1"}}, {{"id": 2}}]"#));
            texts.push(format!(r#"{{"{key}":"a\"b","x":"c\\d","y":"e\nf g"}}"#));
            texts.push(format!(r#"{{"{key}":"tab\there","z":["1 2",3]}} "#));
            // Only `\"` escapes for hundreds of bytes, and with an escape
            // of its own every row.
            for q in ["ab", r#"a\"b"#] {
                let rows: Vec<String> = (0..40)
                    .map(|i| format!(r#"{{"id":{i},"{key}":"W {i}","q":"{q}"}}"#))
                    .collect();
                texts.push(format!("[{}]", rows.join(",")));
            }
        }
        for _ in 0..3_000 {
            let len = if next() % 8 == 0 {
                (next() % 400) as usize
            } else {
                (next() % 80) as usize
            };
            texts.push(
                (0..len)
                    .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                    .collect(),
            );
        }
        for text in &texts {
            let literal = serde_json::to_string(text).unwrap();
            agrees(&literal);
            // serde_json writes `/` bare; other writers send `\/` (RFC
            // 8259 §7 allows both), a one-byte escape read in the word loop.
            agrees(&literal.replace('/', "\\/"));
            let body = format!("{literal}, \"next\": \"x\"}}");
            let (len, d) = read(body.as_bytes()).unwrap();
            assert_eq!(len, literal.len(), "{body:?}");
            assert_eq!(d.value.as_deref(), Some(text.as_str()), "{body:?}");
            // Cut short, or broken by a raw control or a bad escape, at
            // each byte of the first words: no literal.
            for cut in 1..literal.len().min(40) {
                let short = literal.get(..cut).unwrap_or("");
                assert!(read(short.as_bytes()).is_none(), "{short:?}");
                if literal.is_char_boundary(cut) && !literal[..cut].ends_with('\\') {
                    for bad in ["\u{1}", "\\x"] {
                        let broken = format!("{}{bad}{}", &literal[..cut], &literal[cut..]);
                        assert!(read(broken.as_bytes()).is_none(), "{broken:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn what_is_no_literal_is_refused() {
        for bad in [
            "\"abc",
            "\"a\u{1}b\"",
            "\"a\nb\"",
            r#""\x""#,
            r#""\u12G4""#,
            r#""\u12""#,
            r#""\"#,
            "abc\"",
        ] {
            assert!(read(bad.as_bytes()).is_none(), "{bad:?}");
        }
    }

    /// A lone surrogate is a literal serde_json will not decode: read to
    /// its end, with no value.
    #[test]
    fn lone_surrogates_have_no_value() {
        for lone in [
            r#""\ud800""#,
            r#""a\udc00b""#,
            r#""\ud800\u0041 more text after it""#,
            r#""\ud800\ud800""#,
        ] {
            let (len, d) = read(lone.as_bytes()).unwrap();
            assert_eq!(len, lone.len(), "{lone:?}");
            assert_eq!(d.value, None, "{lone:?}");
            assert!(serde_json::from_str::<String>(lone).is_err());
        }
        // A pair is one character.
        let (_, d) = read(br#""\ud83d\ude00""#).unwrap();
        assert_eq!(d.value.as_deref(), Some("😀"));
    }

    /// Only the literal is read: what follows it in the body is not.
    #[test]
    fn stops_at_the_closing_quote() {
        let body = br#""a\"b" , "next": "x"}"#;
        let (len, d) = read(body).unwrap();
        assert_eq!(len, 6);
        assert_eq!(d.value.as_deref(), Some("a\"b"));
    }
}
