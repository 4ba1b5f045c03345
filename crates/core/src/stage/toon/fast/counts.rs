//! What a text holds besides the tokens of its compact form, counted by
//! the parser ([`super::parse`]) and the row reader ([`super::row`]) as
//! they read it.

/// What a text holds besides the tokens its compact form keeps, counted
/// as it is read: the whitespace between tokens (RFC 8259 §2), which
/// compaction takes out, and the quotes and backslashes, which the compact
/// text's JSON string literal escapes (a valid text has no other byte a
/// literal escapes once its layout is gone, §7). A text read whole gives
/// its compact form's sizes without a pass of their own
/// ([`Counts::sizes`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Counts {
    pub(crate) spaces: usize,
    pub(crate) quoted: usize,
    /// A `\u` escape of a character other than a control was read: how
    /// compaction spells one is its own business, so the sizes are not
    /// known.
    pub(crate) respelled: bool,
}

impl Counts {
    pub(super) fn add(&mut self, other: Counts) {
        self.spaces += other.spaces;
        self.quoted += other.quoted;
        self.respelled |= other.respelled;
    }

    /// The compact form's sizes, for the whole of `text` read.
    pub(super) fn sizes(&self, text: &str) -> Option<super::Sizes> {
        if self.respelled {
            return None;
        }
        let len = text.len().checked_sub(self.spaces)?;
        Some(super::Sizes {
            len,
            wire: 2 + len + self.quoted,
        })
    }
}
