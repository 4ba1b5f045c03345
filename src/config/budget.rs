//! `budget` (per layer) and `paging` (a top-level section whose `enabled`
//! and `reissue` layers may override): how much of a tool result an agent
//! reads at once, and how it gets the rest.

use serde::Deserialize;

use super::ConfigError;

/// One layer's `budget` as written: tokens or bytes, one of them.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BudgetPatch {
    pub tokens: Option<u64>,
    pub bytes: Option<u64>,
}

/// The resolved budget of one tool's results: the text items an agent reads
/// (the notice included) stay within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Budget {
    /// Estimated `o200k_base` tokens (see `stage::budget::estimate`).
    Tokens(usize),
    /// UTF-8 bytes of text.
    Bytes(usize),
}

impl Budget {
    /// A short spelling for records and digests: `20000 tokens`.
    pub fn describe(self) -> String {
        match self {
            Budget::Tokens(n) => format!("{n} tokens"),
            Budget::Bytes(n) => format!("{n} bytes"),
        }
    }
}

const MIN_TOKENS: u64 = 200;
const MAX_TOKENS: u64 = 10_000_000;
const MIN_BYTES: u64 = 1024;
const MAX_BYTES: u64 = 1 << 30;

impl BudgetPatch {
    pub(crate) fn validate(&self, path: &str) -> Result<(), ConfigError> {
        if self.tokens.is_some() && self.bytes.is_some() {
            return Err(ConfigError::new(
                path,
                "set one of `tokens` and `bytes`, not both",
            ));
        }
        if let Some(v) = self
            .tokens
            .filter(|v| *v != 0 && !(MIN_TOKENS..=MAX_TOKENS).contains(v))
        {
            return Err(ConfigError::out_of_range(
                &format!("{path}.tokens"),
                v,
                "0 (no budget) or 200..=10000000 (tokens)",
            ));
        }
        if let Some(v) = self
            .bytes
            .filter(|v| *v != 0 && !(MIN_BYTES..=MAX_BYTES).contains(v))
        {
            return Err(ConfigError::out_of_range(
                &format!("{path}.bytes"),
                v,
                "0 (no budget) or 1024..=1073741824 (bytes)",
            ));
        }
        Ok(())
    }

    /// This layer's word on the budget: `None` when it says nothing,
    /// `Some(None)` when it turns the budget off (0).
    pub(crate) fn resolve(&self) -> Option<Option<Budget>> {
        let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        match (self.tokens, self.bytes) {
            (Some(0), _) | (_, Some(0)) => Some(None),
            (Some(t), _) => Some(Some(Budget::Tokens(size(t)))),
            (_, Some(b)) => Some(Some(Budget::Bytes(size(b)))),
            (None, None) => None,
        }
    }
}

/// Whether the rest of a cut result may be fetched by calling the tool
/// again (a stateless page: any gateway with the key can serve it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reissue {
    /// When `tools/list` (seen by the gateway that cut the result, or by the
    /// one serving the page) annotates the tool `readOnlyHint` or
    /// `idempotentHint` (MCP 2025-03-26 and later, `ToolAnnotations`).
    #[default]
    Auto,
    /// The operator vouches that calling the tool again with the same
    /// arguments is safe.
    Always,
    Never,
}

/// One layer's `paging` switches.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PagingPatch {
    pub enabled: Option<bool>,
    pub reissue: Option<Reissue>,
}

/// The top-level `paging` section as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PagingSection {
    pub enabled: Option<bool>,
    pub reissue: Option<Reissue>,
    pub tool_name: Option<String>,
    pub ttl_s: Option<u64>,
    pub store_bytes: Option<u64>,
    pub store_pages: Option<u64>,
    pub max_result_bytes: Option<u64>,
    pub key: Option<String>,
    pub reissue_timeout_ms: Option<u64>,
}

/// The resolved paging settings shared by every server and tool.
#[derive(Clone, PartialEq, Eq)]
pub struct PagingSettings {
    /// The synthetic tool that serves pages.
    pub tool_name: String,
    /// How long a page stays fetchable, in seconds.
    pub ttl_s: u64,
    /// Most bytes of pages the gateway holds (0: no store, only stateless
    /// pages).
    pub store_bytes: usize,
    /// Most pages it holds.
    pub store_pages: usize,
    /// Largest response body held for a tool with a budget (larger than
    /// `max_body_bytes`, which bounds everything else).
    pub max_result_bytes: usize,
    /// HMAC-SHA256 key of stateless handles; empty: none.
    pub key: Vec<u8>,
    /// Timeout of the upstream call that re-issues a tool call.
    pub reissue_timeout_ms: u64,
}

// The key never reaches a log line.
impl std::fmt::Debug for PagingSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PagingSettings")
            .field("tool_name", &self.tool_name)
            .field("ttl_s", &self.ttl_s)
            .field("store_bytes", &self.store_bytes)
            .field("store_pages", &self.store_pages)
            .field("max_result_bytes", &self.max_result_bytes)
            .field(
                "key",
                &if self.key.is_empty() {
                    ""
                } else {
                    "<redacted>"
                },
            )
            .field("reissue_timeout_ms", &self.reissue_timeout_ms)
            .finish()
    }
}

pub const DEFAULT_PAGE_TOOL: &str = "mcp_toon_page";

impl Default for PagingSettings {
    fn default() -> Self {
        Self {
            tool_name: DEFAULT_PAGE_TOOL.into(),
            ttl_s: 600,
            store_bytes: 64 << 20,
            store_pages: 4096,
            max_result_bytes: 16 << 20,
            key: Vec::new(),
            reissue_timeout_ms: 30_000,
        }
    }
}

impl PagingSection {
    pub(crate) fn resolve(&self) -> Result<PagingSettings, ConfigError> {
        let d = PagingSettings::default();
        let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        let tool_name = self.tool_name.clone().unwrap_or(d.tool_name);
        // MCP 2025-11-25 "Tool names": 1-128 of A-Z a-z 0-9 _ - .
        let valid = !tool_name.is_empty()
            && tool_name.len() <= 128
            && tool_name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
        if !valid {
            return Err(ConfigError::new(
                "paging.tool_name",
                "must be 1-128 characters of letters, digits, `_`, `-` or `.`",
            ));
        }
        let ttl_s = self.ttl_s.unwrap_or(d.ttl_s);
        if !(1..=86_400).contains(&ttl_s) {
            return Err(ConfigError::out_of_range(
                "paging.ttl_s",
                ttl_s,
                "1..=86400 (seconds)",
            ));
        }
        let store_bytes = self.store_bytes.unwrap_or(d.store_bytes as u64);
        if store_bytes > 1 << 32 {
            return Err(ConfigError::out_of_range(
                "paging.store_bytes",
                store_bytes,
                "0 (no store) ..=4294967296 (bytes)",
            ));
        }
        let store_pages = self.store_pages.unwrap_or(d.store_pages as u64);
        if !(1..=65_536).contains(&store_pages) {
            return Err(ConfigError::out_of_range(
                "paging.store_pages",
                store_pages,
                "1..=65536 (pages)",
            ));
        }
        let max_result_bytes = self.max_result_bytes.unwrap_or(d.max_result_bytes as u64);
        if !(1024..=1 << 30).contains(&max_result_bytes) {
            return Err(ConfigError::out_of_range(
                "paging.max_result_bytes",
                max_result_bytes,
                "1024..=1073741824 (bytes)",
            ));
        }
        let reissue_timeout_ms = self.reissue_timeout_ms.unwrap_or(d.reissue_timeout_ms);
        if !(1..=600_000).contains(&reissue_timeout_ms) {
            return Err(ConfigError::out_of_range(
                "paging.reissue_timeout_ms",
                reissue_timeout_ms,
                "1..=600000 (milliseconds)",
            ));
        }
        let key = self.key.clone().unwrap_or_default();
        // Never quote the key: it is a secret.
        if !key.is_empty() && (key.len() < 32 || key.bytes().any(|b| b < b' ' || b == 0x7f)) {
            return Err(ConfigError::new(
                "paging.key",
                "must be empty (no stateless pages) or at least 32 printable characters (for example `openssl rand -base64 32`)",
            ));
        }
        Ok(PagingSettings {
            tool_name,
            ttl_s,
            store_bytes: size(store_bytes),
            store_pages: size(store_pages),
            max_result_bytes: size(max_result_bytes),
            key: key.into_bytes(),
            reissue_timeout_ms,
        })
    }

    /// The section's layer switches (the top level of the precedence).
    pub(crate) fn patch(&self) -> PagingPatch {
        PagingPatch {
            enabled: self.enabled,
            reissue: self.reissue,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ServerScope, Settings, StreamInfo};

    fn err(json: &str) -> ConfigError {
        match Settings::from_json(json) {
            Ok(_) => ConfigError::new("<accepted>", json),
            Err(e) => e,
        }
    }

    #[test]
    fn off_by_default() {
        let s = Settings::from_json("{}").unwrap();
        let p = s.policy(ServerScope::default(), Some("any"));
        assert_eq!(
            (p.budget, p.paging, p.reissue),
            (None, false, Reissue::Auto)
        );
        assert!(!s.paging_anywhere() && !s.budget_anywhere() && !s.rewrites_listings());
        assert_eq!(s.paging, PagingSettings::default());
    }

    #[test]
    fn budgets_and_paging_resolve_most_specific_first() {
        let s = Settings::from_json(
            r#"{"hold_headers":true,"budget":{"tokens":30000},
                "tools":{"a":{"budget":{"bytes":4096},"paging":{"enabled":true,"reissue":"never"}},
                         "b":{"budget":{"tokens":0}}},
                "servers":[{"match":{"cluster":"crm"},"budget":{"tokens":5000},"paging":{"enabled":true},
                            "tools":{"a":{"budget":{"tokens":700}}}}]}"#,
        )
        .unwrap();
        let crm = s.server_for(&StreamInfo {
            cluster: Some("crm".into()),
            ..StreamInfo::default()
        });
        let top = ServerScope::default();
        assert_eq!(s.policy(top, Some("x")).budget, Some(Budget::Tokens(30000)));
        assert_eq!(s.policy(top, Some("a")).budget, Some(Budget::Bytes(4096)));
        assert_eq!(s.policy(top, Some("a")).reissue, Reissue::Never);
        assert_eq!(s.policy(top, Some("b")).budget, None, "0 turns it off");
        assert!(!s.policy(top, Some("x")).paging);
        assert_eq!(s.policy(crm, Some("x")).budget, Some(Budget::Tokens(5000)));
        assert!(s.policy(crm, Some("x")).paging);
        assert_eq!(s.policy(crm, Some("a")).budget, Some(Budget::Tokens(700)));
        assert!(s.paging_anywhere() && s.budget_anywhere() && s.rewrites_listings());
    }

    #[test]
    fn bad_values_are_refused_with_the_field_and_what_is_allowed() {
        for (json, field, needle) in [
            (
                r#"{"budget":{"tokens":10,"bytes":5000}}"#,
                "budget",
                "one of",
            ),
            (
                r#"{"budget":{"tokens":10}}"#,
                "budget.tokens",
                "200..=10000000",
            ),
            (
                r#"{"tools":{"t":{"budget":{"bytes":10}}}}"#,
                "tools.t.budget.bytes",
                "1024..=",
            ),
            (
                r#"{"servers":[{"match":{"route":"r"},"budget":{"tokens":1}}]}"#,
                "servers[0].budget.tokens",
                "200",
            ),
            (r#"{"budget":{"pages":3}}"#, "budget.pages", "unknown field"),
            (
                r#"{"paging":{"enabled":true}}"#,
                "paging.enabled",
                "hold_headers",
            ),
            (
                r#"{"tools":{"t":{"paging":{"enabled":true}}}}"#,
                "paging.enabled",
                "hold_headers",
            ),
            (
                r#"{"paging":{"reissue":"sometimes"}}"#,
                "paging.reissue",
                "auto",
            ),
            (
                r#"{"paging":{"tool_name":"next page"}}"#,
                "paging.tool_name",
                "letters",
            ),
            (r#"{"paging":{"ttl_s":0}}"#, "paging.ttl_s", "1..=86400"),
            (
                r#"{"paging":{"store_pages":0}}"#,
                "paging.store_pages",
                "1..=65536",
            ),
            (
                r#"{"paging":{"max_result_bytes":10}}"#,
                "paging.max_result_bytes",
                "1024",
            ),
            (
                r#"{"paging":{"reissue_timeout_ms":0}}"#,
                "paging.reissue_timeout_ms",
                "1..=",
            ),
        ] {
            let e = err(json);
            assert_eq!(e.field, field, "{json}: {e}");
            assert!(e.message.contains(needle), "{json}: {e}");
        }
    }

    #[test]
    fn a_short_key_is_refused_without_being_quoted() {
        let e = err(r#"{"paging":{"key":"hunter2-secret"}}"#);
        assert_eq!(e.field, "paging.key");
        assert!(!e.to_string().contains("hunter2"), "{e}");
        let s = Settings::from_json(r#"{"paging":{"key":"0123456789abcdef0123456789abcdef"}}"#)
            .unwrap();
        assert!(!format!("{:?}", s.paging).contains("0123456789abcdef"));
    }
}
