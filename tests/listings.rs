//! Listings (issue 41) against what lies outside the crate: the official
//! SDKs' own schemas for a `tools/list` result, and tasks an agent might
//! search for on real servers' listings (bench/listings/, README there).
//!
//! The SDK checks run the TypeScript SDK (npm `@modelcontextprotocol/sdk`
//! 1.x, MCP 2025-11-25, and `@modelcontextprotocol/core` 2.x, 2026-07-28)
//! from tests/e2e/node_modules, and the Python SDK (PyPI `mcp` 2.x) with
//! `jsonschema` from .venv: `scripts/bootstrap.sh` installs both.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::process::Command;

use mcp_toon::config::{Level, ListingMode};
use mcp_toon::listing::{
    self, added_tools, compact_listing, describe_tool, Catalog, Compaction, Index, Limits, Names,
    Query,
};
use serde_json::Value;

const NAMES: Names<'static> = Names {
    search: "mcp_toon_search_tools",
    call: "mcp_toon_call_tool",
    describe: "mcp_toon_describe",
};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every captured listing: its name, and the `result` text of each page.
fn captures() -> Vec<(String, Vec<String>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("bench/listings"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let body = std::fs::read_to_string(f).unwrap();
            let pages: Vec<Value> = match serde_json::from_str(&body).unwrap() {
                Value::Array(a) => a,
                one => vec![one],
            };
            let results = pages.iter().map(|p| p["result"].to_string()).collect();
            (
                f.file_stem().unwrap().to_string_lossy().into_owned(),
                results,
            )
        })
        .collect()
}

fn catalog(results: &[String]) -> Catalog {
    let mut c = Catalog::default();
    for r in results {
        c.add_page(
            r,
            Limits {
                max_tools: 65_536,
                max_bytes: 1 << 26,
            },
        )
        .unwrap();
    }
    c
}

/// What the plugin writes for every capture: each level's compact listing
/// (with the describe tool), the disclosed listing (three hot tools and
/// the added ones), and the added tools alone.
fn written() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, results) in captures() {
        let describe = describe_tool(NAMES);
        for level in Level::ALL {
            for (n, r) in results.iter().enumerate() {
                let how = Compaction {
                    level,
                    max_description_bytes: 64,
                };
                let text = compact_listing(r, how, &[&describe]).unwrap_or_else(|| r.clone());
                out.push((format!("{name}-{}-{n}", level.as_str()), text));
            }
        }
        let c = catalog(&results);
        let hot: Vec<String> = c.tools().take(3).map(|(n, _)| n.to_string()).collect();
        let added = added_tools(ListingMode::Disclose, NAMES, c.len() - hot.len(), 20);
        let added: Vec<&str> = added.iter().map(String::as_str).collect();
        let disclosed = listing::disclose(&c, &hot, &added, results.last().unwrap()).unwrap();
        out.push((format!("{name}-disclosed"), disclosed));
    }
    let added = added_tools(ListingMode::Disclose, NAMES, 7, 20);
    out.push((
        "added".into(),
        format!("{{\"tools\":[{}]}}", added.join(",")),
    ));
    out
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-toon-listings-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write_all(dir: &Path) -> usize {
    let all = written();
    for (name, text) in &all {
        // Every text the plugin writes is JSON before any SDK sees it.
        serde_json::from_str::<Value>(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        std::fs::write(dir.join(format!("{name}.json")), text).unwrap();
    }
    all.len()
}

fn run(mut cmd: Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e} (run scripts/bootstrap.sh)"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} refused what the plugin writes:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

const NODE_CHECK: &str = r#"
const fs = require("fs"), path = require("path");
const v1 = require("@modelcontextprotocol/sdk/types.js");
const v2 = require("@modelcontextprotocol/core");
const dir = process.argv[1];
let n = 0, bad = [];
for (const f of fs.readdirSync(dir).sort()) {
  const value = JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
  for (const [sdk, schema] of [["sdk 1.x", v1.ListToolsResultSchema], ["core 2.x", v2.ListToolsResultSchema]]) {
    const r = schema.safeParse(value);
    if (!r.success) bad.push(`${f} (${sdk}): ${JSON.stringify(r.error.issues).slice(0, 400)}`);
    else if (r.data.tools.length !== value.tools.length) bad.push(`${f} (${sdk}): tools dropped`);
  }
  n++;
}
console.log(`${n} listings`);
if (bad.length) { console.log(bad.join("\n")); process.exit(1); }
"#;

const PYTHON_CHECK: &str = r#"
import json, pathlib, sys
import jsonschema
from mcp.types import ListToolsResult
n, bad = 0, []
for f in sorted(pathlib.Path(sys.argv[1]).iterdir()):
    value = json.loads(f.read_text())
    try:
        r = ListToolsResult.model_validate(value)
        assert len(r.tools) == len(value["tools"]), "tools dropped"
        for t in value["tools"]:
            for key in ("inputSchema", "outputSchema"):
                if key in t:
                    jsonschema.validators.validator_for(t[key]).check_schema(t[key])
    except Exception as e:
        bad.append(f"{f.name}: {e}"[:500])
    n += 1
print(f"{n} listings")
if bad:
    print("\n".join(bad))
    sys.exit(1)
"#;

#[test]
fn the_typescript_sdks_accept_every_listing_the_plugin_writes() {
    let dir = scratch("ts");
    let n = write_all(&dir);
    let e2e = root().join("tests/e2e");
    let node22 = e2e.join("node_modules/node/bin/node");
    let mut cmd = Command::new(if node22.exists() {
        node22
    } else {
        PathBuf::from("node")
    });
    cmd.current_dir(&e2e).arg("-e").arg(NODE_CHECK).arg(&dir);
    let out = run(cmd, "the TypeScript SDK");
    assert!(out.contains(&format!("{n} listings")), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_python_sdk_accepts_every_listing_the_plugin_writes() {
    let dir = scratch("py");
    let n = write_all(&dir);
    let mut cmd = Command::new(root().join(".venv/bin/python"));
    cmd.arg("-c").arg(PYTHON_CHECK).arg(&dir);
    let out = run(cmd, "the Python SDK");
    assert!(out.contains(&format!("{n} listings")), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Recall of the search on tasks written for each real listing
/// (tests/listings/queries.json): the share of tasks whose tool is among
/// the first 3 and 5 results.
#[test]
fn the_search_finds_the_tool_for_a_task() {
    let queries: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/listings/queries.json")).unwrap(),
    )
    .unwrap();
    let (mut total, mut at3, mut at5) = (0, 0, 0);
    let mut misses = Vec::new();
    for (name, results) in captures() {
        let Some(tasks) = queries.get(&name).and_then(Value::as_array) else {
            panic!("tests/listings/queries.json has no tasks for {name}");
        };
        let c = catalog(&results);
        let index = Index::new(&c);
        let (mut n3, mut n5) = (0, 0);
        for task in tasks {
            let query = task[0].as_str().unwrap();
            let want: Vec<&str> = task[1]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            for w in &want {
                assert!(c.get(w).is_some(), "{name}: no tool {w}");
            }
            let hits: Vec<String> = index
                .search(&Query::new(query), 5)
                .into_iter()
                .map(|h| h.name)
                .collect();
            let rank = hits.iter().position(|h| want.contains(&h.as_str()));
            n3 += usize::from(rank.is_some_and(|r| r < 3));
            n5 += usize::from(rank.is_some());
            if rank.is_none_or(|r| r >= 3) {
                misses.push(format!("{name}: {query:?} -> {hits:?}"));
            }
        }
        println!(
            "{name:20} tasks {:2}  recall@3 {n3:2}  recall@5 {n5:2}",
            tasks.len()
        );
        total += tasks.len();
        at3 += n3;
        at5 += n5;
    }
    let r3 = at3 as f64 / total as f64;
    let r5 = at5 as f64 / total as f64;
    println!("all: {total} tasks, recall@3 {r3:.3}, recall@5 {r5:.3}");
    println!("not in the first three:\n{}", misses.join("\n"));
    // Floors a little under what the search reaches on these tasks (README
    // "Search" in docs/listings.md): a change that loses a few tasks fails.
    assert!(r3 >= RECALL_AT_3, "recall@3 {r3:.3} < {RECALL_AT_3}");
    assert!(r5 >= RECALL_AT_5, "recall@5 {r5:.3} < {RECALL_AT_5}");
}

const RECALL_AT_3: f64 = 0.85;
const RECALL_AT_5: f64 = 0.88;

/// Search and compaction hold their bounds on a listing of 10,000 tools
/// with a 1 MB description (the adversarial bench measures their time).
#[test]
fn a_huge_listing_is_handled_within_its_bounds() {
    let mut tools: Vec<String> = (0..10_000)
        .map(|i| format!(r#"{{"name":"tool_{i}","description":"Does thing {i}. More.","inputSchema":{{"type":"object","properties":{{"a{i}":{{"type":"string","description":"x"}}}}}}}}"#))
        .collect();
    let huge = "word ".repeat(200_000);
    tools.push(format!(r#"{{"name":"huge","description":"{huge}"}}"#));
    let result = format!(r#"{{"tools":[{}]}}"#, tools.join(","));
    let c = catalog(std::slice::from_ref(&result));
    assert_eq!(c.len(), 10_001);
    let index = Index::new(&c);
    let hits = index.search(&Query::new(&"thing ".repeat(1000)), 5);
    assert_eq!(hits.len(), 5);
    assert_eq!(
        index.search(&Query::new("tool_9999"), 1)[0].name,
        "tool_9999"
    );
    let high = compact_listing(
        &result,
        Compaction {
            level: Level::High,
            max_description_bytes: 120,
        },
        &[],
    )
    .unwrap();
    assert!(high.len() < result.len() - huge.len() + 1000);
    let v: Value = serde_json::from_str(&high).unwrap();
    assert!(v["tools"][10_000]["description"].as_str().unwrap().len() <= 120);
}
