//! The `clean` section: lossy transforms that strip what costs tokens and
//! carries little, and the lossless compact-JSON re-emission.

use serde::Deserialize;

use super::ConfigError;
use crate::stage::clean::CleanSettings;

/// One layer's `clean` settings as written; absent fields inherit.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CleanPatch {
    pub html_to_markdown: Option<bool>,
    pub strip_base64: Option<bool>,
    pub remove_nulls: Option<bool>,
    pub collapse_whitespace: Option<bool>,
    pub compact_json: Option<bool>,
    pub min_bytes: Option<u64>,
    pub base64_min_chars: Option<u64>,
    pub max_text_bytes: Option<u64>,
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
