//! Byte-span replacements on a body: everything outside the spans goes out
//! exactly as the server sent it.

use std::ops::Range;

use serde_json::value::RawValue;

/// Replacements on one base text, applied in order of position.
#[derive(Debug, Default)]
pub struct Edits {
    spans: Vec<(Range<usize>, String)>,
}

impl Edits {
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The span of `part` inside `base`, when `part` borrows from `base`
    /// (every `RawValue` parsed from `base` does).
    pub fn span_of(base: &str, part: &RawValue) -> Option<Range<usize>> {
        Self::span_of_str(base, part.get())
    }

    /// The span of `part` inside `base`, when `part` is a slice of it.
    pub fn span_of_str(base: &str, part: &str) -> Option<Range<usize>> {
        let start = (part.as_ptr() as usize).checked_sub(base.as_ptr() as usize)?;
        let end = start.checked_add(part.len())?;
        (end <= base.len()).then_some(start..end)
    }

    /// Replaces `part` (which must borrow from the base) with `with`.
    pub fn replace(&mut self, base: &str, part: &RawValue, with: String) -> bool {
        match Self::span_of(base, part) {
            Some(span) => {
                self.spans.push((span, with));
                true
            }
            None => false,
        }
    }

    /// Replaces a span found earlier with [`Edits::span_of`].
    pub fn replace_span(&mut self, span: Range<usize>, with: String) {
        self.spans.push((span, with));
    }

    /// Inserts `text` at byte offset `at`.
    pub fn insert(&mut self, at: usize, text: String) {
        self.spans.push((at..at, text));
    }

    /// The base with every replacement made; `None` if spans overlap or fall
    /// outside the base (a bug elsewhere; the caller then passes through).
    pub fn apply(mut self, base: &str) -> Option<String> {
        self.spans.sort_by_key(|(r, _)| (r.start, r.end));
        // Sized exactly: the base less what is replaced, plus what replaces
        // it (overlapping spans are refused below).
        let size = self.spans.iter().fold(base.len(), |n, (span, text)| {
            n.saturating_sub(span.len()).saturating_add(text.len())
        });
        let mut out = String::with_capacity(size);
        let mut at = 0;
        for (span, text) in &self.spans {
            if span.start < at {
                return None;
            }
            out.push_str(base.get(at..span.start)?);
            out.push_str(text);
            at = span.end;
        }
        out.push_str(base.get(at..)?);
        Some(out)
    }
}
