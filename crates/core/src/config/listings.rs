//! The `listings` section: what the plugin does to `tools/list` results
//! (docs/listings.md). `mode`, `level`, `hot` and `max_description_bytes`
//! may be overridden per server (`servers[].listings`); the names of the
//! tools the plugin adds and the limits of what it keeps are one per
//! plugin, like `paging`'s. One struct is read in both places (each
//! derived reader costs the module kilobytes); a server entry that sets a
//! plugin-wide field is refused by name.

use serde_json::value::RawValue;
use serde_json::Value;

use super::{ConfigError, ServerScope, Settings};

/// `listings.mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ListingMode {
    /// Listings pass byte-identical.
    #[default]
    Off,
    /// Every tool listed, its definition compacted to `level`, and the
    /// describe tool added.
    Compact,
    /// The `hot` tools listed in full, with the search, call and describe
    /// tools: every other tool is found by searching.
    Disclose,
}

impl ListingMode {}

/// `listings.level`: how much of a tool definition a compact listing (and
/// a search result) keeps. Each level drops what the one before it drops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Schema noise out of `inputSchema`: `$schema` (where the schema
    /// means the same without it), `additionalProperties: false`,
    /// `title`, `examples`, `default`, `$comment`.
    Light,
    /// Also every `description` inside `inputSchema`, the annotation
    /// keywords of `outputSchema` (`description`, `title`, `examples`,
    /// `$comment`), and the tool description cut to its first sentence.
    #[default]
    Medium,
    /// Also the tool description cut to `max_description_bytes`.
    High,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::Light, Level::Medium, Level::High];

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Light => "light",
            Level::Medium => "medium",
            Level::High => "high",
        }
    }
}

pub(crate) const DEFAULT_SEARCH_TOOL: &str = "mcp_toon_search_tools";
pub(crate) const DEFAULT_CALL_TOOL: &str = "mcp_toon_call_tool";
pub(crate) const DEFAULT_DESCRIBE_TOOL: &str = "mcp_toon_describe";
/// Most `hot` tools one layer names.
const MAX_HOT: usize = 256;

/// One layer's `listings` switches (a `servers[]` entry's, or the top
/// level's share of the section).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListingsPatch {
    pub(crate) mode: Option<ListingMode>,
    pub(crate) level: Option<Level>,
    pub(crate) hot: Option<Vec<String>>,
    pub(crate) max_description_bytes: Option<u64>,
}

/// The `listings` section as written (top level, or a `servers[]` entry).
/// Read by hand from its JSON text ([`ListingsSection::read`]), with the
/// messages serde gives the other sections: a derived reader under
/// serde_path_to_error cost the module some 25 KB.
#[derive(Debug, Clone, Default)]
pub struct ListingsSection {
    pub(crate) mode: Option<ListingMode>,
    pub(crate) level: Option<Level>,
    pub(crate) hot: Option<Vec<String>>,
    pub(crate) max_description_bytes: Option<u64>,
    pub(crate) search_tool: Option<String>,
    pub(crate) call_tool: Option<String>,
    pub(crate) describe_tool: Option<String>,
    pub(crate) max_tools: Option<u64>,
    pub(crate) max_listing_bytes: Option<u64>,
    pub(crate) ttl_s: Option<u64>,
    pub(crate) search_results: Option<u64>,
    pub(crate) max_search_results: Option<u64>,
}

/// What one server scope does to its listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingPolicy {
    pub mode: ListingMode,
    pub level: Level,
    /// Tools a disclosed listing carries in full, in this order.
    pub hot: Vec<String>,
    /// A tool description's most bytes at `level: high`.
    pub max_description_bytes: usize,
}

impl Default for ListingPolicy {
    fn default() -> Self {
        Self {
            mode: ListingMode::Off,
            level: Level::Medium,
            hot: Vec::new(),
            max_description_bytes: 120,
        }
    }
}

/// The resolved section: the tools the plugin adds, the limits of a kept
/// listing, and each server scope's policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingsSettings {
    pub search_tool: String,
    pub call_tool: String,
    pub describe_tool: String,
    /// Most tools kept of one server scope's listing; past it the listing
    /// passes as the server sent it.
    pub max_tools: usize,
    /// Most bytes of one server scope's kept listing (its tools' JSON).
    pub max_listing_bytes: usize,
    /// How long a kept listing is used, at most (a 2026-07-28 server's
    /// `ttlMs` may shorten it).
    pub ttl_s: u64,
    /// Tools a search returns when the agent gives no `limit`.
    pub search_results: usize,
    /// Most tools a search returns, whatever `limit` asks.
    pub max_search_results: usize,
    /// Index 0: no `servers[]` entry matched; then each entry.
    policies: Vec<ListingPolicy>,
}

impl Default for ListingsSettings {
    fn default() -> Self {
        Self {
            search_tool: DEFAULT_SEARCH_TOOL.into(),
            call_tool: DEFAULT_CALL_TOOL.into(),
            describe_tool: DEFAULT_DESCRIBE_TOOL.into(),
            max_tools: 4096,
            max_listing_bytes: 4 << 20,
            ttl_s: 3600,
            search_results: 5,
            max_search_results: 20,
            policies: Vec::new(),
        }
    }
}

static OFF: ListingPolicy = ListingPolicy {
    mode: ListingMode::Off,
    level: Level::Medium,
    hot: Vec::new(),
    max_description_bytes: 120,
};

impl ListingsSettings {
    #[cfg(test)]
    /// The settings of `{}`: the defaults, with the one scope a
    /// configuration without `servers[]` has.
    pub(crate) fn from_json_defaults() -> Self {
        Self {
            policies: vec![ListingPolicy::default()],
            ..Self::default()
        }
    }

    /// The policy of one server scope.
    pub(crate) fn policy(&self, scope: ServerScope) -> &ListingPolicy {
        let i = scope.0.map_or(0, |i| i + 1);
        self.policies.get(i).unwrap_or(&OFF)
    }

    /// A name for a server scope in a shared-data key: `d` when no
    /// `servers[]` entry matched, else the entry's index.
    pub fn scope_name(scope: ServerScope) -> String {
        scope.0.map_or_else(|| "d".to_string(), |i| i.to_string())
    }

    /// The configuration path of the first layer whose mode is not `off`
    /// (`listings.mode`, or a `servers[]` entry's), for a host's refusal.
    #[cfg(any(test, feature = "traefik"))]
    pub(crate) fn first_on(&self) -> Option<String> {
        let i = self
            .policies
            .iter()
            .position(|p| p.mode != ListingMode::Off)?;
        Some(match i.checked_sub(1) {
            None => "listings.mode".to_string(),
            Some(server) => format!("servers[{server}].listings.mode"),
        })
    }

    /// Some scope changes its listings.
    pub fn anywhere(&self) -> bool {
        self.policies.iter().any(|p| p.mode != ListingMode::Off)
    }

    /// The names of the tools the plugin adds, for a check that a server
    /// tool does not shadow them.
    pub fn injected(&self) -> [&str; 3] {
        [&self.search_tool, &self.call_tool, &self.describe_tool]
    }
}

impl Settings {
    /// What the stream's server scope does to `tools/list` results.
    pub fn listing_policy(&self, scope: ServerScope) -> &ListingPolicy {
        self.listings.policy(scope)
    }
}

/// MCP 2025-11-25 "Tool names": 1-128 of A-Z a-z 0-9 `_` `-` `.`.
fn valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

impl ListingsPatch {
    fn validate(&self, path: &str) -> Result<(), ConfigError> {
        if let Some(hot) = &self.hot {
            if hot.len() > MAX_HOT {
                return Err(ConfigError::out_of_range(
                    &format!("{path}.hot"),
                    format!("{} names", hot.len()),
                    "0..=256 tool names",
                ));
            }
            for (i, name) in hot.iter().enumerate() {
                // Servers name tools as they like; a name only has to be
                // one a listing can hold and a log line can show.
                if name.is_empty() || name.len() > 256 || name.chars().any(char::is_control) {
                    return Err(ConfigError::new(
                        format!("{path}.hot[{i}]"),
                        "must be a tool name of 1-256 bytes without control characters",
                    ));
                }
            }
        }
        if let Some(v) = self.max_description_bytes {
            if !(16..=65_536).contains(&v) {
                return Err(ConfigError::out_of_range(
                    &format!("{path}.max_description_bytes"),
                    v,
                    "16..=65536 (bytes)",
                ));
            }
        }
        Ok(())
    }

    fn apply(&self, policy: &mut ListingPolicy) {
        policy.mode = self.mode.unwrap_or(policy.mode);
        policy.level = self.level.unwrap_or(policy.level);
        if let Some(hot) = &self.hot {
            policy.hot.clone_from(hot);
        }
        if let Some(v) = self.max_description_bytes {
            policy.max_description_bytes = usize::try_from(v).unwrap_or(usize::MAX);
        }
    }
}

const FIELDS: &str = "`mode`, `level`, `hot`, `max_description_bytes`, `search_tool`, `call_tool`, `describe_tool`, `max_tools`, `max_listing_bytes`, `ttl_s`, `search_results`, `max_search_results`";

impl ListingsSection {
    /// The section at `path` from its JSON text (`None`: absent).
    pub(crate) fn read(raw: Option<&RawValue>, path: &str) -> Result<ListingsSection, ConfigError> {
        let mut s = ListingsSection::default();
        let Some(raw) = raw else {
            return Ok(s);
        };
        // A key written twice is refused, as serde refuses a duplicate field.
        let members = crate::json::members(raw)
            .ok_or_else(|| ConfigError::new(path, "must be an object, each field named once"))?;
        for (key, value) in &members {
            let field = format!("{path}.{key}");
            let value: Value = serde_json::from_str(value.get())
                .map_err(|e| ConfigError::new(field.clone(), e.to_string()))?;
            let value = &value;
            let int = |v: &Value| {
                v.as_u64().ok_or_else(|| {
                    ConfigError::new(field.clone(), format!("invalid type: {v}, expected u64"))
                })
            };
            let string = |v: &Value| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    ConfigError::new(
                        field.clone(),
                        format!("invalid type: {v}, expected a string"),
                    )
                })
            };
            let variant = |v: &Value, names: &[&str]| {
                let word = string(v)?;
                names.iter().position(|n| *n == word).ok_or_else(|| {
                    let expected: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                    ConfigError::new(
                        field.clone(),
                        format!(
                            "unknown variant `{word}`, expected one of {}",
                            expected.join(", ")
                        ),
                    )
                })
            };
            match key.as_str() {
                "mode" => {
                    s.mode = Some(match variant(value, &["off", "compact", "disclose"])? {
                        0 => ListingMode::Off,
                        1 => ListingMode::Compact,
                        _ => ListingMode::Disclose,
                    })
                }
                "level" => {
                    s.level = Some(match variant(value, &["light", "medium", "high"])? {
                        0 => Level::Light,
                        1 => Level::Medium,
                        _ => Level::High,
                    })
                }
                "hot" => {
                    let names = value.as_array().ok_or_else(|| {
                        ConfigError::new(
                            field.clone(),
                            format!("invalid type: {value}, expected a sequence"),
                        )
                    })?;
                    let mut hot = Vec::with_capacity(names.len());
                    for (i, n) in names.iter().enumerate() {
                        let name = n.as_str().ok_or_else(|| {
                            ConfigError::new(
                                format!("{field}[{i}]"),
                                format!("invalid type: {n}, expected a string"),
                            )
                        })?;
                        hot.push(name.to_string());
                    }
                    s.hot = Some(hot);
                }
                "max_description_bytes" => s.max_description_bytes = Some(int(value)?),
                "search_tool" => s.search_tool = Some(string(value)?),
                "call_tool" => s.call_tool = Some(string(value)?),
                "describe_tool" => s.describe_tool = Some(string(value)?),
                "max_tools" => s.max_tools = Some(int(value)?),
                "max_listing_bytes" => s.max_listing_bytes = Some(int(value)?),
                "ttl_s" => s.ttl_s = Some(int(value)?),
                "search_results" => s.search_results = Some(int(value)?),
                "max_search_results" => s.max_search_results = Some(int(value)?),
                _ => {
                    return Err(ConfigError::new(
                        field,
                        format!("unknown field `{key}`, expected one of {FIELDS}"),
                    ))
                }
            }
        }
        Ok(s)
    }

    /// A `servers[]` entry sets only what a layer may set.
    fn only_layer_fields(&self, path: &str) -> Result<(), ConfigError> {
        let global = [
            ("search_tool", self.search_tool.is_some()),
            ("call_tool", self.call_tool.is_some()),
            ("describe_tool", self.describe_tool.is_some()),
            ("max_tools", self.max_tools.is_some()),
            ("max_listing_bytes", self.max_listing_bytes.is_some()),
            ("ttl_s", self.ttl_s.is_some()),
            ("search_results", self.search_results.is_some()),
            ("max_search_results", self.max_search_results.is_some()),
        ];
        match global.iter().find(|(_, set)| *set) {
            Some((field, _)) => Err(ConfigError::new(
                format!("{path}.{field}"),
                format!("is set once for the plugin, at the top level (`listings.{field}`); a server entry may set `mode`, `level`, `hot`, `max_description_bytes`"),
            )),
            None => Ok(()),
        }
    }

    fn patch(&self) -> ListingsPatch {
        ListingsPatch {
            mode: self.mode,
            level: self.level,
            hot: self.hot.clone(),
            max_description_bytes: self.max_description_bytes,
        }
    }

    /// Validates the section and each server's `listings`, and resolves
    /// every scope's policy. `hold_headers` and `page_tool`: the
    /// top-level settings the section depends on.
    pub(crate) fn resolve<'a>(
        &self,
        servers: impl Iterator<Item = &'a ListingsSection>,
        hold_headers: bool,
        page_tool: &str,
    ) -> Result<ListingsSettings, ConfigError> {
        let d = ListingsSettings::default();
        let top = self.patch();
        top.validate("listings")?;
        let mut base = ListingPolicy::default();
        top.apply(&mut base);
        let mut policies = vec![base.clone()];
        for (i, section) in servers.enumerate() {
            let path = format!("servers[{i}].listings");
            section.only_layer_fields(&path)?;
            let s = section.patch();
            s.validate(&path)?;
            let mut p = base.clone();
            s.apply(&mut p);
            policies.push(p);
        }
        let mut names = Vec::new();
        for (field, value, default) in [
            ("search_tool", &self.search_tool, d.search_tool),
            ("call_tool", &self.call_tool, d.call_tool),
            ("describe_tool", &self.describe_tool, d.describe_tool),
        ] {
            let name = value.clone().unwrap_or(default);
            let path = format!("listings.{field}");
            if !valid_tool_name(&name) {
                return Err(ConfigError::new(
                    path,
                    "must be 1-128 characters of letters, digits, `_`, `-` or `.`",
                ));
            }
            if name == page_tool || names.contains(&name) {
                return Err(ConfigError::new(
                    path,
                    format!("`{name}` is already the name of another tool the plugin adds; allowed: a name of its own"),
                ));
            }
            names.push(name);
        }
        let count =
            |field: &str, v: Option<u64>, default: usize, allowed: (u64, u64), unit: &str| {
                let v = v.unwrap_or(default as u64);
                if (allowed.0..=allowed.1).contains(&v) {
                    Ok(usize::try_from(v).unwrap_or(usize::MAX))
                } else {
                    Err(ConfigError::out_of_range(
                        &format!("listings.{field}"),
                        v,
                        &format!("{}..={} ({unit})", allowed.0, allowed.1),
                    ))
                }
            };
        let max_tools = count(
            "max_tools",
            self.max_tools,
            d.max_tools,
            (1, 65_536),
            "tools",
        )?;
        let max_listing_bytes = count(
            "max_listing_bytes",
            self.max_listing_bytes,
            d.max_listing_bytes,
            (1024, 64 << 20),
            "bytes",
        )?;
        let ttl_s = count(
            "ttl_s",
            self.ttl_s,
            d.ttl_s as usize,
            (1, 86_400),
            "seconds",
        )? as u64;
        let max_search_results = count(
            "max_search_results",
            self.max_search_results,
            d.max_search_results,
            (1, 100),
            "tools",
        )?;
        let search_results = count(
            "search_results",
            self.search_results,
            d.search_results.min(max_search_results),
            (1, max_search_results as u64),
            "tools, at most max_search_results",
        )?;
        let on = policies.iter().any(|p| p.mode != ListingMode::Off);
        if on && !hold_headers {
            // The describe and search tools are answered by the plugin: their
            // request headers must wait for the body, as a page call's do.
            let field = if top.mode.is_some_and(|m| m != ListingMode::Off) {
                "listings.mode".to_string()
            } else {
                let i = policies
                    .iter()
                    .skip(1)
                    .position(|p| p.mode != ListingMode::Off)
                    .unwrap_or(0);
                format!("servers[{i}].listings.mode")
            };
            return Err(ConfigError::new(
                field,
                "needs `hold_headers: true` (with `allow_on_headers_stop_iteration: true` in Envoy >= 1.35): the tools the plugin adds are answered before their headers reach the server",
            ));
        }
        let [search_tool, call_tool, describe_tool]: [String; 3] = names
            .try_into()
            .map_err(|_| ConfigError::new("listings", "three tool names"))?;
        Ok(ListingsSettings {
            search_tool,
            call_tool,
            describe_tool,
            max_tools,
            max_listing_bytes,
            ttl_s,
            search_results,
            max_search_results,
            policies,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StreamInfo;

    fn err(json: &str) -> ConfigError {
        match Settings::from_json(json) {
            Ok(_) => ConfigError::new("<accepted>", json),
            Err(e) => e,
        }
    }

    #[test]
    fn off_by_default() {
        let s = Settings::from_json("{}").unwrap();
        assert_eq!(
            s.listing_policy(ServerScope::default()).mode,
            ListingMode::Off
        );
        assert!(!s.listings.anywhere());
        assert_eq!(
            s.listings.injected(),
            [
                DEFAULT_SEARCH_TOOL,
                DEFAULT_CALL_TOOL,
                DEFAULT_DESCRIBE_TOOL
            ]
        );
        assert!(!s.rewrites_listings());
    }

    #[test]
    fn servers_override_the_top_level() {
        let s = Settings::from_json(
            r#"{"hold_headers":true,
                "listings":{"mode":"compact","level":"light","hot":["a"],"search_results":3},
                "servers":[{"match":{"cluster":"gh"},"listings":{"mode":"disclose","hot":["b","c"]}},
                           {"match":{"cluster":"fs"},"listings":{"mode":"off"}},
                           {"match":{"cluster":"git"},"listings":{"level":"high","max_description_bytes":64}}]}"#,
        )
        .unwrap();
        let scope = |c: &str| {
            s.server_for(&StreamInfo {
                cluster: Some(c.into()),
                ..StreamInfo::default()
            })
        };
        let top = s.listing_policy(ServerScope::default());
        assert_eq!(
            (top.mode, top.level, top.hot.clone()),
            (ListingMode::Compact, Level::Light, vec!["a".to_string()])
        );
        let gh = s.listing_policy(scope("gh"));
        assert_eq!(
            (gh.mode, gh.level, gh.hot.clone()),
            (
                ListingMode::Disclose,
                Level::Light,
                vec!["b".to_string(), "c".to_string()]
            )
        );
        assert_eq!(s.listing_policy(scope("fs")).mode, ListingMode::Off);
        let git = s.listing_policy(scope("git"));
        assert_eq!(
            (git.mode, git.level, git.max_description_bytes),
            (ListingMode::Compact, Level::High, 64)
        );
        assert_eq!(s.listings.search_results, 3);
        assert!(s.listings.anywhere());
    }

    /// docs/configuration.md's full example holds every field of the section at its
    /// default (config/tests.rs checks the other sections the same way).
    #[test]
    fn the_readme_example_is_every_field_at_its_default() {
        let readme = include_str!("../../../../docs/configuration.md");
        let at = readme
            .find("A full example, with every field at its default")
            .unwrap();
        let start = readme[at..].find("```json\n").unwrap() + at + 8;
        let end = readme[start..].find("```").unwrap() + start;
        let example: serde_json::Value = serde_json::from_str(&readme[start..end]).unwrap();
        let section = &example["listings"];
        let e = err(r#"{"listings":{"zz":1}}"#).to_string();
        let mut fields: Vec<&str> = e.split('`').skip(3).step_by(2).collect();
        fields.sort_unstable();
        let mut named: Vec<&str> = section
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        named.sort_unstable();
        assert_eq!(named, fields, "{e}");
        let s =
            Settings::from_json(&serde_json::json!({ "listings": section }).to_string()).unwrap();
        assert_eq!(s.listings, ListingsSettings::from_json_defaults());
    }

    #[test]
    fn bad_values_are_refused_with_the_field_and_what_is_allowed() {
        for (json, field, needle) in [
            (
                r#"{"listings":{"mode":"on"}}"#,
                "listings.mode",
                "`off`, `compact`, `disclose`",
            ),
            (
                r#"{"listings":{"level":"max"}}"#,
                "listings.level",
                "`light`, `medium`, `high`",
            ),
            (
                r#"{"listings":{"mode":"compact"}}"#,
                "listings.mode",
                "hold_headers",
            ),
            (
                r#"{"servers":[{"match":{"route":"r"},"listings":{"mode":"disclose"}}]}"#,
                "servers[0].listings.mode",
                "hold_headers",
            ),
            (
                r#"{"listings":{"hot":[""]}}"#,
                "listings.hot[0]",
                "1-256 bytes",
            ),
            (
                r#"{"servers":[{"match":{"route":"r"},"listings":{"hot":["a\u0000"]}}]}"#,
                "servers[0].listings.hot[0]",
                "control",
            ),
            (
                r#"{"listings":{"max_description_bytes":8}}"#,
                "listings.max_description_bytes",
                "16..=65536",
            ),
            (
                r#"{"listings":{"search_tool":"find tools"}}"#,
                "listings.search_tool",
                "letters",
            ),
            (
                r#"{"listings":{"describe_tool":"mcp_toon_page"}}"#,
                "listings.describe_tool",
                "another tool",
            ),
            (
                r#"{"listings":{"call_tool":"mcp_toon_search_tools"}}"#,
                "listings.call_tool",
                "another tool",
            ),
            (
                r#"{"listings":{"max_tools":0}}"#,
                "listings.max_tools",
                "1..=65536",
            ),
            (
                r#"{"listings":{"max_listing_bytes":10}}"#,
                "listings.max_listing_bytes",
                "1024..=",
            ),
            (r#"{"listings":{"ttl_s":0}}"#, "listings.ttl_s", "1..=86400"),
            (
                r#"{"listings":{"max_search_results":500}}"#,
                "listings.max_search_results",
                "1..=100",
            ),
            (
                r#"{"listings":{"max_search_results":4,"search_results":5}}"#,
                "listings.search_results",
                "1..=4",
            ),
            (
                r#"{"listings":{"hops":1}}"#,
                "listings.hops",
                "unknown field",
            ),
            (
                r#"{"servers":[{"match":{"route":"r"},"listings":{"search_tool":"x"}}]}"#,
                "servers[0].listings.search_tool",
                "at the top level",
            ),
            (
                r#"{"servers":[{"match":{"route":"r"},"listings":{"hops":1}}]}"#,
                "servers[0].listings.hops",
                "unknown field",
            ),
        ] {
            let e = err(json);
            assert_eq!(e.field, field, "{json}: {e}");
            assert!(e.message.contains(needle), "{json}: {e}");
        }
    }
}
