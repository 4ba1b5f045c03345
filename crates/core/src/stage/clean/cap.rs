//! `max_text_bytes`: the last word on a block's size. The pipeline applies
//! it to the text it is about to send (after TOON), so the cap bounds what
//! the agent reads whatever the other stages did.
//!
//! The text is cut and a one-line notice says what went:
//! `\n[mcp-toon: cut K of M bytes]` (K bytes of the M-byte text are gone).
//! The result, notice included, is never longer than the cap.
//! - Plain text (JSON included) is cut at a UTF-8 character boundary.
//! - A TOON emission keeps its header (the marker line; the marker line and
//!   the opening fence) intact at the head, keeps whole lines only, and for
//!   the fenced form keeps the closing fence, so the notice sits outside the
//!   fence. It must keep at least the first line that carries data (the
//!   lines up to and including the first that does not end in `:` — TOON
//!   v4 §7/§9: a line ending in `:` only opens a block); when the cap
//!   cannot hold that much, [`cap`] answers [`Capped::TooSmall`] and the
//!   pipeline sends the block unencoded instead (capped as plain text).
//! - A cap too small even for the notice cuts plain text without one.

use std::fmt::Write as _;

use super::{Applied, Transform};
use crate::marker;
use crate::marker::Header;

/// What the text to cap is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// Plain text or JSON: cut anywhere between characters.
    Text,
    /// A TOON emission with this header (as `marker::wrap` writes it).
    Toon(Header),
}

/// The answer of [`cap`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capped {
    /// The text is within the cap (or there is none): send it as it is.
    Fits,
    /// The text to send instead; `cut` bytes of the input are gone.
    Cut { text: String, cut: usize },
    /// A TOON emission whose header and first data line do not fit: send the
    /// block unencoded.
    TooSmall,
}

impl Capped {
    /// The record of the cut, for a block whose text was `input_len` bytes.
    pub fn applied(&self, input_len: usize) -> Option<Applied> {
        match self {
            Capped::Cut { text, .. } => Some(Applied {
                transform: Transform::Cap,
                bytes_before: input_len,
                bytes_after: text.len(),
            }),
            Capped::Fits | Capped::TooSmall => None,
        }
    }
}

/// Caps `text` at `max_text_bytes` (0: no cap).
pub fn cap(text: &str, max_text_bytes: usize, framing: TextKind) -> Capped {
    if max_text_bytes == 0 || text.len() <= max_text_bytes {
        return Capped::Fits;
    }
    let max = max_text_bytes;
    let total = text.len();
    let Some(parts) = split(text, framing) else {
        return cut_text(text, max);
    };
    // K ≤ M, so K has at most as many digits as M: the longest notice.
    let notice_max = notice(total, total).len();
    let fixed = parts.head.len() + parts.tail.len() + notice_max;
    let Some(budget) = max.checked_sub(fixed) else {
        return Capped::TooSmall;
    };
    let first = first_data_len(parts.body);
    if first > budget {
        return Capped::TooSmall;
    }
    // Whole lines: the longest prefix of the body ending before a `\n`.
    let prefix = parts
        .body
        .get(..floor_char_boundary(parts.body, budget + 1))
        .unwrap_or("");
    let keep = match prefix.rfind('\n') {
        Some(nl) if nl >= first => nl,
        _ => first,
    };
    let body = parts.body.get(..keep).unwrap_or("");
    let kept = parts.head.len() + body.len() + parts.tail.len();
    let cut = total - kept;
    let mut out = String::with_capacity(max);
    out.push_str(parts.head);
    out.push_str(body);
    out.push_str(parts.tail);
    out.push_str(&notice(cut, total));
    Capped::Cut { text: out, cut }
}

/// Whether `cap` can keep this text's header and first data line (or there
/// is nothing to cut): the pipeline asks before it settles on a TOON
/// emission.
pub fn can_hold_first_row(text: &str, max_text_bytes: usize, framing: TextKind) -> bool {
    !matches!(cap(text, max_text_bytes, framing), Capped::TooSmall)
}

fn notice(cut: usize, total: usize) -> String {
    let mut s = String::with_capacity(40);
    let _ = write!(s, "\n[mcp-toon: cut {cut} of {total} bytes]");
    s
}

/// Plain text: cut at the last character boundary that leaves room for the
/// notice, or at the cap itself when not even the notice fits.
fn cut_text(text: &str, max: usize) -> Capped {
    let total = text.len();
    let notice_max = notice(total, total).len();
    let room = max.checked_sub(notice_max);
    let at = floor_char_boundary(text, room.unwrap_or(max));
    let kept = text.get(..at).unwrap_or("");
    let cut = total - kept.len();
    let mut out = kept.to_string();
    if room.is_some() {
        out.push_str(&notice(cut, total));
    }
    Capped::Cut { text: out, cut }
}

fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// A TOON emission in three parts: the header kept at the head, the TOON
/// body that is cut, the tail kept after it.
pub(crate) struct Parts<'a> {
    pub(crate) head: &'a str,
    pub(crate) body: &'a str,
    pub(crate) tail: &'a str,
}

/// `None` for plain text, or when the text does not have the header its
/// framing says (it is then capped as plain text).
pub(crate) fn split(text: &str, framing: TextKind) -> Option<Parts<'_>> {
    let TextKind::Toon(header) = framing else {
        return None;
    };
    let body = marker::unwrap(text, header)?;
    // The header is one line (marker) or two (marker, opening fence); the
    // body follows it directly.
    let header_lines = match header {
        Header::None => 0,
        Header::Marker => 1,
        Header::Fence => 2,
    };
    let mut start = 0;
    for _ in 0..header_lines {
        start += text.get(start..)?.find('\n')? + 1;
    }
    let end = start + body.len();
    if text.get(start..end)? != body {
        return None;
    }
    Some(Parts {
        head: text.get(..start)?,
        body,
        tail: text.get(end..)?,
    })
}

/// Bytes of `body` up to the end of its first line that carries data: the
/// first line that does not end in `:` (lines ending in `:` only open a
/// nested object or a table whose rows follow).
fn first_data_len(body: &str) -> usize {
    let mut end = 0;
    for line in body.split_inclusive('\n') {
        end += line.len();
        let content = line.trim_end_matches(['\n', '\r']);
        if !content.trim_end().ends_with(':') {
            return end - (line.len() - content.len());
        }
    }
    body.len()
}

#[cfg(test)]
mod tests;
