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

use crate::json::lex::{is_ws, skip_ws, string_end};

/// The output of a pass.
pub(crate) struct Rewritten {
    /// The compact text.
    pub(crate) text: String,
    /// Null members removed.
    pub(crate) nulls_removed: usize,
    /// Bytes their removal took off the compact text (keys, colons,
    /// `null`s and the commas that separated them).
    pub(crate) nulls_saved: usize,
}

/// A string value as the callback sees it.
pub(crate) struct StringValue<'t, 'k> {
    /// The decoded string.
    pub(crate) value: &'t str,
    /// Length of its literal in the source, quotes and escapes included.
    pub(crate) literal_len: usize,
    /// The key of the member it belongs to (array elements inherit the key
    /// of the member holding the array); `None` at the top level.
    pub(crate) key: Option<&'k str>,
    /// Where that key's literal starts in the text: one value per member,
    /// shared by the strings of its arrays, so a caller can remember what
    /// it concluded about a key without comparing it again.
    pub(crate) key_at: Option<usize>,
}

/// A member's key, decoded once; the strings of the arrays nested in its
/// value, however deep, read it where it is (see [`Stack::key`]).
struct Key<'a> {
    at: usize,
    text: Cow<'a, str>,
}

/// One open container, as a byte (issue 13: nesting costs a byte a level,
/// so `[[[[…` a megabyte deep keeps a half-megabyte stack that stays in
/// cache, where a frame of counters and a key per level was 56 bytes a
/// level, 28 MB for 1 MiB of brackets, and its time grew faster than its
/// work once that left the caches).
#[derive(Clone, Copy)]
struct Level(u8);

impl Level {
    /// An object (else an array).
    const OBJECT: u8 = 1;
    /// A member or element is written: the next one needs a comma.
    const WRITTEN: u8 = 2;
    /// A null member was dropped (objects).
    const DROPPED: u8 = 4;

    fn has(self, flag: u8) -> bool {
        self.0 & flag != 0
    }
}

/// The containers open at a point of the walk.
#[derive(Default)]
struct Stack<'a> {
    levels: Vec<Level>,
    /// The current member's key of each open object, innermost last. A
    /// string in an array has the key of the nearest object around it (the
    /// member holding the array, however deep the arrays nest), so arrays
    /// need no key of their own.
    keys: Vec<Option<Key<'a>>>,
}

impl<'a> Stack<'a> {
    fn push(&mut self, object: bool) {
        self.levels
            .push(Level(if object { Level::OBJECT } else { 0 }));
        if object {
            self.keys.push(None);
        }
    }

    fn pop(&mut self) -> Option<Level> {
        let level = self.levels.pop()?;
        if level.has(Level::OBJECT) {
            self.keys.pop();
        }
        Some(level)
    }

    fn in_object(&self) -> bool {
        self.levels.last().is_some_and(|l| l.has(Level::OBJECT))
    }

    fn set(&mut self, flag: u8) {
        if let Some(level) = self.levels.last_mut() {
            level.0 |= flag;
        }
    }

    /// The key strings at this point belong to.
    fn key(&self) -> Option<&Key<'a>> {
        self.keys.last().and_then(Option::as_ref)
    }
}

/// Rewrites `text` (see the module docs). `on_string` returns the new value
/// of a string, or `None` to keep its literal as it is.
pub(crate) fn rewrite<'a>(
    text: &'a str,
    drop_nulls: bool,
    on_string: &mut dyn FnMut(StringValue<'_, '_>) -> Option<String>,
) -> Option<Rewritten> {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut stack = Stack::default();
    let mut nulls_removed = 0;
    let mut nulls_saved: usize = 0;
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
                let level = stack.pop()?;
                // Each dropped member took its comma with it, but for an
                // object left empty: n members have n - 1 commas.
                if level.has(Level::DROPPED) && !level.has(Level::WRITTEN) {
                    nulls_saved = nulls_saved.saturating_sub(1);
                }
                out.push(char::from(c));
            }
            b'"' if !after_key && stack.in_object() => {
                // A member: its key, then a colon, then its value.
                let end = string_end(b, i)?;
                let literal = text.get(i..end)?;
                let colon = skip_ws(b, end);
                if b.get(colon) != Some(&b':') {
                    return None;
                }
                let value_at = skip_ws(b, colon + 1);
                if drop_nulls && b.get(value_at..value_at + 4) == Some(b"null") {
                    nulls_removed += 1;
                    nulls_saved += literal.len() + ":null".len() + ",".len();
                    stack.set(Level::DROPPED);
                    i = value_at + 4;
                    continue;
                }
                begin_value(&mut out, &mut stack, &mut after_key);
                let key = Key {
                    at: i,
                    text: decode(literal)?,
                };
                if let Some(current) = stack.keys.last_mut() {
                    *current = Some(key);
                }
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
                        stack.push(c == b'{');
                        out.push(char::from(c));
                    }
                    b'"' => {
                        let end = string_end(b, i)?;
                        let literal = text.get(i..end)?;
                        let value = decode(literal)?;
                        let key = stack.key();
                        let replaced = on_string(StringValue {
                            value: &value,
                            literal_len: literal.len(),
                            key: key.map(|k| &*k.text),
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
    if !stack.levels.is_empty() || after_key {
        return None;
    }
    Some(Rewritten {
        text: out,
        nulls_removed,
        nulls_saved,
    })
}

/// Before a member or an array element, a comma unless it is the first
/// written; a member's value follows its colon directly.
fn begin_value(out: &mut String, stack: &mut Stack<'_>, after_key: &mut bool) {
    if std::mem::take(after_key) {
        return;
    }
    if let Some(level) = stack.levels.last_mut() {
        if level.has(Level::WRITTEN) {
            out.push(',');
        }
        level.0 |= Level::WRITTEN;
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
