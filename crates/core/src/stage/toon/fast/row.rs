//! A table's later rows the short way: read and written in one pass over
//! their bytes, for the plainest rows only.
//!
//! The general way ([`super::parse::Cursor::row_of`] into members, then
//! [`super::emit::push_primitive`] per cell) builds a member per cell and
//! asks of each string, byte by byte, whether it needs quotes: on the
//! bench's 64 KB table (4,464 cells) the TOON stage cost about 500
//! instructions a cell natively (issue 14). Here a row whose keys are the
//! first row's, spelled the same way, and whose values are each a number,
//! `true`, `false`, `null` or a string with no escape, is read and written
//! as it is scanned: a string's end and whether it holds a byte §7.2 quotes
//! for come from one scan, eight bytes at a time
//! ([`super::emit::first_special`]); a number's end and TOON form from one
//! pass over its digits.
//!
//! Every cell is what the general way writes: the same quoting rule
//! (`needs_quotes_plain`, once the scan has ruled out the bytes that force
//! quotes) and the same number spelling ([`super::number::canonical`]'s
//! shortcuts, or `canonical` itself). Any other row (an escape, a nested
//! value, another key, a number TOON cannot carry, anything that is not
//! JSON) is left where it was, and the general way reads it with its
//! answer: only the cost differs. The caller verifies each line with the
//! same decoder as the general way's. The differential tests hold the two
//! ways to identical results.

use std::borrow::Cow;

use super::counts::Counts;
use super::emit::{first_special, needs_quotes_plain, special_bytes_of};
use super::key::KeyLiteral;
use super::number;
use super::tree::Node;
use crate::json::lex::{skip_ws, to_stop};

/// A row [`take`] read and wrote.
pub(super) struct Taken {
    /// Where the text goes on, past the row's `}`.
    pub(crate) end: usize,
    /// What escaping the written cells adds to the emission as a JSON
    /// string literal (a quoted cell's quotes, a tab delimiter).
    pub(crate) escapes: usize,
    /// What the row's text holds besides its tokens, for a caller that
    /// measures the text as its compact form ([`super::counts::Counts`]).
    pub(crate) counts: Counts,
}

/// The delimiters [`take`] writes: the ones [`special_bytes_of`] has a
/// table for.
pub(super) fn takes(delim: u8) -> bool {
    special_bytes_of(char::from(delim)).is_some()
}

/// Reads the row at `at` in `text` when it is the plainest kind (see the
/// module), appending its cells to `out` (separated by `delim`) and
/// setting the values they stand for in `cells` (one per key), for the
/// verifying decoder. `None` for any other row; `out` may then hold part
/// of a line, which the caller takes back.
#[inline(always)]
pub(super) fn take<'a>(
    text: &'a str,
    at: usize,
    keys: &[KeyLiteral<'a>],
    delim: u8,
    out: &mut String,
    cells: &mut [Node<'a>],
) -> Option<Taken> {
    let special = special_bytes_of(char::from(delim))?;
    let b = text.as_bytes();
    if b.get(at) != Some(&b'{') {
        return None;
    }
    let mut p = at + 1;
    let mut escapes = 0;
    let mut strings = 0;
    // The bytes of the row's tokens: its braces, its commas, each key's
    // literal and colon (counted here), each value's (below). The rest of
    // the row is whitespace.
    let mut tokens = 2 + keys.len().saturating_sub(1);
    for (j, key) in keys.iter().enumerate() {
        p = skip_ws(b, p);
        if j > 0 {
            if b.get(p) != Some(&b',') {
                return None;
            }
            p = skip_ws(b, p + 1);
            out.push(char::from(delim));
        }
        p = skip_ws(b, key.after(b, p)?);
        if b.get(p) != Some(&b':') {
            return None;
        }
        p = skip_ws(b, p + 1);
        tokens += key.len() + 1;
        let value_at = p;
        match *b.get(p)? {
            b'"' => {
                let start = p + 1;
                // The first byte §7.2 quotes for: the closing quote (RFC
                // 8259 §7) when there is none in the content; a backslash
                // or a control is left to the general way.
                let mut q = start + first_special(b.get(start..)?, special, char::from(delim));
                let quotes = match *b.get(q)? {
                    b'"' => false,
                    b'\\' | 0..=0x1f => return None,
                    _ => {
                        q = to_stop(b, q + 1)?;
                        if b.get(q) != Some(&b'"') {
                            return None;
                        }
                        true
                    }
                };
                let s = text.get(start..q)?;
                // §7.2: `needs_quotes`, its byte test answered by the table.
                if quotes || needs_quotes_plain(s, char::from(delim)) {
                    // Nothing in it to escape (the scan stopped at
                    // quotes, backslashes and controls): `"s"`, whose two
                    // quotes a JSON string literal escapes.
                    out.push('"');
                    out.push_str(s);
                    out.push('"');
                    escapes += 2;
                } else {
                    out.push_str(s);
                }
                *cells.get_mut(j)? = Node::Str(Cow::Borrowed(s));
                p = q + 1;
                strings += 1;
            }
            b'-' | b'0'..=b'9' => {
                let (end, form) = number(b, p)?;
                let raw = text.get(p..end)?;
                match form {
                    Form::Prefix(len) => out.push_str(raw.get(..len)?),
                    Form::Computed => out.push_str(&number::canonical(raw)?),
                }
                *cells.get_mut(j)? = Node::Num(raw);
                p = end;
            }
            b't' => p = word(b, p, b"true", out, cells, j, Node::Bool(true))?,
            b'f' => p = word(b, p, b"false", out, cells, j, Node::Bool(false))?,
            b'n' => p = word(b, p, b"null", out, cells, j, Node::Null)?,
            _ => return None,
        }
        tokens += p - value_at;
    }
    p = skip_ws(b, p);
    if b.get(p) != Some(&b'}') {
        return None;
    }
    // Every key's literal and every string cell's: two quotes each (none
    // of them holds an escape).
    let counts = Counts {
        spaces: (p + 1 - at).checked_sub(tokens)?,
        quoted: 2 * (keys.len() + strings),
        respelled: false,
    };
    // The tab delimiter is a control character JSON escapes (`\t`).
    if delim == b'\t' {
        escapes += keys.len().saturating_sub(1);
    }
    Some(Taken {
        end: p + 1,
        escapes,
        counts,
    })
}

/// `true`, `false` or `null` at `at`, written as it is.
fn word<'a, const N: usize>(
    b: &[u8],
    at: usize,
    literal: &[u8; N],
    out: &mut String,
    cells: &mut [Node<'a>],
    cell: usize,
    node: Node<'a>,
) -> Option<usize> {
    if b.get(at..at + N)? != literal {
        return None;
    }
    out.push_str(match node {
        Node::Bool(true) => "true",
        Node::Bool(false) => "false",
        _ => "null",
    });
    *cells.get_mut(cell)? = node;
    Some(at + N)
}

/// How a number literal is written in TOON.
#[derive(Debug, PartialEq, Eq)]
enum Form {
    /// As its first `len` bytes: the literal itself, or without its
    /// fraction's trailing zeros (and a bare point).
    Prefix(usize),
    /// As [`number::canonical`] computes it.
    Computed,
}

/// The number literal at `at` (RFC 8259 §6:
/// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`): where it
/// ends, and its TOON form, read in the same pass where that is one of
/// [`number::canonical`]'s shortcuts (an integer of at most 18 digits; a
/// decimal of at most 15 significant digits, well above the subnormals);
/// `None` for no literal, or one TOON cannot carry (`-0`), which the
/// general way then refuses.
#[inline]
fn number(b: &[u8], start: usize) -> Option<(usize, Form)> {
    let mut at = start;
    if b.get(at) == Some(&b'-') {
        at += 1;
    }
    let int = at;
    match *b.get(at)? {
        b'0' => at += 1,
        b'1'..=b'9' => at = digits(b, at),
        _ => return None,
    }
    let int_len = at - int;
    // JSON forbids leading zeros: the integer part is `0` or significant.
    let zero = int_len == 1 && b.get(int) == Some(&b'0');
    let mut form = if int_len <= 18 {
        Form::Prefix(at - start)
    } else {
        Form::Computed
    };
    if b.get(at) == Some(&b'.') {
        let frac = at + 1;
        at = frac;
        // One pass: the fraction's first and last non-zero digits.
        let (mut first, mut last) = (None, None);
        while let Some(&d) = b.get(at) {
            if !d.is_ascii_digit() {
                break;
            }
            if d != b'0' {
                first = first.or(Some(at));
                last = Some(at);
            }
            at += 1;
        }
        let frac_len = at - frac;
        if frac_len == 0 {
            return None;
        }
        // The fraction up to its last non-zero digit, and its leading zeros.
        let kept = last.map_or(0, |l| l + 1 - frac);
        let (significant, leading) = if zero {
            let leading = first.map_or(frac_len, |f| f - frac);
            (kept.saturating_sub(leading), leading)
        } else {
            (int_len + kept, 0)
        };
        form = if significant > 15 || leading > 290 {
            Form::Computed
        } else {
            Form::Prefix(at - start - (frac_len - kept) - usize::from(kept == 0))
        };
    }
    if matches!(b.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(b.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        let end = digits(b, at);
        if end == at {
            return None;
        }
        at = end;
        form = Form::Computed;
    }
    // `-0`, however spelt, is a value TOON cannot carry (§2).
    if let Form::Prefix(len) = form {
        if b.get(start..start + len) == Some(b"-0") {
            return None;
        }
    }
    Some((at, form))
}

fn digits(b: &[u8], mut at: usize) -> usize {
    while b.get(at).is_some_and(u8::is_ascii_digit) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::{number, Form};
    use crate::stage::toon::fast::number::{canonical, generated_literals};

    /// The end and form read in one pass are the literal's and
    /// `canonical`'s, on generated literals followed by what ends a number
    /// in a row.
    #[test]
    fn one_pass_numbers_are_canonicals() {
        let mut literals: Vec<String> = [
            "0", "-0", "0.0", "-0.0", "-0.000", "1.0", "10.000", "1e5", "0.001", "1.50", "-1.50",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        literals.extend(generated_literals(17, 50_000));
        let mut prefixes = 0;
        for raw in &literals {
            let row = format!("{raw},");
            let read = number(row.as_bytes(), 0);
            match canonical(raw) {
                // Lossy: refused here, or left to `canonical`, which refuses.
                None => assert!(matches!(read, None | Some((_, Form::Computed))), "{raw}"),
                Some(form) => {
                    let (end, how) = read.unwrap();
                    assert_eq!(end, raw.len(), "{raw}");
                    if let Form::Prefix(len) = how {
                        assert_eq!(&raw[..len], form, "{raw}");
                        prefixes += 1;
                    }
                }
            }
        }
        assert!(prefixes * 10 > literals.len() * 3, "{prefixes}");
    }
}
