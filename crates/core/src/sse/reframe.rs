//! Re-framing an event around new data, byte for byte where it can be.

use super::event::Event;
use super::lines::{is_eol, CR, LF};

impl Event {
    /// The event's bytes with its data replaced by `new_data`.
    ///
    /// Every line that is not a `data` line (`id`, `event`, `retry`,
    /// comments, unknown fields, the blank line) stays where it was, with
    /// its own end-of-line. The new data takes the place of the first `data`
    /// line; the other `data` lines go. A field value cannot hold a line
    /// break (§9.2.5: `any-char` excludes CR and LF, and a raw one would end
    /// the field), so each line of `new_data` becomes one `data` line, in
    /// the order §9.2.6 joins them back with LF. CR and CRLF in `new_data`
    /// break lines too and so read back as LF. New `data` lines end like the
    /// first original one and keep its `data: ` or `data:` spelling; a line
    /// that itself starts with a space always gets the separating space, or
    /// the parser would strip its own.
    ///
    /// Parsing the result yields `new_data` (line breaks as LF), the same
    /// event type and the same id.
    pub fn with_data(&self, new_data: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.raw.len() + new_data.len() + 16);
        let mut kept_from = 0;
        for (n, line) in self.data_lines.iter().enumerate() {
            append(&mut out, self.raw.get(kept_from..line.start));
            if n == 0 {
                let eol = self
                    .raw
                    .get(line.content_end..line.end)
                    .filter(|e| !e.is_empty())
                    .unwrap_or(b"\n");
                write_data(&mut out, new_data.as_bytes(), self.spaced, eol);
            }
            kept_from = line.end;
        }
        append(&mut out, self.raw.get(kept_from..));
        out
    }
}

/// Copies a run of kept lines. Dropping `data` lines can put a line that
/// ended with a bare CR right before the blank line; if that blank line is
/// a bare LF, the two would read as one CRLF and the event would not end
/// where it did. Only then the blank line gets a CR of its own ("\r\n"),
/// which ends it exactly where the original did.
fn append(out: &mut Vec<u8>, kept: Option<&[u8]>) {
    let kept = kept.unwrap_or_default();
    if out.last() == Some(&CR) && kept.first() == Some(&LF) {
        out.push(CR);
    }
    out.extend_from_slice(kept);
}

fn write_data(out: &mut Vec<u8>, mut rest: &[u8], spaced: bool, eol: &[u8]) {
    loop {
        let cut = rest.iter().position(|&b| is_eol(b));
        let line = match cut {
            Some(at) => rest.get(..at).unwrap_or_default(),
            None => rest,
        };
        out.extend_from_slice(b"data:");
        if spaced || line.first() == Some(&b' ') {
            out.push(b' ');
        }
        out.extend_from_slice(line);
        out.extend_from_slice(eol);
        let Some(at) = cut else { break };
        let crlf = rest.get(at) == Some(&CR) && rest.get(at + 1) == Some(&LF);
        rest = rest
            .get(at + if crlf { 2 } else { 1 }..)
            .unwrap_or_default();
    }
}
