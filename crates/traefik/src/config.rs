//! The middleware's options as Traefik hands them to the guest
//! (`get_config`): the plugin's entry of a middleware in Traefik's dynamic
//! configuration, marshalled to JSON. Traefik's providers turn every
//! scalar into a string (`true` arrives as `"true"`, `1.5` as
//! `"1.500000"`, an empty map as `""`: measured with Traefik 3.7's file
//! provider), so the plugin's configuration cannot be written there as
//! YAML: it travels as one string, the same JSON the Envoy plugin reads
//! from `configuration.value`:
//!
//! ```yaml
//! plugin:
//!   mcp-toon:
//!     config: '{"hold_headers": true}'
//!     log_level: info
//! ```

use serde::Deserialize;

use mcp_toon_engine::config::{Capabilities, ConfigError, Settings};
use mcp_toon_engine::host::LogLevel;

/// The options, as Traefik sends them (every value a string).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    config: Option<String>,
    log_level: Option<String>,
}

/// What the options come to.
#[derive(Debug)]
pub struct Loaded {
    pub settings: Settings,
    /// The lowest level of the plugin's lines that reach Traefik's log
    /// (`None`: none). http-wasm's `log_enabled` cannot say: Traefik
    /// answers yes to every level and filters the line afterwards.
    pub log_level: Option<LogLevel>,
}

/// Reads the options: refused with the field's name when one is wrong,
/// when the configuration is, or when it asks for what this host cannot
/// do ([`Capabilities::HTTP_WASM`]). No options at all: every default.
pub fn load(bytes: &[u8]) -> Result<Loaded, ConfigError> {
    let options: Options = if bytes.iter().all(u8::is_ascii_whitespace) {
        Options::default()
    } else {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." { String::new() } else { path };
            ConfigError {
                field,
                message: format!(
                    "{}; allowed: `config` (the configuration JSON, as one string: Traefik passes every option as a string) and `log_level`",
                    strip_position(&e.into_inner().to_string())
                ),
            }
        })?
    };
    let log_level = match options.log_level.as_deref().map(str::trim) {
        None | Some("") | Some("warn") => Some(LogLevel::Warn),
        Some("debug") => Some(LogLevel::Debug),
        Some("info") => Some(LogLevel::Info),
        Some("off") => None,
        Some(_) => {
            return Err(ConfigError {
                field: "log_level".to_string(),
                message: "allowed: \"debug\", \"info\", \"warn\" (default), \"off\"".to_string(),
            })
        }
    };
    let settings =
        Settings::from_json(options.config.as_deref().unwrap_or("")).map_err(|e| ConfigError {
            field: prefixed(&e.field),
            message: e.message,
        })?;
    settings
        .check_host(&Capabilities::HTTP_WASM)
        .map_err(|e| ConfigError {
            field: prefixed(&e.field),
            message: e.message,
        })?;
    Ok(Loaded {
        settings,
        log_level,
    })
}

/// A field of the configuration JSON, named as the operator wrote it.
fn prefixed(field: &str) -> String {
    if field.is_empty() {
        "config".to_string()
    } else {
        format!("config.{field}")
    }
}

fn strip_position(message: &str) -> &str {
    message
        .rfind(" at line ")
        .and_then(|i| message.get(..i))
        .unwrap_or(message)
}

#[cfg(test)]
mod tests {
    use super::load;
    use mcp_toon_engine::host::LogLevel;

    #[test]
    fn no_options_mean_every_default() {
        for none in [&b""[..], b"  ", b"{}"] {
            let loaded = load(none).unwrap();
            assert_eq!(loaded.log_level, Some(LogLevel::Warn));
            assert!(!loaded.settings.hold_headers);
        }
    }

    #[test]
    fn the_configuration_travels_as_one_string() {
        let loaded = load(br#"{"config":"{\"hold_headers\": true}","log_level":"debug"}"#).unwrap();
        assert!(loaded.settings.hold_headers);
        assert_eq!(loaded.log_level, Some(LogLevel::Debug));
        assert_eq!(load(br#"{"log_level":"off"}"#).unwrap().log_level, None);
    }

    /// Each refusal names the field as the operator wrote it.
    #[test]
    fn refusals_name_the_field() {
        let cases: [(&[u8], &str, &str); 5] = [
            // The settings written as YAML: Traefik makes strings of them.
            (
                br#"{"hold_headers":"true"}"#,
                "hold_headers",
                "allowed: `config`",
            ),
            (br#"{"log_level":"loud"}"#, "log_level", "\"debug\""),
            (
                br#"{"config":"{\"toon\":{\"mode\":\"loud\"}}"}"#,
                "config.toon.mode",
                "loud",
            ),
            (
                br#"{"config":"{\"trim\":{\"enabled\":true}}"}"#,
                "config.trim.enabled",
                "Traefik",
            ),
            (br#"{"config":"nope"}"#, "config", ""),
        ];
        for (bytes, field, says) in cases {
            let e = load(bytes).unwrap_err();
            assert_eq!(e.field, field, "{}", String::from_utf8_lossy(bytes));
            assert!(e.message.contains(says), "{}", e.message);
        }
    }
}
