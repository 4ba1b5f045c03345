//! The response side of a stream: the states its body goes through while
//! the core reads it ([`Reading`]: collected, rewritten event by event, or
//! waiting for a callout), the head's facts and what the stream's
//! response-level decisions wait for.

use super::collect::Collected;
use super::stream::SseState;
use crate::pipeline::Job;

/// A response body the core reads, in one of three states; each holds
/// what only it needs, so a stream never holds a collected body, an event
/// stream and a waiting job at once. From `Buffering` the body goes on
/// when its value closes, or waits; from `Waiting` it goes on when the
/// callout answers, or its queue fills; `Streaming` lasts to the end (its
/// events wait for their callouts inside it).
#[derive(Debug)]
pub(super) enum Reading {
    /// An `application/json` body, collected until its value closes.
    Buffering(Collected),
    /// An event stream, rewritten event by event as they complete (boxed:
    /// its framer and queue are ten times a collected body's size).
    Streaming(Box<SseState>),
    /// A JSON body whose value closed, waiting for its callout: the job,
    /// and the bytes that came after its value meanwhile.
    Waiting(Box<(Job, Vec<u8>)>),
}

#[derive(Debug, Default)]
pub(super) struct ResponseSide {
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
