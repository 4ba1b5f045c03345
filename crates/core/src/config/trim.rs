//! The `trim` section: shrink large tool results to the caller's declared
//! intent through an OpenAI-compatible `/chat/completions` endpoint reached
//! as an Envoy cluster. Only `enabled` can be overridden per tool or server;
//! the endpoint is one per plugin.

use serde::Deserialize;

use super::secret::{self, Environ, Written};
use super::ConfigError;

/// Which text blocks one callout covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrimBlocks {
    /// `content[0]` when it is text (the seed policy's behaviour).
    First,
    /// Every text block, in one call, mapped back by position.
    All,
}

/// The top-level `trim` section as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrimSection {
    pub(crate) enabled: Option<bool>,
    pub(crate) cluster: Option<String>,
    pub(crate) authority: Option<String>,
    pub(crate) path: Option<String>,
    pub(crate) model: Option<String>,
    /// Secrets: a value or `{"env": NAME}` ([`super::secret`]).
    pub(crate) client_id: Option<Written>,
    pub(crate) client_secret: Option<Written>,
    pub(crate) threshold_bytes: Option<u64>,
    pub(crate) timeout_ms: Option<u64>,
    pub(crate) intent_argument: Option<String>,
    pub(crate) advertise_intent: Option<bool>,
    pub(crate) blocks: Option<TrimBlocks>,
    pub(crate) max_intent_bytes: Option<u64>,
    pub(crate) max_reply_bytes: Option<u64>,
    pub(crate) max_queued_bytes: Option<u64>,
}

/// A tool or server layer's `trim`: only `enabled`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TrimPatch {
    pub(crate) enabled: Option<bool>,
}

/// The resolved endpoint and limits.
#[derive(Clone, PartialEq, Eq)]
pub struct TrimSettings {
    pub(crate) enabled: bool,
    pub(crate) cluster: String,
    pub(crate) authority: String,
    pub(crate) path: String,
    pub(crate) model: String,
    pub(crate) client_id: String,
    pub(crate) client_secret: String,
    pub threshold_bytes: usize,
    pub timeout_ms: u64,
    pub intent_argument: String,
    pub advertise_intent: bool,
    pub blocks: TrimBlocks,
    /// A longer declared intent is not sent (`trim_intent_too_long`).
    pub(crate) max_intent_bytes: usize,
    /// A larger callout reply is not read (`trim_reply_too_large`).
    pub max_reply_bytes: usize,
    /// Bytes of an event stream — the event being trimmed and what follows
    /// it — (or after a JSON body's value) that may wait for a callout;
    /// past it the trim is given up (`trim_queue_full`).
    pub max_queued_bytes: usize,
}

// The credentials never reach a log line, not even through `{:?}`.
impl std::fmt::Debug for TrimSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrimSettings")
            .field("enabled", &self.enabled)
            .field("cluster", &self.cluster)
            .field("authority", &self.authority)
            .field("path", &self.path)
            .field("model", &self.model)
            .field(
                "client_id",
                &if self.client_id.is_empty() {
                    ""
                } else {
                    "<redacted>"
                },
            )
            .field(
                "client_secret",
                &if self.client_secret.is_empty() {
                    ""
                } else {
                    "<redacted>"
                },
            )
            .field("threshold_bytes", &self.threshold_bytes)
            .field("timeout_ms", &self.timeout_ms)
            .field("intent_argument", &self.intent_argument)
            .field("advertise_intent", &self.advertise_intent)
            .field("blocks", &self.blocks)
            .field("max_intent_bytes", &self.max_intent_bytes)
            .field("max_reply_bytes", &self.max_reply_bytes)
            .field("max_queued_bytes", &self.max_queued_bytes)
            .finish()
    }
}

impl Default for TrimSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            cluster: "llm".into(),
            authority: "llm.internal".into(),
            path: "/v1/chat/completions".into(),
            model: String::new(),
            client_id: String::new(),
            client_secret: String::new(),
            threshold_bytes: 8000,
            timeout_ms: 10_000,
            intent_argument: "expected_info".into(),
            advertise_intent: true,
            blocks: TrimBlocks::First,
            max_intent_bytes: DEFAULT_MAX_INTENT_BYTES,
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
            max_queued_bytes: DEFAULT_MAX_QUEUED_BYTES,
        }
    }
}

/// An intent is one sentence; 512 bytes is a long one.
pub(crate) const DEFAULT_MAX_INTENT_BYTES: usize = 512;
/// A reply carries an extraction smaller than the block (at most
/// `max_body_bytes`, 1 MiB by default) inside a JSON string.
pub(crate) const DEFAULT_MAX_REPLY_BYTES: usize = 1024 * 1024;
/// What may wait for a callout. It goes into the paused response's buffer
/// at once when the reply comes, with the chunk that arrives then: half of
/// Envoy's default `per_connection_buffer_limit_bytes` (1 MiB) leaves room
/// for that chunk.
pub(crate) const DEFAULT_MAX_QUEUED_BYTES: usize = 512 * 1024;
const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// A byte limit within `allowed`, or the default when not given.
pub(crate) fn within(
    field: &str,
    value: Option<u64>,
    default: usize,
    allowed: std::ops::RangeInclusive<u64>,
) -> Result<usize, ConfigError> {
    let Some(v) = value else {
        return Ok(default);
    };
    if !allowed.contains(&v) {
        return Err(ConfigError::out_of_range(
            field,
            v,
            &format!("{}..={} (bytes)", allowed.start(), allowed.end()),
        ));
    }
    Ok(usize::try_from(v).unwrap_or(usize::MAX))
}

impl TrimSection {
    pub(crate) fn resolve(self, env: &dyn Environ) -> Result<TrimSettings, ConfigError> {
        let d = TrimSettings::default();
        let secret = |s: Option<Written>, field: &str, default: String| match s {
            Some(s) => secret::one(&s, field, env),
            None => Ok(default),
        };
        let s = TrimSettings {
            enabled: self.enabled.unwrap_or(d.enabled),
            cluster: self.cluster.unwrap_or(d.cluster),
            authority: self.authority.unwrap_or(d.authority),
            path: self.path.unwrap_or(d.path),
            model: self.model.unwrap_or(d.model),
            client_id: secret(self.client_id, "trim.client_id", d.client_id)?,
            client_secret: secret(self.client_secret, "trim.client_secret", d.client_secret)?,
            threshold_bytes: usize::try_from(self.threshold_bytes.unwrap_or(8000))
                .unwrap_or(usize::MAX),
            timeout_ms: self.timeout_ms.unwrap_or(d.timeout_ms),
            intent_argument: self.intent_argument.unwrap_or(d.intent_argument),
            advertise_intent: self.advertise_intent.unwrap_or(d.advertise_intent),
            blocks: self.blocks.unwrap_or(d.blocks),
            max_intent_bytes: within(
                "trim.max_intent_bytes",
                self.max_intent_bytes,
                d.max_intent_bytes,
                16..=4096,
            )?,
            max_reply_bytes: within(
                "trim.max_reply_bytes",
                self.max_reply_bytes,
                d.max_reply_bytes,
                1024..=MAX_BYTES,
            )?,
            max_queued_bytes: within(
                "trim.max_queued_bytes",
                self.max_queued_bytes,
                d.max_queued_bytes,
                1024..=MAX_BYTES,
            )?,
        };
        let token = |v: &str| {
            !v.is_empty()
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
        };
        if !token(&s.cluster) {
            return Err(ConfigError::new(
                "trim.cluster",
                "must be the name of an Envoy cluster (letters, digits, `-_.:`)",
            ));
        }
        if s.authority.is_empty() || s.authority.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(ConfigError::new(
                "trim.authority",
                "must be a host name, optionally with a port",
            ));
        }
        if !s.path.starts_with('/') || s.path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(ConfigError::new(
                "trim.path",
                "must be an absolute path starting with `/`",
            ));
        }
        if !(1..=600_000).contains(&s.timeout_ms) {
            return Err(ConfigError::out_of_range(
                "trim.timeout_ms",
                s.timeout_ms,
                "1..=600000 (milliseconds)",
            ));
        }
        let ident = s.intent_argument.len() <= 64
            && !s.intent_argument.is_empty()
            && s.intent_argument
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ident {
            return Err(ConfigError::new(
                "trim.intent_argument",
                "must be 1-64 characters of letters, digits, `_` or `-`",
            ));
        }
        // Header values: no control characters. Neither message quotes the
        // value: it may be a credential.
        let header_safe = |v: &str| v.bytes().all(|b| b >= b' ' && b != 0x7f);
        if !header_safe(&s.client_id) {
            return Err(ConfigError::new(
                "trim.client_id",
                "must not contain control characters",
            ));
        }
        if !header_safe(&s.client_secret) {
            return Err(ConfigError::new(
                "trim.client_secret",
                "must not contain control characters",
            ));
        }
        if !s.client_id.is_empty() && s.client_secret.is_empty() {
            return Err(ConfigError::new(
                "trim.client_secret",
                "is required when `trim.client_id` is set",
            ));
        }
        if s.client_id.is_empty() && !s.client_secret.is_empty() {
            return Err(ConfigError::new(
                "trim.client_id",
                "is required when `trim.client_secret` is set",
            ));
        }
        Ok(s)
    }
}
