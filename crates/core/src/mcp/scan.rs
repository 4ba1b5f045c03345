//! JSON-RPC bodies read in one pass, as spans of the body: no tree is
//! built and no string copied but the few the plugin compares (ids,
//! methods, tool names, item types). [`response`] reads what
//! [`super::parse_messages`], [`super::tool_result`] and
//! [`super::text_items`] read; [`request`] what `RequestInfo::by_serde`
//! reads (serde_json through `RawValue`, which reads a body once per
//! level, escapes each time; both stay as the references `tests` checks
//! the scanner against).
//!
//! Both give serde_json's answers, which `tests` checks side by side: the
//! body must be one JSON value (RFC 8259, serde_json's grammar; nested to
//! any depth, since serde_json skips what it does not read with a stack of
//! its own), an object or an array of them; a field the readers read,
//! written twice (compared after unescaping), leaves the message, result,
//! item or params it is in not understood (crate::json::object); a field
//! whose value is `null` reads as absent, as serde reads an `Option`; a key
//! serde_json cannot decode (a lone surrogate) where serde decodes keys is
//! a refusal there.
//!
//! Written by hand: serde_json can only do this by reading each level
//! again (`RawValue`), and no maintained crate scans JSON for spans with
//! serde_json's exact refusals (duplicate keys, surrogates, any depth).

use std::borrow::Cow;

mod literal;
mod request;
mod response;
mod skim;

#[cfg(test)]
use request::request;
pub use response::{response, response_reading, Item, Scanned, Text, ToolShape};

/// How much of each text item's literal a response scan reads: every
/// literal is checked in full either way (the body's validity does not
/// depend on the mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Texts {
    /// Every text decoded.
    Decode,
    /// A text that is certainly no JSON value is measured, not decoded
    /// ([`skim`]): for stages that change only JSON.
    SkimNotJson,
    /// [`Texts::SkimNotJson`], but a text that opens as a Python tuple's
    /// `repr` is decoded too: for stages that change JSON and Python
    /// literals (`clean.python_literal`).
    SkimNotLiteral,
    /// No text read: for a reader that wants only the messages' ids and
    /// shapes (a legacy event's requests).
    Check,
}

/// Whether a field was seen, and its value when it was not `null`.
#[derive(Default)]
struct Field<T> {
    seen: bool,
    value: Option<T>,
}

impl<T> Field<T> {
    /// `None` when the field comes a second time.
    fn set(&mut self, value: Option<T>) -> Option<()> {
        if std::mem::replace(&mut self.seen, true) {
            return None;
        }
        self.value = value;
        Some(())
    }
}

struct Scanner<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
    /// Containers open while a value is skipped (`true`: an object): a
    /// stack, not recursion, so no depth can exhaust the VM's.
    stack: Vec<bool>,
    texts: Texts,
}

impl<'a> Scanner<'a> {
    /// A body: one message, or an array of them (JSON-RPC 2.0 §6), each
    /// read by `message` (`Some(None)`: a message that is skipped).
    /// `None` when the body is not one JSON value of that shape, or a
    /// message refuses it.
    fn body<T>(
        text: &'a str,
        texts: Texts,
        mut message: impl FnMut(&mut Self) -> Option<Option<T>>,
    ) -> Option<Vec<T>> {
        let mut s = Scanner {
            text,
            b: text.as_bytes(),
            i: 0,
            stack: Vec::new(),
            texts,
        };
        s.ws();
        let mut out = Vec::new();
        match s.peek()? {
            b'[' => s.array(|s| {
                out.extend(message(s)?);
                Some(())
            })?,
            _ => out.extend(message(&mut s)?),
        }
        s.ws();
        (s.i == s.b.len()).then_some(out)
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    fn ws(&mut self) {
        self.i = crate::json::lex::skip_ws(self.b, self.i);
    }

    /// The text of the value starting here (after skipping it).
    fn raw(&mut self) -> Option<&'a str> {
        let start = self.i;
        self.value()?;
        self.text.get(start..self.i)
    }

    /// A value that is `null` reads as absent.
    fn null(&mut self) -> Option<bool> {
        if self.b.get(self.i..self.i + 4) == Some(b"null") {
            self.i += 4;
            return Some(true);
        }
        Some(false)
    }

    /// An object's members: `member` reads each value (the scanner at its
    /// first byte) given the key, decoded (`None`: an escape serde_json
    /// will not decode, a lone surrogate).
    fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, Option<Cow<'a, str>>) -> Option<()>,
    ) -> Option<()> {
        if self.next()? != b'{' {
            return None;
        }
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            let key = self.string()?;
            self.ws();
            if self.next()? != b':' {
                return None;
            }
            self.ws();
            member(self, key)?;
            self.ws();
            match self.next()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
        }
        Some(())
    }

    /// An array's items: `item` reads each one.
    fn array(&mut self, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        if self.next()? != b'[' {
            return None;
        }
        self.ws();
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            item(self)?;
            self.ws();
            match self.next()? {
                b',' => {}
                b']' => break,
                _ => return None,
            }
        }
        Some(())
    }

    /// Any value, checked and skipped, containers through [`Self::stack`].
    fn value(&mut self) -> Option<()> {
        let bottom = self.stack.len();
        loop {
            // At the start of a value.
            match self.next()? {
                b'{' => {
                    self.ws();
                    if self.peek()? == b'}' {
                        self.i += 1;
                    } else {
                        self.stack.push(true);
                        self.key()?;
                        continue;
                    }
                }
                b'[' => {
                    self.ws();
                    if self.peek()? == b']' {
                        self.i += 1;
                    } else {
                        self.stack.push(false);
                        continue;
                    }
                }
                b'"' => {
                    self.i -= 1;
                    self.skip_string()?;
                }
                b't' => self.literal(b"rue")?,
                b'f' => self.literal(b"alse")?,
                b'n' => self.literal(b"ull")?,
                b'-' | b'0'..=b'9' => {
                    self.i -= 1;
                    self.number()?;
                }
                _ => return None,
            }
            // After a value: close what it ends, or go to the next one.
            loop {
                if self.stack.len() == bottom {
                    return Some(());
                }
                let object = *self.stack.last()?;
                self.ws();
                match (self.next()?, object) {
                    (b',', true) => {
                        self.key()?;
                        break;
                    }
                    (b',', false) => {
                        self.ws();
                        break;
                    }
                    (b'}', true) | (b']', false) => {
                        self.stack.pop();
                    }
                    _ => return None,
                }
            }
        }
    }

    /// A member's key and colon, up to its value.
    fn key(&mut self) -> Option<()> {
        self.ws();
        self.skip_string()?;
        self.ws();
        if self.next()? != b':' {
            return None;
        }
        self.ws();
        Some(())
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i.checked_add(word.len())?;
        if self.b.get(self.i..end)? != word {
            return None;
        }
        self.i = end;
        Some(())
    }

    /// RFC 8259 §6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.next()? {
            b'0' => {
                if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    return None;
                }
            }
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.digits1()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            self.digits1()?;
        }
        Some(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
    }

    fn digits1(&mut self) -> Option<()> {
        let start = self.i;
        self.digits();
        (self.i > start).then_some(())
    }

    /// A string literal, checked and skipped ([`literal::measure`]);
    /// returns whether it held an escape: every escape spends a byte or
    /// more past its character, so the decoded text is shorter, and a
    /// lone surrogate has no decoded text.
    fn string_end(&mut self) -> Option<bool> {
        if self.next()? != b'"' {
            return None;
        }
        let start = self.i;
        let (end, len) = literal::measure(self.b, start)?;
        self.i = end;
        Some(len != Some(end - 1 - start))
    }

    fn skip_string(&mut self) -> Option<()> {
        self.string_end().map(|_| ())
    }

    /// A string's value, borrowed when it has no escape; `Some(None)` for
    /// a valid literal serde_json will not decode (a lone surrogate).
    fn string(&mut self) -> Option<Option<Cow<'a, str>>> {
        let start = self.i;
        let escaped = self.string_end()?;
        let literal = self.text.get(start..self.i)?;
        Some(if escaped {
            serde_json::from_str::<String>(literal).ok().map(Cow::Owned)
        } else {
            literal.get(1..literal.len() - 1).map(Cow::Borrowed)
        })
    }
}

#[cfg(test)]
mod tests;
