//! `budget` (per layer) and `paging` (a top-level section whose `enabled`
//! and `reissue` layers may override): how much of a tool result an agent
//! reads at once, and how it gets the rest.

use serde::Deserialize;

use super::secret::{self, Environ, Written};
use super::ConfigError;

/// One layer's `budget` as written: tokens or bytes, one of them.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BudgetPatch {
    pub(crate) tokens: Option<u64>,
    pub(crate) bytes: Option<u64>,
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
pub enum ReissuePolicy {
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
    pub(crate) enabled: Option<bool>,
    pub(crate) reissue: Option<ReissuePolicy>,
}

/// The top-level `paging` section as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PagingSection {
    pub(crate) enabled: Option<bool>,
    pub(crate) reissue: Option<ReissuePolicy>,
    pub(crate) tool_name: Option<String>,
    pub(crate) ttl_s: Option<u64>,
    pub(crate) store_bytes: Option<u64>,
    pub(crate) store_pages: Option<u64>,
    pub(crate) owner_bytes: Option<u64>,
    pub(crate) owner_pages: Option<u64>,
    pub(crate) max_result_bytes: Option<u64>,
    /// A secret, or a list of them (rotation): [`super::secret`].
    pub(crate) key: Option<Written>,
    pub(crate) reissue_timeout_ms: Option<u64>,
    /// `{"from": …}`, read by [`owner_source`] (a derive would cost the
    /// module more than the few lines that read it).
    pub(crate) owner: Option<Box<serde_json::value::RawValue>>,
    pub(crate) reissue_cluster: Option<String>,
}

/// Whose pages a page call may fetch: the identity of the caller a result
/// was cut for, which a page call must show again (README "Budgets and
/// pages", "Who a page belongs to").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum OwnerSource {
    /// The request's credentials: `authorization` and `cookie` (every value
    /// of each, in order), hashed.
    #[default]
    Credentials,
    /// One request header, set by an authentication filter before the
    /// plugin (and stripped from clients by it); lowercase.
    Header(String),
    /// Dynamic metadata an authentication filter set: the property
    /// `metadata.filter_metadata.<path…>` (jwt_authn's `payload_in_metadata`,
    /// ext_authz's `dynamic_metadata`).
    Metadata(Vec<String>),
    /// No identity: pages are bound to the session and the server only.
    /// Unsafe behind a gateway shared by several users: a handle is then a
    /// bearer capability.
    None,
}

/// Most segments of a metadata path, and bytes of one.
const MAX_PATH_SEGMENTS: usize = 8;
const MAX_SEGMENT_BYTES: usize = 256;

/// `paging.owner`: `{"from": "credentials" | "none"}`,
/// `{"from": "header", "name": …}` or `{"from": "metadata", "path": […]}`.
fn owner_source(written: &serde_json::value::RawValue) -> Result<OwnerSource, ConfigError> {
    use serde_json::Value;
    let value: Value = serde_json::from_str(written.get()).unwrap_or(Value::Null);
    let shape = || {
        ConfigError::new(
            "paging.owner",
            "takes `from` (`credentials`, `header`, `metadata`, `none`), with `name` for `header` and `path` for `metadata` only",
        )
    };
    let Value::Object(map) = value else {
        return Err(shape());
    };
    if map
        .keys()
        .any(|k| !["from", "name", "path"].contains(&k.as_str()))
    {
        return Err(shape());
    }
    let (name, path) = (map.get("name"), map.get("path"));
    let header_name = |n: &str| {
        !n.is_empty()
            && n.len() <= 128
            && n.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b))
    };
    match map.get("from").and_then(Value::as_str) {
        Some("credentials") if name.is_none() && path.is_none() => Ok(OwnerSource::Credentials),
        Some("none") if name.is_none() && path.is_none() => Ok(OwnerSource::None),
        Some("header") if path.is_none() => match name.and_then(Value::as_str) {
            Some(n) if header_name(n) => Ok(OwnerSource::Header(n.to_string())),
            _ => Err(ConfigError::new(
                "paging.owner.name",
                "must be a header name: 1-128 of lowercase letters, digits, `-`, `_`, `.` (a header the authentication filter sets)",
            )),
        },
        Some("metadata") if name.is_none() => {
            let Some(path) = path else {
                return Err(ConfigError::new(
                    "paging.owner.path",
                    "is required with `from: metadata`",
                ));
            };
            let keys: Option<Vec<String>> = path.as_array().and_then(|items| {
                items
                    .iter()
                    .map(|k| {
                        k.as_str()
                            .filter(|k| !k.is_empty() && k.len() <= MAX_SEGMENT_BYTES && !k.contains('\0'))
                            .map(str::to_string)
                    })
                    .collect()
            });
            match keys {
                Some(keys) if (1..=MAX_PATH_SEGMENTS).contains(&keys.len()) => {
                    Ok(OwnerSource::Metadata(keys))
                }
                _ => Err(ConfigError::new(
                    "paging.owner.path",
                    "must be 1-8 non-empty keys of at most 256 bytes under metadata.filter_metadata, e.g. [\"envoy.filters.http.jwt_authn\", \"jwt_payload\", \"sub\"]",
                )),
            }
        }
        Some("credentials" | "none" | "header" | "metadata") => Err(shape()),
        _ => Err(ConfigError::new(
            "paging.owner.from",
            "must be one of `credentials`, `header`, `metadata`, `none`",
        )),
    }
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
    /// Most bytes of pages one owner (the binding a page is kept under)
    /// holds: past it, that owner's own oldest pages make room.
    pub owner_bytes: usize,
    /// Most pages one owner holds.
    pub owner_pages: usize,
    /// Largest response body held for a tool with a budget (larger than
    /// `max_body_bytes`, which bounds everything else).
    pub max_result_bytes: usize,
    /// Keys of stateless handles, the one that seals new handles first;
    /// empty: none.
    pub keys: Vec<Vec<u8>>,
    /// Timeout of the upstream call that re-issues a tool call.
    pub reissue_timeout_ms: u64,
    /// Whose pages a page call may fetch.
    pub owner: OwnerSource,
    /// Where a re-issued call goes: a cluster that reaches this gateway's
    /// own listener (or an internal listener), so every filter runs on it
    /// again. Empty: straight to the route's cluster.
    pub reissue_cluster: String,
}

// The key never reaches a log line.
impl std::fmt::Debug for PagingSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PagingSettings")
            .field("tool_name", &self.tool_name)
            .field("ttl_s", &self.ttl_s)
            .field("store_bytes", &self.store_bytes)
            .field("store_pages", &self.store_pages)
            .field("owner_bytes", &self.owner_bytes)
            .field("owner_pages", &self.owner_pages)
            .field("max_result_bytes", &self.max_result_bytes)
            .field("keys", &format_args!("<{} redacted>", self.keys.len()))
            .field("reissue_timeout_ms", &self.reissue_timeout_ms)
            .field("owner", &self.owner)
            .field("reissue_cluster", &self.reissue_cluster)
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
            owner_bytes: 16 << 20,
            owner_pages: 1024,
            max_result_bytes: 16 << 20,
            keys: Vec::new(),
            reissue_timeout_ms: 30_000,
            owner: OwnerSource::Credentials,
            reissue_cluster: String::new(),
        }
    }
}

impl PagingSection {
    pub(crate) fn resolve(&self, env: &dyn Environ) -> Result<PagingSettings, ConfigError> {
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
        // A quarter of the store by default: four owners at their quota fill
        // it, and none can take what another holds within its fair share.
        let owner_bytes = self.owner_bytes.unwrap_or(store_bytes / 4);
        if owner_bytes > store_bytes {
            return Err(ConfigError::out_of_range(
                "paging.owner_bytes",
                owner_bytes,
                &format!("0..={store_bytes} (bytes, at most paging.store_bytes)"),
            ));
        }
        let owner_pages = self.owner_pages.unwrap_or((store_pages / 4).max(1));
        if !(1..=store_pages).contains(&owner_pages) {
            return Err(ConfigError::out_of_range(
                "paging.owner_pages",
                owner_pages,
                &format!("1..={store_pages} (pages, at most paging.store_pages)"),
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
        let written = match &self.key {
            Some(k) => secret::list(k, "paging.key", env)?,
            None => Vec::new(),
        };
        // An empty string is no key (the default).
        let single_empty = written.len() == 1 && written.iter().all(String::is_empty);
        let keys = if single_empty { Vec::new() } else { written };
        for (i, key) in keys.iter().enumerate() {
            // Never quote a key: it is a secret.
            if key.len() < 32 || key.bytes().any(|b| b < b' ' || b == 0x7f) {
                let field = if keys.len() == 1 {
                    "paging.key".to_string()
                } else {
                    format!("paging.key[{i}]")
                };
                return Err(ConfigError::new(
                    field,
                    "must be empty (no stateless pages) or at least 32 printable characters (for example `openssl rand -base64 32`)",
                ));
            }
        }
        let owner = match &self.owner {
            Some(o) => owner_source(o)?,
            None => OwnerSource::default(),
        };
        let reissue_cluster = self.reissue_cluster.clone().unwrap_or_default();
        let token = reissue_cluster
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
        if reissue_cluster.len() > 256 || !token {
            return Err(ConfigError::new(
                "paging.reissue_cluster",
                "must be empty (re-issue to the route's cluster) or the name of an Envoy cluster (letters, digits, `-_.:`) reaching this gateway's listener",
            ));
        }
        if !reissue_cluster.is_empty() && keys.is_empty() {
            return Err(ConfigError::new(
                "paging.reissue_cluster",
                "needs `paging.key`: only sealed handles are re-issued, and the re-entrant call is marked with it",
            ));
        }
        Ok(PagingSettings {
            tool_name,
            ttl_s,
            store_bytes: size(store_bytes),
            store_pages: size(store_pages),
            owner_bytes: size(owner_bytes),
            owner_pages: size(owner_pages),
            max_result_bytes: size(max_result_bytes),
            keys: keys.into_iter().map(String::into_bytes).collect(),
            reissue_timeout_ms,
            owner,
            reissue_cluster,
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
            (None, false, ReissuePolicy::Auto)
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
        assert_eq!(s.policy(top, Some("a")).reissue, ReissuePolicy::Never);
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
