//! Secret fields: `paging.key`, `marker_key`, `trim.client_id` and
//! `trim.client_secret`.
//!
//! Each is written either as its value or as the name of an environment
//! variable of the VM that holds it:
//!
//! ```json
//! "marker_key": "…", "paging": { "key": { "env": "MCP_TOON_PAGING_KEY" } }
//! ```
//!
//! Envoy shows the plugin configuration in its admin `/config_dump`; it
//! does not show the values of the variables `vm_config.environment_variables`
//! names in `host_env_keys` (variables of Envoy's own environment), which
//! the plugin reads through WASI `environ_get` ([`ProcessEnviron`]).
//! `paging.key` may also be a list, for rotation: the first key seals, any
//! opens.
//!
//! No message about a secret quotes what was written: serde's own errors
//! quote offending values (`invalid type: integer `1234``), so a secret is
//! taken as raw JSON text and read here, where every refusal is a fixed
//! sentence; an error serde raises inside one (a bad escape) is replaced by
//! that sentence too ([`is_secret_path`]).

use serde_json::value::RawValue;
use serde_json::Value;

use super::ConfigError;

/// A secret field as written: its JSON text, read by [`one`] or [`list`].
pub(crate) type Written = Box<RawValue>;

/// The environment secrets are read from.
pub(crate) trait Environ {
    /// The variable's value; `None` when unset or not UTF-8.
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment: in the plugin, the VM's WASI environment
/// (`environ_get`), which Envoy fills from `vm_config.environment_variables`;
/// natively (the CLI, tests), the process's own.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ProcessEnviron;

impl Environ for ProcessEnviron {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

/// What every refusal of a secret's shape says (and all it says).
pub(crate) const SHAPE: &str =
    "must be a string, or {\"env\": \"NAME\"} naming an environment variable of the VM";
const LIST_SHAPE: &str =
    "must be a string, {\"env\": \"NAME\"}, or a list of 1-8 of those (the first seals, any opens)";
/// Most keys accepted at once.
pub(crate) const MAX_KEYS: usize = 8;

/// A variable name as POSIX shells write them: a letter or `_`, then
/// letters, digits and `_`, at most 128.
fn valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    let first = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
    first && name.len() <= 128 && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// One secret's value: a string as itself, `{"env": NAME}` from the
/// environment. Messages name the field and, for a variable, the variable
/// — never a value; `None` for any other shape.
fn resolve(value: &Value, field: &str, env: &dyn Environ) -> Option<Result<String, ConfigError>> {
    let name = match value {
        Value::String(s) => return Some(Ok(s.clone())),
        Value::Object(m) if m.len() == 1 => m.get("env")?.as_str()?,
        _ => return None,
    };
    if !valid_name(name) {
        return Some(Err(ConfigError::new(
            field,
            "`env` must name an environment variable: a letter or `_`, then letters, digits or `_`, at most 128 (not the secret itself)",
        )));
    }
    Some(match env.var(name) {
        Some(v) if !v.is_empty() => Ok(v),
        Some(_) => Err(ConfigError::new(
            field,
            format!("environment variable `{name}` is empty in the VM"),
        )),
        None => Err(ConfigError::new(
            field,
            format!(
                "environment variable `{name}` is not set in the VM (Envoy: vm_config.environment_variables)"
            ),
        )),
    })
}

/// The JSON value of a secret as written (valid JSON: serde checked it).
fn parsed(written: &Written) -> Value {
    serde_json::from_str(written.get()).unwrap_or(Value::Null)
}

/// A single secret's value.
pub(crate) fn one(
    written: &Written,
    field: &str,
    env: &dyn Environ,
) -> Result<String, ConfigError> {
    resolve(&parsed(written), field, env).unwrap_or_else(|| Err(ConfigError::new(field, SHAPE)))
}

/// A secret or a list of them (`paging.key`), the sealing one first.
pub(crate) fn list(
    written: &Written,
    field: &str,
    env: &dyn Environ,
) -> Result<Vec<String>, ConfigError> {
    let refused = || ConfigError::new(field, LIST_SHAPE);
    match parsed(written) {
        Value::Array(items) => {
            if items.is_empty() || items.len() > MAX_KEYS {
                return Err(refused());
            }
            items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    resolve(v, &format!("{field}[{i}]"), env).unwrap_or_else(|| Err(refused()))
                })
                .collect()
        }
        v => resolve(&v, field, env)
            .unwrap_or_else(|| Err(refused()))
            .map(|s| vec![s]),
    }
}

/// Whether the field at `path` (as serde_path_to_error spells it) is a
/// secret or inside one: an error serde raises there (a syntax error
/// inside its string) says only [`SHAPE`].
pub(crate) fn is_secret_path(path: &str) -> bool {
    const FIELDS: [&str; 4] = [
        "paging.key",
        "marker_key",
        "trim.client_secret",
        "trim.client_id",
    ];
    FIELDS.iter().any(|f| {
        path.strip_prefix(f)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
    })
}
