#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // test code

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
//!   go through the driver, never the exchange or the pipeline;
//! - the MCP model is below what reads it: `src/mcp/` reaches no intent,
//!   page, pipeline, exchange, listing, driver or host;
//! - the record is below what fills it: `src/report.rs` reaches no page,
//!   pipeline, exchange or driver;
//! - pages are below the pipeline: `src/page/` reaches no pipeline,
//!   exchange, driver or host (the page call is answered in the exchange,
//!   whose re-issue runs the pipeline again);
//! - the pipeline reaches no exchange, driver or host;
//! - the proxy-wasm host implementation does not reach back into the
//!   exports that call it;
//! - and, above all of these, the crate's top-level modules form no cycle
//!   (tests aside: they may reach across).

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

    broken.extend(forbid(
        &under("mcp"),
        &[
            "crate::intent",
            "crate::page",
            "crate::pipeline",
            "crate::exchange",
            "crate::listing",
            "crate::driver",
            "crate::host",
        ],
        "the MCP model is below what reads it",
    ));
    broken.extend(forbid(
        &under("report.rs"),
        &[
            "crate::page",
            "crate::pipeline",
            "crate::exchange",
            "crate::driver",
        ],
        "the record is below what fills it",
    ));
    broken.extend(forbid(
        &under("page"),
        &[
            "crate::pipeline",
            "crate::exchange",
            "crate::driver",
            "crate::host",
        ],
        "pages are below the pipeline",
    ));
    let pipeline: Vec<PathBuf> = under("pipeline")
        .into_iter()
        .chain(under("pipeline.rs"))
        .collect();
    broken.extend(forbid(
        &pipeline,
        &["crate::exchange", "crate::driver", "crate::host"],
        "the pipeline is below the exchange",
    ));
    broken.extend(forbid(
        &under("adapter/host.rs"),
        &["exports::"],
        "the host implementation does not reach back into the exports",
    ));

    assert!(broken.is_empty(), "\n{}", broken.join("\n"));
}

/// A file's code outside tests: none for a test file (`tests.rs`,
/// `*_tests.rs`, or under a `tests/` folder), else up to its inline test
/// module (`#[cfg(test)]`, other attributes, then `mod … {`: by
/// convention the file's end).
fn code_outside_tests(path: &Path) -> String {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let in_tests_dir = path
        .strip_prefix(src())
        .unwrap()
        .components()
        .any(|c| c.as_os_str() == "tests");
    if name == "tests.rs" || name.ends_with("_tests.rs") || in_tests_dir {
        return String::new();
    }
    let text = code(path);
    let lines: Vec<&str> = text.lines().collect();
    // `#[cfg(test)]`, any other attributes (and the blank lines comments
    // left), then a module with a body.
    let end = (0..lines.len())
        .find(|&i| {
            lines[i].trim() == "#[cfg(test)]"
                && lines[i + 1..]
                    .iter()
                    .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with("#["))
                    .is_some_and(|l| {
                        let l = l.trim();
                        (l.starts_with("mod ") || l.starts_with("pub(crate) mod "))
                            && l.ends_with('{')
                    })
        })
        .unwrap_or(lines.len());
    lines[..end].join("\n")
}

/// The top-level module a file belongs to (`src/page/store.rs`: `page`).
fn top_module(path: &Path) -> String {
    let rel = path.strip_prefix(src()).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

#[test]
fn the_modules_form_no_cycle() {
    use std::collections::{BTreeMap, BTreeSet};
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in files(&src()) {
        let from = top_module(&path);
        if from == "lib" || from == "bin" {
            continue;
        }
        let text = code_outside_tests(&path);
        for (at, _) in text.match_indices("crate::") {
            let rest = &text[at + "crate::".len()..];
            let to: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !to.is_empty() && to != from {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    // A depth-first walk from every module; a module met again on the
    // path is a cycle, printed as the path that closes it.
    fn walk(
        at: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        cycles: &mut Vec<String>,
    ) {
        if let Some(i) = path.iter().position(|p| p == at) {
            let mut cycle = path[i..].to_vec();
            cycle.push(at.to_string());
            cycles.push(cycle.join(" -> "));
            return;
        }
        if done.contains(at) {
            return;
        }
        path.push(at.to_string());
        for next in edges.get(at).into_iter().flatten() {
            walk(next, edges, path, done, cycles);
        }
        path.pop();
        done.insert(at.to_string());
    }
    let mut cycles = Vec::new();
    let mut done = BTreeSet::new();
    for module in edges.keys() {
        walk(module, &edges, &mut Vec::new(), &mut done, &mut cycles);
    }
    assert!(
        edges.len() > 10
            && edges
                .get("exchange")
                .is_some_and(|e| e.contains("pipeline")),
        "the walk reads the modules: {edges:?}"
    );
    assert!(
        cycles.is_empty(),
        "modules in a cycle:\n{}",
        cycles.join("\n")
    );
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
        "mcp",
        "report.rs",
        "page",
        "pipeline",
        "pipeline.rs",
        "adapter/host.rs",
    ] {
        assert!(src().join(path).exists(), "src/{path} is gone");
    }
}
