//! The clean stage: lossy rewrites that strip what costs tokens and carries
//! little (markup, binary blobs, nulls, runs of whitespace), and the lossless
//! compact-JSON re-emission. Pure functions of a block's text and its
//! resolved [`CleanSettings`]; the pipeline decides where they run.
//!
//! Order for one text block (the "MCP Payload Optimization" order, with
//! compact JSON added last):
//!
//! 1. HTML → Markdown, 2. strip base64, 3. collapse whitespace — on the whole
//!    text when it is not JSON, on every string value (never a key) when it
//!    is;
//! 4. remove nulls — JSON only;
//! 5. compact JSON — JSON only, lossless; a `\uXXXX` escape of a printable
//!    character JSON does not require escaped is written as the character.
//!
//! JSON blocks go through one pass over the text (`rewrite.rs`, no
//! `serde_json::Value`): every token no transform replaces keeps its exact
//! bytes (key order, duplicate keys, number spellings, escapes), and the
//! output is compact. A block steps 1–4 changed is sent compact; a block
//! they left alone is compacted whenever that makes it smaller (lossless, so
//! no threshold: TOON, which competes with the compact text afterwards, has
//! its own). A block nothing changed stays byte-identical.
//!
//! `min_bytes` gates the lossy transforms only; compaction applies to a
//! JSON block of any size.
//!
//! Pipeline use, per `content[]` text block:
//! ```text
//! let cleaned = clean(&text, &policy.clean);
//! let text = cleaned.text_or(&text);          // then trim, then TOON
//! // record cleaned.applied (and cleaned.skipped) in the decision record
//! // last: cap(final_text, policy.clean.max_text_bytes, framing) — see cap
//! ```
//! The size cap ([`cap`]) is not part of [`clean`]: the pipeline applies it
//! last, after TOON, to the text it is about to send.

mod base64;
mod cap;
pub mod compact;
mod html;
pub(crate) mod rewrite;
mod whitespace;

#[cfg(test)]
mod tests;

pub use crate::config::CleanSettings;
pub(crate) use cap::split as split_framed;
pub use cap::{can_hold_first_row, cap, Capped, TextKind};

use serde::de::IgnoredAny;

use crate::marker;
use crate::outcome::Reason;
use crate::stage::literal_len;

/// One transform of the clean stage (the cap included, which the pipeline
/// applies last).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transform {
    /// A Python literal read as data, written as compact JSON (the
    /// pipeline's, before the others: `crate::json::python`).
    PythonLiteral,
    HtmlToMarkdown,
    StripBase64,
    CollapseWhitespace,
    RemoveNulls,
    CompactJson,
    Cap,
}

impl Transform {
    /// Every transform, in the order they run.
    pub(crate) const ALL: &'static [Transform] = &[
        Transform::PythonLiteral,
        Transform::HtmlToMarkdown,
        Transform::StripBase64,
        Transform::CollapseWhitespace,
        Transform::RemoveNulls,
        Transform::CompactJson,
        Transform::Cap,
    ];

    /// Snake-case name for metrics, logs and the decision record; the same
    /// as the configuration field that turns it on.
    pub fn name(self) -> &'static str {
        match self {
            Transform::PythonLiteral => "python_literal",
            Transform::HtmlToMarkdown => "html_to_markdown",
            Transform::StripBase64 => "strip_base64",
            Transform::CollapseWhitespace => "collapse_whitespace",
            Transform::RemoveNulls => "remove_nulls",
            Transform::CompactJson => "compact_json",
            Transform::Cap => "max_text_bytes",
        }
    }

    /// Its counter, `mcp_toon_clean_<name>`.
    pub(crate) fn metric(self) -> &'static str {
        match self {
            Transform::PythonLiteral => "mcp_toon_clean_python_literal",
            Transform::HtmlToMarkdown => "mcp_toon_clean_html_to_markdown",
            Transform::StripBase64 => "mcp_toon_clean_strip_base64",
            Transform::CollapseWhitespace => "mcp_toon_clean_collapse_whitespace",
            Transform::RemoveNulls => "mcp_toon_clean_remove_nulls",
            Transform::CompactJson => "mcp_toon_clean_compact_json",
            Transform::Cap => "mcp_toon_clean_max_text_bytes",
        }
    }

    /// Whether the output decodes back to exactly the input value. Only
    /// compact JSON and a Python literal read as JSON are; the others drop
    /// something by design.
    pub fn lossless(self) -> bool {
        matches!(self, Transform::CompactJson | Transform::PythonLiteral)
    }
}

/// A transform that changed a block, with the block's size in bytes before
/// and after it. The records of one block chain: each `bytes_before` is the
/// previous record's `bytes_after`, the first is the input's length and the
/// last is the output's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    pub transform: Transform,
    pub bytes_before: usize,
    pub bytes_after: usize,
}

/// What [`clean`] did to one block.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cleaned {
    /// The new text; `None` when the block stays byte-identical.
    pub text: Option<String>,
    /// The transforms that changed the block, in the order they ran.
    pub applied: Vec<Applied>,
    /// Why the block was not looked at (`BelowMinBytes`, `AlreadyEncoded`),
    /// or why it was left as it came although a transform would have
    /// changed it (`HtmlBudget`); `None` when every enabled transform
    /// looked at it.
    pub skipped: Option<Reason>,
}

impl Cleaned {
    fn skipped(reason: Reason) -> Self {
        Self {
            skipped: Some(reason),
            ..Self::default()
        }
    }

    /// The text to pass on: the new one, or the input when nothing changed.
    pub fn text_or<'a>(&'a self, input: &'a str) -> &'a str {
        self.text.as_deref().unwrap_or(input)
    }
}

/// Cleans one text block.
pub fn clean(text: &str, s: &CleanSettings) -> Cleaned {
    clean_known(text, s, None)
}

/// What the scan that decoded a text item found on the way
/// ([`crate::mcp::Item::take_text`]), read as JSON: whitespace between its
/// tokens, and an escape in a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    pub layout: bool,
    pub escapes: bool,
}

/// [`clean`], given what the scan knows of `text` already.
pub fn clean_known(text: &str, s: &CleanSettings, known: Option<Known>) -> Cleaned {
    if s.all_off() {
        return Cleaned::default();
    }
    // An encoded block is TOON, whose indentation and spacing are data.
    if marker::is_encoded(text) {
        return Cleaned::skipped(Reason::AlreadyEncoded);
    }
    // Below `min_bytes` only the lossless compaction may run.
    let small;
    let s = if text.len() < s.min_bytes {
        if !s.compact_json {
            return Cleaned::skipped(Reason::BelowMinBytes);
        }
        small = CleanSettings {
            compact_json: true,
            ..CleanSettings::lossless_only()
        };
        &small
    } else {
        s
    };
    // Only compaction can change the text: with no whitespace between its
    // tokens and no escape it writes as a character, it is compact
    // already, and neither walk below would find anything (issue 14: skip
    // walks whose transforms are off).
    let layout = || known.map_or_else(|| compact::has_layout(text), |k| k.layout);
    let escapes = || known.is_none_or(|k| k.escapes) && compact::has_character_escape(text);
    if string_transforms(s).next().is_none() && !s.remove_nulls && !layout() && !escapes() {
        return Cleaned::default();
    }
    if looks_like_json(text) && serde_json::from_str::<IgnoredAny>(text).is_ok() {
        clean_json(text, s)
    } else {
        clean_text(text, s)
    }
}

/// Only a text that opens like a JSON object, array or string is parsed;
/// prose fails fast either way, but a number or `true` has nothing to clean.
fn looks_like_json(text: &str) -> bool {
    matches!(
        text.trim_start_matches([' ', '\t', '\n', '\r'])
            .bytes()
            .next(),
        Some(b'{' | b'[' | b'"')
    )
}

/// One string transform, as applied to a whole text or one string value.
/// `key` is the object key the string belongs to, if any. `Err` when the
/// transform would pass its work budget: the block then stays as it is.
fn string_transform(
    t: Transform,
    s: &CleanSettings,
    text: &str,
    key: Option<(&str, usize)>,
    handle: &mut HandleKey,
) -> Result<Option<String>, Reason> {
    Ok(match t {
        Transform::HtmlToMarkdown => match html::to_markdown(text) {
            html::Converted::Markdown(markdown) => Some(markdown),
            html::Converted::Unchanged => None,
            html::Converted::OverBudget => return Err(Reason::HtmlBudget),
        },
        Transform::StripBase64 => {
            if key.is_some_and(|(k, at)| handle.is_handle(k, at)) {
                None
            } else {
                base64::strip(text, s.base64_min_chars)
            }
        }
        Transform::CollapseWhitespace => whitespace::collapse(text),
        _ => None,
    })
}

/// Whether a key names a handle, remembered for the last key asked about
/// (by where its literal starts): the strings of one array share their
/// member's key, and asking again for each of them would cost the key's
/// length each time.
#[derive(Default)]
struct HandleKey {
    last: Option<(usize, bool)>,
}

impl HandleKey {
    fn is_handle(&mut self, key: &str, at: usize) -> bool {
        match self.last {
            Some((seen, answer)) if seen == at => answer,
            _ => {
                let answer = base64::is_handle_key(key);
                self.last = Some((at, answer));
                answer
            }
        }
    }
}

/// The string transforms that are on, in order.
fn string_transforms(s: &CleanSettings) -> impl Iterator<Item = Transform> + '_ {
    [
        (s.html_to_markdown, Transform::HtmlToMarkdown),
        (s.strip_base64, Transform::StripBase64),
        (s.collapse_whitespace, Transform::CollapseWhitespace),
    ]
    .into_iter()
    .filter_map(|(on, t)| on.then_some(t))
}

fn clean_text(text: &str, s: &CleanSettings) -> Cleaned {
    let mut current: Option<String> = None;
    let mut applied = Vec::new();
    let mut handle = HandleKey::default();
    for t in string_transforms(s) {
        let input = current.as_deref().unwrap_or(text);
        let next = match string_transform(t, s, input, None, &mut handle) {
            Ok(next) => next,
            Err(reason) => return Cleaned::skipped(reason),
        };
        if let Some(next) = next {
            // A transform is kept only when it made the block smaller.
            if next.len() < input.len() {
                applied.push(Applied {
                    transform: t,
                    bytes_before: input.len(),
                    bytes_after: next.len(),
                });
                current = Some(next);
            }
        }
    }
    Cleaned {
        text: current,
        applied,
        skipped: None,
    }
}

/// The JSON path: one [`rewrite`] pass. Sizes in the records are those of
/// the block text: a string's share of it is its literal, so a changed
/// string moves the block by the difference of its literal lengths, a
/// removed null member by what it took in the compact text, and what is left
/// of the difference between input and output is the whitespace compaction
/// removed.
fn clean_json(text: &str, s: &CleanSettings) -> Cleaned {
    let transforms: Vec<Transform> = string_transforms(s).collect();
    let mut savings = vec![0usize; transforms.len()];
    let mut changed = vec![false; transforms.len()];
    let mut handle = HandleKey::default();
    let mut over_budget: Option<Reason> = None;
    let pass = rewrite::rewrite(text, s.remove_nulls, &mut |string| {
        if over_budget.is_some() {
            return None;
        }
        let mut current: Option<String> = None;
        let mut current_len = string.literal_len;
        for (k, &t) in transforms.iter().enumerate() {
            let input = current.as_deref().unwrap_or(string.value);
            let new =
                match string_transform(t, s, input, string.key.zip(string.key_at), &mut handle) {
                    Ok(Some(new)) => new,
                    Ok(None) => continue,
                    Err(reason) => {
                        over_budget = Some(reason);
                        return None;
                    }
                };
            let new_len = literal_len(&new);
            if new_len < current_len {
                if let (Some(total), Some(flag)) = (savings.get_mut(k), changed.get_mut(k)) {
                    *total += current_len - new_len;
                    *flag = true;
                }
                current_len = new_len;
                current = Some(new);
            }
        }
        current
    });
    if let Some(reason) = over_budget {
        return Cleaned::skipped(reason);
    }
    let Some(pass) = pass else {
        return Cleaned::default();
    };
    let mut applied = Vec::new();
    let mut size = text.len();
    let mut record = |transform: Transform, saved: usize| {
        let after = size.saturating_sub(saved);
        applied.push(Applied {
            transform,
            bytes_before: size,
            bytes_after: after,
        });
        size = after;
    };
    for ((&t, &saved), &did) in transforms.iter().zip(&savings).zip(&changed) {
        if did {
            record(t, saved);
        }
    }
    if pass.nulls_removed > 0 {
        record(Transform::RemoveNulls, pass.nulls_saved);
    }
    // Compaction writes escaped characters as themselves (compact.rs).
    let out = if s.compact_json {
        compact::write_characters(pass.text)
    } else {
        pass.text
    };
    if applied.is_empty() {
        // Only the layout would change: that is compaction, on its own terms.
        if !(s.compact_json && compact::accept(text, &out)) {
            return Cleaned::default();
        }
    } else if out.len() > size {
        // Not expected (the sizes above are exact); keep the chain closed.
        if let Some(last) = applied.last_mut() {
            last.bytes_after = out.len();
        }
        size = out.len();
    }
    // A changed block is written compact whether or not `compact_json` is
    // on: keeping the source layout around rewritten values is not worth
    // its complexity, and compaction is lossless.
    if out.len() < size {
        applied.push(Applied {
            transform: Transform::CompactJson,
            bytes_before: size,
            bytes_after: out.len(),
        });
    }
    Cleaned {
        text: Some(out),
        applied,
        skipped: None,
    }
}
