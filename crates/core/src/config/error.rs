//! Configuration errors name the field path and, where there is a closed set,
//! the allowed values, so an operator reading Envoy's log can fix the
//! plugin configuration without reading this code.

use std::fmt;

/// A refused configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Dotted path of the offending field, e.g. `servers[0].toon.mode`.
    pub field: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl ConfigError {
    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }

    pub(crate) fn out_of_range(field: &str, value: impl fmt::Display, allowed: &str) -> Self {
        Self::new(
            field,
            format!("{value} is out of range; allowed: {allowed}"),
        )
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "mcp-toon configuration: {}", self.message)
        } else {
            write!(
                f,
                "mcp-toon configuration: {}: {}",
                self.field, self.message
            )
        }
    }
}

impl std::error::Error for ConfigError {}
