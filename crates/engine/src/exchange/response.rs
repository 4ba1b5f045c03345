//! The response side of a stream: its body while it is collected or its
//! events while they are rewritten, the job waiting for a callout, the
//! head's facts and what the stream's response-level decisions wait for.

use super::collect::Collected;
use super::stream::SseState;
use crate::pipeline::Job;

#[derive(Debug, Default)]
pub(super) struct ResponseSide {
    /// The JSON body while it is collected.
    pub(super) body: Collected,
    /// The event stream's state while it is rewritten.
    pub(super) stream: Option<SseState>,
    /// A JSON body waiting for its callout, and the bytes that came after
    /// its value meanwhile.
    pub(super) job: Option<(Job, Vec<u8>)>,
    /// The headers are paused until the body is done.
    pub(super) hold_headers: bool,
    /// Decided before the body: the headers carry the summary (with
    /// `hold_headers`, as a read response's would).
    pub(super) summary_at_headers: bool,
    /// The `content-length`, when the head announced one.
    pub(super) length: Option<usize>,
    /// Most bytes held ([`super::Exchange::response_limit`]).
    pub(super) limit: usize,
    /// Body bytes seen, read or not: what a response-level decision
    /// reports as its `bytes_before`.
    pub(super) bytes: usize,
    /// The size, once known: announced by the `content-length`, or counted
    /// to the end.
    pub(super) size: Option<usize>,
    /// Decisions about the whole response that take its size once it ends
    /// (their place counted from the stream's first decision, so a long
    /// stream's forgotten ones do not shift it).
    pub(super) measured: Vec<usize>,
}
