//! The `clean` section: lossy transforms that strip what costs tokens and
//! carries little, and the lossless compact-JSON re-emission.

use serde::Deserialize;

use super::ConfigError;

/// Resolved `clean` settings for one block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanSettings {
    /// Convert text that is an HTML document or fragment to Markdown.
    pub html_to_markdown: bool,
    /// Replace base64 runs and `data:` URIs with `<stripped: N bytes>`.
    pub strip_base64: bool,
    /// Remove object members whose value is `null` (JSON blocks only).
    pub remove_nulls: bool,
    /// Shrink runs of spaces and blank lines outside fenced code blocks.
    pub collapse_whitespace: bool,
    /// Re-emit pretty-printed JSON compact when that saves enough.
    pub compact_json: bool,
    /// Read a text that is exactly a Python literal's `repr` as data,
    /// written as compact JSON (so only where `compact_json` is on too).
    pub python_literal: bool,
    /// Blocks shorter than this (bytes) are left alone by every transform.
    pub min_bytes: usize,
    /// Shortest base64 run (characters, padding excluded) that is stripped.
    pub base64_min_chars: usize,
    /// Cap on a block's final text in bytes, applied by
    /// [`crate::stage::clean::cap`]; 0 = none.
    pub max_text_bytes: usize,
}

impl Default for CleanSettings {
    fn default() -> Self {
        // Only the lossless transform is on by default: an agent copies
        // what it reads into edits, patches and searches, so by default no
        // character of content may change (README "What it promises").
        // The lossy ones are opt-in per server and per tool.
        Self {
            html_to_markdown: false,
            strip_base64: false,
            remove_nulls: false,
            collapse_whitespace: false,
            compact_json: true,
            // Lossless too, and it changes only what `str(data)` prints:
            // README "What it promises" argues the default.
            python_literal: true,
            min_bytes: 500,
            base64_min_chars: 256,
            max_text_bytes: 0,
        }
    }
}

impl CleanSettings {
    /// Every transform that changes content off (the others as default).
    pub(crate) fn lossless_only() -> Self {
        Self {
            html_to_markdown: false,
            strip_base64: false,
            remove_nulls: false,
            collapse_whitespace: false,
            ..Self::default()
        }
    }

    /// A text that is a Python literal is read as JSON: `python_literal`,
    /// and `compact_json`, which writes what it reads.
    pub fn reads_python(&self) -> bool {
        self.python_literal && self.compact_json
    }

    /// Every transform off: [`crate::stage::clean::clean`] returns without
    /// looking at the text. `python_literal` writes compact JSON, so it is
    /// off with `compact_json`.
    pub(crate) fn all_off(&self) -> bool {
        !(self.html_to_markdown
            || self.strip_base64
            || self.remove_nulls
            || self.collapse_whitespace
            || self.compact_json)
    }
}

/// One layer's `clean` settings as written; absent fields inherit.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CleanPatch {
    pub(crate) html_to_markdown: Option<bool>,
    pub(crate) strip_base64: Option<bool>,
    pub(crate) remove_nulls: Option<bool>,
    pub(crate) collapse_whitespace: Option<bool>,
    pub(crate) compact_json: Option<bool>,
    pub(crate) python_literal: Option<bool>,
    pub(crate) min_bytes: Option<u64>,
    pub(crate) base64_min_chars: Option<u64>,
    pub(crate) max_text_bytes: Option<u64>,
}

const GIB: u64 = 1 << 30;

impl CleanPatch {
    pub(crate) fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let field = |name: &str| format!("{path}.{name}");
        if let Some(v) = self.min_bytes.filter(|v| *v > GIB) {
            return Err(ConfigError::out_of_range(
                &field("min_bytes"),
                v,
                "0..=1073741824 (bytes)",
            ));
        }
        if let Some(v) = self.base64_min_chars.filter(|v| !(16..=GIB).contains(v)) {
            return Err(ConfigError::out_of_range(
                &field("base64_min_chars"),
                v,
                "16..=1073741824 (characters)",
            ));
        }
        if let Some(v) = self
            .max_text_bytes
            .filter(|v| *v != 0 && !(256..=GIB).contains(v))
        {
            return Err(ConfigError::out_of_range(
                &field("max_text_bytes"),
                v,
                "0 (no cap) or 256..=1073741824 (bytes)",
            ));
        }
        Ok(())
    }

    pub(crate) fn apply(&self, s: &mut CleanSettings) {
        let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        if let Some(v) = self.html_to_markdown {
            s.html_to_markdown = v;
        }
        if let Some(v) = self.strip_base64 {
            s.strip_base64 = v;
        }
        if let Some(v) = self.remove_nulls {
            s.remove_nulls = v;
        }
        if let Some(v) = self.collapse_whitespace {
            s.collapse_whitespace = v;
        }
        if let Some(v) = self.compact_json {
            s.compact_json = v;
        }
        if let Some(v) = self.python_literal {
            s.python_literal = v;
        }
        if let Some(v) = self.min_bytes {
            s.min_bytes = size(v);
        }
        if let Some(v) = self.base64_min_chars {
            s.base64_min_chars = size(v);
        }
        if let Some(v) = self.max_text_bytes {
            s.max_text_bytes = size(v);
        }
    }
}
