//! The header in front of a TOON emission: the decode contract with agents.
//!
//! `marker`: the marker line, a newline, the TOON text.
//! `fence`:  the marker line, then the TOON text inside a fence opened with
//!           ```` ```toon ```` (the form the TOON README recommends for model
//!           input). CommonMark §4.5: a fence closes only on a run of at least
//!           as many backticks as opened it, so the run is one longer than
//!           the longest run inside the text (and at least three).
//! `none`:   the bare TOON text.

use serde::Deserialize;

/// Every marker starts with this, so agents (and the plugin itself, which
/// never encodes a block twice) can recognise an encoded block.
pub const MARKER_PREFIX: &str = "[mcp-toon/v1]";

/// `toon.header`: what precedes the TOON text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Header {
    /// The marker line, then the TOON text.
    Marker,
    /// The marker line, then the TOON text in a ```` ```toon ```` fence.
    Fence,
    /// The bare TOON text.
    None,
}

/// Wraps a TOON text in the configured header.
pub fn wrap(toon: &str, header: Header, marker: &str) -> String {
    match header {
        Header::None => toon.to_string(),
        Header::Marker => {
            let mut out = String::with_capacity(marker.len() + 1 + toon.len());
            out.push_str(marker);
            out.push('\n');
            out.push_str(toon);
            out
        }
        Header::Fence => {
            let fence = "`".repeat(longest_backtick_run(toon).max(2) + 1);
            let mut out = String::with_capacity(marker.len() + 2 * fence.len() + toon.len() + 8);
            out.push_str(marker);
            out.push('\n');
            out.push_str(&fence);
            out.push_str("toon\n");
            out.push_str(toon);
            out.push('\n');
            out.push_str(&fence);
            out
        }
    }
}

/// Removes the header `wrap` added, returning the TOON text; `None` when the
/// text does not have that header.
pub fn unwrap(text: &str, header: Header) -> Option<&str> {
    match header {
        Header::None => Some(text),
        Header::Marker => {
            let (first, rest) = text.split_once('\n')?;
            first.starts_with(MARKER_PREFIX).then_some(rest)
        }
        Header::Fence => {
            let (first, rest) = text.split_once('\n')?;
            if !first.starts_with(MARKER_PREFIX) {
                return None;
            }
            let (open, body) = rest.split_once('\n')?;
            let fence = open.strip_suffix("toon")?;
            if fence.len() < 3 || !fence.bytes().all(|b| b == b'`') {
                return None;
            }
            body.strip_suffix(fence)?.strip_suffix('\n')
        }
    }
}

/// What a block read from a Python literal (`clean.python_literal`) says
/// after the TOON marker: the values are the server's, their spelling is
/// JSON's. An agent that writes them back as Python needs the three words
/// (strings keep their characters, numbers their spelling); short, since
/// every such block pays for it.
pub(crate) const PYTHON_NOTE: &str =
    "From a Python literal: same values; true/false/null were True/False/None.";

/// Added when the literal held a tuple: JSON has none, so the agent
/// learns that arrays may have been tuples.
pub const TUPLES_NOTE: &str = "Some arrays were tuples.";

/// The note for a literal, with [`TUPLES_NOTE`] when it held a tuple.
pub fn python_note(tuples: bool) -> String {
    if tuples {
        format!("{PYTHON_NOTE} {TUPLES_NOTE}")
    } else {
        PYTHON_NOTE.to_string()
    }
}

/// The line in front of compact JSON read from a Python literal (when TOON
/// did not encode it, and the header is not `none`): the marker prefix, so
/// the block is never read again, and the note.
pub fn python_line(tuples: bool) -> String {
    format!("{MARKER_PREFIX} JSON. {}", python_note(tuples))
}

/// A block that already carries the marker is never encoded again.
pub fn is_encoded(text: &str) -> bool {
    text.starts_with(MARKER_PREFIX)
}

fn longest_backtick_run(text: &str) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for b in text.bytes() {
        if b == b'`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: &str = "[mcp-toon/v1] test";

    #[test]
    fn marker_form_is_one_line_then_toon() {
        assert_eq!(wrap("a: 1", Header::Marker, M), "[mcp-toon/v1] test\na: 1");
        assert_eq!(
            unwrap("[mcp-toon/v1] test\na: 1", Header::Marker),
            Some("a: 1")
        );
    }

    #[test]
    fn fence_outgrows_backtick_runs_inside() {
        let toon = "a: \"x````y\"";
        let out = wrap(toon, Header::Fence, M);
        assert_eq!(out, "[mcp-toon/v1] test\n`````toon\na: \"x````y\"\n`````");
        assert_eq!(unwrap(&out, Header::Fence), Some(toon));
        let plain = wrap("a: 1", Header::Fence, M);
        assert_eq!(plain, "[mcp-toon/v1] test\n```toon\na: 1\n```");
    }

    #[test]
    fn none_is_bare() {
        assert_eq!(wrap("a: 1", Header::None, M), "a: 1");
    }

    /// The Python line is sized as plain ASCII on the wire (one byte a
    /// character, no escape): `pipeline::Block::python_json` relies on it.
    #[test]
    fn the_python_line_needs_no_escape() {
        for tuples in [false, true] {
            let line = python_line(tuples);
            assert!(line
                .bytes()
                .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\'));
            assert!(is_encoded(&line));
        }
    }

    #[test]
    fn recognises_marker() {
        assert!(is_encoded("[mcp-toon/v1] x\n..."));
        assert!(!is_encoded(" [mcp-toon/v1]"));
    }
}
