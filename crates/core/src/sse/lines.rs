//! Lines and fields of bytes already known to be complete (one event).

pub(super) const CR: u8 = b'\r';
pub(super) const LF: u8 = b'\n';

/// §9.2.6: "a U+000D CARRIAGE RETURN U+000A LINE FEED (CRLF) character
/// pair, a single U+000A LINE FEED (LF) character not preceded by a U+000D
/// CARRIAGE RETURN (CR) character, and a single U+000D CARRIAGE RETURN (CR)
/// character not followed by a U+000A LINE FEED (LF) character being the
/// ways in which a line can end."
pub(super) fn is_eol(b: u8) -> bool {
    b == CR || b == LF
}

/// One line as byte offsets: `start..content_end` is the text,
/// `content_end..end` its end-of-line (empty only for a last line without
/// one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Line {
    pub(crate) start: usize,
    pub(crate) content_end: usize,
    pub(crate) end: usize,
}

/// Splits `bytes` into lines. Only for complete input: a final CR is taken
/// as a whole end-of-line, which is right at the end of an event and wrong
/// in the middle of a stream (the framer looks ahead itself).
pub(super) struct Lines<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Lines<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }
}

impl Iterator for Lines<'_> {
    type Item = Line;

    fn next(&mut self) -> Option<Line> {
        let start = self.pos;
        let rest = self.bytes.get(start..).filter(|r| !r.is_empty())?;
        let Some(off) = rest.iter().position(|&b| is_eol(b)) else {
            self.pos = self.bytes.len();
            return Some(Line {
                start,
                content_end: self.pos,
                end: self.pos,
            });
        };
        let content_end = start + off;
        let crlf = rest.get(off) == Some(&CR) && rest.get(off + 1) == Some(&LF);
        self.pos = content_end + if crlf { 2 } else { 1 };
        Some(Line {
            start,
            content_end,
            end: self.pos,
        })
    }
}

/// What one line (without its end-of-line) says, per §9.2.6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field<'a> {
    /// "If the line is empty (a blank line): Dispatch the event".
    Blank,
    /// "If the line starts with a U+003A COLON character (:): Ignore the
    /// line."
    Comment,
    /// "If the line contains a U+003A COLON character (:): Collect the
    /// characters on the line before the first U+003A COLON character (:),
    /// and let field be that string. Collect the characters on the line
    /// after the first U+003A COLON character (:), and let value be that
    /// string. If value starts with a U+0020 SPACE character, remove it from
    /// value." — "Otherwise, the string is not empty but does not contain a
    /// U+003A COLON character (:): ... using the whole line as the field
    /// name, and the empty string as the field value."
    Named {
        name: &'a [u8],
        value: &'a [u8],
        /// A space after the colon was removed from `value`.
        spaced: bool,
    },
}

impl<'a> Field<'a> {
    pub(crate) fn parse(line: &'a [u8]) -> Self {
        match line.iter().position(|&b| b == b':') {
            _ if line.is_empty() => Field::Blank,
            Some(0) => Field::Comment,
            Some(colon) => {
                let name = line.get(..colon).unwrap_or_default();
                let after = line.get(colon + 1..).unwrap_or_default();
                let (value, spaced) = match after.strip_prefix(b" ") {
                    Some(v) => (v, true),
                    None => (after, false),
                };
                Field::Named {
                    name,
                    value,
                    spaced,
                }
            }
            None => Field::Named {
                name: line,
                value: b"",
                spaced: false,
            },
        }
    }
}
