//! A table key's literal, compared by words: the parser's cursor, the
//! streamed table and the row reader confirm each cell's key with it.

/// A table key's literal `"key"` (no escape in it), held as two
/// little-endian words and their masks when it fits in sixteen bytes: a
/// row's key is then confirmed by two word comparisons rather than a call
/// that compares bytes, once per cell of every row.
pub(super) struct KeyLiteral<'a> {
    pub(super) key: &'a str,
    words: Option<([u64; 2], [u64; 2])>,
}

impl<'a> KeyLiteral<'a> {
    pub(super) fn new(key: &'a str) -> Self {
        let len = key.len() + 2;
        let words = (len <= 16).then(|| {
            let mut bytes = [0u8; 16];
            for (slot, b) in bytes.iter_mut().zip(
                std::iter::once(b'"')
                    .chain(key.bytes())
                    .chain(std::iter::once(b'"')),
            ) {
                *slot = b;
            }
            let (lo, hi) = bytes.split_at(8);
            // The low `n` bytes of a word.
            let mask = |n: usize| match n {
                0 => 0,
                8.. => u64::MAX,
                n => (1u64 << (8 * n)) - 1,
            };
            (
                [le_word(lo), le_word(hi)],
                [mask(len.min(8)), mask(len.saturating_sub(8))],
            )
        });
        Self { key, words }
    }
}

impl KeyLiteral<'_> {
    /// Bytes of the key's literal, quotes included.
    pub(super) fn len(&self) -> usize {
        self.key.len() + 2
    }

    /// Where the text goes on after this key's literal, when `b` holds it
    /// at `at`.
    pub(super) fn after(&self, b: &[u8], at: usize) -> Option<usize> {
        let end = at + self.key.len() + 2;
        let same = match (&self.words, b.get(at..at + 16)) {
            (Some((words, masks)), Some(next)) => {
                let (lo, hi) = next.split_at(8);
                le_word(lo) & masks[0] == words[0] && le_word(hi) & masks[1] == words[1]
            }
            _ => {
                b.get(at) == Some(&b'"')
                    && b.get(at + 1..end - 1) == Some(self.key.as_bytes())
                    && b.get(end - 1) == Some(&b'"')
            }
        };
        same.then_some(end)
    }
}

/// Eight bytes as a little-endian word (0 for any other length).
fn le_word(b: &[u8]) -> u64 {
    <[u8; 8]>::try_from(b).map_or(0, u64::from_le_bytes)
}
