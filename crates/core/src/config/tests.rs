use super::*;

fn err(json: &str) -> ConfigError {
    match Settings::from_json(json) {
        Ok(_) => ConfigError::new("<accepted>", json),
        Err(e) => e,
    }
}

#[test]
fn empty_and_minimal_configs_take_defaults() {
    for text in ["", "  ", "{}"] {
        let s = Settings::from_json(text).unwrap();
        assert_eq!(s.max_body_bytes, 1024 * 1024);
        assert!(s.strip_accept_encoding);
        assert!(!s.annotate_tools);
        let p = s.policy(ServerScope::default(), None);
        assert_eq!(p.toon.mode, Mode::Adaptive);
        assert_eq!(p.toon.min_savings_pct, 15);
        assert_eq!(p.toon.min_bytes, 500);
        assert_eq!(p.toon.min_rows, 4);
        assert_eq!(p.toon.key_presence_pct, 90);
        assert_eq!(p.toon.header, Header::Marker);
        assert!(p.toon.marker.starts_with(MARKER_PREFIX));
        assert!(p.toon.verify);
    }
}

#[test]
fn full_example_from_the_issue_is_accepted() {
    let s = Settings::from_json(
        r#"{
          "toon": {"mode": "adaptive", "min_savings_pct": 15, "min_bytes": 500, "min_rows": 4,
                   "key_presence_pct": 90, "header": "marker", "marker": "[mcp-toon/v1] ...", "verify": true},
          "max_body_bytes": 1048576, "strip_accept_encoding": true, "annotate_tools": false,
          "tools": {"t": {"toon": {"mode": "off"}}},
          "servers": [{"match": {"route": "r", "cluster": "c", "authority": "a"},
                       "toon": {"min_savings_pct": 30}, "tools": {"t": {"toon": {}}}}]
        }"#,
    )
    .unwrap();
    assert_eq!(
        s.policy(ServerScope::default(), Some("t")).toon.mode,
        Mode::Off
    );
}

#[test]
fn refusals_name_the_field_and_the_allowed_values() {
    let cases = [
        (
            r#"{"toon":{"mode":"sometimes"}}"#,
            "toon.mode",
            "`off`, `adaptive`, `always`",
        ),
        (
            r#"{"toon":{"header":"banner"}}"#,
            "toon.header",
            "`marker`, `fence`, `none`",
        ),
        (
            r#"{"toon":{"min_savings_pct":0}}"#,
            "toon.min_savings_pct",
            "1..=90",
        ),
        (
            r#"{"toon":{"min_savings_pct":91}}"#,
            "toon.min_savings_pct",
            "1..=90",
        ),
        (r#"{"toon":{"min_bytes":-1}}"#, "toon.min_bytes", "u64"),
        (r#"{"toon":{"min_rows":0}}"#, "toon.min_rows", "1..=1000000"),
        (
            r#"{"toon":{"key_presence_pct":101}}"#,
            "toon.key_presence_pct",
            "1..=100",
        ),
        (
            r#"{"toon":{"marker":"TOON below"}}"#,
            "toon.marker",
            "[mcp-toon/v1]",
        ),
        (
            r#"{"toon":{"marker":"[mcp-toon/v1] two\nlines"}}"#,
            "toon.marker",
            "one line",
        ),
        (r#"{"toon":{"verify":"yes"}}"#, "toon.verify", "boolean"),
        (r#"{"toon":{"colour":1}}"#, "toon.colour", "`mode`"),
        (r#"{"max_body_bytes":10}"#, "max_body_bytes", "1024..="),
        (
            r#"{"strip_accept_encoding":1}"#,
            "strip_accept_encoding",
            "boolean",
        ),
        (r#"{"extra":true}"#, "extra", "`toon`"),
        (
            r#"{"tools":{"t":{"toon":{"mode":"x"}}}}"#,
            "tools.t.toon.mode",
            "`adaptive`",
        ),
        (r#"{"tools":{"t":{"cache":{}}}}"#, "tools.t.cache", "`toon`"),
        (
            r#"{"servers":[{"match":{}}]}"#,
            "servers[0].match",
            "`route`, `cluster`, `authority`",
        ),
        (
            r#"{"servers":[{"match":{"host":"a"}}]}"#,
            "servers[0].match.host",
            "`authority`",
        ),
        (r#"{"servers":[{"toon":{}}]}"#, "servers[0]", "match"),
        (
            r#"{"servers":[{"match":{"route":"r"},"toon":{"min_rows":0}}]}"#,
            "servers[0].toon.min_rows",
            "1..=",
        ),
        (
            r#"{"servers":[{"match":{"route":"r"},"tools":{"t":{"toon":{"min_savings_pct":95}}}}]}"#,
            "servers[0].tools.t.toon.min_savings_pct",
            "1..=90",
        ),
        ("not json", "", "expected"),
        ("{} {}", "", "trailing"),
    ];
    for (json, field, allowed) in cases {
        let e = err(json);
        assert_eq!(e.field, field, "{json}: {e}");
        assert!(
            e.to_string().contains(allowed),
            "{json}: `{e}` should mention {allowed}"
        );
        assert!(e.to_string().starts_with("mcp-toon configuration: "), "{e}");
    }
}

#[test]
fn precedence_most_specific_first() {
    let s = Settings::from_json(
        r#"{
          "toon": {"min_savings_pct": 10, "min_rows": 2},
          "tools": {"t": {"toon": {"min_savings_pct": 20}}, "u": {"toon": {"header": "fence"}}},
          "servers": [
            {"match": {"cluster": "c1"}, "toon": {"min_savings_pct": 30, "min_rows": 3, "header": "none"},
             "tools": {"t": {"toon": {"min_savings_pct": 40}}}},
            {"match": {"cluster": "c1", "route": "r"}, "toon": {"min_savings_pct": 50}}
          ]
        }"#,
    )
    .unwrap();
    let stream = |route: Option<&str>, cluster: Option<&str>| StreamInfo {
        route: route.map(str::to_string),
        cluster: cluster.map(str::to_string),
        authority: None,
    };
    let none = s.server_for(&stream(None, Some("other")));
    let c1 = s.server_for(&stream(Some("r"), Some("c1")));
    assert_eq!(c1, ServerScope(Some(0)), "first matching entry wins");
    // defaults < top level
    assert_eq!(s.policy(none, None).toon.min_savings_pct, 10);
    assert_eq!(s.policy(none, None).toon.min_bytes, 500);
    // top-level tool entry > top level
    assert_eq!(s.policy(none, Some("t")).toon.min_savings_pct, 20);
    // matching server > top level
    assert_eq!(s.policy(c1, None).toon.min_savings_pct, 30);
    assert_eq!(s.policy(c1, None).toon.min_rows, 3);
    // top-level tool entry > matching server
    assert_eq!(s.policy(c1, Some("u")).toon.header, Header::Fence);
    // matching server's tool entry > top-level tool entry
    assert_eq!(s.policy(c1, Some("t")).toon.min_savings_pct, 40);
    // fields a layer leaves out are inherited
    assert_eq!(s.policy(c1, Some("t")).toon.min_rows, 3);
}

#[test]
fn server_match_needs_every_given_key() {
    let s = Settings::from_json(r#"{"servers":[{"match":{"route":"r","authority":"mcp.local"}}]}"#)
        .unwrap();
    let mut info = StreamInfo {
        route: Some("r".into()),
        cluster: None,
        authority: Some("mcp.local".into()),
    };
    assert_eq!(s.server_for(&info), ServerScope(Some(0)));
    info.authority = Some("other".into());
    assert_eq!(s.server_for(&info), ServerScope(None));
    info.authority = None;
    assert_eq!(s.server_for(&info), ServerScope(None));
}

#[test]
fn trim_section_defaults_overrides_and_refusals() {
    let s = Settings::from_json("{}").unwrap();
    assert!(!s.trim.enabled && !s.trim_anywhere() && !s.rewrites_listings());
    assert_eq!(s.trim.threshold_bytes, 8000);
    assert_eq!(s.trim.intent_argument, "expected_info");
    let s = Settings::from_json(
        r#"{"trim":{"enabled":false},"tools":{"search":{"trim":{"enabled":true}}},
            "servers":[{"match":{"cluster":"c"},"trim":{"enabled":true},"tools":{"big":{"trim":{"enabled":false}}}}]}"#,
    )
    .unwrap();
    assert!(s.trim_anywhere() && s.rewrites_listings());
    let c = s.server_for(&StreamInfo {
        cluster: Some("c".into()),
        ..StreamInfo::default()
    });
    assert!(!s.policy(ServerScope::default(), Some("other")).trim);
    assert!(s.policy(ServerScope::default(), Some("search")).trim);
    assert!(s.policy(c, Some("other")).trim);
    assert!(!s.policy(c, Some("big")).trim);

    let cases = [
        (
            r#"{"trim":{"blocks":"some"}}"#,
            "trim.blocks",
            "`first` or `all`",
        ),
        (
            r#"{"trim":{"timeout_ms":0}}"#,
            "trim.timeout_ms",
            "1..=600000",
        ),
        (
            r#"{"trim":{"path":"v1/chat"}}"#,
            "trim.path",
            "starting with `/`",
        ),
        (
            r#"{"trim":{"cluster":""}}"#,
            "trim.cluster",
            "Envoy cluster",
        ),
        (
            r#"{"trim":{"intent_argument":"a b"}}"#,
            "trim.intent_argument",
            "letters, digits",
        ),
        (
            r#"{"trim":{"client_id":"gw"}}"#,
            "trim.client_secret",
            "required",
        ),
        (
            r#"{"tools":{"t":{"trim":{"model":"x"}}}}"#,
            "tools.t.trim.model",
            "`enabled`",
        ),
    ];
    for (json, field, allowed) in cases {
        let e = err(json);
        assert_eq!(e.field, field, "{json}: {e}");
        assert!(
            e.to_string().contains(allowed),
            "{json}: `{e}` should mention {allowed}"
        );
    }
}

#[test]
fn secrets_never_appear_in_errors() {
    for json in [
        r#"{"trim":{"client_secret":"hunter2-secret"}}"#,
        r#"{"trim":{"client_id":"hunter2-secret"}}"#,
        r#"{"trim":{"client_id":"gw","client_secret":"hunter2-secret\n"}}"#,
        r#"{"trim":{"client_secret":{"hunter2-secret":1}}}"#,
    ] {
        let e = err(json);
        assert!(e.field.starts_with("trim.client_"), "{json}: {e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
}

/// Every secret field (`paging.key`, `marker_key`, `trim.client_id`,
/// `trim.client_secret`), written in every JSON type and in the shapes a
/// secret may take: refused, naming the field, and no fragment of what was
/// written appears in the message (issue 37: `{"paging":{"key":1234567890123}}`
/// echoed the number). What the adapter logs is this message.
#[test]
fn no_secret_field_quotes_its_value_in_any_error() {
    const FRAGMENTS: &[&str] = &[
        "hunter2", "1234567", "9876543", "31415", "2718", "tru", "fals",
    ];
    let values = [
        r#""hunter2\u0007secret-0123456789-0123456789""#,
        r#""hunter2\x""#,
        "1234567890123",
        "-9876543210",
        "31415.9265",
        "2.718e30",
        "true",
        "false",
        r#"["hunter2-in-a-list"]"#,
        "[1234567890123]",
        r#"[["hunter2"]]"#,
        "[]",
        r#"{"hunter2-key":"hunter2-value"}"#,
        r#"{"env":1234567890123}"#,
        r#"{"env":"hunter2 is no name"}"#,
        r#"{"env":"HUNTER2_UNSET_VARIABLE","hunter2":1}"#,
        r#"{"env":["hunter2"]}"#,
        r#"{"env":{"hunter2":true}}"#,
        r#"{}"#,
    ];
    type Place = fn(&str) -> String;
    let fields: [(&str, Place); 4] = [
        ("paging.key", |v| format!(r#"{{"paging":{{"key":{v}}}}}"#)),
        ("marker_key", |v| format!(r#"{{"marker_key":{v}}}"#)),
        ("trim.client_id", |v| {
            format!(r#"{{"trim":{{"client_secret":"s","client_id":{v}}}}}"#)
        }),
        ("trim.client_secret", |v| {
            format!(r#"{{"trim":{{"client_id":"id","client_secret":{v}}}}}"#)
        }),
    ];
    for (field, json) in fields {
        for value in values {
            let text = json(value);
            let e = match Settings::from_json(&text) {
                Ok(_) => panic!("{text} was accepted"),
                Err(e) => e,
            };
            assert!(e.field.starts_with(field), "{text}: {e}");
            let shown = format!("{e} {e:?}");
            for f in FRAGMENTS {
                assert!(!shown.contains(f), "{text}: `{f}` in {shown}");
            }
        }
    }
    // Too many keys, and every key of a list checked: quoted nowhere
    // either.
    let long = "hunter2-0123456789-0123456789-0123456789";
    for text in [
        format!(
            r#"{{"paging":{{"key":[{}]}}}}"#,
            vec![format!("\"{long}\""); 9].join(",")
        ),
        format!(r#"{{"paging":{{"key":["{long}","hunter2-short"]}}}}"#),
    ] {
        let e = err(&text);
        assert!(e.field.starts_with("paging.key"), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
}

/// A map of environment variables, for the tests.
struct Env(&'static [(&'static str, &'static str)]);

impl Environ for Env {
    fn var(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.to_string())
    }
}

/// Secrets from the VM's environment (`vm_config.environment_variables`):
/// the configuration names the variable, Envoy's `/config_dump` shows only
/// that name. `paging.key` may list several keys: the first seals.
#[test]
fn secrets_come_from_the_environment_and_keys_rotate() {
    const NEW: &str = "the-new-key-0123456789abcdef0123456789";
    const OLD: &str = "the-old-key-0123456789abcdef0123456789";
    let env = Env(&[
        ("MCP_TOON_PAGING_KEY", NEW),
        ("OLD_KEY", OLD),
        ("MARKER", "marker-key-0123456789"),
        ("LLM_ID", "gateway"),
        ("LLM_SECRET", "s3cret"),
        ("EMPTY", ""),
    ]);
    let s = Settings::from_json_in(
        r#"{"marker_key":{"env":"MARKER"},
            "trim":{"client_id":{"env":"LLM_ID"},"client_secret":{"env":"LLM_SECRET"}},
            "paging":{"key":[{"env":"MCP_TOON_PAGING_KEY"},{"env":"OLD_KEY"}]}}"#,
        &env,
    )
    .unwrap();
    assert_eq!(
        s.paging.keys,
        vec![NEW.as_bytes().to_vec(), OLD.as_bytes().to_vec()]
    );
    assert_eq!(s.marker_key, "marker-key-0123456789");
    assert_eq!(
        (s.trim.client_id.as_str(), s.trim.client_secret.as_str()),
        ("gateway", "s3cret")
    );
    let shown = format!("{s:?} {:?}", s.paging);
    for secret in [NEW, OLD, "marker-key", "s3cret", "gateway"] {
        assert!(!shown.contains(secret), "Debug shows {secret}: {shown}");
    }
    // One key written as itself, or as a list of one.
    let one =
        Settings::from_json_in(&format!(r#"{{"paging":{{"key":["{NEW}"]}}}}"#), &env).unwrap();
    assert_eq!(one.paging.keys, vec![NEW.as_bytes().to_vec()]);
    // A variable that is unset or empty, or a key too short.
    for (json, field, needle) in [
        (
            r#"{"paging":{"key":{"env":"UNSET"}}}"#,
            "paging.key",
            "`UNSET` is not set in the VM",
        ),
        (
            r#"{"marker_key":{"env":"EMPTY"}}"#,
            "marker_key",
            "`EMPTY` is empty",
        ),
        (
            r#"{"paging":{"key":[{"env":"MCP_TOON_PAGING_KEY"},{"env":"LLM_ID"}]}}"#,
            "paging.key[1]",
            "at least 32",
        ),
        (
            r#"{"trim":{"client_id":{"env":"LLM_ID"},"client_secret":{"env":"NOPE"}}}"#,
            "trim.client_secret",
            "`NOPE`",
        ),
    ] {
        let e = match Settings::from_json_in(json, &env) {
            Ok(_) => panic!("{json} accepted"),
            Err(e) => e,
        };
        assert_eq!(e.field, field, "{json}: {e}");
        assert!(e.message.contains(needle), "{json}: {e}");
        assert!(!e.to_string().contains("gateway"), "{e}");
    }
}

#[test]
fn the_page_owner_and_the_reissue_cluster_are_checked() {
    use crate::config::OwnerSource;
    let owner = |o: &str| Settings::from_json(&format!(r#"{{"paging":{{"owner":{o}}}}}"#));
    assert_eq!(
        Settings::from_json("{}").unwrap().paging.owner,
        OwnerSource::Credentials
    );
    assert_eq!(
        owner(r#"{"from":"none"}"#).unwrap().paging.owner,
        OwnerSource::None
    );
    assert_eq!(
        owner(r#"{"from":"header","name":"x-user"}"#)
            .unwrap()
            .paging
            .owner,
        OwnerSource::Header("x-user".into())
    );
    assert_eq!(
        owner(r#"{"from":"metadata","path":["envoy.filters.http.jwt_authn","jwt_payload","sub"]}"#)
            .unwrap()
            .paging
            .owner,
        OwnerSource::Metadata(vec![
            "envoy.filters.http.jwt_authn".into(),
            "jwt_payload".into(),
            "sub".into()
        ])
    );
    for (o, field, needle) in [
        (r#"{"from":"header"}"#, "paging.owner.name", "header name"),
        (
            r#"{"from":"header","name":"X-User"}"#,
            "paging.owner.name",
            "lowercase",
        ),
        (r#"{"from":"metadata"}"#, "paging.owner.path", "required"),
        (
            r#"{"from":"metadata","path":[]}"#,
            "paging.owner.path",
            "1-8",
        ),
        (
            r#"{"from":"metadata","path":["a",""]}"#,
            "paging.owner.path",
            "1-8",
        ),
        (
            r#"{"from":"none","name":"x"}"#,
            "paging.owner",
            "`name` for `header`",
        ),
        (
            r#"{"from":"cookie"}"#,
            "paging.owner.from",
            "`credentials`, `header`, `metadata`, `none`",
        ),
        (r#"{"name":"x"}"#, "paging.owner.from", "one of"),
        (
            r#"{"from":"header","name":"x","extra":1}"#,
            "paging.owner",
            "takes `from`",
        ),
        (r#""credentials""#, "paging.owner", "takes `from`"),
    ] {
        let e = match owner(o) {
            Ok(_) => panic!("{o} accepted"),
            Err(e) => e,
        };
        assert_eq!(e.field, field, "{o}: {e}");
        assert!(e.message.contains(needle), "{o}: {e}");
    }
    let key = "0123456789abcdef0123456789abcdef";
    let s = Settings::from_json(&format!(
        r#"{{"paging":{{"key":"{key}","reissue_cluster":"mcp_toon_loopback"}}}}"#
    ))
    .unwrap();
    assert_eq!(s.paging.reissue_cluster, "mcp_toon_loopback");
    for (json, needle) in [
        (
            r#"{"paging":{"reissue_cluster":"loop"}}"#.to_string(),
            "needs `paging.key`",
        ),
        (
            format!(r#"{{"paging":{{"key":"{key}","reissue_cluster":"a b"}}}}"#),
            "name of an Envoy cluster",
        ),
    ] {
        let e = err(&json);
        assert_eq!(e.field, "paging.reissue_cluster", "{e}");
        assert!(e.message.contains(needle), "{e}");
    }
}

#[test]
fn clean_section_defaults_and_refusals() {
    let s = Settings::from_json(
        r#"{"clean":{"remove_nulls":true},"tools":{"img":{"clean":{"strip_base64":false}}}}"#,
    )
    .unwrap();
    let p = s.policy(ServerScope::default(), Some("img"));
    assert!(p.clean.remove_nulls && !p.clean.strip_base64 && !p.clean.html_to_markdown);
    // The lossy transforms are opt-in; compaction (lossless) is on.
    let d = s.policy(ServerScope::default(), None).clean;
    assert!(!d.html_to_markdown && !d.strip_base64 && !d.collapse_whitespace && d.compact_json);
    assert_eq!(
        (
            p.clean.min_bytes,
            p.clean.base64_min_chars,
            p.clean.max_text_bytes
        ),
        (500, 256, 0)
    );
    for (json, field) in [
        (
            r#"{"clean":{"max_text_bytes":100}}"#,
            "clean.max_text_bytes",
        ),
        (
            r#"{"clean":{"base64_min_chars":4}}"#,
            "clean.base64_min_chars",
        ),
        (
            r#"{"servers":[{"match":{"route":"r"},"clean":{"min_bytes":99999999999}}]}"#,
            "servers[0].clean.min_bytes",
        ),
        (r#"{"clean":{"strip":true}}"#, "clean.strip"),
    ] {
        assert_eq!(err(json).field, field, "{json}");
    }
}

#[test]
fn hold_headers_defaults_to_false_and_takes_a_boolean() {
    assert!(!Settings::from_json("{}").unwrap().hold_headers);
    assert!(!Settings::default().hold_headers);
    assert!(
        Settings::from_json(r#"{"hold_headers": true}"#)
            .unwrap()
            .hold_headers
    );
    assert!(
        !Settings::from_json(r#"{"hold_headers": false}"#)
            .unwrap()
            .hold_headers
    );
    for bad in [r#""yes""#, "1", "[]"] {
        let e = err(&format!(r#"{{"hold_headers": {bad}}}"#));
        assert_eq!(e.field, "hold_headers", "{bad}: {e}");
        assert!(e.message.contains("boolean"), "{bad}: {e}");
        assert!(e
            .to_string()
            .starts_with("mcp-toon configuration: hold_headers: "));
    }
}

/// Every limit of issue 13: its default, both ends of its range accepted,
/// one past each end refused with the field and the range.
#[test]
fn limits_default_and_refuse_past_their_ranges() {
    let s = Settings::from_json("{}").unwrap();
    assert_eq!(
        (
            s.max_id_bytes,
            s.max_tool_name_bytes,
            s.legacy_record_ttl_ms,
            s.marker_key.as_str()
        ),
        (256, 256, 600_000, "")
    );
    assert_eq!(
        (
            s.trim.max_intent_bytes,
            s.trim.max_reply_bytes,
            s.trim.max_queued_bytes
        ),
        (512, 1024 * 1024, 512 * 1024)
    );
    let ranges: [(&str, &str, u64, u64); 6] = [
        ("max_id_bytes", "", 16, 65536),
        ("max_tool_name_bytes", "", 16, 65536),
        ("legacy_record_ttl_ms", "", 1000, 86_400_000),
        ("max_intent_bytes", "trim", 16, 4096),
        ("max_reply_bytes", "trim", 1024, 268_435_456),
        ("max_queued_bytes", "trim", 1024, 268_435_456),
    ];
    for (field, section, low, high) in ranges {
        let json = |v: u64| {
            if section.is_empty() {
                format!(r#"{{"{field}":{v}}}"#)
            } else {
                format!(r#"{{"{section}":{{"{field}":{v}}}}}"#)
            }
        };
        let path = if section.is_empty() {
            field.to_string()
        } else {
            format!("{section}.{field}")
        };
        for ok in [low, high] {
            assert!(Settings::from_json(&json(ok)).is_ok(), "{path} {ok}");
        }
        for bad in [low - 1, high + 1] {
            let e = err(&json(bad));
            assert_eq!(e.field, path);
            assert!(e.message.contains(&format!("{low}..={high}")), "{e}");
        }
    }
}

#[test]
fn the_marker_key_is_checked_and_never_shown() {
    let at_least = "k".repeat(16);
    let s = Settings::from_json(&format!(r#"{{"marker_key":"{at_least}"}}"#)).unwrap();
    assert_eq!(s.marker_key, at_least);
    assert!(!format!("{s:?}").contains(&at_least), "Debug redacts it");
    for bad in [
        format!(r#"{{"marker_key":"{}"}}"#, "hunter2-secret!"),
        format!(r#"{{"marker_key":"{}"}}"#, "hunter2-secret\\n-long-enough"),
        format!(r#"{{"marker_key":"{}"}}"#, "h".repeat(1025)),
        r#"{"marker_key":{"hunter2-secret":1}}"#.to_string(),
    ] {
        let e = err(&bad);
        assert_eq!(e.field, "marker_key", "{bad}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
}

#[test]
fn project_section_defaults_overrides_and_refusals() {
    let s = Settings::from_json("{}").unwrap();
    assert_eq!(s.project.query_argument, "jmespath");
    assert_eq!(s.project.max_query_bytes, 1024);
    // The query budget: 4 units and 4 bytes per byte of the block, plus
    // 2^20 of each.
    let b = s.project.query_budget;
    assert_eq!((b.work(1000), b.memory(1000)), (1_052_576, 1_052_576));
    assert!(!s.queries_anywhere());
    assert!(s.stripped_arguments().is_empty());
    let p = s.policy(ServerScope::default(), Some("t"));
    assert!(p.project.rules.is_empty() && !p.project.queries);

    let s = Settings::from_json(
        r#"{"project": {"drop": ["**.node_id"], "query_argument": "jq-ish_q", "max_query_bytes": 64},
            "tools": {"t": {"project": {"keep": ["items[].id"], "queries": true}}},
            "servers": [{"match": {"cluster": "gh"}, "project": {"drop": []},
                         "tools": {"u": {"project": {"queries": true}}}}]}"#,
    )
    .unwrap();
    assert!(s.queries_anywhere());
    assert_eq!(s.stripped_arguments(), ["jq-ish_q"]);
    assert_eq!(s.project.max_query_bytes, 64);
    let b = Settings::from_json(
        r#"{"project": {"query_work_per_byte": 64, "query_work_floor": 0,
                        "query_memory_per_byte": 1, "query_memory_floor": 16777216}}"#,
    )
    .unwrap()
    .project
    .query_budget;
    assert_eq!((b.work(10), b.memory(10)), (640, 16_777_226));
    let top = s.policy(ServerScope::default(), Some("other"));
    assert_eq!(
        (top.project.rules.drop.len(), top.project.rules.keep.len()),
        (1, 0)
    );
    let t = s.policy(ServerScope::default(), Some("t"));
    assert_eq!(
        (t.project.rules.drop.len(), t.project.rules.keep.len()),
        (1, 1)
    );
    assert!(t.project.queries);
    let gh = s.server_for(&StreamInfo {
        cluster: Some("gh".into()),
        ..StreamInfo::default()
    });
    // A patch that names a list replaces the inherited one.
    assert!(s.policy(gh, Some("other")).project.rules.is_empty());
    assert!(s.policy(gh, Some("u")).project.queries);

    for (json, field, needle) in [
        (
            r#"{"project":{"drop":["a..b"]}}"#,
            "project.drop[0]",
            "expected a key",
        ),
        (
            r#"{"project":{"keep":["a.**"]}}"#,
            "project.keep[0]",
            "must not end with `**`",
        ),
        (
            r#"{"tools":{"t":{"project":{"drop":[""]}}}}"#,
            "tools.t.project.drop[0]",
            "empty",
        ),
        (
            r#"{"servers":[{"match":{"route":"r"},"project":{"keep":["x y"]}}]}"#,
            "servers[0].project.keep[0]",
            "byte 1",
        ),
        (
            r#"{"project":{"query_argument":"a b"}}"#,
            "project.query_argument",
            "1-64 characters",
        ),
        (
            r#"{"trim":{"intent_argument":"q"},"project":{"query_argument":"q"}}"#,
            "project.query_argument",
            "must differ from trim.intent_argument (`q`)",
        ),
        (
            r#"{"project":{"max_query_bytes":5000}}"#,
            "project.max_query_bytes",
            "16..=4096",
        ),
        (
            r#"{"project":{"query_work_per_byte":0}}"#,
            "project.query_work_per_byte",
            "1..=64",
        ),
        (
            r#"{"project":{"query_work_floor":16777217}}"#,
            "project.query_work_floor",
            "0..=16777216",
        ),
        (
            r#"{"project":{"query_memory_per_byte":33}}"#,
            "project.query_memory_per_byte",
            "1..=32",
        ),
        (
            r#"{"project":{"query_memory_floor":16777217}}"#,
            "project.query_memory_floor",
            "0..=16777216",
        ),
        (
            r#"{"tools":{"t":{"project":{"query_work_floor":1}}}}"#,
            "tools.t.project.query_work_floor",
            "unknown field `query_work_floor`",
        ),
        (
            r#"{"project":{"queries":"yes"}}"#,
            "project.queries",
            "expected a boolean",
        ),
        (
            r#"{"project":{"jq":true}}"#,
            "project.jq",
            "unknown field `jq`",
        ),
        (
            r#"{"tools":{"t":{"project":{"query_argument":"q"}}}}"#,
            "tools.t.project.query_argument",
            "unknown field `query_argument`",
        ),
    ] {
        let e = err(json);
        assert_eq!(e.field, field, "{json}: {e}");
        assert!(e.message.contains(needle), "{json}: {e}");
    }
    let many: Vec<String> = (0..33).map(|i| format!("\"k{i}\"")).collect();
    let e = err(&format!(r#"{{"project":{{"drop":[{}]}}}}"#, many.join(",")));
    assert_eq!(e.field, "project.drop");
}

/// Configuration bytes that are not UTF-8 are refused at load, naming the
/// offset; they are never repaired into a configuration that runs.
#[test]
fn a_configuration_that_is_not_utf8_is_refused() {
    let mut bytes = br#"{"toon":{"marker":"x"#.to_vec();
    bytes.extend([0xff, b'"', b'}', b'}']);
    let e = Settings::from_bytes(&bytes).unwrap_err();
    assert_eq!(e.field, "");
    assert!(
        e.message.contains("not UTF-8") && e.message.contains("offset 20"),
        "{e}"
    );
    assert!(e.to_string().starts_with("mcp-toon configuration: "), "{e}");
    // A UTF-8 configuration reads as its text does; no bytes, all defaults.
    assert!(Settings::from_bytes("{\"toon\":{\"mode\":\"off\"}}".as_bytes()).is_ok());
    assert_eq!(
        Settings::from_bytes(b"").unwrap().max_body_bytes,
        Settings::default().max_body_bytes
    );
}

/// docs/configuration.md against the code: its full example
/// parses to the defaults, and every field the code accepts — as the
/// parser itself lists them when it refuses an unknown one — is in the
/// example and in the reference's tables.
mod readme {
    use super::*;

    const README: &str = include_str!("../../../../docs/configuration.md");

    /// The README text from `start` to the next heading of that level.
    fn section(start: &str) -> &'static str {
        let at = README
            .find(start)
            .unwrap_or_else(|| panic!("README has no {start:?}"));
        let level = start.split(' ').next().unwrap();
        let rest = &README[at + start.len()..];
        let end = rest.find(&format!("\n{level} ")).unwrap_or(rest.len());
        &rest[..end]
    }

    fn example() -> serde_json::Value {
        let reference = section("# Configuration reference");
        let at = reference
            .find("A full example, with every field at its default")
            .unwrap();
        let block = &reference[at..];
        let start = block.find("```json\n").unwrap() + 8;
        let end = block[start..].find("```").unwrap() + start;
        serde_json::from_str(&block[start..end]).unwrap()
    }

    /// The fields the parser accepts where `probe` puts an unknown one.
    fn fields(probe: &str) -> Vec<String> {
        let message = err(probe).to_string();
        let (_, expected) = message
            .split_once("expected")
            .unwrap_or_else(|| panic!("{probe}: {message}"));
        expected
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    }

    fn keys(v: &serde_json::Value) -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    }

    fn sorted(mut v: Vec<String>) -> Vec<String> {
        v.sort();
        v
    }

    fn mentions(text: &str, names: &[String], what: &str) {
        for n in names {
            assert!(
                text.contains(&format!("`{n}`")),
                "README {what} does not name `{n}`"
            );
        }
    }

    #[test]
    fn the_full_example_names_every_field() {
        let ex = example();
        let top = fields(r#"{"zz_unknown":1}"#);
        assert_eq!(keys(&ex), sorted(top.clone()), "top level");
        for name in ["toon", "clean", "trim", "project", "paging"] {
            let probe = format!(r#"{{"{name}":{{"zz_unknown":1}}}}"#);
            assert_eq!(keys(&ex[name]), sorted(fields(&probe)), "{name}");
        }
        // `tokens` or `bytes`, not both: the example names one.
        let budget = fields(r#"{"budget":{"zz_unknown":1}}"#);
        assert!(keys(&ex["budget"]).iter().all(|k| budget.contains(k)));
    }

    #[test]
    fn the_tables_name_every_field() {
        mention_top();
        for name in ["toon", "clean", "trim", "project"] {
            let table = section(&format!("## `{name}`"));
            let probe = format!(r#"{{"{name}":{{"zz_unknown":1}}}}"#);
            mentions(table, &fields(&probe), &format!("`{name}` table"));
        }
        let table = section("## `budget` and `paging`");
        for name in ["budget", "paging"] {
            let probe = format!(r#"{{"{name}":{{"zz_unknown":1}}}}"#);
            let dotted: Vec<String> = fields(&probe)
                .iter()
                .map(|f| format!("{name}.{f}"))
                .collect();
            mentions(table, &dotted, "`budget` and `paging` table");
        }
        let overrides = section("## `tools` and `servers`: overrides");
        let tool = r#"{"tools":{"t":{"zz_unknown":1}}}"#;
        mentions(overrides, &fields(tool), "overrides");
        for name in ["trim", "project", "paging", "budget"] {
            let probe = format!(r#"{{"tools":{{"t":{{"{name}":{{"zz_unknown":1}}}}}}}}"#);
            mentions(
                overrides,
                &fields(&probe),
                &format!("overrides ({name} patch)"),
            );
        }
        let server = r#"{"servers":[{"match":{"route":"r"},"zz_unknown":1}]}"#;
        mentions(overrides, &fields(server), "overrides (servers[])");
        let matcher = r#"{"servers":[{"match":{"zz_unknown":1}}]}"#;
        mentions(overrides, &fields(matcher), "overrides (match)");
        // The top-level table's override rows list the same fields.
        let top = section("## Top level");
        for (row, probe) in [("| `tools` |", tool), ("| `servers` |", server)] {
            let line = top.lines().find(|l| l.starts_with(row)).unwrap();
            let listed = &line[line.rfind('{').unwrap() + 1..line.rfind('}').unwrap()];
            let listed: Vec<String> = listed.split(", ").map(str::to_string).collect();
            assert_eq!(sorted(listed), sorted(fields(probe)), "{row}");
        }
    }

    fn mention_top() {
        let top = section("## Top level");
        mentions(top, &fields(r#"{"zz_unknown":1}"#), "top-level table");
    }

    #[test]
    fn the_full_example_is_the_defaults() {
        let mut ex = example();
        let obj = ex.as_object_mut().unwrap();
        obj.remove("tools");
        obj.remove("servers");
        let s = Settings::from_json(&ex.to_string()).unwrap();
        let d = Settings::default();
        let scope = ServerScope::default();
        assert_eq!(s.policy(scope, None), d.policy(scope, None));
        assert_eq!(s.policy(scope, Some("t")), d.policy(scope, Some("t")));
        assert_eq!(s.trim, d.trim);
        assert_eq!(s.paging, d.paging);
        assert_eq!(s.project, d.project);
        assert_eq!(
            (
                s.max_body_bytes,
                s.max_event_bytes,
                s.max_id_bytes,
                s.max_tool_name_bytes
            ),
            (
                d.max_body_bytes,
                d.max_event_bytes,
                d.max_id_bytes,
                d.max_tool_name_bytes
            )
        );
        assert_eq!(
            (
                s.legacy_record_ttl_ms,
                &s.marker_key,
                s.strip_accept_encoding
            ),
            (
                d.legacy_record_ttl_ms,
                &d.marker_key,
                d.strip_accept_encoding
            )
        );
        assert_eq!(
            (s.annotate_tools, s.hold_headers),
            (d.annotate_tools, d.hold_headers)
        );
        assert_eq!(
            (
                s.max_response_bytes,
                s.max_vm_held_bytes,
                s.legacy_session_slots
            ),
            (
                d.max_response_bytes,
                d.max_vm_held_bytes,
                d.legacy_session_slots
            )
        );
        assert!(!s.budget_anywhere() && !s.paging_anywhere() && !s.trim_anywhere());
    }
}

/// A scope is idle when no policy a stream of it can meet changes anything,
/// no agent query is taken and no listing rewritten; resolved per scope.
#[test]
fn idle_scopes_change_nothing_anywhere() {
    const OFF: &str = r#""toon":{"mode":"off"},"clean":{"compact_json":false}"#;
    let idle = |json: &str| {
        let s = Settings::from_json(json).unwrap();
        (0..=s.servers.len())
            .map(|i| s.idle(ServerScope(i.checked_sub(1))))
            .collect::<Vec<_>>()
    };
    assert_eq!(idle("{}"), [false], "the defaults compact and encode");
    assert_eq!(idle(&format!("{{{OFF}}}")), [true]);
    // One tool, one server, a query or a listing that changes: not idle
    // where it applies.
    assert_eq!(
        idle(&format!(
            r#"{{{OFF},"tools":{{"t":{{"toon":{{"mode":"adaptive"}}}}}}}}"#
        )),
        [false]
    );
    assert_eq!(
        idle(&format!(
            r#"{{{OFF},"servers":[{{"match":{{"cluster":"c"}},"clean":{{"compact_json":true}}}},{{"match":{{"cluster":"d"}}}}]}}"#
        )),
        [true, false, true]
    );
    assert_eq!(
        idle(&format!(
            r#"{{{OFF},"servers":[{{"match":{{"cluster":"c"}},"tools":{{"t":{{"budget":{{"tokens":500}}}}}}}}]}}"#
        )),
        [true, false]
    );
    assert_eq!(
        idle(&format!(r#"{{{OFF},"annotate_tools":true}}"#)),
        [false]
    );
    assert_eq!(
        idle(&format!(r#"{{{OFF},"project":{{"queries":true}}}}"#)),
        [false]
    );
    assert_eq!(
        idle(&format!(
            r#"{{{OFF},"tools":{{"t":{{"project":{{"drop":["a"]}}}}}}}}"#
        )),
        [false]
    );
    assert_eq!(
        idle(r#"{"toon":{"mode":"off"},"clean":{"compact_json":false,"strip_base64":true}}"#),
        [false]
    );
}
