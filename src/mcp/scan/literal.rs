//! The value of a JSON value the scanner has checked (RFC 8259 §7), with
//! serde_json's answers: what `serde_json::from_str::<String>` gives, or
//! `None` where it refuses (not a string, a lone surrogate escape). The
//! grammar is not checked again: only literals the scan found come here.
//!
//! A tool result's text is one long literal, escaped throughout (`\"`
//! every few bytes when it holds JSON): decoding it is a large share of
//! reading a result. Here the plain runs between escapes are copied eight
//! bytes at a time into a buffer sized for them once.

/// The decoded value of `literal` (quotes included), a value the scan
/// checked.
pub(super) fn unescape(literal: &str) -> Option<String> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    let b = inner.as_bytes();
    // Bytes, not a `String`: a plain word is copied as a whole eight bytes
    // (a fixed-size copy, no call) and the copy cut back to a backslash,
    // which a `String` cannot do inside a character. The result is checked
    // as UTF-8 once at the end (the input was, and escapes add characters).
    let mut out: Vec<u8> = Vec::with_capacity(inner.len());
    let mut at = 0;
    loop {
        // Copy the plain run from `at` to the next backslash.
        let mut found = None;
        while let Some(word) = b.get(at..at + 8) {
            let w = <[u8; 8]>::try_from(word).ok()?;
            out.extend_from_slice(&w);
            let bs = crate::json::literal::backslashes(u64::from_le_bytes(w));
            if bs != 0 {
                let k = (bs.trailing_zeros() / 8) as usize;
                out.truncate(out.len() - (8 - k));
                found = Some(at + k);
                break;
            }
            at += 8;
        }
        let Some(slash) = found.or_else(|| {
            let rest = b.get(at..)?;
            let k = rest.iter().position(|&c| c == b'\\');
            out.extend_from_slice(rest.get(..k.unwrap_or(rest.len()))?);
            k.map(|k| at + k)
        }) else {
            break;
        };
        at = slash + 1;
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
                    // trailing one (RFC 8259 §7: UTF-16 surrogate pairs).
                    0xD800..=0xDBFF => {
                        if b.get(at..at + 2) != Some(b"\\u") {
                            return None;
                        }
                        let low = hex4(b.get(at + 2..at + 6)?)?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        at += 6;
                        let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                        char::from_u32(code)?
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => char::from_u32(unit)?,
                }
            }
            _ => return None,
        };
        if ch.is_ascii() {
            out.push(ch as u8);
        } else {
            out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
        }
    }
    if out.capacity() - out.len() > out.len() / 8 {
        // A text of JSON is escaped every few bytes: give back the slack
        // rather than hold it while the stages run.
        out.shrink_to_fit();
    }
    String::from_utf8(out).ok()
}

fn hex4(digits: &[u8]) -> Option<u32> {
    let digits: &[u8; 4] = digits.try_into().ok()?;
    digits.iter().try_fold(0u32, |n, &d| {
        let v = char::from(d).to_digit(16)?;
        Some(n << 4 | v)
    })
}
