//! The incremental framer: chunks in, units out, holding back only the unit
//! still incomplete.

use std::mem;

use super::event::Event;
use super::lines::{is_eol, CR, LF};
use super::{PassReason, Unit};

/// §9.2.6: "The UTF-8 decode algorithm strips one leading UTF-8 Byte Order
/// Mark (BOM), if any." Only at the very start of the stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// What the bytes since the last unit boundary are turning into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Nothing yet: at a line start with no field pending, where §9.2.6's
    /// data and event type buffers are empty.
    Between,
    /// A comment line with no field before it. It changes no state, so it
    /// goes out on its own at its end-of-line: keep-alive comments flow
    /// even when a server never follows them with a blank line.
    Comment,
    /// A blank line with no field before it: a block that dispatches
    /// nothing.
    Blank,
    /// A block with at least one field line, up to its blank line.
    Block,
}

/// Cuts an SSE byte stream into [`Unit`]s, chunk by chunk.
///
/// Holds at most `max_event_bytes` between calls: a unit that outgrows the
/// limit is released as [`PassReason::TooLarge`] and the rest of it as
/// [`PassReason::Continued`] as the bytes arrive.
#[derive(Debug, Clone)]
pub struct SseFramer {
    max_event_bytes: usize,
    /// The first bytes of the stream while they may still be a BOM; `None`
    /// once decided.
    start: Option<Vec<u8>>,
    /// Bytes of the incomplete unit.
    held: Vec<u8>,
    kind: Kind,
    /// The incomplete unit outgrew the limit; its bytes are streaming out.
    oversize: bool,
    /// No byte of the current line has been seen.
    line_start: bool,
    /// The last byte seen was a CR ending a line: an LF now is part of that
    /// end-of-line, not an empty line.
    after_cr: bool,
}

impl SseFramer {
    /// A framer for a new stream. Units (events, blocks, comment lines)
    /// longer than `max_event_bytes` pass through unparsed; the length of a
    /// unit counts everything up to the CR or LF that ends it.
    pub fn new(max_event_bytes: usize) -> Self {
        Self {
            max_event_bytes,
            start: Some(Vec::new()),
            held: Vec::new(),
            kind: Kind::Between,
            oversize: false,
            line_start: true,
            after_cr: false,
        }
    }

    /// Feeds the next chunk; returns every unit that is complete now (or,
    /// for an oversize unit, its bytes so far), in stream order.
    ///
    /// A unit ends at the end-of-line that completes it. When that is a CR
    /// and the chunk ends right after it, the unit goes out at once and an
    /// LF that starts the next chunk comes as a one-byte
    /// [`PassReason::NoEvent`] unit: waiting for that byte would hold a
    /// finished event until the server writes again.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Unit> {
        let mut out = Vec::new();
        let Some(mut start) = self.start.take() else {
            self.scan(chunk, &mut out);
            return out;
        };
        start.extend_from_slice(chunk);
        if start.len() < BOM.len() && BOM.starts_with(&start) {
            self.start = Some(start);
            return out;
        }
        match start.strip_prefix(BOM) {
            Some(rest) => {
                out.push(Unit::pass(BOM.to_vec(), PassReason::NoEvent));
                self.scan(rest, &mut out);
            }
            None => self.scan(&start, &mut out),
        }
        out
    }

    /// Ends the stream: releases whatever is held, unchanged, as
    /// [`PassReason::Truncated`] (§9.2.6: "Once the end of the file is
    /// reached, any pending data must be discarded" — a browser dispatches
    /// none of it). The framer is then ready for a new stream.
    pub fn finish(&mut self) -> Vec<Unit> {
        let mut held = self.start.take().unwrap_or_default();
        held.append(&mut self.held);
        *self = Self::new(self.max_event_bytes);
        if held.is_empty() {
            Vec::new()
        } else {
            vec![Unit::pass(held, PassReason::Truncated)]
        }
    }

    /// Bytes held back between calls (at most `max_event_bytes`, plus up to
    /// two bytes of a possible BOM at the stream's start).
    pub fn held_bytes(&self) -> usize {
        self.held.len() + self.start.as_ref().map_or(0, Vec::len)
    }

    /// Capacity of the hold buffer, for memory checks. Each unit takes the
    /// buffer with it when it goes out, so this reflects only the unit in
    /// progress: under twice `max_event_bytes` (vector growth doubles), plus
    /// the two bytes of a BOM still undecided.
    pub fn held_capacity(&self) -> usize {
        self.held.capacity() + self.start.as_ref().map_or(0, Vec::capacity)
    }

    fn scan(&mut self, chunk: &[u8], out: &mut Vec<Unit>) {
        // `seg..` of the chunk belongs to the unit in progress and is not
        // yet in `held`.
        let mut seg = 0;
        let mut i = 0;
        while let Some(&first) = chunk.get(i) {
            if mem::take(&mut self.after_cr) && first == LF {
                if self.kind == Kind::Between {
                    // The CR ended a unit at the end of the previous chunk.
                    out.push(Unit::pass(vec![LF], PassReason::NoEvent));
                    seg = i + 1;
                }
                i += 1;
                continue;
            }
            if self.kind == Kind::Between {
                self.kind = match first {
                    b':' => Kind::Comment,
                    CR | LF => Kind::Blank,
                    _ => Kind::Block,
                };
            }
            let rest = chunk.get(i..).unwrap_or_default();
            let Some(off) = rest.iter().position(|&b| is_eol(b)) else {
                // The line goes on in a later chunk.
                self.line_start = false;
                break;
            };
            let empty_line = self.line_start && off == 0;
            let eol = i + off;
            let mut end = eol + 1;
            if chunk.get(eol) == Some(&CR) {
                match chunk.get(end) {
                    Some(&LF) => end += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.line_start = true;
            i = end;
            // event = *( comment / field ) end-of-line: a block ends at its
            // first empty line; the lone lines end at their own.
            let complete = match self.kind {
                Kind::Comment | Kind::Blank => true,
                Kind::Block => empty_line,
                Kind::Between => false,
            };
            if complete {
                self.close(chunk.get(seg..end).unwrap_or_default(), out);
                seg = end;
            }
        }
        self.keep(chunk.get(seg..).unwrap_or_default(), out);
    }

    /// The unit in progress ends with `last`.
    fn close(&mut self, last: &[u8], out: &mut Vec<Unit>) {
        let mut bytes = mem::take(&mut self.held);
        bytes.extend_from_slice(last);
        let kind = mem::replace(&mut self.kind, Kind::Between);
        if mem::take(&mut self.oversize) {
            if !bytes.is_empty() {
                out.push(Unit::pass(bytes, PassReason::Continued));
            }
            return;
        }
        // The LF of a closing CRLF does not count: whether it arrived in
        // this chunk or the next must not change the verdict.
        let len = bytes.len() - usize::from(bytes.ends_with(b"\r\n"));
        let unit = if len > self.max_event_bytes {
            Unit::pass(bytes, PassReason::TooLarge)
        } else if kind == Kind::Block {
            match Event::parse(bytes) {
                Ok(event) => Unit::Event(event),
                Err(bytes) => Unit::pass(bytes, PassReason::NoEvent),
            }
        } else {
            Unit::pass(bytes, PassReason::NoEvent)
        };
        out.push(unit);
    }

    /// The chunk ended inside a unit: hold `tail`, or stream it out once the
    /// unit is past the limit. A unit past the limit before its end is past
    /// it at its end too, so `close` and this agree for any chunking.
    fn keep(&mut self, tail: &[u8], out: &mut Vec<Unit>) {
        if tail.is_empty() {
            return;
        }
        if self.oversize {
            out.push(Unit::pass(tail.to_vec(), PassReason::Continued));
        } else if self.held.len() + tail.len() > self.max_event_bytes {
            let mut bytes = mem::take(&mut self.held);
            bytes.extend_from_slice(tail);
            out.push(Unit::pass(bytes, PassReason::TooLarge));
            self.oversize = true;
        } else {
            self.held.extend_from_slice(tail);
        }
    }
}
