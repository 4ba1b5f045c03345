//! Python literals read as data: a text that is, as a whole, exactly what
//! Python's `repr` (or `str`, the same for these types) prints for a list,
//! tuple or dict of `str`, `int`, `float`, `bool` and `None` — what a
//! server's `str(rows)` sends — read and written as compact JSON.
//!
//! Only canonical spelling is read: the text must be the one `repr` gives
//! for the value it stands for (CPython 3, `Objects/listobject.c`,
//! `tupleobject.c`, `dictobject.c`, `unicodeobject.c` `unicode_repr`,
//! `floatobject.c` `float_repr`, `longobject.c`), so writing the value back
//! with `repr` gives the same bytes and nothing is lost; any other text
//! (handwritten, spaced differently, a `datetime`, `Decimal`, bytes, a set,
//! `nan`, an object's repr) is refused and passes as it came. The rules,
//! each checked where it is read:
//!
//! - containers: `[a, b]`, `(a, b)`, `(a,)`, `()`, `{k: v, k2: v2}`, `[]`,
//!   `{}` — one space after each comma and colon, no other whitespace;
//! - `True`, `False`, `None`;
//! - `int`: `-?(0|[1-9][0-9]*)`, any length (Python ≥ 3.11 refuses to
//!   write more than 4,300 digits, older versions do not; the value is exact
//!   either way);
//! - `float`: the shortest digits that read back as the same double
//!   (David Gay's mode 0, as Rust's `{:e}` gives them), in fixed notation
//!   when the decimal exponent is in -4..16 (`0.0001`, `1e-05`,
//!   `1000000000000000.0`, `1e+16`), else `d[.ddd]e±XX`; `inf`, `nan`
//!   are no literals and refuse the text;
//! - `str`: single quotes unless the string holds `'` and no `"`; a
//!   character is written as itself when it is printable
//!   ([`super::printable`]: `str.isprintable`), else as `\t`, `\n`, `\r`,
//!   `\xhh` (up to U+00FF), `\uhhhh`, `\Uhhhhhhhh` (lowercase hex); `\\` and
//!   the quote in use are escaped.
//!
//! What maps to JSON one to one is read; what does not is refused: a dict
//! key that is not a `str` (JSON keys are strings: `{1: 'a'}` and
//! `{'1': 'a'}` would read the same), a string with a surrogate code point
//! (JSON text cannot carry a lone one, and a pair would read as the one
//! character it encodes: another string), and a literal that is valid JSON
//! as it stands (it is JSON's to read: `[1, 2]`). A tuple is written as a
//! JSON array, and [`Read::tuples`] says the value held one, so the marker
//! can tell the agent (a tuple and a list are different Python values;
//! their items are the same data).
//!
//! Hostile input is just input: one pass, no recursion (an explicit stack,
//! at most [`MAX_DEPTH`] containers deep, as serde_json stops at 128), and
//! each dict's keys checked for duplicates in time linear in their bytes.
//! Duplicate keys cannot come from `repr` (a dict has none), so a text with
//! them is refused; equal keys are equal literals, since each `str` has one
//! canonical spelling.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::printable::is_printable;

/// Containers nested deeper than this refuse the text (serde_json, which
/// reads the JSON written here next, stops at 128; the TOON fast path at
/// 100).
pub(crate) const MAX_DEPTH: usize = 100;

/// A dict with more keys than this has them checked with a hash set, a
/// smaller one pairwise.
const PAIRWISE_KEYS: usize = 16;

/// A Python literal read as JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// The value as compact JSON (RFC 8259): `true`/`false`/`null` for
    /// `True`/`False`/`None`, strings in double quotes with the escapes
    /// JSON requires and the characters Python escaped as `\uXXXX`, numbers
    /// as Python spelt them (a JSON number already), tuples as arrays.
    pub json: String,
    /// The value holds a tuple, written as an array.
    pub tuples: bool,
}

/// Reads `text` when it is the canonical `repr` of a list, tuple or dict
/// of the types above and not valid JSON as it stands; `None` otherwise.
pub fn read(text: &str) -> Option<Read> {
    let b = text.as_bytes();
    if !matches!(b.first(), Some(b'[' | b'(' | b'{')) {
        return None;
    }
    // Most texts that get here are JSON, whose first string is quoted with
    // `"` and holds no `'`: `unicode_repr` quotes with `"` only a string
    // that holds `'` (and no `"`, so the next `"` closes it). Refused
    // before anything is allocated.
    if let Some(q) = b.iter().position(|&c| c == b'\'' || c == b'"') {
        if b.get(q) == Some(&b'"') {
            let rest = b.get(q + 1..).unwrap_or_default();
            let close = rest.iter().position(|&c| c == b'"').unwrap_or(rest.len());
            if !rest.get(..close).unwrap_or_default().contains(&b'\'') {
                return None;
            }
        }
    }
    let mut reader = Reader {
        text,
        b: text.as_bytes(),
        i: 0,
        // Sized once the text has shown it is a literal (see `run`): most
        // texts that reach here are JSON, refused at their first string.
        out: String::new(),
        stack: Vec::new(),
        keys: Vec::new(),
        last_keys: Vec::new(),
        float: String::new(),
        python_only: false,
        tuples: false,
    };
    reader.run()?;
    // Nothing JSON lacks (quotes, `True`, tuples, `\x` escapes): JSON's
    // reading of the text is the same value, and the JSON path takes it.
    reader.python_only.then_some(Read {
        json: reader.out,
        tuples: reader.tuples,
    })
}

/// One open container.
#[derive(Clone, Copy)]
enum Frame {
    List,
    /// Items read so far.
    Tuple(usize),
    /// Where its keys start in [`Reader::keys`].
    Dict(usize),
}

struct Reader<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
    out: String,
    stack: Vec<Frame>,
    /// The key literals (quotes included) of the open dicts, innermost
    /// last.
    keys: Vec<&'a str>,
    /// The keys of the last dict checked: rows of one table share them,
    /// and need no check of their own.
    last_keys: Vec<&'a str>,
    /// A float's canonical spelling, written here to compare.
    float: String,
    /// The text uses a spelling JSON does not have.
    python_only: bool,
    tuples: bool,
}

/// What the reader expects next.
enum Next {
    Value,
    /// A dict's key (a `str`), then `: `, then its value.
    Key,
    /// After a value: a separator or the end of its container.
    After,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Takes `s` when the text goes on with it.
    fn eat(&mut self, s: &[u8]) -> bool {
        if self.b.get(self.i..self.i + s.len()) == Some(s) {
            self.i += s.len();
            true
        } else {
            false
        }
    }

    fn run(&mut self) -> Option<()> {
        let mut next = Next::Value;
        loop {
            if self.i > 64 && self.out.capacity() < self.b.len() {
                self.out.reserve(self.b.len() - self.out.len());
            }
            next = match next {
                Next::Value => self.value()?,
                Next::Key => {
                    let start = self.i;
                    if !matches!(self.peek(), Some(b'\'' | b'"')) {
                        // A key that is no `str` has no JSON counterpart.
                        return None;
                    }
                    self.string()?;
                    self.keys.push(self.text.get(start..self.i)?);
                    if !self.eat(b": ") {
                        return None;
                    }
                    self.out.push(':');
                    Next::Value
                }
                Next::After => {
                    let Some(&frame) = self.stack.last() else {
                        // The top-level value ended: so must the text.
                        return (self.i == self.b.len()).then_some(());
                    };
                    self.after(frame)?
                }
            };
        }
    }

    /// A value: a container opens (its first item, or its end, next) or a
    /// scalar is read whole.
    fn value(&mut self) -> Option<Next> {
        let c = self.peek()?;
        if self.stack.is_empty() && !matches!(c, b'[' | b'(' | b'{') {
            return None;
        }
        match c {
            b'[' | b'(' | b'{' => {
                if self.stack.len() >= MAX_DEPTH {
                    return None;
                }
                self.i += 1;
                let (frame, open, close) = match c {
                    b'[' => (Frame::List, '[', b']'),
                    b'(' => {
                        self.python_only = true;
                        self.tuples = true;
                        (Frame::Tuple(0), '[', b')')
                    }
                    _ => (Frame::Dict(self.keys.len()), '{', b'}'),
                };
                self.out.push(open);
                if self.peek() == Some(close) {
                    // Empty: `[]`, `()`, `{}`.
                    self.i += 1;
                    self.out.push(if open == '{' { '}' } else { ']' });
                    return Some(Next::After);
                }
                self.stack.push(frame);
                return Some(if open == '{' { Next::Key } else { Next::Value });
            }
            b'\'' | b'"' => self.string()?,
            b'T' | b'F' | b'N' => {
                let (word, json): (&[u8], &str) = match c {
                    b'T' => (b"True", "true"),
                    b'F' => (b"False", "false"),
                    _ => (b"None", "null"),
                };
                if !self.eat(word) {
                    return None;
                }
                self.python_only = true;
                self.out.push_str(json);
            }
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return None,
        }
        Some(Next::After)
    }

    /// After a value inside `frame`: `, ` and the next item, or the close.
    fn after(&mut self, frame: Frame) -> Option<Next> {
        match frame {
            Frame::List => {
                if self.eat(b", ") {
                    self.out.push(',');
                    return Some(Next::Value);
                }
                if !self.eat(b"]") {
                    return None;
                }
                self.out.push(']');
            }
            Frame::Tuple(n) => {
                let n = n + 1;
                if let Some(Frame::Tuple(count)) = self.stack.last_mut() {
                    *count = n;
                }
                // `(a,)` for one item; `(a, b)` for more.
                let closed = if n == 1 {
                    self.eat(b",)")
                } else {
                    self.eat(b")")
                };
                if !closed {
                    if !self.eat(b", ") {
                        return None;
                    }
                    self.out.push(',');
                    return Some(Next::Value);
                }
                self.out.push(']');
            }
            Frame::Dict(start) => {
                if self.eat(b", ") {
                    self.out.push(',');
                    return Some(Next::Key);
                }
                if !self.eat(b"}") {
                    return None;
                }
                self.distinct_keys(start)?;
                self.keys.truncate(start);
                self.out.push('}');
            }
        }
        self.stack.pop();
        Some(Next::After)
    }

    /// The keys of the dict whose keys start at `start` are distinct.
    fn distinct_keys(&mut self, start: usize) -> Option<()> {
        let keys = self.keys.get(start..)?;
        if keys == self.last_keys.as_slice() {
            return Some(());
        }
        let distinct = if keys.len() <= PAIRWISE_KEYS {
            keys.iter()
                .enumerate()
                .all(|(k, a)| keys.iter().skip(k + 1).all(|b| a != b))
        } else {
            let mut seen = HashSet::with_capacity(keys.len());
            keys.iter().all(|k| seen.insert(*k))
        };
        if !distinct {
            return None;
        }
        self.last_keys.clear();
        self.last_keys.extend_from_slice(keys);
        Some(())
    }

    /// An `int` or a `float`, in its canonical spelling, written as it is
    /// (both are JSON numbers: RFC 8259 §6 allows `1e+16`).
    fn number(&mut self) -> Option<()> {
        let start = self.i;
        self.eat(b"-");
        let digits = self.digits();
        let int_digits = self.b.get(start..self.i)?;
        let unsigned = int_digits.strip_prefix(b"-").unwrap_or(int_digits);
        if digits == 0 || (unsigned.len() > 1 && unsigned.first() == Some(&b'0')) {
            return None;
        }
        let mut float = false;
        if self.eat(b".") {
            if self.digits() == 0 {
                return None;
            }
            float = true;
        }
        if self.eat(b"e") {
            if !(self.eat(b"+") || self.eat(b"-")) || self.digits() == 0 {
                return None;
            }
            float = true;
        }
        let literal = self.text.get(start..self.i)?;
        if float {
            if !self.canonical_float(literal) {
                return None;
            }
        } else if literal == "-0" {
            // Python writes zero as `0`.
            return None;
        }
        self.out.push_str(literal);
        Some(())
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        self.i - start
    }

    /// Whether `literal` is what `repr` writes for the double it reads as
    /// (CPython `float_repr`: `PyOS_double_to_string(x, 'r', 0,
    /// Py_DTSF_ADD_DOT_0)`).
    fn canonical_float(&mut self, literal: &str) -> bool {
        let Ok(x) = literal.parse::<f64>() else {
            return false;
        };
        if !x.is_finite() {
            return false;
        }
        self.float.clear();
        repr_float(x, &mut self.float);
        self.float == literal
    }

    /// A `str` literal in its canonical spelling, written as a JSON string.
    fn string(&mut self) -> Option<()> {
        let quote = self.peek()?;
        self.i += 1;
        if quote == b'\'' {
            self.python_only = true;
        }
        let (mut single, mut double) = (false, false);
        self.out.push('"');
        loop {
            // A run of plain ASCII, copied as it is.
            let run = self.i;
            while let Some(&c) = self.b.get(self.i) {
                if !(0x20..0x7f).contains(&c) || matches!(c, b'\\' | b'\'' | b'"') {
                    break;
                }
                self.i += 1;
            }
            self.out.push_str(self.text.get(run..self.i)?);
            let c = self.peek()?;
            match c {
                b'\\' => {
                    let escaped = self.escape(quote)?;
                    single |= escaped == '\'';
                    double |= escaped == '"';
                }
                _ if c == quote => {
                    self.i += 1;
                    break;
                }
                b'\'' => {
                    single = true;
                    self.i += 1;
                    self.out.push('\'');
                }
                b'"' => {
                    double = true;
                    self.i += 1;
                    self.out.push_str("\\\"");
                }
                _ => {
                    // A character outside printable ASCII, raw: Python
                    // writes it so only when it is printable.
                    let ch = self.text.get(self.i..)?.chars().next()?;
                    if !is_printable(ch) {
                        return None;
                    }
                    self.i += ch.len_utf8();
                    self.out.push(ch);
                }
            }
        }
        self.out.push('"');
        // `unicode_repr`: `"` quotes only a string with `'` and no `"`.
        let canonical = if single && !double { b'"' } else { b'\'' };
        (quote == canonical).then_some(())
    }

    /// The escape at the backslash here, in a string quoted with `quote`,
    /// written to JSON; returns the character it stands for.
    fn escape(&mut self, quote: u8) -> Option<char> {
        self.i += 1;
        let kind = self.peek()?;
        self.i += 1;
        let (ch, width) = match kind {
            b'\\' => {
                self.out.push_str("\\\\");
                return Some('\\');
            }
            // Only the quote in use is escaped, and only `'` can be: a
            // `"`-quoted string holds no `"`.
            b'\'' if quote == b'\'' => {
                self.out.push('\'');
                return Some('\'');
            }
            b't' => ('\t', 0),
            b'n' => ('\n', 0),
            b'r' => ('\r', 0),
            b'x' => (self.hex(2)?, 2),
            b'u' => (self.hex(4)?, 4),
            b'U' => (self.hex(8)?, 8),
            _ => return None,
        };
        if width > 0 {
            // `\uhhhh` means the same in JSON (RFC 8259 §7; no surrogate
            // reaches here); `\x` and `\U` are Python's alone.
            self.python_only |= width != 4;
            let cp = u32::from(ch);
            // The form `unicode_repr` picks for a character it escapes.
            let form = if cp <= 0xff {
                2
            } else if cp <= 0xffff {
                4
            } else {
                8
            };
            // `\t`, `\n`, `\r` have their own; a printable character is
            // not escaped at all.
            if form != width || matches!(ch, '\t' | '\n' | '\r') || is_printable(ch) {
                return None;
            }
        }
        write_json_escaped(&mut self.out, ch);
        Some(ch)
    }

    /// `n` lowercase hex digits here, as a character; `None` for a
    /// surrogate (see the module docs) or past U+10FFFF.
    fn hex(&mut self, n: usize) -> Option<char> {
        let digits = self.b.get(self.i..self.i + n)?;
        let mut cp: u32 = 0;
        for &d in digits {
            let v = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                _ => return None,
            };
            cp = cp * 16 + u32::from(v);
        }
        self.i += n;
        char::from_u32(cp)
    }
}

/// A character Python escaped, in a JSON string: JSON's short escapes
/// where it has one, else `\uXXXX` (a UTF-16 pair past U+FFFF, RFC 8259
/// §7), so what was visible as an escape stays visible as one.
fn write_json_escaped(out: &mut String, ch: char) {
    match ch {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        _ => {
            let mut units = [0u16; 2];
            for unit in ch.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        }
    }
}

/// `repr(x)` of a finite double, into `out`.
pub fn repr_float(x: f64, out: &mut String) {
    // `{:e}`: the shortest digits that read back as `x`, one before the
    // point: `-1.2345e-7`, `1e16`, `0e0`.
    let mut sci = String::with_capacity(32);
    let _ = write!(sci, "{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let mut digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    half_even(x, &mut digits, exp);
    let digits = std::str::from_utf8(&digits).unwrap_or("0");
    // The point's place after the first `decpt` digits (`0.d1d2… × 10^decpt`).
    let decpt = exp + 1;
    if negative {
        out.push('-');
    }
    let n = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    if -4 < decpt && decpt <= 16 {
        if decpt <= 0 {
            out.push_str("0.");
            for _ in decpt..0 {
                out.push('0');
            }
            out.push_str(digits);
        } else if decpt >= n {
            out.push_str(digits);
            for _ in n..decpt {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            let split = usize::try_from(decpt).unwrap_or(0);
            out.push_str(digits.get(..split).unwrap_or(""));
            out.push('.');
            out.push_str(digits.get(split..).unwrap_or(""));
        }
    } else {
        out.push_str(digits.get(..1).unwrap_or(""));
        if let Some(rest) = digits.get(1..).filter(|r| !r.is_empty()) {
            out.push('.');
            out.push_str(rest);
        }
        let e = decpt - 1;
        let _ = write!(out, "e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
}

/// Where `x` lies exactly halfway between the shortest digits Rust wrote
/// (`digits`, the first before the point of `10^exp`) and their neighbour
/// of the same length, both reading back as `x`, Rust rounds the tie up
/// and CPython (David Gay's `dtoa`, mode 0) to the even last digit:
/// `7000002000000783e-1` is `700000200000078.25`, which Rust writes
/// `…078.3` and `repr` `…078.2`. Makes `digits` the even one then.
fn half_even(x: f64, digits: &mut [u8], exp: i32) {
    let Some(last) = digits.last_mut() else {
        return;
    };
    if *last % 2 == 0 {
        return;
    }
    let Some(d) = std::str::from_utf8(digits)
        .ok()
        .and_then(|s| s.parse::<u128>().ok())
    else {
        return;
    };
    // The digits' last place is 10^q; a midpoint is (10d ± 5) · 10^(q-1).
    let n = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    let q = exp - n;
    let (m, e) = odd_mantissa(x.abs());
    for (up, mid) in [
        (false, (10 * d).checked_sub(5)),
        (true, (10 * d).checked_add(5)),
    ] {
        let Some(mid) = mid else { continue };
        if equals(mid, q, m, e) {
            if let Some(last) = digits.last_mut() {
                // Odd: 1 ..= 9. Up from 9 would carry into a shorter
                // spelling, which is no neighbour of the shortest.
                if !up {
                    *last -= 1;
                } else if *last < b'9' {
                    *last += 1;
                }
            }
            return;
        }
    }
}

/// `x` (finite, positive) as `m · 2^e` with `m` odd (`m` 0 for zero).
fn odd_mantissa(x: f64) -> (u64, i32) {
    let bits = x.to_bits();
    let biased = i32::try_from((bits >> 52) & 0x7ff).unwrap_or(0);
    let frac = bits & ((1 << 52) - 1);
    let (mut m, mut e) = if biased == 0 {
        (frac, -1074)
    } else {
        (frac | 1 << 52, biased - 1075)
    };
    while m != 0 && m % 2 == 0 {
        m /= 2;
        e += 1;
    }
    (m, e)
}

/// Whether `mid · 10^q` (`mid` odd: it ends in 5) is exactly `m · 2^e`
/// (`m` odd). `10^q = 2^q · 5^q`: the powers of two must match (`q == e`),
/// and the odd parts: `mid · 5^q == m`, or `mid == m · 5^-q`.
fn equals(mid: u128, q: i32, m: u64, e: i32) -> bool {
    if q != e || m == 0 {
        return false;
    }
    let five = |k: i32| 5u128.checked_pow(k.unsigned_abs());
    if q >= 0 {
        five(q).and_then(|p| mid.checked_mul(p)) == Some(u128::from(m))
    } else {
        five(q).and_then(|p| u128::from(m).checked_mul(p)) == Some(mid)
    }
}

#[cfg(test)]
mod tests;
