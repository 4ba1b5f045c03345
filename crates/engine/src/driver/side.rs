//! What the driver knows of one direction's body in the host.

/// Where a step is carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Site {
    /// A body callback: the host's buffer holds `size` bytes, the last
    /// `consumed` of them the chunk the core read.
    Body { size: usize, consumed: usize },
    /// The trailers callback: the body is writable only if paused.
    Trailers,
    /// A callout reply: likewise.
    Reply,
}

#[derive(Debug, Default)]
pub(super) struct Side {
    /// A body callback ran.
    pub(crate) started: bool,
    /// The body ended (its last chunk, or trailers).
    pub(crate) ended: bool,
    /// The last body callback paused: the host holds a buffered body,
    /// writable until the direction goes on.
    pub(crate) paused: bool,
    /// The trailers callback paused for a callout reply.
    pub(crate) trailers_waiting: bool,
    /// Bytes decided but not in the host yet: they go first at the next
    /// chance.
    pub(crate) backlog: Vec<u8>,
    /// A host call that moves bytes failed: the rest passes as it comes.
    pub(crate) refused: bool,
}

impl Side {
    /// Nothing of this direction is paused or waiting to go.
    pub(crate) fn idle(&self) -> bool {
        !self.paused && self.backlog.is_empty()
    }

    /// The stream stopped (a reset) before this body ended, with `held`
    /// bytes of it in the core or waiting here.
    pub(crate) fn cut_short(&self, held: usize) -> bool {
        self.started && !self.ended && (held > 0 || !self.backlog.is_empty())
    }
}
