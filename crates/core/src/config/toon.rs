//! The `toon` section: when a text block is re-encoded as TOON.

use std::sync::Arc;

use serde::Deserialize;

use super::ConfigError;
pub use crate::marker::{Header, MARKER_PREFIX};

const DEFAULT_MARKER: &str = "[mcp-toon/v1] TOON-encoded JSON (toonformat.dev); decode to JSON before reuse. Tool arguments must still be sent as JSON.";

/// `toon.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Byte-identical passthrough.
    Off,
    /// Encode tabular blocks whose complete emission is measurably smaller.
    Adaptive,
    /// Encode every JSON-parseable block whatever the size; for measurement.
    Always,
}

impl Mode {}

/// One layer's `toon` settings as written; absent fields inherit.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ToonPatch {
    pub(crate) mode: Option<Mode>,
    pub(crate) min_savings_pct: Option<u64>,
    pub(crate) min_bytes: Option<u64>,
    pub(crate) min_rows: Option<u64>,
    pub(crate) key_presence_pct: Option<u64>,
    pub(crate) header: Option<Header>,
    pub(crate) marker: Option<String>,
    pub(crate) verify: Option<bool>,
}

/// Resolved `toon` settings for one block.
#[derive(Debug, Clone, PartialEq)]
pub struct ToonSettings {
    pub mode: Mode,
    pub min_savings_pct: u64,
    pub min_bytes: usize,
    pub min_rows: usize,
    pub key_presence_pct: u64,
    pub header: Header,
    pub marker: Arc<str>,
    pub verify: bool,
}

impl Default for ToonSettings {
    fn default() -> Self {
        Self {
            mode: Mode::Adaptive,
            min_savings_pct: 15,
            min_bytes: 500,
            min_rows: 4,
            key_presence_pct: 90,
            header: Header::Marker,
            marker: Arc::from(DEFAULT_MARKER),
            verify: true,
        }
    }
}

impl ToonPatch {
    pub(crate) fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let field = |name: &str| format!("{path}.{name}");
        if let Some(v) = self.min_savings_pct {
            if !(1..=90).contains(&v) {
                return Err(ConfigError::out_of_range(
                    &field("min_savings_pct"),
                    v,
                    "1..=90 (percent)",
                ));
            }
        }
        if let Some(v) = self.min_bytes {
            if v > 1 << 30 {
                return Err(ConfigError::out_of_range(
                    &field("min_bytes"),
                    v,
                    "0..=1073741824 (bytes)",
                ));
            }
        }
        if let Some(v) = self.min_rows {
            if !(1..=1_000_000).contains(&v) {
                return Err(ConfigError::out_of_range(
                    &field("min_rows"),
                    v,
                    "1..=1000000",
                ));
            }
        }
        if let Some(v) = self.key_presence_pct {
            if !(1..=100).contains(&v) {
                return Err(ConfigError::out_of_range(
                    &field("key_presence_pct"),
                    v,
                    "1..=100 (percent)",
                ));
            }
        }
        if let Some(m) = &self.marker {
            let one_line = m.bytes().all(|b| (0x20..0x7f).contains(&b));
            if !m.starts_with(MARKER_PREFIX) || !one_line || m.len() > 512 {
                return Err(ConfigError::new(
                    field("marker"),
                    format!("must be one line of printable ASCII (at most 512 bytes) starting with `{MARKER_PREFIX}`"),
                ));
            }
        }
        Ok(())
    }
}

impl ToonSettings {
    pub(crate) fn apply(&mut self, p: &ToonPatch) {
        if let Some(v) = p.mode {
            self.mode = v;
        }
        if let Some(v) = p.min_savings_pct {
            self.min_savings_pct = v;
        }
        if let Some(v) = p.min_bytes {
            self.min_bytes = usize::try_from(v).unwrap_or(usize::MAX);
        }
        if let Some(v) = p.min_rows {
            self.min_rows = usize::try_from(v).unwrap_or(usize::MAX);
        }
        if let Some(v) = p.key_presence_pct {
            self.key_presence_pct = v;
        }
        if let Some(v) = p.header {
            self.header = v;
        }
        if let Some(v) = &p.marker {
            self.marker = Arc::from(v.as_str());
        }
        if let Some(v) = p.verify {
            self.verify = v;
        }
    }
}
