//! Plugin configuration: parsed once (serde, unknown fields refused), then
//! validated and resolved into [`Settings`]; a stream asks for the
//! [`Policy`] of one server and tool.
//!
//! Precedence, most specific first: the matching server's `tools` entry, the
//! top-level `tools` entry, the matching server, the top level, defaults.

mod budget;
mod clean;
mod error;
// Only hosts that lack something need the check; the Envoy module's code
// stays as it was.
#[cfg(any(test, feature = "traefik"))]
mod host;
mod listings;
pub mod project;
mod secret;
mod toon;
mod trim;

use std::collections::HashMap;

use serde::Deserialize;

pub use budget::{
    Budget, BudgetPatch, OwnerSource, PagingPatch, PagingSection, PagingSettings, ReissuePolicy,
    DEFAULT_PAGE_TOOL,
};
pub use clean::{CleanPatch, CleanSettings};
pub use error::ConfigError;
#[cfg(any(test, feature = "traefik"))]
pub use host::Capabilities;
pub use listings::{
    Level, ListingMode, ListingPolicy, ListingsPatch, ListingsSection, ListingsSettings,
};
pub use project::{
    ProjectPatch, ProjectPolicy, ProjectSection, ProjectSettings, QueryBudget, Rules,
};
pub(crate) use secret::{Environ, ProcessEnviron};
pub use toon::{Header, Mode, ToonPatch, ToonSettings, MARKER_PREFIX};
pub use trim::{TrimBlocks, TrimPatch, TrimSection, TrimSettings};

/// Default cap on a buffered body: Envoy's default
/// `per_connection_buffer_limit_bytes` is 1 MiB, and buffering past it resets
/// the stream, so the plugin stops below it by default.
pub(crate) const DEFAULT_MAX_BODY_BYTES: u64 = 1024 * 1024;
const MAX_BODY_BYTES_LIMIT: u64 = 256 * 1024 * 1024;
/// Default cap on one tool result read whole: a JSON response body or an
/// SSE event. Database tools answer with tables of several MiB, which are
/// the results agents pay the most tokens for. Such a body goes out in the
/// body callback that completes it, which continues: Envoy passes it on
/// without buffering it, so its size is not held to
/// `per_connection_buffer_limit_bytes` (only a body written into a paused
/// buffer is, which `max_body_bytes` bounds).
pub(crate) const DEFAULT_MAX_RESULT_BYTES: u64 = 16 * 1024 * 1024;
/// Default budget of the bytes all streams of one VM hold at once, with
/// the working memory their stages need ([`VM_WORK_FACTOR`]). proxy-wasm's
/// V8 host gives a module at most 1 GiB of linear memory, and an
/// allocation past it traps the VM (every stream on that worker fails):
/// the budget stays well below, leaving room for the allocator's
/// fragmentation and what is not counted (the module's own data, a query's
/// evaluation, host buffers handed in).
pub(crate) const DEFAULT_MAX_VM_HELD_BYTES: u64 = 256 * 1024 * 1024;
/// The most `max_vm_held_bytes` may be: three quarters of V8's 1 GiB.
const MAX_VM_HELD_BYTES_LIMIT: u64 = 768 * 1024 * 1024;
/// What the stages need while they run on a body, as a multiple of it
/// (`benches/stream_memory.rs`, 64 KiB to 16 MiB: 11.9x-12.1x for a
/// pretty-printed table, compacted then encoded; 6.4x for a table in one
/// SSE event; 2.6x for a compact table, encoded or cut with its pages; 1.0x
/// for text that passes). A stream may hold a body only if the VM's other
/// held bytes and this multiple of it fit the budget; a job waiting for its
/// callout is charged this multiple of its body.
pub const VM_WORK_FACTOR: usize = 12;
/// Slots of 2024-11-05 call records in shared data (every session's):
/// proxy-wasm cannot delete a key, so their number is fixed.
pub const LEGACY_SLOTS: u32 = 4096;
/// Slots of 2024-11-05 call records one session may hold at once.
pub(crate) const DEFAULT_LEGACY_SESSION_SLOTS: u64 = 64;
/// JSON-RPC ids and tool names: a UUID is 38 bytes quoted; MCP 2025-11-25
/// asks tool names of 1-128 characters.
pub(crate) const DEFAULT_MAX_NAME_BYTES: usize = 256;
/// Ten minutes: a legacy tool call rarely runs longer.
pub(crate) const DEFAULT_LEGACY_RECORD_TTL_MS: u64 = 600_000;

/// Everything one layer (top level, server, tool) may set for the stages.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Patch {
    #[serde(default)]
    pub(crate) toon: ToonPatch,
    #[serde(default)]
    pub(crate) clean: CleanPatch,
    #[serde(default)]
    pub(crate) trim: TrimPatch,
    #[serde(default)]
    pub(crate) budget: BudgetPatch,
    #[serde(default)]
    pub(crate) paging: PagingPatch,
    #[serde(default)]
    pub(crate) project: ProjectPatch,
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
    /// Read by hand ([`ListingsSection::read`]).
    listings: Option<Box<serde_json::value::RawValue>>,
    max_body_bytes: Option<u64>,
    max_event_bytes: Option<u64>,
    max_response_bytes: Option<u64>,
    max_vm_held_bytes: Option<u64>,
    legacy_session_slots: Option<u64>,
    strip_accept_encoding: Option<bool>,
    annotate_tools: Option<bool>,
    hold_headers: Option<bool>,
    max_id_bytes: Option<u64>,
    max_tool_name_bytes: Option<u64>,
    legacy_record_ttl_ms: Option<u64>,
    marker_key: Option<secret::Written>,
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
    listings: Option<Box<serde_json::value::RawValue>>,
    #[serde(default)]
    tools: HashMap<String, Patch>,
}

/// Which streams a `servers[]` entry applies to: every given key must equal
/// the stream's value.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Matcher {
    pub(crate) route: Option<String>,
    pub(crate) cluster: Option<String>,
    pub(crate) authority: Option<String>,
}

/// What the host knows about a stream that a server match can use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamInfo {
    pub route: Option<String>,
    pub cluster: Option<String>,
    pub authority: Option<String>,
}

impl StreamInfo {
    /// The server a stream reaches, as the plugin tells servers apart for
    /// what it learns from their listings (which tools are safe to call
    /// again, which declare the plugin's arguments themselves): its route,
    /// cluster and authority — two servers behind one cluster differ by
    /// authority or route — hashed to a fixed length (an authority is the
    /// client's to choose, and long ones must not grow what is kept).
    /// Not a secret: a name.
    pub fn server(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"mcp-toon/server/1\0");
        for part in [&self.route, &self.cluster] {
            h.update(part.as_deref().unwrap_or("").as_bytes());
            h.update([0]);
        }
        // RFC 9110 §4.2.3: the host is case-insensitive.
        let authority = self.authority.as_deref().unwrap_or("");
        h.update(authority.to_ascii_lowercase().as_bytes());
        let digest = h.finalize();
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(24);
        for b in digest.get(..12).unwrap_or_default() {
            for nibble in [b >> 4, b & 15] {
                out.push(char::from(
                    HEX.get(usize::from(nibble)).copied().unwrap_or(b'0'),
                ));
            }
        }
        out
    }
}

/// How long the parts of a request the plugin keeps may be. A client
/// chooses them, and each block and decision of the response carries a
/// copy of the id and the tool name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of the id's JSON text.
    pub(crate) id: usize,
    pub(crate) tool: usize,
    pub(crate) intent: usize,
}

impl Limits {
    /// No limit (tests and the CLI's own captures).
    pub(crate) const NONE: Limits = Limits {
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
    /// Largest request body read, and largest response body written into a
    /// paused Envoy buffer (held headers, a trim callout): Envoy holds those
    /// to `per_connection_buffer_limit_bytes`.
    pub max_body_bytes: usize,
    /// Largest SSE event the plugin holds to rewrite; larger ones stream
    /// through unmodified.
    pub max_event_bytes: usize,
    /// Largest JSON response body collected to rewrite; larger ones pass
    /// complete, unchanged.
    pub max_response_bytes: usize,
    /// Most bytes all streams of one VM may hold at once, counting the
    /// stages' working memory ([`VM_WORK_FACTOR`]); a stream that would pass
    /// it is not read further (`vm_memory_budget`).
    pub max_vm_held_bytes: usize,
    /// Most 2024-11-05 record slots one session holds at once: its calls
    /// take turns in them, so one session cannot take every slot.
    pub legacy_session_slots: usize,
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
    /// What `tools/list` results become, per server scope
    /// ([`Settings::listing_policy`]).
    pub listings: ListingsSettings,
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
            .field("max_response_bytes", &self.max_response_bytes)
            .field("max_vm_held_bytes", &self.max_vm_held_bytes)
            .field("legacy_session_slots", &self.legacy_session_slots)
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
    pub reissue: ReissuePolicy,
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

    /// Only a text that is a JSON value (or, where `clean.python_literal`
    /// reads them, a Python literal's `repr`) can change under this
    /// policy: compact JSON, null removal and TOON read JSON alone, and
    /// every stage that reads any text (the string transforms, the cap,
    /// trim, operator rules, the budget and its pages) is off. A text that
    /// is certainly neither then passes as it came, and need not be
    /// decoded.
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
            max_event_bytes: DEFAULT_MAX_RESULT_BYTES as usize,
            max_response_bytes: DEFAULT_MAX_RESULT_BYTES as usize,
            max_vm_held_bytes: DEFAULT_MAX_VM_HELD_BYTES as usize,
            legacy_session_slots: DEFAULT_LEGACY_SESSION_SLOTS as usize,
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
            listings: ListingsSettings::default(),
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

    /// Parses and validates the plugin configuration, secrets written as
    /// `{"env": NAME}` read from the process (in the plugin: the VM's WASI)
    /// environment. An empty text (Envoy passes none when `configuration`
    /// is absent) means all defaults.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        Self::from_json_in(text, &ProcessEnviron)
    }

    /// [`Settings::from_json`] with secrets read from `env`.
    pub(crate) fn from_json_in(text: &str, env: &dyn Environ) -> Result<Self, ConfigError> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let mut de = serde_json::Deserializer::from_str(text);
        let raw: RawConfig = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." { String::new() } else { path };
            // serde quotes offending values; a secret must not reach a log.
            // Secrets are read by their own visitor, which quotes nothing;
            // this also covers what fails around one (a bad escape).
            let message = if secret::is_secret_path(&field) {
                secret::SHAPE.to_string()
            } else {
                clean_serde_message(&e.into_inner().to_string())
            };
            ConfigError::new(field, message)
        })?;
        de.end()
            .map_err(|e| ConfigError::new("", format!("trailing characters: {e}")))?;
        Self::resolve(raw, env)
    }

    fn resolve(raw: RawConfig, env: &dyn Environ) -> Result<Self, ConfigError> {
        raw.toon.validate("toon")?;
        raw.clean.validate("clean")?;
        raw.budget.validate("budget")?;
        let trim_enabled = raw.trim.enabled;
        let trim = raw.trim.resolve(env)?;
        let paging = raw.paging.resolve(env)?;
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
        let max_event_bytes = raw.max_event_bytes.unwrap_or(DEFAULT_MAX_RESULT_BYTES);
        if !(1024..=MAX_BODY_BYTES_LIMIT).contains(&max_event_bytes) {
            return Err(ConfigError::out_of_range(
                "max_event_bytes",
                max_event_bytes,
                "1024..=268435456 (bytes)",
            ));
        }
        let max_response_bytes = raw.max_response_bytes.unwrap_or(DEFAULT_MAX_RESULT_BYTES);
        if !(1024..=MAX_BODY_BYTES_LIMIT).contains(&max_response_bytes) {
            return Err(ConfigError::out_of_range(
                "max_response_bytes",
                max_response_bytes,
                "1024..=268435456 (bytes)",
            ));
        }
        let max_vm_held_bytes = raw.max_vm_held_bytes.unwrap_or(DEFAULT_MAX_VM_HELD_BYTES);
        if !(1 << 20..=MAX_VM_HELD_BYTES_LIMIT).contains(&max_vm_held_bytes) {
            return Err(ConfigError::out_of_range(
                "max_vm_held_bytes",
                max_vm_held_bytes,
                "1048576..=805306368 (bytes; V8 gives a wasm VM at most 1 GiB)",
            ));
        }
        let legacy_session_slots = raw
            .legacy_session_slots
            .unwrap_or(DEFAULT_LEGACY_SESSION_SLOTS);
        if !(1..=u64::from(LEGACY_SLOTS)).contains(&legacy_session_slots) {
            return Err(ConfigError::out_of_range(
                "legacy_session_slots",
                legacy_session_slots,
                "1..=4096 (slots)",
            ));
        }
        let legacy_session_slots = usize::try_from(legacy_session_slots).unwrap_or(1);
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
        let marker_key = match raw.marker_key {
            Some(s) => secret::one(&s, "marker_key", env)?,
            None => String::new(),
        };
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
        let mut server_listings = Vec::with_capacity(raw.servers.len());
        for (i, s) in raw.servers.iter().enumerate() {
            let path = format!("servers[{i}].listings");
            server_listings.push(ListingsSection::read(s.listings.as_deref(), &path)?);
        }
        let listings = ListingsSection::read(raw.listings.as_deref(), "listings")?.resolve(
            server_listings.iter(),
            raw.hold_headers.unwrap_or(false),
            &paging.tool_name,
        )?;
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
            listings,
            paging_anywhere,
            budget_anywhere,
            paging,
            max_body_bytes: usize::try_from(max_body_bytes).unwrap_or(usize::MAX),
            max_event_bytes: usize::try_from(max_event_bytes).unwrap_or(usize::MAX),
            max_response_bytes: usize::try_from(max_response_bytes).unwrap_or(usize::MAX),
            max_vm_held_bytes: usize::try_from(max_vm_held_bytes).unwrap_or(usize::MAX),
            legacy_session_slots,
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
            || self.listings.anywhere()
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
        let mut reissue = ReissuePolicy::default();
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
