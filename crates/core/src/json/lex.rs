//! The JSON lexing every reader here shares (RFC 8259): whitespace (§2)
//! and the end of a string literal's plain run (§7: a quotation mark, a
//! reverse solidus or a control character ends it), found eight bytes at a
//! time. One copy, so the scanner, the skim, the end scanner, the clean
//! stage, projection, the listing compactor and TOON's readers agree on
//! what a JSON text's bytes mean. wasm32 has no SIMD for `memchr` to use,
//! and these searches run over most of a tool result's bytes, hence the
//! word-at-a-time tests ([`stops`], [`equal_bytes`]) written by hand.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// JSON whitespace (RFC 8259 §2): space, tab, line feed, carriage return.
#[inline]
pub(crate) const fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

/// The first byte at or after `i` that is not whitespace (or `b.len()`).
#[inline]
pub(crate) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).copied().is_some_and(is_ws) {
        i += 1;
    }
    i
}

/// A byte that ends a string literal's plain run: `"`, `\` or a control.
#[inline]
pub(crate) const fn is_stop(c: u8) -> bool {
    c < 0x20 || c == b'"' || c == b'\\'
}

/// The high bit of each byte of `word` (little-endian) that may be a `"`,
/// a `\\` or a C0 control: the classic has-zero-byte and has-less-than
/// tests. A flag can be false only above a true one (a borrow runs
/// upward), so the lowest flag marks the first such byte exactly, and no
/// flag means none is.
#[inline]
pub(crate) fn stops(word: u64) -> u64 {
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    equal_bytes(word, b'"') | equal_bytes(word, b'\\') | control
}

/// [`stops`] for the bytes equal to `byte`: the lowest flag is exact.
#[inline]
pub(crate) fn equal_bytes(word: u64, byte: u8) -> u64 {
    let x = word ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// The eight bytes at `at` as a little-endian word, if there are eight.
#[inline]
pub(crate) fn word_at(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 8)
        .and_then(|w| <[u8; 8]>::try_from(w).ok())
        .map(u64::from_le_bytes)
}

/// The first `"`, `\` or control at or after `at`: eight bytes at a time,
/// then byte by byte for the last few. `None` when the text ends first.
#[inline]
pub(crate) fn to_stop(b: &[u8], mut at: usize) -> Option<usize> {
    while let Some(word) = word_at(b, at) {
        let found = stops(word);
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    b.get(at..)?
        .iter()
        .position(|&c| is_stop(c))
        .map(|k| at + k)
}

/// Just past the closing quote of the string literal whose opening quote
/// is at `i`, skipping each escape's next byte unchecked: for a text
/// already known to be JSON.
pub(crate) fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        match b.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `to_stop` against the byte-by-byte definition, at every offset of
    /// texts with stops at every position of a word.
    #[test]
    fn to_stop_finds_the_first_stop() {
        let mut texts: Vec<Vec<u8>> = vec![b"".to_vec(), b"plain text, no stop".to_vec()];
        for len in 0..20 {
            for pos in 0..len {
                for stop in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                    let mut t = vec![b'a'; len];
                    t[pos] = stop;
                    // Bytes just above the stops, and high bytes, around it.
                    if pos > 0 {
                        t[pos - 1] = 0x20;
                    }
                    if pos + 1 < len {
                        t[pos + 1] = 0xe9;
                    }
                    texts.push(t);
                }
            }
        }
        for t in &texts {
            for at in 0..=t.len() + 1 {
                let want = t
                    .get(at..)
                    .and_then(|r| r.iter().position(|&c| is_stop(c)))
                    .map(|k| at + k);
                assert_eq!(to_stop(t, at), want, "{t:?} at {at}");
            }
        }
    }

    #[test]
    fn whitespace_is_rfc_8259s() {
        for c in 0..=255u8 {
            assert_eq!(is_ws(c), b" \t\n\r".contains(&c), "{c}");
        }
        assert_eq!(skip_ws(b" \t\r\n x", 0), 5);
        assert_eq!(skip_ws(b"  ", 0), 2);
        assert_eq!(skip_ws(b"x", 3), 3);
    }

    #[test]
    fn string_end_skips_escapes() {
        assert_eq!(string_end(br#""a\"b" x"#, 0), Some(6));
        assert_eq!(string_end(br#""\\""#, 0), Some(4));
        assert_eq!(string_end(br#""open"#, 0), None);
    }
}
