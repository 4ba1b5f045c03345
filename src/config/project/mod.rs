//! The `project` section: operator field rules (`keep`, `drop`) and agent
//! queries (`queries`), overridable per server and per tool; the query
//! argument's name and length limit are one per plugin.
//!
//! Off by default: no rule, and the query argument is neither advertised
//! nor taken out of requests, so no byte changes.

pub mod path;

use serde::Deserialize;

pub use path::{Path, Paths, Step, MAX_PATHS};

use super::ConfigError;

/// One layer's `project` settings as written; absent fields inherit.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProjectPatch {
    pub keep: Option<Paths>,
    pub drop: Option<Paths>,
    pub queries: Option<bool>,
}

/// The top-level `project` section: a patch plus the global fields.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectSection {
    pub keep: Option<Paths>,
    pub drop: Option<Paths>,
    pub queries: Option<bool>,
    pub query_argument: Option<String>,
    pub max_query_bytes: Option<u64>,
}

/// The resolved global fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectSettings {
    pub query_argument: String,
    pub max_query_bytes: usize,
}

impl Default for ProjectSettings {
    fn default() -> Self {
        Self {
            query_argument: "jmespath".into(),
            max_query_bytes: 1024,
        }
    }
}

/// Compiled rules of one policy; empty lists mean "no rule".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    pub keep: Paths,
    pub drop: Paths,
}

impl Rules {
    pub fn is_empty(&self) -> bool {
        self.keep.is_empty() && self.drop.is_empty()
    }
}

/// What the project stage does for one tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectPolicy {
    pub rules: Rules,
    pub queries: bool,
}

impl ProjectSection {
    /// Splits into the patch of the top layer and the global settings.
    pub(crate) fn resolve(self) -> Result<(ProjectPatch, ProjectSettings), ConfigError> {
        let patch = ProjectPatch {
            keep: self.keep,
            drop: self.drop,
            queries: self.queries,
        };
        let d = ProjectSettings::default();
        let s = ProjectSettings {
            query_argument: self.query_argument.unwrap_or(d.query_argument),
            max_query_bytes: match self.max_query_bytes {
                None => d.max_query_bytes,
                Some(v) if (16..=4096).contains(&v) => usize::try_from(v).unwrap_or(4096),
                Some(v) => {
                    return Err(ConfigError::out_of_range(
                        "project.max_query_bytes",
                        v,
                        "16..=4096 (bytes)",
                    ))
                }
            },
        };
        let a = &s.query_argument;
        let ident = !a.is_empty()
            && a.len() <= 64
            && a.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ident {
            return Err(ConfigError::new(
                "project.query_argument",
                "must be 1-64 characters of letters, digits, `_` or `-`",
            ));
        }
        Ok((patch, s))
    }
}

impl ProjectPatch {
    /// Overrides `policy` with the fields this layer names. The paths were
    /// parsed (and refused, with their field) when the configuration was
    /// read; a layer's list replaces the inherited one.
    pub(crate) fn apply(&self, policy: &mut ProjectPolicy) {
        if let Some(keep) = &self.keep {
            policy.rules.keep = keep.clone();
        }
        if let Some(drop) = &self.drop {
            policy.rules.drop = drop.clone();
        }
        if let Some(q) = self.queries {
            policy.queries = q;
        }
    }
}
