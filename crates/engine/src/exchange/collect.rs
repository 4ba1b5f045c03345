//! Collecting a JSON body as it arrives, up to where its value ends.

use crate::json::{EndScanner, Progress};

/// Body bytes the core keeps while it reads a JSON body, and where the
/// body's value ends. Envoy appends each chunk to its own buffer before
/// calling the plugin and resets the stream when that buffer passes
/// `per_connection_buffer_limit_bytes`; a paused body cannot stop the next
/// chunk landing on top. So the core takes every chunk out of Envoy's
/// buffer and keeps it here, bounded by the stream's limit (`max_body_bytes`,
/// more for a tool with a budget: `Exchange::response_limit`) plus one
/// chunk.
#[derive(Debug, Default)]
pub(super) struct Collected {
    pub(super) bytes: Vec<u8>,
    pub(super) seen: usize,
    /// The body's announced `content-length`: it ends after that many
    /// bytes, with no need to look at them. Without one (a chunked body,
    /// the only kind HTTP/1.1 ends with trailers) the scanner finds the
    /// end, at about the cost of a parse.
    length: Option<usize>,
    end: EndScanner,
}

/// How a chunk leaves a body being collected.
pub(super) enum Collecting {
    /// More to come.
    Open,
    /// The JSON value closed (or the stream ended): the body, and the bytes
    /// after its value in the chunk.
    Closed(Vec<u8>, Vec<u8>),
    /// Past the limit [`Collected::push`] was given.
    TooLarge,
    /// Not one JSON object or array.
    NotOneValue,
}

impl Collected {
    /// The body announced its length.
    pub(super) fn expect(&mut self, length: Option<usize>) {
        self.length = length;
    }

    /// The length the body announced, if it did.
    pub(super) fn announced(&self) -> Option<usize> {
        self.length
    }

    /// Adds a chunk; on `Open` the chunk is kept.
    pub(super) fn push(&mut self, chunk: &[u8], end_of_stream: bool, max: usize) -> Collecting {
        self.seen = self.seen.saturating_add(chunk.len());
        if let Some(length) = self.length {
            if self.bytes.capacity() == 0 && length <= max {
                // Sized once for the body it announced (growing by doubling
                // would leave up to twice that in the VM's memory, which
                // never shrinks).
                self.bytes.reserve_exact(length);
            }
            return match () {
                _ if self.seen > max => Collecting::TooLarge,
                _ if self.seen >= length || end_of_stream => {
                    Collecting::Closed(self.take_with(chunk), Vec::new())
                }
                _ => {
                    self.bytes.extend_from_slice(chunk);
                    Collecting::Open
                }
            };
        }
        if end_of_stream && self.seen == chunk.len() {
            // The whole body in one chunk: it ends with the stream, and the
            // parse that reads it refuses what is not one value. No scan for
            // where the value ends (a request body, read for every call).
            return if self.seen > max {
                Collecting::TooLarge
            } else {
                Collecting::Closed(chunk.to_vec(), Vec::new())
            };
        }
        let (progress, closed_at) = self.end.feed(chunk);
        match (progress, closed_at) {
            (Progress::Invalid, _) => Collecting::NotOneValue,
            // Closed within the limit: the value may end before the chunk
            // that passes it.
            (Progress::Closed, Some(at)) if self.seen - (chunk.len() - at) <= max => {
                let (value, rest) = chunk.split_at(at);
                let mut body = std::mem::take(&mut self.bytes);
                body.extend_from_slice(value);
                Collecting::Closed(fit(body), rest.to_vec())
            }
            _ if self.seen > max => Collecting::TooLarge,
            (Progress::Open, _) if end_of_stream => {
                // Ended inside the value: the parse will refuse it.
                Collecting::Closed(self.take_with(chunk), Vec::new())
            }
            _ => {
                self.bytes.extend_from_slice(chunk);
                Collecting::Open
            }
        }
    }

    /// Everything kept, then `chunk`.
    pub(super) fn take_with(&mut self, chunk: &[u8]) -> Vec<u8> {
        let mut all = std::mem::take(&mut self.bytes);
        all.extend_from_slice(chunk);
        fit(all)
    }
}

/// A chunked body grew by doubling: its slack goes back before the stages
/// copy from it.
fn fit(mut body: Vec<u8>) -> Vec<u8> {
    if body.capacity() - body.len() > body.len() / 8 {
        body.shrink_to_fit();
    }
    body
}
