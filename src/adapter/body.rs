//! Body bytes the plugin keeps in its own memory while the core waits for a
//! complete body.
//!
//! Why not let Envoy buffer (return `Pause` from the body callback)? Envoy's
//! wasm filter appends each new chunk to its buffer *before* calling the
//! plugin, and checks the listener's `per_connection_buffer_limit_bytes`
//! while appending. A plugin that paused at `n` bytes cannot stop the next
//! chunk from landing on top: if `n + chunk` passes the limit, Envoy resets
//! the stream (headers already sent: the client gets a truncated 200) or
//! answers 500 (headers held). Seen with Envoy 1.40 on a 3 MB response once
//! chunks grew under load. So every chunk is copied here and Envoy's copy is
//! emptied: Envoy's buffer never holds more than the chunk in flight, and the
//! plugin's own memory is bounded by `max_body_bytes` plus one chunk.

/// The bytes of one body seen so far.
#[derive(Debug, Default)]
pub struct Collected {
    bytes: Vec<u8>,
    /// Every byte seen, kept or not.
    seen: usize,
}

impl Collected {
    /// Counts a chunk of `size` bytes; returns the body size so far.
    pub fn count(&mut self, size: usize) -> usize {
        self.seen = self.seen.saturating_add(size);
        self.seen
    }

    pub fn keep(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Everything kept, followed by `chunk`; leaves nothing kept.
    pub fn take_with(&mut self, chunk: &[u8]) -> Vec<u8> {
        let mut all = std::mem::take(&mut self.bytes);
        all.extend_from_slice(chunk);
        all
    }

    /// Forgets the kept bytes (the body is no longer wanted).
    pub fn drop_kept(&mut self) {
        self.bytes = Vec::new();
    }
}
