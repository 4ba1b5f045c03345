//! Where a JSON-RPC body ends, found as its chunks arrive.
//!
//! A JSON-RPC message or batch is one JSON object or array (JSON-RPC 2.0
//! §4, §6) and a body holds exactly one of them. So the body is complete,
//! as far as JSON goes, at the bracket that closes the top-level value —
//! which may come before the host's end of stream: a body followed by
//! trailers has no last body callback, and a rewrite must be made in the
//! callback that brought the closing bracket, the last one with a buffer
//! to write into.
//!
//! The scan tracks only what RFC 8259 needs to find that bracket: whether
//! it is inside a string (§7: a string ends at an unescaped `"`), and the
//! nesting depth of `{`/`[` against `}`/`]` outside strings. It does not
//! validate (the pipeline's parser does), but it refuses early what cannot
//! be one object or array: a first byte that is not whitespace, `{` or `[`,
//! and anything but whitespace after the value (§2: insignificant
//! whitespace is space, tab, LF and CR). Linear in the bytes, one pass.

use super::lex::is_ws;

/// What the bytes seen so far are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Still inside the value (or before it).
    Open,
    /// The value closed; the bytes after it were whitespace.
    Closed,
    /// Not one JSON object or array.
    Invalid,
}

/// The scanner's state between chunks.
#[derive(Debug, Clone, Default)]
pub struct EndScanner {
    started: bool,
    depth: usize,
    in_string: bool,
    escaped: bool,
    closed: bool,
    invalid: bool,
}

impl EndScanner {
    /// Feeds the next bytes; returns where the body stands and, when the
    /// value closed within `bytes`, the offset just past its last byte.
    pub fn feed(&mut self, bytes: &[u8]) -> (Progress, Option<usize>) {
        let mut closed_at = None;
        let mut i = 0;
        while i < bytes.len() && !self.invalid {
            if self.closed {
                if !bytes.get(i..).unwrap_or_default().iter().all(|&b| is_ws(b)) {
                    self.invalid = true;
                }
                break;
            }
            if self.in_string {
                // Skip to the next quote or backslash: string contents are
                // most of a tool result.
                let rest = bytes.get(i..).unwrap_or_default();
                if self.escaped {
                    self.escaped = false;
                    i += 1;
                    continue;
                }
                match rest.iter().position(|&b| b == b'"' || b == b'\\') {
                    None => break,
                    Some(n) => {
                        i += n;
                        if bytes.get(i) == Some(&b'\\') {
                            self.escaped = true;
                        } else {
                            self.in_string = false;
                        }
                        i += 1;
                    }
                }
                continue;
            }
            let Some(&b) = bytes.get(i) else { break };
            i += 1;
            if !self.started {
                match b {
                    b'{' | b'[' => {
                        self.started = true;
                        self.depth = 1;
                    }
                    b if is_ws(b) => {}
                    _ => self.invalid = true,
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth = self.depth.saturating_add(1),
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        self.closed = true;
                        closed_at = Some(i);
                    }
                }
                _ => {}
            }
        }
        (self.progress(), closed_at)
    }

    pub(crate) fn progress(&self) -> Progress {
        if self.invalid {
            Progress::Invalid
        } else if self.closed {
            Progress::Closed
        } else {
            Progress::Open
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(chunks: &[&[u8]]) -> (Progress, Vec<Option<usize>>) {
        let mut s = EndScanner::default();
        let ends = chunks.iter().map(|c| s.feed(c).1).collect();
        (s.progress(), ends)
    }

    #[test]
    fn finds_the_closing_bracket_at_every_split() {
        let body = br#" {"a":"x}\"]","b":[1,{"c":"\\"}]} "#;
        let close = body.iter().rposition(|&b| b == b'}').unwrap() + 1;
        for cut in 0..=body.len() {
            let (a, b) = body.split_at(cut);
            let (progress, ends) = scan(&[a, b]);
            assert_eq!(progress, Progress::Closed, "cut {cut}");
            let at = if close <= cut {
                ends[0]
            } else {
                ends[1].map(|n| n + cut)
            };
            assert_eq!(at, Some(close), "cut {cut}");
        }
    }

    #[test]
    fn every_byte_alone() {
        let body = br#"[{"jsonrpc":"2.0","id":1,"result":{"t":"a\\\"b"}}]"#;
        let mut s = EndScanner::default();
        for (i, b) in body.iter().enumerate() {
            let (p, end) = s.feed(std::slice::from_ref(b));
            let last = i + 1 == body.len();
            assert_eq!(p == Progress::Closed, last, "byte {i}");
            assert_eq!(end.is_some(), last);
        }
    }

    #[test]
    fn refuses_what_is_not_one_object_or_array() {
        assert_eq!(scan(&[b"<html>"]).0, Progress::Invalid);
        assert_eq!(scan(&[b"\xef\xbb\xbf{}"]).0, Progress::Invalid);
        assert_eq!(scan(&[b"\"text\""]).0, Progress::Invalid);
        assert_eq!(scan(&[b"{}", b" x"]).0, Progress::Invalid);
        assert_eq!(scan(&[b"{} {}"]).0, Progress::Invalid);
        assert_eq!(scan(&[b"{\"a\":1", b"}\r\n"]).0, Progress::Closed);
        assert_eq!(scan(&[b"  ", b"{\"a\":[1"]).0, Progress::Open);
    }
}
