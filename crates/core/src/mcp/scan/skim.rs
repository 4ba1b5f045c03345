//! A text item's literal checked, and measured, without being decoded,
//! when its first characters show that the text is no JSON value.
//!
//! Most of what coding agents read is not JSON: source files, diffs, logs,
//! Markdown. Under a policy whose stages change only JSON (compact JSON,
//! TOON: `Policy::changes_only_json`), such a text passes as it came, and
//! decoding it (about ten instructions a byte, escapes every line) bought
//! nothing but its length for the record (issue 14: a 64 KB source file's
//! exchange through Envoy cost 7.9 times Envoy alone, the module's share
//! mostly [`super::literal::read`]). Here the start of the text is decoded
//! only as far as RFC 8259 §2 and §6 decide it: a JSON text is whitespace,
//! one value, whitespace, and a value opens with `{ [ "`, a digit, `-`, or
//! spells `true`, `false`, `null`. A text that leaves that grammar before
//! its literal ends is certainly no JSON value; the rest of its literal is
//! checked and its decoded length counted ([`measure`]: the same refusals
//! as [`super::literal::read`], eight plain bytes at a time). Any text that
//! may still be JSON (an object, array or string, a scalar up to its end)
//! or is no valid literal is left to the full read.
//!
//! Where Python literals are read too (`clean.python_literal`:
//! [`not_literal`]), a text is also left to the full read when it opens as
//! a tuple's `repr` does: `(` first, then what may start an item or `)`.
//! Lists and dicts open as JSON arrays and objects do, and are read
//! anyway; a Lisp source file (`(defun`) is still skimmed.

use super::literal::{hex4, measure, SHORT};
use crate::json::lex::is_ws;

/// A literal the skim took: its length on the wire (quotes included), and
/// its text's length decoded, or `None` where serde_json refuses to decode
/// it (a lone surrogate escape), as the full read would say.
pub(super) type Skimmed = (usize, Option<usize>);

/// Where the start of a text stands in the grammar of one JSON text
/// (RFC 8259 §2), before a value opens or inside a scalar that has.
#[derive(Clone, Copy)]
enum Prefix {
    /// Whitespace so far.
    Lead,
    /// Inside `true`, `false` or `null`: the bytes of the word still due.
    Word(&'static [u8]),
    /// Inside a number (§6), after the part named.
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpInt,
    /// After the value: only whitespace may follow.
    Trail,
    /// After a `(` that opens the text, where tuples are read.
    Paren,
}

/// What one more character does to the prefix.
enum Step {
    Go(Prefix),
    /// No JSON text goes on like this.
    NotJson,
    /// An object, array or string opens: the text may be JSON, and only a
    /// full read can tell.
    Opens,
}

impl Prefix {
    fn step(self, c: u8) -> Step {
        use Prefix::*;
        let go = Step::Go;
        match self {
            Lead | Trail if is_ws(c) => go(self),
            Trail => Step::NotJson,
            // What `repr` writes after a tuple's `(`: an item (a string,
            // a number, a word, a container) or its `)`.
            Paren => match c {
                b'\''
                | b'"'
                | b'-'
                | b'0'..=b'9'
                | b'T'
                | b'F'
                | b'N'
                | b'['
                | b'('
                | b'{'
                | b')' => Step::Opens,
                _ => Step::NotJson,
            },
            Lead => match c {
                b'{' | b'[' | b'"' => Step::Opens,
                b't' => go(Word(b"rue")),
                b'f' => go(Word(b"alse")),
                b'n' => go(Word(b"ull")),
                b'-' => go(Minus),
                b'0' => go(Zero),
                b'1'..=b'9' => go(Int),
                _ => Step::NotJson,
            },
            Word(due) => match due.split_first() {
                Some((&want, rest)) if want == c => {
                    go(if rest.is_empty() { Trail } else { Word(rest) })
                }
                _ => Step::NotJson,
            },
            Minus => match c {
                b'0' => go(Zero),
                b'1'..=b'9' => go(Int),
                _ => Step::NotJson,
            },
            Zero | Int | Frac | ExpInt => match c {
                b'0'..=b'9' if matches!(self, Int | Frac | ExpInt) => go(self),
                b'.' if matches!(self, Zero | Int) => go(Dot),
                b'e' | b'E' if matches!(self, Zero | Int | Frac) => go(Exp),
                c if is_ws(c) => go(Trail),
                _ => Step::NotJson,
            },
            Dot => match c {
                b'0'..=b'9' => go(Frac),
                _ => Step::NotJson,
            },
            Exp => match c {
                b'+' | b'-' => go(ExpSign),
                b'0'..=b'9' => go(ExpInt),
                _ => Step::NotJson,
            },
            ExpSign => match c {
                b'0'..=b'9' => go(ExpInt),
                _ => Step::NotJson,
            },
        }
    }
}

/// The literal at the start of `b` (its opening quote), when its text is
/// certainly no JSON value; `None` when it may be one, or is no valid
/// literal: the full read then decides, as it would have without the skim.
pub(super) fn not_json(b: &[u8]) -> Option<Skimmed> {
    skim(b, false)
}

/// [`not_json`], leaving to the full read a text that opens as a tuple's
/// `repr` too.
pub(super) fn not_literal(b: &[u8]) -> Option<Skimmed> {
    skim(b, true)
}

fn skim(b: &[u8], tuples: bool) -> Option<Skimmed> {
    if b.first() != Some(&b'"') {
        return None;
    }
    let mut prefix = Prefix::Lead;
    let mut at = 1;
    // Decoded bytes of the prefix: each character it goes on past is one
    // byte (ASCII), raw or escaped; the one that ends it is counted after.
    let mut len = 0;
    loop {
        let (c, width) = match *b.get(at)? {
            // The end of the literal, still inside the grammar; a raw
            // control character, no literal at all.
            b'"' | 0..=0x1f => return None,
            b'\\' => escape(b.get(at + 1..)?)?,
            c => (c, 1),
        };
        // A `repr` opens the text, with no whitespace before it.
        let step = if tuples && len == 0 && c == b'(' {
            Step::Go(Prefix::Paren)
        } else {
            prefix.step(c)
        };
        match step {
            Step::Go(next) => prefix = next,
            Step::Opens => return None,
            Step::NotJson => break,
        }
        at += width;
        len += 1;
    }
    let (end, rest) = measure(b, at)?;
    Some((end, rest.map(|n| n + len)))
}

/// The character of the escape whose backslash precedes `b`, as the
/// prefix reads it (every character past ASCII as 0x80: none goes on in
/// the grammar), and the escape's width; `None` for a bad escape.
fn escape(b: &[u8]) -> Option<(u8, usize)> {
    match *b.first()? {
        b'u' => {
            let unit = hex4(b.get(1..5)?)?;
            let c = u8::try_from(unit).ok().filter(u8::is_ascii);
            Some((c.unwrap_or(0x80), 6))
        }
        c => match SHORT.get(usize::from(c)) {
            Some(0) | None => None,
            Some(&ch) => Some((ch, 2)),
        },
    }
}

#[cfg(test)]
mod tests;
