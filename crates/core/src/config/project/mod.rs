//! The `project` section: operator field rules (`keep`, `drop`) and agent
//! queries (`queries`), overridable per server and per tool; the query
//! argument's name, its length limit and the budget a query runs within are
//! one per plugin.
//!
//! Off by default: no rule, and the query argument is neither advertised
//! nor taken out of requests, so no byte changes.

pub(crate) mod path;

use serde::Deserialize;

pub use path::{Path, Paths, Step, MAX_PATHS};

use super::ConfigError;

/// One layer's `project` settings as written; absent fields inherit.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProjectPatch {
    pub(crate) keep: Option<Paths>,
    pub(crate) drop: Option<Paths>,
    pub(crate) queries: Option<bool>,
}

/// The top-level `project` section: a patch plus the global fields.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectSection {
    pub(crate) keep: Option<Paths>,
    pub(crate) drop: Option<Paths>,
    pub(crate) queries: Option<bool>,
    pub(crate) query_argument: Option<String>,
    pub(crate) max_query_bytes: Option<u64>,
    pub(crate) query_work_per_byte: Option<u64>,
    pub(crate) query_work_floor: Option<u64>,
    pub(crate) query_memory_per_byte: Option<u64>,
    pub(crate) query_memory_floor: Option<u64>,
}

/// The resolved global fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectSettings {
    pub query_argument: String,
    pub max_query_bytes: usize,
    pub query_budget: QueryBudget,
}

impl Default for ProjectSettings {
    fn default() -> Self {
        Self {
            query_argument: "jmespath".into(),
            max_query_bytes: 1024,
            query_budget: QueryBudget::default(),
        }
    }
}

/// What one agent query may spend on one block, enforced while it runs
/// (`stage::project::query`): units of work (nodes evaluated, elements
/// touched, comparisons, bytes scanned in 16s) and bytes of the values it
/// makes, each `per_byte` times the block's size plus `floor`. A query
/// past either stops there (`query_budget`) and the block goes on as the
/// other stages left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryBudget {
    pub work_per_byte: u64,
    pub work_floor: u64,
    pub memory_per_byte: u64,
    pub memory_floor: u64,
}

impl Default for QueryBudget {
    fn default() -> Self {
        Self {
            work_per_byte: DEFAULT_WORK_PER_BYTE,
            work_floor: DEFAULT_WORK_FLOOR,
            memory_per_byte: DEFAULT_MEMORY_PER_BYTE,
            memory_floor: DEFAULT_MEMORY_FLOOR,
        }
    }
}

impl QueryBudget {
    /// Units of work a query may spend on a block of `block` bytes.
    pub fn work(&self, block: usize) -> u64 {
        scaled(self.work_per_byte, block, self.work_floor)
    }

    /// Bytes of values a query may make on a block of `block` bytes.
    pub fn memory(&self, block: usize) -> u64 {
        scaled(self.memory_per_byte, block, self.memory_floor)
    }
}

fn scaled(per_byte: u64, block: usize, floor: u64) -> u64 {
    per_byte
        .saturating_mul(u64::try_from(block).unwrap_or(u64::MAX))
        .saturating_add(floor)
}

// The defaults, from measurement (README "Bounds"): the queries of the
// README, the e2e suite and the bench corpus spend at most 1.65 units of
// work and 2.0 bytes of memory per byte of their block (the bench's
// costliest, every row's text sorted), most under 0.1 and 0.9; a unit
// takes 50 to 100 ns natively. So twice the most any of them spends, plus
// a floor for small blocks (about 0.1 s of work, 1 MiB).
const DEFAULT_WORK_PER_BYTE: u64 = 4;
const DEFAULT_WORK_FLOOR: u64 = 1 << 20;
const DEFAULT_MEMORY_PER_BYTE: u64 = 4;
const DEFAULT_MEMORY_FLOOR: u64 = 1 << 20;

/// The allowed ranges: at the top of each, a query on a 1 MiB block may
/// take some seconds and 48 MiB, which is as far as an operator should go
/// on a VM every stream of the worker shares.
const WORK_PER_BYTE: (u64, u64) = (1, 64);
const WORK_FLOOR: (u64, u64) = (0, 1 << 24);
const MEMORY_PER_BYTE: (u64, u64) = (1, 32);
const MEMORY_FLOOR: (u64, u64) = (0, 16 << 20);

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
            query_budget: QueryBudget::default(),
        };
        let range = |field: &str, v: Option<u64>, d: u64, (lo, hi): (u64, u64), unit: &str| match v
        {
            None => Ok(d),
            Some(v) if (lo..=hi).contains(&v) => Ok(v),
            Some(v) => Err(ConfigError::out_of_range(
                &format!("project.{field}"),
                v,
                &format!("{lo}..={hi} ({unit})"),
            )),
        };
        let b = QueryBudget::default();
        let s = ProjectSettings {
            query_budget: QueryBudget {
                work_per_byte: range(
                    "query_work_per_byte",
                    self.query_work_per_byte,
                    b.work_per_byte,
                    WORK_PER_BYTE,
                    "units of work per byte of the block",
                )?,
                work_floor: range(
                    "query_work_floor",
                    self.query_work_floor,
                    b.work_floor,
                    WORK_FLOOR,
                    "units of work",
                )?,
                memory_per_byte: range(
                    "query_memory_per_byte",
                    self.query_memory_per_byte,
                    b.memory_per_byte,
                    MEMORY_PER_BYTE,
                    "bytes per byte of the block",
                )?,
                memory_floor: range(
                    "query_memory_floor",
                    self.query_memory_floor,
                    b.memory_floor,
                    MEMORY_FLOOR,
                    "bytes",
                )?,
            },
            ..s
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
