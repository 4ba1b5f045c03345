use serde_json::Value;

use super::*;
use crate::config::{Level, ListingMode};

/// The captured listings of bench/listings/ (README there): name and text.
pub(crate) fn listings() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/listings");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    out.sort();
    assert!(
        out.len() >= 10,
        "bench/listings/ has {} listings",
        out.len()
    );
    out
}

/// The JSON-RPC responses of a capture (one, or an array of pages).
pub(crate) fn pages(body: &str) -> Vec<Value> {
    match serde_json::from_str(body).unwrap() {
        Value::Array(a) => a,
        one => vec![one],
    }
}

/// The `result` texts of a capture, as the server wrote them.
fn results(body: &str) -> Vec<String> {
    crate::mcp::parse_messages(body)
        .unwrap()
        .into_iter()
        .map(|m| m.result.unwrap().get().to_string())
        .collect()
}

const NAMES: Names<'static> = Names {
    search: "mcp_toon_search_tools",
    call: "mcp_toon_call_tool",
    describe: "mcp_toon_describe",
};

fn how(level: Level) -> Compaction {
    Compaction {
        level,
        max_description_bytes: 120,
    }
}

#[test]
fn a_compact_listing_changes_only_what_its_level_drops() {
    for (file, body) in listings() {
        for result in results(&body) {
            let before: Value = serde_json::from_str(&result).unwrap();
            let add = describe_tool(NAMES);
            for level in Level::ALL {
                let out = compact_listing(&result, how(level), &[&add]).unwrap();
                let after: Value = serde_json::from_str(&out).unwrap();
                // Members of the result other than `tools` keep their text.
                for (k, v) in before.as_object().unwrap() {
                    if k != "tools" {
                        assert_eq!(after.get(k), Some(v), "{file}: {k}");
                    }
                }
                let (b, a) = (
                    before["tools"].as_array().unwrap(),
                    after["tools"].as_array().unwrap(),
                );
                assert_eq!(a.len(), b.len() + 1, "{file}");
                assert_eq!(a.last().unwrap()["name"], "mcp_toon_describe");
                for (t, u) in b.iter().zip(a) {
                    assert_eq!(t["name"], u["name"], "{file}");
                }
                assert!(out.len() < result.len() + add.len() + 1, "{file} {level:?}");
            }
        }
    }
}

#[test]
fn untouched_tools_keep_their_bytes() {
    // Nothing to drop: the listing text is the server's, tool for tool.
    let result = r#"{"tools":[ {"name":"a","description":"Só. Two","inputSchema":{"type":"object","properties":{"p":{"type":"string","enum":["x"]}}}} ,{"name":"b","inputSchema":{"type":"object"}}],"nextCursor":"c2"}"#;
    assert_eq!(compact_listing(result, how(Level::Light), &[]), None);
    let medium = compact_listing(result, how(Level::Medium), &[]).unwrap();
    assert_eq!(medium, result.replace("Só. Two", "Só."));
    assert!(has_more(result));
    let empty = r#"{"tools":[]}"#;
    assert_eq!(
        compact_listing(empty, how(Level::High), &[r#"{"name":"x"}"#]).unwrap(),
        r#"{"tools":[{"name":"x"}]}"#
    );
    assert!(!has_more(empty));
    for bad in [
        r#"{"tools":[1]}"#,
        r#"{"tools":{}}"#,
        "[]",
        r#"{"tools":[{"name":"a","name":"b"}]}"#,
    ] {
        assert_eq!(
            compact_listing(bad, how(Level::High), &[r#"{"name":"x"}"#]),
            None,
            "{bad}"
        );
    }
}

#[test]
fn a_disclosed_listing_has_the_hot_tools_as_sent_and_the_added_ones() {
    let mut catalog = Catalog::default();
    let limits = Limits {
        max_tools: 100,
        max_bytes: 1 << 20,
    };
    let first =
        r#"{"tools":[{"name":"a","description":"A \u00e9"},{"name":"b"}],"nextCursor":"p2"}"#;
    let last =
        r#"{"tools":[{"name":"c"}],"ttlMs":300000,"cacheScope":"public","resultType":"complete"}"#;
    catalog.add_page(first, limits).unwrap();
    catalog.add_page(last, limits).unwrap();
    let added = added_tools(ListingMode::Disclose, NAMES, 2, 20);
    let added: Vec<&str> = added.iter().map(String::as_str).collect();
    let hot = vec!["c".to_string(), "missing".to_string(), "a".to_string()];
    let out = disclose(&catalog, &hot, &added, last).unwrap();
    assert!(out.starts_with(r#"{"tools":[{"name":"c"},{"name":"a","description":"A \u00e9"},{"name":"mcp_toon_search_tools""#), "{out}");
    assert!(
        out.ends_with(r#"],"ttlMs":300000,"cacheScope":"public","resultType":"complete"}"#),
        "{out}"
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "c",
            "a",
            "mcp_toon_search_tools",
            "mcp_toon_call_tool",
            "mcp_toon_describe"
        ]
    );
    assert!(v.get("nextCursor").is_none());
    let first_only = disclose(&catalog, &[], &added, first).unwrap();
    assert!(!first_only.contains("nextCursor"), "{first_only}");
}

#[test]
fn every_real_tool_is_found_by_its_name() {
    // What an agent that follows the listed tools alone can reach: any
    // tool whose name it learns (from a search or a description) ranks
    // first for that name.
    for (file, body) in listings() {
        let mut catalog = Catalog::default();
        for r in results(&body) {
            catalog
                .add_page(
                    &r,
                    Limits {
                        max_tools: 10_000,
                        max_bytes: 1 << 24,
                    },
                )
                .unwrap();
        }
        let index = Index::new(&catalog);
        for (name, _) in catalog.tools() {
            let hits = index.search(&Query::new(name), 1);
            assert_eq!(hits.first().map(|h| h.name.as_str()), Some(name), "{file}");
        }
    }
}

#[test]
fn answers_say_what_an_agent_needs() {
    let mut catalog = Catalog::default();
    let page = r#"{"tools":[{"name":"read_file","description":"Read a file. Long details.","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"Where"}}}},{"name":"write_file","description":"Write a file."}]}"#;
    catalog
        .add_page(
            page,
            Limits {
                max_tools: 10,
                max_bytes: 1 << 20,
            },
        )
        .unwrap();
    let index = Index::new(&catalog);
    let found = search_answer(&catalog, &index, "read", 5, how(Level::Medium));
    assert_eq!(
        found,
        r#"[{"name":"read_file","description":"Read a file.","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}}}]"#
    );
    let v: Value = serde_json::from_str(&search_answer(
        &catalog,
        &index,
        "file",
        1,
        how(Level::Light),
    ))
    .unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1);
    let none = search_answer(&catalog, &index, "zebra", 5, how(Level::Medium));
    assert_eq!(
        none,
        "No tool matches that query. This server's tools: read_file, write_file."
    );
    assert_eq!(
        describe_answer(&catalog, Some("write_file")),
        Ok(r#"{"name":"write_file","description":"Write a file."}"#)
    );
    assert!(describe_answer(&catalog, Some("x\"y"))
        .unwrap_err()
        .contains(r#""x\"y""#));
    assert!(describe_answer(&catalog, None)
        .unwrap_err()
        .contains("`name`"));
}
