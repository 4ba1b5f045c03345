//! Plugin configuration: parsed once (serde, unknown fields refused), then
//! validated and resolved into [`Settings`]; a stream asks for the
//! [`Policy`] of one server and tool.
//!
//! Precedence, most specific first: the matching server's `tools` entry, the
//! top-level `tools` entry, the matching server, the top level, defaults.

mod budget;
mod clean;
mod error;
pub mod project;
mod toon;
mod trim;

use std::collections::HashMap;

use serde::Deserialize;

pub use budget::{
    Budget, BudgetPatch, PagingPatch, PagingSection, PagingSettings, Reissue, DEFAULT_PAGE_TOOL,
};
pub use clean::{CleanPatch, CleanSettings};
pub use error::ConfigError;
pub use project::{ProjectPatch, ProjectPolicy, ProjectSection, ProjectSettings, Rules};
pub use toon::{Header, Mode, ToonPatch, ToonSettings, MARKER_PREFIX};
pub use trim::{TrimBlocks, TrimPatch, TrimSection, TrimSettings};

/// Default cap on a buffered body: Envoy's default
/// `per_connection_buffer_limit_bytes` is 1 MiB, and buffering past it resets
/// the stream, so the plugin stops below it by default.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 1024 * 1024;
const MAX_BODY_BYTES_LIMIT: u64 = 256 * 1024 * 1024;
/// JSON-RPC ids and tool names: a UUID is 38 bytes quoted; MCP 2025-11-25
/// asks tool names of 1-128 characters.
pub const DEFAULT_MAX_NAME_BYTES: usize = 256;
/// Ten minutes: a legacy tool call rarely runs longer.
pub const DEFAULT_LEGACY_RECORD_TTL_MS: u64 = 600_000;

/// Everything one layer (top level, server, tool) may set for the stages.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Patch {
    #[serde(default)]
    pub toon: ToonPatch,
    #[serde(default)]
    pub clean: CleanPatch,
    #[serde(default)]
    pub trim: TrimPatch,
    #[serde(default)]
    pub budget: BudgetPatch,
    #[serde(default)]
    pub paging: PagingPatch,
    #[serde(default)]
    pub project: ProjectPatch,
}

impl Patch {
    fn validate(&self, path: &str) -> Result<(), ConfigError> {
        self.toon.validate(&join(path, "toon"))?;
        self.clean.validate(&join(path, "clean"))?;
        self.budget.validate(&join(path, "budget"))
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    toon: ToonPatch,
    #[serde(default)]
    clean: CleanPatch,
    #[serde(default)]
    trim: TrimSection,
    #[serde(default)]
    budget: BudgetPatch,
    #[serde(default)]
    paging: PagingSection,
    #[serde(default)]
    project: ProjectSection,
    max_body_bytes: Option<u64>,
    max_event_bytes: Option<u64>,
    strip_accept_encoding: Option<bool>,
    annotate_tools: Option<bool>,
    hold_headers: Option<bool>,
    max_id_bytes: Option<u64>,
    max_tool_name_bytes: Option<u64>,
    legacy_record_ttl_ms: Option<u64>,
    marker_key: Option<String>,
    #[serde(default)]
    tools: HashMap<String, Patch>,
    #[serde(default)]
    servers: Vec<RawServer>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    #[serde(rename = "match")]
    matcher: Matcher,
    #[serde(default)]
    toon: ToonPatch,
    #[serde(default)]
    clean: CleanPatch,
    #[serde(default)]
    trim: TrimPatch,
    #[serde(default)]
    budget: BudgetPatch,
    #[serde(default)]
    paging: PagingPatch,
    #[serde(default)]
    project: ProjectPatch,
    #[serde(default)]
    tools: HashMap<String, Patch>,
}

/// Which streams a `servers[]` entry applies to: every given key must equal
/// the stream's value.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Matcher {
    pub route: Option<String>,
    pub cluster: Option<String>,
    pub authority: Option<String>,
}

/// What the host knows about a stream that a server match can use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamInfo {
    pub route: Option<String>,
    pub cluster: Option<String>,
    pub authority: Option<String>,
}

/// How long the parts of a request the plugin keeps may be. A client
/// chooses them, and each block and decision of the response carries a
/// copy of the id and the tool name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of the id's JSON text.
    pub id: usize,
    pub tool: usize,
    pub intent: usize,
}

impl Limits {
    /// No limit (tests and the CLI's own captures).
    pub const NONE: Limits = Limits {
        id: usize::MAX,
        tool: usize::MAX,
        intent: usize::MAX,
    };
}

impl Matcher {
    fn matches(&self, stream: &StreamInfo) -> bool {
        fn one(want: &Option<String>, have: &Option<String>) -> bool {
            match want {
                None => true,
                Some(w) => have.as_deref() == Some(w.as_str()),
            }
        }
        one(&self.route, &stream.route)
            && one(&self.cluster, &stream.cluster)
            && one(&self.authority, &stream.authority)
    }
}

#[derive(Debug, Clone)]
struct Server {
    matcher: Matcher,
    patch: Patch,
    tools: HashMap<String, Patch>,
}

/// A validated configuration, ready to resolve policies per stream and tool.
#[derive(Clone)]
pub struct Settings {
    pub max_body_bytes: usize,
    /// Largest SSE event the plugin holds to rewrite; larger ones stream
    /// through unmodified.
    pub max_event_bytes: usize,
    pub strip_accept_encoding: bool,
    pub annotate_tools: bool,
    /// Hold response headers until the body is rewritten, so the response
    /// keeps an exact `content-length` and gets the `x-mcp-toon` header.
    /// Must match the Envoy plugin setting `allow_on_headers_stop_iteration`:
    /// without it Envoy turns a paused headers callback into
    /// StopAllIterationAndWatermark, which withholds the body callbacks and
    /// stalls the stream. A plugin cannot read that setting, so the operator
    /// states it here. Default false: works on every Envoy.
    pub hold_headers: bool,
    /// A JSON-RPC id (its JSON text) longer than this is not followed: the
    /// call and its response pass (`id_too_long`). Ids and tool names are
    /// copied into every block and decision of a response.
    pub max_id_bytes: usize,
    /// A longer tool name: likewise (`tool_name_too_long`).
    pub max_tool_name_bytes: usize,
    /// How long a 2024-11-05 session record holds its slot against other
    /// sessions.
    pub legacy_record_ttl_ms: u64,
    /// Key of the marker tags (HMAC-SHA256); empty: blocks carry no tag.
    pub marker_key: String,
    /// The trim endpoint; `enabled` here is the top-level default, see
    /// [`Policy::trim`] for the resolved per-tool value.
    pub trim: TrimSettings,
    /// The page tool, store and key; whether a tool pages is
    /// [`Policy::paging`].
    pub paging: PagingSettings,
    /// The query argument and its limit; rules and `queries` are per
    /// policy, see [`Policy::project`].
    pub project: ProjectSettings,
    base: Patch,
    tools: HashMap<String, Patch>,
    servers: Vec<Server>,
    /// Some layer enables trim: requests must be read for intents.
    trim_anywhere: bool,
    /// Some layer enables paging: page-tool calls are answered here.
    paging_anywhere: bool,
    /// Some layer sets a budget: a result may be held past `max_body_bytes`.
    budget_anywhere: bool,
    /// Some layer accepts agent queries: requests must be read for them.
    queries_anywhere: bool,
    /// The arguments taken out of `tools/call` requests.
    stripped_arguments: Vec<String>,
    /// Per server scope (no `servers[]` entry first, then each entry): no
    /// stream of it can change, whatever it carries ([`Settings::idle`]).
    idle: Vec<bool>,
}

// The marker key never reaches a log line, not even through `{:?}`.
impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_event_bytes", &self.max_event_bytes)
            .field("strip_accept_encoding", &self.strip_accept_encoding)
            .field("annotate_tools", &self.annotate_tools)
            .field("hold_headers", &self.hold_headers)
            .field("max_id_bytes", &self.max_id_bytes)
            .field("max_tool_name_bytes", &self.max_tool_name_bytes)
            .field("legacy_record_ttl_ms", &self.legacy_record_ttl_ms)
            .field(
                "marker_key",
                &if self.marker_key.is_empty() {
                    ""
                } else {
                    "<redacted>"
                },
            )
            .field("trim", &self.trim)
            .field("base", &self.base)
            .field("tools", &self.tools)
            .field("servers", &self.servers)
            .field("trim_anywhere", &self.trim_anywhere)
            .field("idle", &self.idle)
            .finish()
    }
}

/// The settings every stage uses for one block: one server, one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub toon: ToonSettings,
    pub clean: CleanSettings,
    /// Whether the trim stage runs for this tool.
    pub trim: bool,
    /// What an agent reads of one result at most; `None`: no cut.
    pub budget: Option<Budget>,
    /// The rest of a cut result can be fetched with the page tool.
    pub paging: bool,
    /// Whether a page may be served by calling the tool again.
    pub reissue: Reissue,
    /// Operator rules and whether agent queries apply to this tool.
    pub project: ProjectPolicy,
}

impl Policy {
    /// No stage can change a result under this policy: TOON off, every
    /// clean transform and the cap off, no trim, no operator projection
    /// rules, no budget (which cuts, after the other stages) and no paging
    /// (whose pages need a cut result read). A call under it that carries
    /// no query of the agent's is decided at its request, and its response
    /// is never read.
    pub fn changes_nothing(&self) -> bool {
        self.toon.mode == Mode::Off
            && self.clean.all_off()
            && self.clean.max_text_bytes == 0
            && !self.trim
            && self.project.rules.is_empty()
            && self.budget.is_none()
            && !self.paging
    }

    /// Only a text that is a JSON value can change under this policy:
    /// compact JSON, null removal and TOON read JSON alone, and every stage
    /// that reads any text (the string transforms, the cap, trim, operator
    /// rules, the budget and its pages) is off. A text that is certainly
    /// no JSON value then passes as it came, and need not be decoded.
    pub fn changes_only_json(&self) -> bool {
        let c = &self.clean;
        !c.html_to_markdown
            && !c.strip_base64
            && !c.collapse_whitespace
            && c.max_text_bytes == 0
            && !self.trim
            && self.project.rules.is_empty()
            && self.budget.is_none()
            && !self.paging
    }
}

/// Index of the `servers[]` entry a stream matched, if any.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerScope(Option<usize>);

impl Default for Settings {
    fn default() -> Self {
        Self {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES as usize,
            max_event_bytes: DEFAULT_MAX_BODY_BYTES as usize,
            strip_accept_encoding: true,
            annotate_tools: false,
            hold_headers: false,
            max_id_bytes: DEFAULT_MAX_NAME_BYTES,
            max_tool_name_bytes: DEFAULT_MAX_NAME_BYTES,
            legacy_record_ttl_ms: DEFAULT_LEGACY_RECORD_TTL_MS,
            marker_key: String::new(),
            trim: TrimSettings::default(),
            paging: PagingSettings::default(),
            project: ProjectSettings::default(),
            base: Patch::default(),
            tools: HashMap::new(),
            servers: Vec::new(),
            trim_anywhere: false,
            paging_anywhere: false,
            budget_anywhere: false,
            queries_anywhere: false,
            stripped_arguments: Vec::new(),
            idle: Vec::new(),
        }
    }
}

impl Settings {
    /// [`Settings::from_json`] on the configuration as a host delivers it:
    /// bytes. JSON text is UTF-8 (RFC 8259 §8.1); other bytes are refused,
    /// not repaired, since a replaced character could change a value.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ConfigError> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            ConfigError::new(
                "",
                format!(
                    "not UTF-8 (invalid byte at offset {}); allowed: JSON text in UTF-8",
                    e.valid_up_to()
                ),
            )
        })?;
        Self::from_json(text)
    }

    /// Parses and validates the plugin configuration. An empty text (Envoy
    /// passes none when `configuration` is absent) means all defaults.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let mut de = serde_json::Deserializer::from_str(text);
        let raw: RawConfig = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." { String::new() } else { path };
            // serde quotes offending values; a credential must not reach a log.
            let secret = ["client_secret", "client_id", "marker_key"];
            let message = if secret.iter().any(|f| field.ends_with(f)) {
                "must be a string".to_string()
            } else {
                clean_serde_message(&e.into_inner().to_string())
            };
            ConfigError::new(field, message)
        })?;
        de.end()
            .map_err(|e| ConfigError::new("", format!("trailing characters: {e}")))?;
        Self::resolve(raw)
    }

    fn resolve(raw: RawConfig) -> Result<Self, ConfigError> {
        raw.toon.validate("toon")?;
        raw.clean.validate("clean")?;
        raw.budget.validate("budget")?;
        let trim_enabled = raw.trim.enabled;
        let trim = raw.trim.resolve()?;
        let paging = raw.paging.resolve()?;
        let (project_patch, project) = raw.project.resolve()?;
        if project.query_argument == trim.intent_argument {
            // Both go into the same `inputSchema.properties`.
            return Err(ConfigError::new(
                "project.query_argument",
                format!(
                    "must differ from trim.intent_argument (`{}`)",
                    trim.intent_argument
                ),
            ));
        }
        let max_body_bytes = raw.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
        if !(1024..=MAX_BODY_BYTES_LIMIT).contains(&max_body_bytes) {
            return Err(ConfigError::out_of_range(
                "max_body_bytes",
                max_body_bytes,
                "1024..=268435456 (bytes; keep it below Envoy's per_connection_buffer_limit_bytes)",
            ));
        }
        let max_event_bytes = raw.max_event_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
        if !(1024..=MAX_BODY_BYTES_LIMIT).contains(&max_event_bytes) {
            return Err(ConfigError::out_of_range(
                "max_event_bytes",
                max_event_bytes,
                "1024..=268435456 (bytes; keep it below Envoy's per_connection_buffer_limit_bytes)",
            ));
        }
        let max_id_bytes = trim::within(
            "max_id_bytes",
            raw.max_id_bytes,
            DEFAULT_MAX_NAME_BYTES,
            16..=65536,
        )?;
        let max_tool_name_bytes = trim::within(
            "max_tool_name_bytes",
            raw.max_tool_name_bytes,
            DEFAULT_MAX_NAME_BYTES,
            16..=65536,
        )?;
        let legacy_record_ttl_ms = raw
            .legacy_record_ttl_ms
            .unwrap_or(DEFAULT_LEGACY_RECORD_TTL_MS);
        if !(1000..=86_400_000).contains(&legacy_record_ttl_ms) {
            return Err(ConfigError::out_of_range(
                "legacy_record_ttl_ms",
                legacy_record_ttl_ms,
                "1000..=86400000 (milliseconds)",
            ));
        }
        let marker_key = raw.marker_key.unwrap_or_default();
        // Never quoted: it is a secret.
        let printable = marker_key.bytes().all(|b| (b' '..=b'~').contains(&b));
        let fits = (16..=1024).contains(&marker_key.len()) && printable;
        if !marker_key.is_empty() && !fits {
            return Err(ConfigError::new(
                "marker_key",
                "must be empty or 16-1024 characters of printable ASCII",
            ));
        }
        validate_tools(&raw.tools, "tools")?;
        let mut servers = Vec::with_capacity(raw.servers.len());
        for (i, s) in raw.servers.into_iter().enumerate() {
            let path = format!("servers[{i}]");
            if s.matcher == Matcher::default() {
                return Err(ConfigError::new(
                    format!("{path}.match"),
                    "needs at least one of `route`, `cluster`, `authority`",
                ));
            }
            let patch = Patch {
                toon: s.toon,
                clean: s.clean,
                trim: s.trim,
                project: s.project,
                budget: s.budget,
                paging: s.paging,
            };
            patch.validate(&path)?;
            validate_tools(&s.tools, &format!("{path}.tools"))?;
            servers.push(Server {
                matcher: s.matcher,
                patch,
                tools: s.tools,
            });
        }
        let anywhere = |top: bool, enables: &dyn Fn(&Patch) -> bool| {
            top || raw.tools.values().any(enables)
                || servers
                    .iter()
                    .any(|s| enables(&s.patch) || s.tools.values().any(enables))
        };
        let trim_anywhere = anywhere(trim_enabled == Some(true), &|p| {
            p.trim.enabled == Some(true)
        });
        let queries_anywhere = anywhere(project_patch.queries == Some(true), &|p| {
            p.project.queries == Some(true)
        });
        let mut stripped_arguments = Vec::new();
        if trim_anywhere && trim.advertise_intent {
            stripped_arguments.push(trim.intent_argument.clone());
        }
        if queries_anywhere {
            stripped_arguments.push(project.query_argument.clone());
        }
        let base = Patch {
            toon: raw.toon,
            clean: raw.clean,
            trim: TrimPatch {
                enabled: trim_enabled,
            },
            project: project_patch,
            budget: raw.budget,
            paging: raw.paging.patch(),
        };
        let pages = |p: &Patch| p.paging.enabled == Some(true);
        let paging_anywhere = anywhere(pages(&base), &pages);
        let budgets = |p: &Patch| matches!(p.budget.resolve(), Some(Some(_)));
        let budget_anywhere = anywhere(budgets(&base), &budgets);
        let hold_headers = raw.hold_headers.unwrap_or(false);
        if paging_anywhere && !hold_headers {
            // A page call must not reach the server: its request headers are
            // held until the body says whether it is one, which needs Envoy's
            // allow_on_headers_stop_iteration (the same switch).
            return Err(ConfigError::new(
                "paging.enabled",
                "needs `hold_headers: true` (with `allow_on_headers_stop_iteration: true` in Envoy >= 1.35): page calls are answered before their headers reach the server",
            ));
        }
        let mut settings = Self {
            trim_anywhere,
            queries_anywhere,
            stripped_arguments,
            project,
            paging_anywhere,
            budget_anywhere,
            paging,
            max_body_bytes: usize::try_from(max_body_bytes).unwrap_or(usize::MAX),
            max_event_bytes: usize::try_from(max_event_bytes).unwrap_or(usize::MAX),
            strip_accept_encoding: raw.strip_accept_encoding.unwrap_or(true),
            annotate_tools: raw.annotate_tools.unwrap_or(false),
            hold_headers,
            max_id_bytes,
            max_tool_name_bytes,
            legacy_record_ttl_ms,
            marker_key,
            trim,
            base,
            tools: raw.tools,
            servers,
            idle: Vec::new(),
        };
        settings.idle = settings.idle_scopes();
        Ok(settings)
    }

    /// [`Settings::idle`] for every scope, resolved once: each policy a
    /// stream of the scope can meet — the scope's own for a tool named
    /// nowhere, and each named tool's — changes nothing and takes no
    /// agent query, and no listing is rewritten.
    fn idle_scopes(&self) -> Vec<bool> {
        let scopes = std::iter::once(ServerScope(None))
            .chain((0..self.servers.len()).map(|i| ServerScope(Some(i))));
        scopes
            .map(|scope| {
                let named = self.tools.keys().chain(
                    scope
                        .0
                        .and_then(|i| self.servers.get(i))
                        .into_iter()
                        .flat_map(|s| s.tools.keys()),
                );
                let quiet = |p: Policy| p.changes_nothing() && !p.project.queries;
                !self.rewrites_listings()
                    && quiet(self.policy(scope, None))
                    && named.map(|t| self.policy(scope, Some(t))).all(quiet)
            })
            .collect()
    }

    /// No stream of this scope can change, whatever it carries: every
    /// stage is off for every tool, no agent query is taken and no listing
    /// rewritten. Such a stream is passed at its request headers, its
    /// bodies never read (DESIGN "Off means off, and costs (almost)
    /// nothing").
    pub fn idle(&self, scope: ServerScope) -> bool {
        let i = scope.0.map_or(0, |i| i + 1);
        self.idle.get(i).copied().unwrap_or(false)
    }

    /// True when some layer enables trim, so requests carry intents worth
    /// reading (and, with `advertise_intent`, arguments worth stripping).
    pub fn trim_anywhere(&self) -> bool {
        self.trim_anywhere
    }

    /// True when some layer enables paging: calls of the page tool are
    /// answered by the plugin, and listings learn tool annotations.
    pub fn paging_anywhere(&self) -> bool {
        self.paging_anywhere
    }

    /// True when some layer sets a budget.
    pub fn budget_anywhere(&self) -> bool {
        self.budget_anywhere
    }

    /// How long the request parts the plugin keeps may be.
    pub fn limits(&self) -> Limits {
        Limits {
            id: self.max_id_bytes,
            tool: self.max_tool_name_bytes,
            intent: self.trim.max_intent_bytes,
        }
    }

    /// True when some layer accepts agent queries: requests carry them,
    /// listings advertise the argument and requests lose it.
    pub fn queries_anywhere(&self) -> bool {
        self.queries_anywhere
    }

    /// True when `tools/list` responses may change (or must be read).
    pub fn rewrites_listings(&self) -> bool {
        self.annotate_tools
            || (self.trim_anywhere && self.trim.advertise_intent)
            || self.queries_anywhere
            || self.paging_anywhere
    }

    /// The tool arguments taken out of `tools/call` requests before they
    /// reach the server: the advertised intent and query arguments.
    pub fn stripped_arguments(&self) -> &[String] {
        &self.stripped_arguments
    }

    /// Some `servers[]` entry exists, so a stream's route, cluster and
    /// authority are worth reading.
    pub fn matches_servers(&self) -> bool {
        !self.servers.is_empty()
    }

    /// A name for a server scope that outlives a configuration reload
    /// (which may reorder `servers[]`): `top`, or a hash of the matcher.
    pub fn scope_label(&self, scope: ServerScope) -> String {
        let Some(server) = scope.0.and_then(|i| self.servers.get(i)) else {
            return "top".to_string();
        };
        let m = &server.matcher;
        // FNV-1a over the matcher's fields: a stable name, not a secret.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for field in [&m.route, &m.cluster, &m.authority] {
            for byte in field.as_deref().unwrap_or("\u{0}").bytes().chain([0xff]) {
                hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
            }
        }
        format!("{hash:016x}")
    }

    /// The first `servers[]` entry whose every given key matches the stream.
    pub fn server_for(&self, stream: &StreamInfo) -> ServerScope {
        ServerScope(self.servers.iter().position(|s| s.matcher.matches(stream)))
    }

    /// Resolves the policy for one tool (or none, for a tool the request did
    /// not name) on a stream of the given server scope.
    pub fn policy(&self, scope: ServerScope, tool: Option<&str>) -> Policy {
        let server = scope.0.and_then(|i| self.servers.get(i));
        let mut layers: Vec<&Patch> = vec![&self.base];
        if let Some(s) = server {
            layers.push(&s.patch);
        }
        if let Some(t) = tool {
            if let Some(p) = self.tools.get(t) {
                layers.push(p);
            }
            if let Some(p) = server.and_then(|s| s.tools.get(t)) {
                layers.push(p);
            }
        }
        let mut toon = ToonSettings::default();
        let mut clean = CleanSettings::default();
        let mut trim = false;
        let mut budget = None;
        let mut paging = false;
        let mut reissue = Reissue::default();
        let mut project = ProjectPolicy::default();
        for layer in layers {
            toon.apply(&layer.toon);
            layer.clean.apply(&mut clean);
            trim = layer.trim.enabled.unwrap_or(trim);
            budget = layer.budget.resolve().unwrap_or(budget);
            paging = layer.paging.enabled.unwrap_or(paging);
            reissue = layer.paging.reissue.unwrap_or(reissue);
            layer.project.apply(&mut project);
        }
        Policy {
            toon,
            clean,
            trim,
            budget,
            paging,
            reissue,
            project,
        }
    }
}

fn validate_tools(tools: &HashMap<String, Patch>, path: &str) -> Result<(), ConfigError> {
    // Sorted so the first error reported does not depend on hash order.
    let mut names: Vec<&String> = tools.keys().collect();
    names.sort();
    for name in names {
        if let Some(p) = tools.get(name) {
            p.validate(&format!("{path}.{name}"))?;
        }
    }
    Ok(())
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

/// serde appends " at line L column C" to its messages; the field path says
/// more to an operator than a position in a one-line JSON string.
fn clean_serde_message(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message.get(..i).unwrap_or(message).to_string(),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests;
