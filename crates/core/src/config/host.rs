//! What a host can do for the core, and the check that refuses, at load, a
//! configuration asking for something the host cannot do. One
//! configuration JSON serves every host; a field that cannot work on a host
//! is refused there by name, never silently ignored (README "Loading it in
//! Traefik" lists what each host lacks and what happens instead where a
//! field is accepted).

use super::{join, ConfigError, OwnerSource, Patch, ReissuePolicy, Settings};

/// The abilities the core's features depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The host's name in refusals (`Traefik (http-wasm)`).
    pub(crate) name: &'static str,
    /// HTTP calls of the plugin's own (proxy-wasm `proxy_http_call`): the
    /// trim stage's LLM endpoint, and a page re-issued to the server.
    pub(crate) callouts: bool,
    /// Random bytes an agent cannot predict (page ids, marker tags, record
    /// slots). Without them a page handle must be keyed by a secret the
    /// operator gives (`paging.key`).
    pub(crate) secret_random: bool,
    /// The stream's route and cluster names (Envoy's `xds.route_name`,
    /// `xds.cluster_name`), which `servers[].match` may name.
    pub(crate) stream_names: bool,
    /// The dynamic metadata the filters before the plugin set (Envoy's
    /// `metadata.filter_metadata` property), which `paging.owner` may name
    /// as a page's owner.
    pub(crate) metadata: bool,
    /// `listings` (docs/listings.md) is built into the module. The Traefik
    /// module leaves it out: no e2e through a real Traefik proves it yet,
    /// and the module is 89 KB smaller without it (README "Module size").
    pub(crate) listings: bool,
}

impl Capabilities {
    #[cfg(test)]
    /// Envoy's proxy-wasm host (and the hosts that implement proxy-wasm
    /// like it): everything the core uses.
    pub(crate) const ENVOY: Capabilities = Capabilities {
        name: "proxy-wasm",
        callouts: true,
        secret_random: true,
        stream_names: true,
        metadata: true,
        listings: true,
    };

    /// Traefik's http-wasm host (http-wasm-host-go on wazero): no HTTP
    /// client (the http-wasm handler ABI has none), no route or cluster
    /// names (the ABI has no properties), and WASI `random_get`
    /// from wazero's default source, which is deterministic — Traefik
    /// configures no other (`pkg/plugins/middlewarewasm.go`), so every
    /// instance draws the same sequence.
    pub const HTTP_WASM: Capabilities = Capabilities {
        name: "Traefik (http-wasm)",
        callouts: false,
        secret_random: false,
        stream_names: false,
        metadata: false,
        listings: false,
    };
}

impl Settings {
    /// Refuses a configuration that asks `host` for what it cannot do,
    /// naming the first field (in a stable order: the top level, `tools`
    /// by name, then `servers[]` in order) that asks for it.
    pub fn check_host(&self, host: &Capabilities) -> Result<(), ConfigError> {
        if !host.callouts {
            if let Some(path) = self.first_layer(|p| p.trim.enabled == Some(true)) {
                return Err(ConfigError::new(
                    join(&path, "trim.enabled"),
                    format!(
                        "the trim stage calls an LLM endpoint, and {} gives a plugin no HTTP calls; allowed here: false",
                        host.name
                    ),
                ));
            }
            let always = |p: &Patch| p.paging.reissue == Some(ReissuePolicy::Always);
            if let Some(path) = self.first_layer(always) {
                return Err(ConfigError::new(
                    join(&path, "paging.reissue"),
                    format!(
                        "a page is re-issued to the server with an HTTP call, and {} gives a plugin none; allowed here: \"auto\" (then a page the instance does not hold is answered with the page tool's error) or \"never\"",
                        host.name
                    ),
                ));
            }
            // Issue 37: the re-issue through the gateway's own listener is
            // an HTTP call too.
            if !self.paging.reissue_cluster.is_empty() {
                return Err(ConfigError::new(
                    "paging.reissue_cluster",
                    format!(
                        "a page is re-issued through this cluster with an HTTP call, and {} gives a plugin none; allowed here: \"\" (empty)",
                        host.name
                    ),
                ));
            }
        }
        // A page's owner read from metadata the host cannot give would make
        // every caller the same anonymous one (README "Who a page belongs
        // to"): refused rather than silently shared.
        if !host.metadata && matches!(self.paging.owner, OwnerSource::Metadata(_)) {
            return Err(ConfigError::new(
                "paging.owner",
                format!(
                    "{} gives a plugin no dynamic metadata, so every caller would be the same anonymous owner; allowed here: {{\"from\": \"credentials\"}} (default) or {{\"from\": \"header\", \"name\": ...}} (a header your authentication middleware sets)",
                    host.name
                ),
            ));
        }
        if !host.stream_names {
            for (i, s) in self.servers.iter().enumerate() {
                let named = [("route", &s.matcher.route), ("cluster", &s.matcher.cluster)];
                if let Some((field, _)) = named.iter().find(|(_, v)| v.is_some()) {
                    return Err(ConfigError::new(
                        format!("servers[{i}].match.{field}"),
                        format!(
                            "{} tells a plugin no route or cluster name, so this would never match; allowed here: `authority`",
                            host.name
                        ),
                    ));
                }
            }
        }
        if !host.listings {
            if let Some(path) = self.listings.first_on() {
                return Err(ConfigError::new(
                    path,
                    format!(
                        "the {} module is built without listings; allowed here: \"off\"",
                        host.name
                    ),
                ));
            }
        }
        if !host.secret_random && self.paging_anywhere() && self.paging.keys.is_empty() {
            return Err(ConfigError::new(
                "paging.key",
                format!(
                    "{} gives a plugin no unpredictable random bytes, so page ids are keyed by this secret: set 32 or more printable characters",
                    host.name
                ),
            ));
        }
        Ok(())
    }

    /// The path of the first layer for which `asks` holds (`""` for the top
    /// level).
    fn first_layer(&self, asks: impl Fn(&Patch) -> bool) -> Option<String> {
        let tools = |tools: &std::collections::HashMap<String, Patch>, path: &str| {
            let mut names: Vec<&String> = tools.keys().collect();
            names.sort();
            names
                .into_iter()
                .find(|n| tools.get(*n).is_some_and(&asks))
                .map(|n| join(path, &format!("tools.{n}")))
        };
        if asks(&self.base) {
            return Some(String::new());
        }
        if let Some(path) = tools(&self.tools, "") {
            return Some(path);
        }
        self.servers.iter().enumerate().find_map(|(i, s)| {
            let path = format!("servers[{i}]");
            if asks(&s.patch) {
                Some(path)
            } else {
                tools(&s.tools, &path)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Capabilities;
    use crate::config::Settings;

    const KEY: &str = "0123456789abcdef0123456789abcdef";

    fn check(json: &str) -> Result<(), (String, String)> {
        let settings = Settings::from_json(json).map_err(|e| (e.field, e.message))?;
        settings
            .check_host(&Capabilities::HTTP_WASM)
            .map_err(|e| (e.field, e.message))
    }

    /// Everything proxy-wasm accepts passes its own check.
    #[test]
    fn envoy_refuses_nothing_the_configuration_accepts() {
        for json in [
            r#"{"trim":{"enabled":true,"cluster":"llm"}}"#,
            r#"{"hold_headers":true,"budget":{"tokens":500},"paging":{"enabled":true,"reissue":"always"}}"#,
            "",
        ] {
            let s = Settings::from_json(json).unwrap();
            assert_eq!(s.check_host(&Capabilities::ENVOY), Ok(()), "{json}");
        }
    }

    /// Listings are refused on Traefik by the first layer that turns them
    /// on; Envoy takes them.
    #[test]
    fn listings_are_refused_on_traefik_where_they_are_turned_on() {
        let cases = [
            (
                r#"{"hold_headers":true,"listings":{"mode":"compact"}}"#,
                "listings.mode",
            ),
            (
                r#"{"hold_headers":true,"servers":[{"match":{"authority":"a"}},{"match":{"authority":"b"},"listings":{"mode":"disclose"}}]}"#,
                "servers[1].listings.mode",
            ),
        ];
        for (json, field) in cases {
            let (got, message) = check(json).unwrap_err();
            assert_eq!(got, field, "{json}");
            assert!(message.contains("allowed here: \"off\""), "{message}");
            let s = Settings::from_json(json).unwrap();
            assert_eq!(s.check_host(&Capabilities::ENVOY), Ok(()), "{json}");
        }
        assert_eq!(check(r#"{"listings":{"mode":"off"}}"#), Ok(()));
    }

    /// Trim anywhere is refused by the path of the first layer that turns
    /// it on, and the message says what is allowed.
    #[test]
    fn trim_is_refused_where_it_is_turned_on() {
        let cases = [
            (r#"{"trim":{"enabled":true}}"#, "trim.enabled"),
            (
                r#"{"tools":{"b":{"trim":{"enabled":true}},"a":{"trim":{"enabled":true}}}}"#,
                "tools.a.trim.enabled",
            ),
            (
                r#"{"servers":[{"match":{"route":"r"}},{"match":{"route":"s"},"tools":{"t":{"trim":{"enabled":true}}}}]}"#,
                "servers[1].tools.t.trim.enabled",
            ),
            (
                r#"{"servers":[{"match":{"route":"r"},"trim":{"enabled":true}}]}"#,
                "servers[0].trim.enabled",
            ),
        ];
        for (json, field) in cases {
            let (got, message) = check(json).unwrap_err();
            assert_eq!(got, field, "{json}");
            assert!(message.contains("Traefik (http-wasm)"), "{message}");
            assert!(message.contains("allowed here: false"), "{message}");
        }
        // Turned off everywhere it is named: accepted.
        assert_eq!(check(r#"{"trim":{"enabled":false}}"#), Ok(()));
    }

    /// Paging needs its key on a host without secret randomness, and cannot
    /// re-issue a page.
    #[test]
    fn paging_needs_a_key_and_no_reissue() {
        let paging = r#"{"hold_headers":true,"budget":{"tokens":500},"paging":{"enabled":true}}"#;
        let (field, message) = check(paging).unwrap_err();
        assert_eq!(field, "paging.key");
        assert!(message.contains("32 or more"), "{message}");
        let keyed = format!(
            r#"{{"hold_headers":true,"budget":{{"tokens":500}},"paging":{{"enabled":true,"key":"{KEY}"}}}}"#
        );
        assert_eq!(check(&keyed), Ok(()));
        let always = format!(
            r#"{{"hold_headers":true,"paging":{{"enabled":true,"key":"{KEY}"}},"tools":{{"t":{{"paging":{{"reissue":"always"}}}}}}}}"#
        );
        let (field, message) = check(&always).unwrap_err();
        assert_eq!(field, "tools.t.paging.reissue");
        assert!(message.contains("\"never\""), "{message}");
        // No paging anywhere: no key needed, and `never` is always fine.
        assert_eq!(check(r#"{"paging":{"reissue":"never"}}"#), Ok(()));
    }

    /// Issue 37 on a host without HTTP calls or metadata: the re-issue
    /// cluster and an owner from metadata are refused by name; an owner
    /// from the credentials or a header is accepted.
    #[test]
    fn no_reissue_cluster_and_no_owner_from_metadata() {
        let with = |paging: &str| {
            format!(
                r#"{{"hold_headers":true,"budget":{{"tokens":500}},"paging":{{"enabled":true,"key":"{KEY}"{paging}}}}}"#
            )
        };
        let (field, message) = check(&with(r#","reissue_cluster":"loop""#)).unwrap_err();
        assert_eq!(field, "paging.reissue_cluster");
        assert!(message.contains("Traefik (http-wasm)"), "{message}");
        let (field, message) = check(&with(
            r#","owner":{"from":"metadata","path":["envoy.filters.http.jwt_authn","jwt_payload","sub"]}"#,
        ))
        .unwrap_err();
        assert_eq!(field, "paging.owner");
        assert!(message.contains("\"header\""), "{message}");
        for owner in [
            r#","owner":{"from":"credentials"}"#,
            r#","owner":{"from":"header","name":"x-user"}"#,
        ] {
            assert_eq!(check(&with(owner)), Ok(()), "{owner}");
        }
        // Envoy accepts both.
        for paging in [
            r#","reissue_cluster":"loop""#,
            r#","owner":{"from":"metadata","path":["a","b"]}"#,
        ] {
            let s = Settings::from_json(&with(paging)).unwrap();
            assert_eq!(s.check_host(&Capabilities::ENVOY), Ok(()), "{paging}");
        }
    }

    /// Servers are matched on the authority alone.
    #[test]
    fn servers_match_on_the_authority_alone() {
        let (field, message) = check(
            r#"{"servers":[{"match":{"authority":"a"}},{"match":{"authority":"b","cluster":"c"}}]}"#,
        )
        .unwrap_err();
        assert_eq!(field, "servers[1].match.cluster");
        assert!(message.contains("`authority`"), "{message}");
        assert_eq!(
            check(r#"{"servers":[{"match":{"authority":"a"}}]}"#),
            Ok(())
        );
    }
}
