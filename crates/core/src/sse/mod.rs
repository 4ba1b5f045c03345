//! Server-sent events framing: cuts a `text/event-stream` body into units
//! (complete events, and bytes that are no event) as its chunks arrive, so a
//! caller can rewrite one event's `data` and forward everything else as it
//! came. No proxy-wasm here: the stream state machine feeds chunks in and
//! sends the units' bytes on.
//!
//! The rules are WHATWG HTML, "Server-sent events", §9.2.5 "Parsing an event
//! stream" (the grammar) and §9.2.6 "Interpreting an event stream":
//!
//! ```text
//! stream        = [ bom ] *event
//! event         = *( comment / field ) end-of-line
//! comment       = colon *any-char end-of-line
//! field         = 1*name-char [ colon [ space ] *any-char ] end-of-line
//! end-of-line   = ( cr lf / cr / lf )
//!
//! lf            = %x000A ; U+000A LINE FEED (LF)
//! cr            = %x000D ; U+000D CARRIAGE RETURN (CR)
//! space         = %x0020 ; U+0020 SPACE
//! colon         = %x003A ; U+003A COLON (:)
//! bom           = %xFEFF ; U+FEFF BYTE ORDER MARK
//! name-char     = %x0000-0009 / %x000B-000C / %x000E-0039 / %x003B-10FFFF
//! any-char      = %x0000-0009 / %x000B-000C / %x000E-10FFFF
//! ```
//!
//! Everything is done on bytes. The stream is UTF-8, and in UTF-8 the bytes
//! of CR, LF, `:` and space never occur inside a multi-byte character, so
//! cutting lines and fields on bytes is exactly the spec's cut on characters,
//! wherever a chunk splits a character. Text is decoded only from a complete
//! event's data.
//!
//! Units, in stream order; their bytes concatenated are the input exactly:
//! - [`Unit::Event`]: a block ended by a blank line with at least one `data`
//!   field, i.e. one the browser would dispatch. Released as soon as its
//!   blank line is seen.
//! - [`Unit::Passthrough`]: bytes to forward unchanged, with a
//!   [`PassReason`]: a block that dispatches nothing, a comment line before
//!   any field (so keep-alives flow while no event is pending), the BOM, a
//!   unit larger than the limit (streamed out in pieces), or whatever was
//!   held when the stream ended.
//!
//! A caller's loop, as the stream state machine would run it per body
//! chunk (what it sends for a chunk may be empty, or longer than the chunk):
//!
//! ```
//! use mcp_toon_core::sse::{SseFramer, Unit};
//!
//! let chunks: [&[u8]; 2] = [
//!     b"data: {\"jsonrpc\":\"2.0\",\"id\":1,",
//!     b"\"result\":{}}\r\n\r\n: ping\r\n\r\ndata: {\"par",
//! ];
//! let mut framer = SseFramer::new(1 << 20);
//! let mut sent = Vec::new();
//! for chunk in chunks {
//!     let mut out = Vec::new();
//!     for unit in framer.push(chunk) {
//!         match unit {
//!             // The pipeline decides; here every JSON event "changes".
//!             Unit::Event(e) if e.looks_like_json() => out.extend(e.with_data("{}")),
//!             other => out.extend(other.into_bytes()),
//!         }
//!     }
//!     sent.push(out);
//! }
//! // At end of stream whatever is held goes out unchanged.
//! let tail: Vec<u8> = framer.finish().into_iter().flat_map(Unit::into_bytes).collect();
//!
//! assert!(sent[0].is_empty()); // the first event is not complete yet
//! assert_eq!(sent[1], b"data: {}\r\n\r\n: ping\r\n\r\n");
//! assert_eq!(tail, b"data: {\"par");
//! ```

mod event;
mod framer;
mod lines;
mod reframe;

pub use event::Event;
pub use framer::SseFramer;

/// A piece of the stream, complete as far as framing goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unit {
    /// A complete event with data; [`Event::into_raw`] gives its bytes.
    Event(Event),
    /// Bytes to forward as they are.
    Passthrough { bytes: Vec<u8>, reason: PassReason },
}

impl Unit {
    /// The unit's bytes as received.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Unit::Event(e) => e.raw(),
            Unit::Passthrough { bytes, .. } => bytes,
        }
    }

    /// The unit's bytes as received, without copying.
    pub fn into_bytes(self) -> Vec<u8> {
        match self {
            Unit::Event(e) => e.into_raw(),
            Unit::Passthrough { bytes, .. } => bytes,
        }
    }

    fn pass(bytes: Vec<u8>, reason: PassReason) -> Self {
        Unit::Passthrough { bytes, reason }
    }
}

/// Why bytes are released as passthrough. Only [`PassReason::TooLarge`] and
/// [`PassReason::Truncated`] are worth counting as a decision; the others
/// are ordinary stream furniture or the rest of a unit already counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PassReason {
    /// Not an event: a block without `data` (comments, keep-alives, a lone
    /// `id:` or `retry:`, a blank line), a comment line before any field,
    /// the leading BOM, or the LF of a CRLF whose CR ended the previous unit
    /// at the end of a chunk.
    NoEvent,
    /// The first bytes of a unit longer than `max_event_bytes`: the unit
    /// passes unmodified. One per oversize unit, so count this.
    TooLarge,
    /// Later bytes of the same oversize unit, streamed out as they arrive so
    /// that memory stays bounded.
    Continued,
    /// What was held when the stream ended inside a unit (see
    /// [`SseFramer::finish`]); per §9.2.6 such pending data is never
    /// dispatched.
    Truncated,
}

impl PassReason {}

#[cfg(test)]
mod tests;
