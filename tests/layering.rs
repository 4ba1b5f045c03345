#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

//! The crate's layers, checked on its source: one crate (branches in
//! flight write against `src/`), so the compiler cannot keep the
//! boundaries; this test does. Each rule names the modules it binds and
//! what they may not reach:
//!
//! - only the proxy-wasm adapter (`src/adapter/`) knows proxy-wasm;
//! - configuration is below everything that uses it: `src/config/` reaches
//!   no MCP message model, intent, page, stage, pipeline, exchange, driver
//!   or host;
//! - stages are below the pipeline: `src/stage/` reaches no pipeline,
//!   exchange, driver or host;
//! - the generic TOON path does not use the fast one (the dispatch in
//!   `encode` tries the fast path first);
//! - the host trait reaches nothing but the callout types;
//! - the exchange decides and does not drive: it reaches no driver or host
//!   implementation;
//! - the hosts decide nothing: the component, the CLI and the scripted host
//!   go through the driver, never the exchange or the pipeline.

use std::fs;
use std::path::{Path, PathBuf};

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The source without comments (line comments and doc comments), so a
/// rule binds code, not prose about it.
fn code(path: &Path) -> String {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Files under `src/<under>` (a file or a directory).
fn under(under: &str) -> Vec<PathBuf> {
    let path = src().join(under);
    if path.is_dir() {
        files(&path)
    } else {
        vec![path]
    }
}

fn forbid(paths: &[PathBuf], needles: &[&str], why: &str) -> Vec<String> {
    let mut found = Vec::new();
    for path in paths {
        let text = code(path);
        for needle in needles {
            if text.contains(needle) {
                let rel = path.strip_prefix(src()).unwrap().display();
                found.push(format!("src/{rel} uses `{needle}`: {why}"));
            }
        }
    }
    found
}

#[test]
fn the_layers_hold() {
    let all = files(&src());
    let mut broken = Vec::new();

    let outside_adapter: Vec<PathBuf> = all
        .iter()
        .filter(|p| !p.starts_with(src().join("adapter")))
        .cloned()
        .collect();
    broken.extend(forbid(
        &outside_adapter,
        &["proxy_wasm"],
        "only src/adapter/ knows proxy-wasm",
    ));

    broken.extend(forbid(
        &under("config"),
        &[
            "crate::mcp",
            "crate::intent",
            "crate::page",
            "crate::stage",
            "crate::pipeline",
            "crate::exchange",
            "crate::driver",
            "crate::host",
        ],
        "configuration is below what uses it",
    ));

    broken.extend(forbid(
        &under("stage"),
        &[
            "crate::pipeline",
            "crate::exchange",
            "crate::driver",
            "crate::host",
        ],
        "stages are below the pipeline",
    ));

    let generic_toon: Vec<PathBuf> = under("stage/toon")
        .into_iter()
        .filter(|p| !p.starts_with(src().join("stage/toon/fast")))
        .filter(|p| !p.ends_with("stage/toon/mod.rs"))
        .collect();
    broken.extend(forbid(
        &generic_toon,
        &["fast::", "fast::{"],
        "the generic TOON path does not use the fast one",
    ));
    let toon_mod = code(&src().join("stage/toon/mod.rs"));
    // The dispatch is `encode_within` (`encode` calls it with a fresh
    // budget), and `encode_compacted` for a text measured as its compact
    // form: only their bodies may name the fast path.
    let mut outside_dispatch = toon_mod.clone();
    for dispatch in ["pub fn encode_compacted(", "pub fn encode_within("] {
        outside_dispatch = match outside_dispatch.split_once(dispatch) {
            Some((before, rest)) => {
                let after = rest.split_once("\n}\n").map_or("", |(_, after)| after);
                format!("{before}{after}")
            }
            None => String::new(),
        };
    }
    if outside_dispatch.is_empty() || outside_dispatch.contains("fast::") {
        broken.push(
            "src/stage/toon/mod.rs uses `fast::` outside `encode_within` and \
             `encode_compacted`: the generic TOON path does not use the fast one"
                .into(),
        );
    }

    broken.extend(forbid(
        &under("host.rs"),
        &[
            "crate::config",
            "crate::exchange",
            "crate::driver::",
            "crate::pipeline",
            "crate::stage",
        ],
        "the host trait reaches nothing but the callout types",
    ));

    broken.extend(forbid(
        &under("exchange"),
        &["crate::driver", "Host for", "crate::adapter"],
        "the exchange decides; the driver carries out",
    ));

    let hosts: Vec<PathBuf> = ["component", "cli", "sim.rs", "adapter"]
        .iter()
        .flat_map(|d| under(d))
        .collect();
    broken.extend(forbid(
        &hosts,
        &[
            "crate::exchange",
            "pipeline::start",
            "pipeline::process_response",
            "Exchange::new",
        ],
        "hosts go through the driver",
    ));

    assert!(broken.is_empty(), "\n{}", broken.join("\n"));
}

/// The rules above must bind something: each names files that exist.
#[test]
fn the_rules_name_real_files() {
    for path in [
        "adapter",
        "config",
        "stage",
        "stage/toon/fast",
        "stage/toon/mod.rs",
        "host.rs",
        "exchange",
        "component",
        "cli",
        "sim.rs",
    ] {
        assert!(src().join(path).exists(), "src/{path} is gone");
    }
}
