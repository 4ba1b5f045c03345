//! Token counts in the plugin, without a tokenizer table.
//!
//! `o200k_base` (the encoding of GPT-4o and the GPT-5 family) first splits
//! text into pre-tokens with one regular expression, then runs BPE inside
//! each pre-token. A table-free estimator can copy the first step almost
//! exactly and only has to guess the second. [`pieces`] follows o200k's
//! pattern (tiktoken `o200k_base`, `pat_str`):
//!
//! ```text
//! [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//! [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//! \p{N}{1,3}
//!  ?[^\s\p{L}\p{N}]+[\r\n/]*
//! \s*[\r\n]+
//! \s+(?!\S)
//! \s+
//! ```
//!
//! While calibrating, summing tiktoken's count of each piece gave its count
//! of the whole text for every corpus text but one (Devanagari and Thai
//! marks, +1.5 %): the split is o200k's. Within a piece, digit runs (≤ 3 digits),
//! whitespace and punctuation runs of up to 3 characters are one token
//! each; letter runs cost by their length and by how much they look like
//! words: English and code identifiers merge into one or two tokens, random
//! strings (base64, ids, hashes) into about one token per 1.7 letters. The
//! word test is a table of letter pairs common in English
//! ([`COMMON_BIGRAMS`]).
//!
//! The constants are tuned to over-count slightly, and where a piece's
//! cost is uncertain (names, words of other languages) to its upper end:
//! the budget stage trusts this count to keep a page under an agent's
//! limit, in real tokens. `tests/estimator.rs` measures it against
//! o200k_base on `bench/estimator/` (with `real/`, the text items of real
//! MCP servers' results, and `intl-customers-*`, tables of names, emails
//! and cities in many languages and scripts), `bench/corpus/`, the
//! repository's own code and the TOON form of every JSON text there, and
//! fails when it under-counts any page-sized slice (by more than a token
//! in a thousand), any text by
//! more than [`MAX_UNDERCOUNT_PCT`] % (a short text's count is a few
//! tokens, where one is a share), or the real-server part in total; and
//! it cuts 2.3 MB international tables to budgets and counts every page.

/// The bound the calibration test holds the estimator to on whole texts:
/// none is counted more than this share (in percent) below its o200k_base
/// count. Page-sized slices (12 KB), what a budget cuts, are not (but
/// for a token in a thousand).
pub const MAX_UNDERCOUNT_PCT: u32 = 3;

/// Letter pairs that occur at least twice in English prose: bit `b` of
/// entry `a` is set when the pair (`a`, `b`) (lowercase, `a` = 0) is common.
/// Made from the Apache-2.0, GPL-3, MPL-2.0 and GFDL-1.3 texts in Debian's
/// `/usr/share/common-licenses` (unrelated to the calibration corpus).
const COMMON_BIGRAMS: [u32; 26] = [
    0x1ffbf6e, 0x11edb11, 0x01f4d95, 0x17e4b79, 0x1eff9ff, 0x11e4931, 0x016f9d1, 0x11e6111,
    0x2bffd7f, 0x0104011, 0x0142111, 0x13e4939, 0x034f917, 0x13cfd7d, 0x3fefdfe, 0x11ec999,
    0x0100000, 0x17efd7f, 0x11cddfd, 0x15ef9bb, 0x00ef97f, 0x0004111, 0x0466991, 0x1089195,
    0x30ee913, 0x0000111,
];

/// Cost units per token: piece costs are in hundredths of a token.
const UNIT: u64 = 100;

/// What kind of pre-token a piece is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// A run of letters (with its one leading non-letter, if any).
    Letters,
    /// One to three digits.
    Digits,
    /// Punctuation and symbols (with one leading space, trailing newlines
    /// and slashes).
    Punct,
    /// Whitespace.
    Space,
}

/// One pre-token: its kind and byte range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Piece {
    pub(crate) kind: Kind,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// The estimated `o200k_base` tokens of `text`.
pub fn tokens(text: &str) -> usize {
    let total = pieces_cost(text).saturating_add(blob_correction(text));
    usize::try_from(total.div_ceil(UNIT)).unwrap_or(usize::MAX)
}

fn pieces_cost(text: &str) -> u64 {
    let mut total: u64 = 0;
    for_each_piece(text, |p| {
        let piece = text.get(p.start..p.end).unwrap_or("");
        total = total.saturating_add(u64::from(cost(piece, p.kind)));
    });
    total
}

/// Base64 (attachments, `data:` URIs, JWTs, keys) splits into pieces so
/// short that BPE merges almost nothing: about 1.47 bytes per token on the
/// calibration corpus, more than the pieces' own costs say. A run of at
/// least [`BLOB_MIN`] base64 characters with capitals, small letters and
/// digits costs at least [`BLOB_COST`] hundredths of a token per byte.
fn blob_correction(text: &str) -> u64 {
    let mut extra: u64 = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let (mut upper, mut lower, mut digit) = (false, false, false);
        while let Some(&b) = bytes.get(i) {
            match b {
                b'A'..=b'Z' => upper = true,
                b'a'..=b'z' => lower = true,
                b'0'..=b'9' => digit = true,
                b'+' | b'/' | b'=' | b'-' | b'_' => {}
                _ => break,
            }
            i += 1;
        }
        let len = i - start;
        if len >= BLOB_MIN && upper && lower && digit {
            let run = text.get(start..i).unwrap_or("");
            let floor = u64::try_from(len)
                .unwrap_or(u64::MAX)
                .saturating_mul(BLOB_COST);
            extra = extra.saturating_add(floor.saturating_sub(pieces_cost(run)));
        }
        if len == 0 {
            i += 1;
        }
    }
    extra
}

/// Shortest run of base64 characters taken as a blob.
const BLOB_MIN: usize = 32;
/// Hundredths of a token per byte of a blob (1.39 bytes per token).
const BLOB_COST: u64 = 72;

#[cfg(test)]
/// The pieces of `text`, in order (for tests and calibration).
pub(crate) fn pieces(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    for_each_piece(text, |p| out.push(p));
    out
}

fn is_letter(c: char) -> bool {
    // Rust's Alphabetic covers \p{L} and most of \p{M} that follow letters.
    c.is_alphabetic()
}

fn is_digit(c: char) -> bool {
    c.is_numeric()
}

fn is_newline(c: char) -> bool {
    c == '\r' || c == '\n'
}

/// Neither whitespace, letter nor digit.
fn is_punct(c: char) -> bool {
    !c.is_whitespace() && !is_letter(c) && !is_digit(c)
}

/// Calls `f` with each piece of `text`, left to right, in one pass.
fn for_each_piece(text: &str, mut f: impl FnMut(Piece)) {
    let at = |i: usize| text.get(i..).and_then(|s| s.chars().next());
    let next_of = |i: usize| at(i).map_or(i, |c| i + c.len_utf8());
    let mut i = 0;
    while let Some(c) = at(i) {
        let after = next_of(i);
        let next = at(after);
        // A letter run, possibly led by one character that is not a letter,
        // digit or newline (a space, a quote, a comma).
        let letters_from = if is_letter(c) {
            Some(i)
        } else if !is_digit(c) && !is_newline(c) && next.is_some_and(is_letter) {
            Some(after)
        } else {
            None
        };
        if let Some(j) = letters_from {
            let end = contraction_end(text, letter_run_end(text, j));
            f(Piece {
                kind: Kind::Letters,
                start: i,
                end,
            });
            i = end;
            continue;
        }
        if is_digit(c) {
            let mut j = i;
            for _ in 0..3 {
                match at(j) {
                    Some(d) if is_digit(d) => j += d.len_utf8(),
                    _ => break,
                }
            }
            f(Piece {
                kind: Kind::Digits,
                start: i,
                end: j,
            });
            i = j;
            continue;
        }
        if c.is_whitespace() {
            let mut j = i;
            let mut last_newline_end = None;
            let mut last_start = i;
            while let Some(d) = at(j) {
                if !d.is_whitespace() {
                    break;
                }
                last_start = j;
                j += d.len_utf8();
                if is_newline(d) {
                    last_newline_end = Some(j);
                }
            }
            let end = match last_newline_end {
                // \s*[\r\n]+
                Some(e) => e,
                // \s+(?!\S): the last space goes with what follows.
                None if at(j).is_some() && last_start > i => last_start,
                // A lone space before punctuation joins it (` ?[punct]+`).
                None if c == ' ' && at(j).is_some_and(is_punct) => {
                    let end = punct_run_end(text, j);
                    f(Piece {
                        kind: Kind::Punct,
                        start: i,
                        end,
                    });
                    i = end;
                    continue;
                }
                None => j,
            };
            f(Piece {
                kind: Kind::Space,
                start: i,
                end,
            });
            i = end;
            continue;
        }
        let end = punct_run_end(text, i);
        f(Piece {
            kind: Kind::Punct,
            start: i,
            end: end.max(after),
        });
        i = end.max(after);
    }
}

/// End of `[upper]*[lower]+ | [upper]+[lower]*` from `start`: a run of
/// letters that ends where a lowercase letter is followed by an uppercase
/// one (`camelCase` is two pieces).
fn letter_run_end(text: &str, start: usize) -> usize {
    let mut seen_lower = false;
    let mut end = start;
    for c in text.get(start..).unwrap_or("").chars() {
        if !is_letter(c) || (c.is_uppercase() && seen_lower) {
            break;
        }
        seen_lower |= !c.is_uppercase();
        end += c.len_utf8();
    }
    end
}

/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` after a letter run.
fn contraction_end(text: &str, end: usize) -> usize {
    let rest = text.get(end..).unwrap_or("");
    let Some(tail) = rest.strip_prefix('\'') else {
        return end;
    };
    for suffix in ["re", "ve", "ll", "s", "t", "m", "d"] {
        if tail
            .get(..suffix.len())
            .is_some_and(|t| t.eq_ignore_ascii_case(suffix))
        {
            return end + 1 + suffix.len();
        }
    }
    end
}

/// End of `[punct]+[\r\n/]*` from `start`.
fn punct_run_end(text: &str, start: usize) -> usize {
    let mut end = start;
    let mut tail = false;
    for c in text.get(start..).unwrap_or("").chars() {
        if !tail && is_punct(c) {
            end += c.len_utf8();
        } else if matches!(c, '\r' | '\n' | '/') {
            tail = true;
            end += c.len_utf8();
        } else {
            break;
        }
    }
    end
}

/// Hundredths of a token for one piece.
fn cost(piece: &str, kind: Kind) -> u32 {
    match kind {
        Kind::Digits | Kind::Space => 100,
        Kind::Punct => punct_cost(piece),
        Kind::Letters => letters_cost(piece),
    }
}

fn punct_cost(piece: &str) -> u32 {
    let body = piece.strip_prefix(' ').unwrap_or(piece);
    if body.is_ascii() {
        // Runs of up to three (`":"`, `},{`) are single tokens; longer
        // ones (`-->`, `=====`) split.
        let n = len_u32(body.len());
        if n <= 3 {
            100
        } else {
            (50 * n).max(100)
        }
    } else {
        // Emoji and other symbols: about two bytes of UTF-8 per token.
        (50 * len_u32(body.len())).max(100)
    }
}

fn letters_cost(piece: &str) -> u32 {
    let mut chars = piece.chars();
    let Some(first) = chars.next() else {
        return 0;
    };
    // How often the leading character stays a token of its own, measured
    // on the calibration corpus: a space or `.` `_` `(` `\\` nearly never
    // (`self.session`, `max_body`), a comma or quote nearly always (the
    // cells of a TOON row).
    let lead = match first {
        c if is_letter(c) => 0,
        ' ' | '.' | '_' | '(' | '\\' | '?' | '@' => 10,
        '-' | '/' | '[' | '<' => 40,
        '=' => 60,
        _ => 100,
    };
    let word = if is_letter(first) {
        piece
    } else {
        chars.as_str()
    };
    lead + word_cost(word)
}

fn word_cost(word: &str) -> u32 {
    let n = len_u32(word.chars().count());
    if !word.is_ascii() {
        return intl_cost(word, n);
    }
    let upper = len_u32(word.bytes().filter(u8::is_ascii_uppercase).count());
    let randomish = uncommon_pairs_pct(word);
    // Capitals inside a word (`YJNKOCojw`) are a sign of base64.
    let randomish = if upper >= 2 && upper < n {
        randomish.max(50)
    } else {
        randomish
    };
    let english = if upper == n && n > 1 {
        // All capitals: short acronyms are single tokens, longer runs split.
        if n <= 6 {
            130
        } else {
            60 * n
        }
    } else {
        // Short words are one token; longer ones are more often rare words
        // and names that BPE splits (`Stroustrup` is four).
        let capitalised = upper == 1 && word.starts_with(|c: char| c.is_ascii_uppercase());
        let base = match n {
            0..=3 => 100,
            4..=5 => 110,
            _ => 115 + 10 * (n - 6),
        };
        // Capitalised long words are mostly names, which BPE splits more
        // than words of the same length.
        if capitalised && n >= 6 {
            base + 80
        } else {
            base
        }
    };
    let random = (60 * n).max(100);
    let mean = if randomish < 20 {
        english
    } else if randomish >= 34 {
        random.max(english)
    } else {
        (english + random.max(english)) / 2
    };
    // Where the letter pairs cannot tell a word from a name, the cost is
    // an upper bound, not a mean (a budget is a ceiling): a long
    // lowercase word may be one token (`configuration`) or a name in an
    // email seven (`halldorsdottir`); a capitalised one (`Stroustrup`,
    // `Kowalski`) is more often a name than a word.
    let lower = upper == 0;
    let capitalised = upper == 1 && word.starts_with(|c: char| c.is_ascii_uppercase());
    if lower && n >= LONG_WORD && randomish < 34 {
        mean.max(LONG_WORD_COST * n)
    } else if capitalised && n >= NAME_WORD {
        mean.max(NAME_WORD_COST * n)
    } else {
        mean
    }
}

/// Lowercase words this long or longer cost [`LONG_WORD_COST`] a letter
/// at least: about the rate of names BPE splits (`.halldorsdottir` is seven
/// tokens, `wisniewska` four), where most English words of that length are
/// one or two. Measured on `bench/estimator/intl-customers-*` and the rest
/// of the calibration corpus (tests/estimator.rs).
const LONG_WORD: u32 = 11;
const LONG_WORD_COST: u32 = 40;
/// Capitalised words this long or longer: names, at [`NAME_WORD_COST`] a
/// letter at least.
const NAME_WORD: u32 = 6;
const NAME_WORD_COST: u32 = 35;

/// Letters beyond ASCII. CJK ideographs, kana and hangul: about one
/// token per character. Latin with diacritics (Polish, Icelandic,
/// Hungarian, Vietnamese, …) and Greek: words BPE has rarely seen, split
/// every two characters or so (`Székesfehérvár` is eight tokens,
/// `Małgorzata` five), priced at the upper end of what the calibration
/// corpus shows (`bench/estimator/intl-customers-*`), since a budget is a
/// ceiling. Other scripts (Cyrillic, Arabic, Hebrew, Devanagari, Thai)
/// cost by their UTF-8 length, which over-counts them by a fifth or more.
fn intl_cost(word: &str, chars: u32) -> u32 {
    let cjk = word.chars().any(|c| {
        matches!(u32::from(c), 0x2E80..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0x20000..=0x3FFFF)
    });
    if cjk {
        return (100 * chars).max(100);
    }
    let first = word.chars().find(|c| !c.is_ascii()).map_or(0, u32::from);
    match first {
        // Latin-1 Supplement, Latin Extended-A and -B, Latin Extended
        // Additional.
        0x80..=0x24F | 0x1E00..=0x1EFF => (55 * chars + 30).max(100),
        // Greek and Coptic, Greek Extended.
        0x370..=0x3FF | 0x1F00..=0x1FFF => (55 * chars + 70).max(100),
        _ => (20 * len_u32(word.len()) + 70).max(100),
    }
}

/// Share (percent) of a word's adjacent letter pairs that are uncommon in
/// English.
fn uncommon_pairs_pct(word: &str) -> u32 {
    let mut pairs = 0u32;
    let mut uncommon = 0u32;
    let mut prev: Option<u8> = None;
    for b in word.bytes() {
        let b = b.to_ascii_lowercase();
        if !b.is_ascii_lowercase() {
            prev = None;
            continue;
        }
        if let Some(a) = prev {
            pairs += 1;
            let row = COMMON_BIGRAMS
                .get(usize::from(a - b'a'))
                .copied()
                .unwrap_or(0);
            if row & (1 << (b - b'a')) == 0 {
                uncommon += 1;
            }
        }
        prev = Some(b);
    }
    (uncommon * 100).checked_div(pairs).unwrap_or(0)
}

fn len_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(pieces: &[Piece], text: &str) -> Vec<String> {
        pieces
            .iter()
            .map(|p| text[p.start..p.end].to_string())
            .collect()
    }

    #[test]
    fn splits_like_o200k() {
        let text = "Hello world's camelCase  x\n\n  {\"id\":12345,\"name\":\"Zoë\"} -->";
        let got = texts(&pieces(text), text);
        assert_eq!(
            got,
            [
                "Hello", " world's", " camel", "Case", " ", " x", "\n\n", " ", " {\"", "id", "\":",
                "123", "45", ",\"", "name", "\":\"", "Zoë", "\"}", " -->"
            ]
        );
        let joined: String = got.concat();
        assert_eq!(joined, text);
    }

    #[test]
    fn pieces_cover_any_text() {
        for text in [
            "",
            " ",
            "\r\n",
            "a",
            "1234567",
            "😀😀 x",
            "\u{0301}e",
            "é",
            "  \t\n x",
        ] {
            let ps = pieces(text);
            let mut at = 0;
            for p in &ps {
                assert_eq!(p.start, at, "{text:?}");
                assert!(p.end > p.start, "{text:?}");
                at = p.end;
            }
            assert_eq!(at, text.len(), "{text:?}");
        }
    }

    #[test]
    fn counts_grow_with_text() {
        assert_eq!(tokens(""), 0);
        assert_eq!(tokens("hello"), 2);
        assert!(tokens("a b c d e f") >= 6);
        // A random string costs more than a word of the same length.
        assert!(tokens("xqzvjkwp") > tokens("handlers"));
    }
}
