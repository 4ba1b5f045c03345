//! One pass over a JSON text that writes it compact, hands every string
//! value to a callback that may replace it, and can drop object members
//! whose value is `null` (`remove_nulls`).
//!
//! Working on the text instead of a `serde_json::Value` keeps every token
//! the callback does not replace byte for byte: key order, duplicate keys,
//! number spellings (`1e400`, which serde_json would write `1e+400`; `1.50`;
//! `12345678901234567890123`) and string escapes. Only whitespace between
//! tokens goes (RFC 8259 §2: space, tab, line feed, carriage return; a
//! string never holds them raw, §7), so the output is the compact form of
//! the input with the callback's replacements and without the null members.
//!
//! The text must be one valid JSON value (the caller checks with serde_json
//! first); anything unexpected still ends the pass with `None` rather than a
//! guess. The walk keeps its own stack: no recursion, whatever the depth.

use std::borrow::Cow;
use std::rc::Rc;

/// The output of a pass.
pub struct Rewritten {
    /// The compact text.
    pub text: String,
    /// Null members removed.
    pub nulls_removed: usize,
    /// Bytes their removal took off the compact text (keys, colons,
    /// `null`s and the commas that separated them).
    pub nulls_saved: usize,
}

/// A string value as the callback sees it.
pub struct StringValue<'t, 'k> {
    /// The decoded string.
    pub value: &'t str,
    /// Length of its literal in the source, quotes and escapes included.
    pub literal_len: usize,
    /// The key of the member it belongs to (array elements inherit the key
    /// of the member holding the array); `None` at the top level.
    pub key: Option<&'k str>,
    /// Where that key's literal starts in the text: one value per member,
    /// shared by the strings of its arrays, so a caller can remember what
    /// it concluded about a key without comparing it again.
    pub key_at: Option<usize>,
}

/// A member's key: decoded once, shared (not copied) by the arrays nested
/// in its value, however deep.
#[derive(Clone)]
struct Key<'a> {
    at: usize,
    text: KeyText<'a>,
}

#[derive(Clone)]
enum KeyText<'a> {
    Borrowed(&'a str),
    Owned(Rc<str>),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match &self.text {
            KeyText::Borrowed(s) => s,
            KeyText::Owned(s) => s,
        }
    }
}

struct Frame<'a> {
    object: bool,
    /// Members or elements in the source.
    seen: usize,
    /// Members or elements written.
    written: usize,
    /// Objects: the current member's key. Arrays: the inherited key.
    key: Option<Key<'a>>,
}

/// Rewrites `text` (see the module docs). `on_string` returns the new value
/// of a string, or `None` to keep its literal as it is.
pub fn rewrite<'a>(
    text: &'a str,
    drop_nulls: bool,
    on_string: &mut dyn FnMut(StringValue<'_, '_>) -> Option<String>,
) -> Option<Rewritten> {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut stack: Vec<Frame<'a>> = Vec::new();
    let mut nulls_removed = 0;
    let mut nulls_saved = 0;
    // A member's key and colon are written: the next token is its value.
    let mut after_key = false;
    let mut i = 0;
    loop {
        i = skip_ws(b, i);
        let Some(&c) = b.get(i) else {
            break;
        };
        match c {
            b',' => {}
            b':' => return None,
            b'}' | b']' => {
                let frame = stack.pop()?;
                if frame.object {
                    // n members are written with n - 1 commas.
                    nulls_saved += frame.seen.saturating_sub(1) - frame.written.saturating_sub(1);
                }
                out.push(char::from(c));
            }
            b'"' if !after_key && stack.last().is_some_and(|f| f.object) => {
                // A member: its key, then a colon, then its value.
                let end = string_end(b, i)?;
                let literal = text.get(i..end)?;
                let colon = skip_ws(b, end);
                if b.get(colon) != Some(&b':') {
                    return None;
                }
                let value_at = skip_ws(b, colon + 1);
                let frame = stack.last_mut()?;
                frame.seen += 1;
                if drop_nulls && b.get(value_at..value_at + 4) == Some(b"null") {
                    nulls_removed += 1;
                    nulls_saved += literal.len() + ":null".len();
                    i = value_at + 4;
                    continue;
                }
                if frame.written > 0 {
                    out.push(',');
                }
                frame.written += 1;
                frame.key = Some(Key {
                    at: i,
                    text: match decode(literal)? {
                        Cow::Borrowed(k) => KeyText::Borrowed(k),
                        Cow::Owned(k) => KeyText::Owned(Rc::from(k)),
                    },
                });
                out.push_str(literal);
                out.push(':');
                after_key = true;
                i = value_at;
                continue;
            }
            _ => {
                begin_value(&mut out, &mut stack, &mut after_key);
                match c {
                    b'{' | b'[' => {
                        let key = match stack.last() {
                            Some(parent) if c == b'[' => parent.key.clone(),
                            _ => None,
                        };
                        stack.push(Frame {
                            object: c == b'{',
                            seen: 0,
                            written: 0,
                            key,
                        });
                        out.push(char::from(c));
                    }
                    b'"' => {
                        let end = string_end(b, i)?;
                        let literal = text.get(i..end)?;
                        let value = decode(literal)?;
                        let key = stack.last().and_then(|f| f.key.as_ref());
                        let replaced = on_string(StringValue {
                            value: &value,
                            literal_len: literal.len(),
                            key: key.map(Key::as_str),
                            key_at: key.map(|k| k.at),
                        });
                        match replaced {
                            Some(new) => out.push_str(&serde_json::to_string(&new).ok()?),
                            None => out.push_str(literal),
                        }
                        i = end;
                        continue;
                    }
                    _ => {
                        // A number, `true`, `false` or `null`: verbatim.
                        let end = b
                            .get(i..)?
                            .iter()
                            .position(|&x| matches!(x, b',' | b'}' | b']') || is_ws(x))
                            .map_or(b.len(), |n| i + n);
                        if end == i {
                            return None;
                        }
                        out.push_str(text.get(i..end)?);
                        i = end;
                        continue;
                    }
                }
            }
        }
        i += 1;
    }
    if !stack.is_empty() || after_key {
        return None;
    }
    Some(Rewritten {
        text: out,
        nulls_removed,
        nulls_saved,
    })
}

/// Before an array element, a comma unless it is the first; a member's
/// value follows its colon directly.
fn begin_value(out: &mut String, stack: &mut [Frame<'_>], after_key: &mut bool) {
    if std::mem::take(after_key) {
        return;
    }
    if let Some(frame) = stack.last_mut() {
        if frame.written > 0 {
            out.push(',');
        }
        frame.seen += 1;
        frame.written += 1;
    }
}

pub(crate) fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

pub(crate) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).copied().is_some_and(is_ws) {
        i += 1;
    }
    i
}

/// Index just past the closing quote of the string literal opening at `i`.
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

/// The string a literal stands for; borrowed when it has no escapes.
pub(crate) fn decode(literal: &str) -> Option<Cow<'_, str>> {
    let inner = literal.get(1..literal.len().checked_sub(1)?)?;
    if inner.contains('\\') {
        serde_json::from_str::<String>(literal).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

#[cfg(test)]
mod tests;
