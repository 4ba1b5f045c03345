#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // test code

//! The layers, checked on the source. Two kinds of boundary:
//!
//! - between crates, the compiler's: `mcp-toon-core` (crates/core) depends
//!   on no crate above it, so nothing in the core can name the pipeline,
//!   pages, the exchange, the driver or a host; `mcp-toon-engine`
//!   (crates/engine) depends on no host, so nothing in the engine can name
//!   a host; each host is a crate of its own over the engine (`mcp-toon`,
//!   the root: Envoy; [`HOST_CRATES`]: Traefik, the component, the CLI) and
//!   depends on no other host, so no host can name another. This test
//!   reads the manifests that make it so;
//! - inside the root, the core and the engine, this test's: every
//!   top-level module sits on a floor ([`FLOORS`], the table
//!   ARCHITECTURE.md draws), and a `crate::` path outside test code may
//!   only reach a lower floor. Modules that share a floor do not know each
//!   other, so no cycle can form. A host crate is one top-level module of
//!   its own (its floor is the hosts'); it reaches the engine by
//!   `mcp_toon_engine::` paths, which the compiler keeps below it;
//! - inside every crate, at every depth: no module names another that, by
//!   any way round, names it back ([`module_edges`]: every `use`, `crate::`,
//!   `super::`, `self::` and child-module path, followed through
//!   re-exports to the module that defines the name; a module may name its
//!   ancestors).
//!
//! And a few rules finer than a floor:
//! - only the proxy-wasm adapter (`src/adapter/`) knows proxy-wasm, only
//!   the Traefik crate http-wasm's imports, only the component crate the
//!   WIT glue;
//! - the generic TOON path does not use the fast one (the dispatch in
//!   `encode` tries the fast path first);
//! - the host trait reaches nothing but the callout types;
//! - the exchange decides and does not drive: it implements no host;
//! - the hosts decide nothing: the component, the CLI and the scripted host
//!   go through the driver, never the exchange or the pipeline;
//! - the proxy-wasm host implementation does not reach back into the
//!   exports that call it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Each top-level module and its floor, lowest first. The core crate holds
/// floors 0–4, the engine crate 5–10, the hosts the rest: `adapter` in
/// this package, and each of [`HOST_CRATES`] as one module.
const FLOORS: &[(&str, u8)] = &[
    // Core: readers and vocabularies that know nothing else.
    ("json", 0),
    ("sse", 0),
    ("marker", 0),
    ("tag", 0),
    ("media", 0),
    ("outcome", 0),
    ("callout", 0),
    // Core: the operator's settings.
    ("config", 1),
    // Core: the MCP message model.
    ("mcp", 2),
    // Core: what may be done to a result or a listing.
    ("stage", 3),
    ("intent", 3),
    ("listing", 3),
    // Core: what was done, and the measuring tool's conversions.
    ("report", 4),
    ("convert", 4),
    // Engine: what the engine is given (shared data, the host trait).
    ("shared", 5),
    ("host", 5),
    // Engine: cut results and their handles.
    ("page", 6),
    // Engine: the one place that orders the stages.
    ("pipeline", 7),
    // Engine: one stream's decisions.
    ("exchange", 8),
    // Engine: carries out what the exchange decided, for any host.
    ("driver", 9),
    // Engine: the scripted host the engine's tests, fuzz targets and
    // benchmarks drive it with, and what its unit tests share.
    ("sim", 10),
    ("testkit", 10),
    // Hosts.
    ("adapter", 11),
    ("httpwasm", 11),
    ("component", 11),
    ("cli", 11),
];

/// The floors that are the core crate.
const CORE_TOP_FLOOR: u8 = 4;
/// The floors that are the engine crate, above the core's.
const ENGINE_TOP_FLOOR: u8 = 10;

/// The hosts that are crates of their own beside this package (Envoy's):
/// the module [`FLOORS`] names, the package, its folder. Each is its own
/// top: nothing depends on it, and it depends on no other host.
const HOST_CRATES: &[(&str, &str, &str)] = &[
    ("httpwasm", "mcp-toon-traefik", "crates/traefik"),
    ("component", "mcp-toon-component", "crates/component"),
    ("cli", "mcp-toon-cli", "crates/cli"),
];

/// The host crate a file is in, as its module in [`FLOORS`].
fn host_crate_of(path: &Path) -> Option<&'static str> {
    HOST_CRATES
        .iter()
        .find(|(_, _, dir)| path.starts_with(root().join(dir).join("src")))
        .map(|(module, _, _)| *module)
}

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

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The source folders of the workspace's crates, lowest first: the core,
/// the engine, this package (Envoy's host), the other hosts.
fn sources() -> Vec<PathBuf> {
    let mut out = vec![
        root().join("crates/core/src"),
        root().join("crates/engine/src"),
        root().join("src"),
    ];
    out.extend(
        HOST_CRATES
            .iter()
            .map(|(_, _, dir)| root().join(dir).join("src")),
    );
    out
}

fn all_files() -> Vec<PathBuf> {
    sources().iter().flat_map(|s| files(s)).collect()
}

/// The source folder a file is in.
fn source_of(path: &Path) -> PathBuf {
    sources().into_iter().find(|s| path.starts_with(s)).unwrap()
}

fn shown(path: &Path) -> String {
    path.strip_prefix(root()).unwrap().display().to_string()
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

/// Files of a module path (`stage/toon`, `host.rs`), in whichever crate
/// holds it; a host crate's module name (`httpwasm`) is the whole crate.
fn under(under: &str) -> Vec<PathBuf> {
    if let Some((_, _, dir)) = HOST_CRATES.iter().find(|(m, _, _)| *m == under) {
        return files(&root().join(dir).join("src"));
    }
    // The floors' crates: the core, the engine, this package.
    let found: Vec<PathBuf> = sources()[..3]
        .iter()
        .map(|s| s.join(under))
        .filter(|p| p.exists())
        .collect();
    assert_eq!(found.len(), 1, "{under} is in exactly one crate: {found:?}");
    let path = &found[0];
    if path.is_dir() {
        files(path)
    } else {
        vec![path.clone()]
    }
}

fn forbid(paths: &[PathBuf], needles: &[&str], why: &str) -> Vec<String> {
    let mut found = Vec::new();
    for path in paths {
        let text = code(path);
        for needle in needles {
            if text.contains(needle) {
                found.push(format!("{} uses `{needle}`: {why}", shown(path)));
            }
        }
    }
    found
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
        .strip_prefix(source_of(path))
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
                        (l.starts_with("mod ")
                            || l.starts_with("pub(crate) mod ")
                            || l.starts_with("pub mod "))
                            && l.ends_with('{')
                    })
        })
        .unwrap_or(lines.len());
    lines[..end].join("\n")
}

/// The top-level module a file belongs to (`crates/engine/src/page/store.rs`:
/// `page`); for a file of a host crate, the crate's module (`httpwasm`).
fn top_module(path: &Path) -> String {
    if let Some(module) = host_crate_of(path) {
        return module.to_string();
    }
    let rel = path.strip_prefix(source_of(path)).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The top-level modules a text's `crate::` paths name: `crate::a::b` names
/// `a`; `use crate::{a, b::{c, d}}` names `a` and `b`.
fn reached(text: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            out.push(ident(rest));
            continue;
        };
        // The group's items at depth zero, each up to its `,`.
        let mut depth = 0;
        let mut item = String::new();
        for c in group.chars() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => out.push(ident(&std::mem::take(&mut item))),
                c if depth == 0 => item.push(c),
                _ => {}
            }
        }
        out.push(ident(&item));
    }
    out.retain(|m| !m.is_empty());
    out
}

/// Every `crate::` path outside test code, as (file, from module, to
/// module).
fn edges() -> Vec<(PathBuf, String, String)> {
    let mut out = Vec::new();
    for path in all_files() {
        let from = top_module(&path);
        // A host crate is one top-level module: its `crate::` paths stay
        // inside it (it names the engine as `mcp_toon_engine::`).
        if from == "lib" || from == "bin" || host_crate_of(&path).is_some() {
            continue;
        }
        for to in reached(&code_outside_tests(&path)) {
            if to != from {
                out.push((path.clone(), from.clone(), to));
            }
        }
    }
    out
}

/// What is wrong with one path from `from` to `to`, if anything.
fn upward(from: &str, to: &str) -> Option<String> {
    match (floor(from), floor(to)) {
        (None, _) => Some(format!("module `{from}` has no floor")),
        // A name that is not a module (`crate::Settings`, a re-export at
        // the root) is checked where it is defined.
        (_, None) => None,
        (Some(f), Some(t)) if t >= f => Some(format!(
            "{from} (floor {f}) reaches `crate::{to}` (floor {t}): only lower floors"
        )),
        _ => None,
    }
}

fn floor(module: &str) -> Option<u8> {
    FLOORS.iter().find(|(m, _)| *m == module).map(|(_, f)| *f)
}

#[test]
fn every_path_reaches_down() {
    let mut broken = Vec::new();
    let mut seen = BTreeSet::new();
    for (path, from, to) in edges() {
        if let Some(why) = upward(&from, &to) {
            broken.push(format!("{}: {why}", shown(&path)));
        }
        seen.insert((from, to));
    }
    // The walk reads real paths: the exchange runs the pipeline, the
    // pipeline reads stages, the driver drives the exchange, the stages
    // read the MCP model through a `use crate::{…}` group.
    for (from, to) in [
        ("exchange", "pipeline"),
        ("pipeline", "stage"),
        ("driver", "exchange"),
        ("stage", "mcp"),
    ] {
        assert!(
            seen.contains(&(from.to_string(), to.to_string())),
            "the walk found no {from} -> {to}: {seen:?}"
        );
    }
    assert!(broken.is_empty(), "\n{}", broken.join("\n"));
}

/// A planted upward path is read and refused: the check binds.
#[test]
fn an_upward_path_is_reported() {
    let planted = "use crate::{json, exchange::{Exchange, Framing}};\n\
                   fn f() { crate::pipeline::start() }\n\
                   use crate::{\n    mcp::RequestInfo,\n    stage::{toon, clean},\n};";
    assert_eq!(
        reached(planted),
        ["json", "exchange", "pipeline", "mcp", "stage"]
    );
    let refused: Vec<String> = reached(planted)
        .iter()
        .filter_map(|to| upward("stage", to))
        .collect();
    assert_eq!(refused.len(), 3, "{refused:?}");
    assert!(refused[0].contains("crate::exchange") && refused[2].contains("crate::stage"));
    assert!(upward("nowhere", "json").is_some());
    assert!(upward("exchange", "Settings").is_none());
}

#[test]
fn the_floors_are_the_crates() {
    let mut modules: BTreeMap<String, PathBuf> = BTreeMap::new();
    for path in all_files() {
        let m = top_module(&path);
        if m != "lib" && m != "bin" {
            modules.insert(m, source_of(&path));
        }
    }
    let sources = sources();
    let (core, engine, envoy) = (&sources[0], &sources[1], &sources[2]);
    for (module, source) in &modules {
        let f = floor(module).unwrap_or_else(|| panic!("module `{module}` has no floor"));
        let own = HOST_CRATES
            .iter()
            .find(|(m, _, _)| m == module)
            .map(|(_, _, dir)| root().join(dir).join("src"));
        let expected = if f <= CORE_TOP_FLOOR {
            core
        } else if f <= ENGINE_TOP_FLOOR {
            engine
        } else {
            own.as_ref().unwrap_or(envoy)
        };
        assert_eq!(
            source,
            expected,
            "`{module}` (floor {f}) is in {}",
            shown(source)
        );
    }
    for (module, _) in FLOORS {
        assert!(
            modules.contains_key(*module),
            "FLOORS names `{module}`, which is gone"
        );
    }
    // No crate's manifest names a crate above it or, for a host, beside
    // it: the hosts are `mcp-toon` (this package, Envoy's) and HOST_CRATES.
    let manifest = |dir: &str| fs::read_to_string(root().join(dir).join("Cargo.toml")).unwrap();
    let hosts: BTreeSet<&str> = HOST_CRATES
        .iter()
        .map(|(_, package, _)| *package)
        .chain(["mcp-toon"])
        .collect();
    let named = |deps: &BTreeSet<String>, crates: &BTreeSet<&str>| -> Vec<String> {
        deps.iter()
            .filter(|d| crates.contains(d.as_str()))
            .cloned()
            .collect()
    };
    let (core_deps, core_dev) = dependencies(&manifest("crates/core"));
    let above_core: BTreeSet<&str> = hosts.iter().copied().chain(["mcp-toon-engine"]).collect();
    for deps in [&core_deps, &core_dev] {
        let found = named(deps, &above_core);
        assert!(found.is_empty(), "the core depends on {found:?}, above it");
    }
    let (engine_deps, engine_dev) = dependencies(&manifest("crates/engine"));
    for deps in [&engine_deps, &engine_dev] {
        let found = named(deps, &hosts);
        assert!(found.is_empty(), "the engine depends on hosts: {found:?}");
    }
    assert!(engine_deps.contains("mcp-toon-core"));
    for (_, package, dir) in HOST_CRATES {
        let text = manifest(dir);
        assert!(
            text.contains(&format!("name = \"{package}\"")),
            "{dir} is not {package}"
        );
        let (deps, dev) = dependencies(&text);
        assert!(
            deps.contains("mcp-toon-engine"),
            "{package} is not over the engine"
        );
        for deps in [&deps, &dev] {
            let found = named(deps, &hosts);
            assert!(found.is_empty(), "{package} depends on hosts: {found:?}");
        }
    }
    // The Envoy host names no other host; its tests and benches may use the
    // CLI's token counts (a dev-dependency, which src/ cannot name).
    let (envoy_deps, envoy_dev) = dependencies(&manifest("."));
    let found = named(&envoy_deps, &hosts);
    assert!(found.is_empty(), "mcp-toon depends on hosts: {found:?}");
    let found = named(&envoy_dev, &hosts);
    assert!(
        found.iter().all(|d| d == "mcp-toon-cli"),
        "mcp-toon's tests depend on hosts: {found:?}"
    );
}

/// The crates a manifest depends on: (dependencies and build-dependencies,
/// for every target; dev-dependencies).
fn dependencies(manifest: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut deps, mut dev) = (BTreeSet::new(), BTreeSet::new());
    // Which list the current section fills, if any.
    let mut into: Option<bool> = None;
    for line in manifest.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']');
            let (table, rest) = header.split_once("dependencies").unwrap_or((header, ""));
            into = None;
            if table.len() < header.len() {
                let is_dev = table.ends_with("dev-");
                let table = table.trim_end_matches("dev-").trim_end_matches("build-");
                if table.is_empty() || (table.starts_with("target.") && table.ends_with('.')) {
                    let name = rest.trim_start_matches('.').trim();
                    if !name.is_empty() {
                        if is_dev { &mut dev } else { &mut deps }.insert(name.to_string());
                    } else {
                        into = Some(is_dev);
                    }
                }
            }
            continue;
        }
        let (Some(is_dev), Some((key, _))) = (into, line.split_once('=')) else {
            continue;
        };
        if line.starts_with('#') {
            continue;
        }
        let name = key.trim().split('.').next().unwrap_or_default().trim();
        if !name.is_empty() {
            if is_dev { &mut dev } else { &mut deps }.insert(name.to_string());
        }
    }
    (deps, dev)
}

/// The manifest reader sees every way a dependency is written.
#[test]
fn a_planted_dependency_is_read() {
    let (deps, dev) = dependencies(
        "[package]\nname = \"mcp-toon-cli\"\n[features]\nhtml = [\"mcp-toon-engine/html\"]\n\
         [dependencies]\n# mcp-toon-traefik = no\nmcp-toon = { path = \"../..\" }\n\
         mcp-toon-engine.workspace = true\n[target.'cfg(unix)'.dependencies]\nlibc = \"0.2\"\n\
         [build-dependencies]\ncc = \"1\"\n[dev-dependencies.mcp-toon-component]\npath = \"x\"\n\
         [dev-dependencies]\nproptest = \"1\"\n[[bench]]\nname = \"x\"\n",
    );
    let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(deps, set(&["cc", "libc", "mcp-toon", "mcp-toon-engine"]));
    assert_eq!(dev, set(&["mcp-toon-component", "proptest"]));
}

#[test]
fn the_finer_rules_hold() {
    let all = all_files();
    let mut broken = Vec::new();

    // Each host's ABI, named in that host only: proxy-wasm's imports and
    // exports, http-wasm's import module, the WIT glue.
    for (home, needles, why) in [
        (
            "src/adapter",
            &["proxy_wasm"][..],
            "only src/adapter/ knows proxy-wasm",
        ),
        (
            "crates/traefik/src",
            &["\"http_handler\"", "handle_request", "handle_response"][..],
            "only crates/traefik/ knows http-wasm",
        ),
        (
            "crates/component/src",
            &["wit_bindgen", "mcp-toon.wit"][..],
            "only crates/component/ knows the WIT interface",
        ),
    ] {
        let outside: Vec<PathBuf> = all
            .iter()
            .filter(|p| !p.starts_with(root().join(home)))
            .cloned()
            .collect();
        broken.extend(forbid(&outside, needles, why));
    }

    let fast = under("stage/toon/fast");
    let toon_mod_path = under("stage/toon/mod.rs").remove(0);
    let generic_toon: Vec<PathBuf> = under("stage/toon")
        .into_iter()
        .filter(|p| !fast.contains(p) && *p != toon_mod_path)
        .collect();
    broken.extend(forbid(
        &generic_toon,
        &["fast::", "fast::{"],
        "the generic TOON path does not use the fast one",
    ));
    let toon_mod = code(&toon_mod_path);
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
            "stage/toon/mod.rs uses `fast::` outside `encode_within` and \
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

    let hosts: Vec<PathBuf> = ["component", "cli", "sim.rs", "adapter", "httpwasm"]
        .iter()
        .flat_map(|d| under(d))
        .collect();
    broken.extend(forbid(
        &hosts,
        &[
            "crate::exchange",
            "mcp_toon_engine::exchange",
            "pipeline::start",
            "pipeline::process_response",
            "Exchange::new",
        ],
        "hosts go through the driver",
    ));

    broken.extend(forbid(
        &under("adapter/host.rs"),
        &["exports::"],
        "the host implementation does not reach back into the exports",
    ));

    assert!(broken.is_empty(), "\n{}", broken.join("\n"));
}

// ---------------------------------------------------------------------
// Inside a crate: no module names another that, by any way round, names
// it back. A module may name its ancestors (a child is part of its
// parent, and Rust scopes it so); every other path is an edge from the
// module to the module that defines what the path names, followed
// through re-exports (`pub use inner::X` in a parent leads to `inner`).

/// A crate's modules outside tests: `stage::toon::fast::row` → its code
/// (`""` for the crate's root).
fn modules_of(source: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for path in files(source) {
        let rel = path.strip_prefix(source).unwrap();
        if rel.starts_with("bin") {
            continue;
        }
        let text = code_outside_tests(&path);
        if text.is_empty() {
            continue;
        }
        let mut parts: Vec<String> = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
            parts.pop();
        }
        out.insert(parts.join("::"), text);
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The `::`-separated segments of a path's text (`a :: b::c` → a, b, c).
fn segments(text: &str) -> Vec<String> {
    text.split("::")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The items of a group's inside at depth zero.
fn split_top(group: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut from) = (0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&group[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(&group[from..]);
    out.retain(|s| !s.trim().is_empty());
    out
}

/// A use tree's leaves as (path, the name it brings in).
fn use_tree(tree: &str, prefix: &[String], out: &mut Vec<(Vec<String>, String)>) {
    let tree = tree.trim();
    if let (Some(open), Some(close)) = (tree.find('{'), tree.rfind('}')) {
        let mut p = prefix.to_vec();
        p.extend(segments(&tree[..open]));
        for item in split_top(&tree[open + 1..close]) {
            use_tree(item, &p, out);
        }
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((path, alias)) => (path, Some(alias.trim().to_string())),
        None => (tree, None),
    };
    let mut p = prefix.to_vec();
    p.extend(segments(path));
    if p.last().is_some_and(|s| s == "self") {
        p.pop();
    }
    if let Some(name) = alias.or_else(|| p.last().cloned()) {
        out.push((p, name));
    }
}

/// Every `use` declaration's leaves in a module's code.
fn uses(text: &str) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("use ") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| !(c.is_whitespace() || c == ')' || c == '{' || c == ';')) {
            continue;
        }
        let rest = &text[at + 4..];
        let Some(end) = rest.find(';') else { continue };
        use_tree(&rest[..end], &[], &mut out);
    }
    out
}

/// Paths outside `use` that start with `crate::`, `super::` or `self::`,
/// or with a child module's name.
fn paths(text: &str, children: &[&str]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let starts = ["crate", "super", "self"];
    for start in starts.iter().chain(children) {
        let needle = format!("{start}::");
        for (at, _) in text.match_indices(&needle) {
            let before = &text[..at];
            if before.ends_with("::") || before.chars().next_back().is_some_and(is_ident) {
                continue;
            }
            let path: String = text[at..]
                .chars()
                .take_while(|c| is_ident(*c) || *c == ':')
                .collect();
            out.push(segments(&path));
        }
    }
    out
}

fn parent(module: &str) -> String {
    module
        .rsplit_once("::")
        .map_or(String::new(), |(p, _)| p.into())
}

fn join(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.into()
    } else {
        format!("{base}::{name}")
    }
}

/// The module that defines what `path` names, seen from `from`: None for a
/// path that leaves the crate (`std::`, another crate, the core's modules
/// re-exported in the engine) or names nothing of it.
fn target(
    modules: &BTreeMap<String, String>,
    imports: &BTreeMap<String, Vec<(Vec<String>, String)>>,
    from: &str,
    path: &[String],
    depth: usize,
) -> Option<String> {
    let (first, rest) = path.split_first()?;
    let mut at = match first.as_str() {
        "crate" => String::new(),
        "self" => from.to_string(),
        "super" => parent(from),
        name if modules.contains_key(&join(from, name)) => join(from, name),
        _ => return None,
    };
    let mut rest = rest.iter().peekable();
    while rest.peek().is_some_and(|s| *s == "super") {
        rest.next();
        at = parent(&at);
    }
    for seg in rest {
        let inner = join(&at, seg);
        if modules.contains_key(&inner) {
            at = inner;
            continue;
        }
        // An item: where `at` brings it in from, if it does.
        let brought = imports
            .get(&at)
            .and_then(|uses| uses.iter().find(|(_, name)| name == seg));
        if let (Some((path, _)), true) = (brought, depth < 8) {
            if let Some(t) = target(modules, imports, &at, path, depth + 1) {
                return Some(t);
            }
        }
        break;
    }
    (at.is_empty() || modules.contains_key(&at)).then_some(at)
}

/// Each module's edges to the modules it depends on, ancestors left out.
fn module_edges(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let imports: BTreeMap<String, Vec<(Vec<String>, String)>> = modules
        .iter()
        .map(|(m, text)| (m.clone(), uses(text)))
        .collect();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, text) in modules {
        let prefix = join(m, "");
        let children: Vec<&str> = modules
            .keys()
            .filter_map(|k| k.strip_prefix(prefix.as_str()))
            .filter(|k| !m.is_empty() || !k.is_empty())
            .filter(|k| !k.contains("::") && !k.is_empty())
            .collect();
        let all = imports[m]
            .iter()
            .map(|(p, _)| p.clone())
            .chain(paths(text, &children));
        let edges = out.entry(m.clone()).or_default();
        for p in all {
            let Some(t) = target(modules, &imports, m, &p, 0) else {
                continue;
            };
            let ancestor = t.is_empty() || m.starts_with(&format!("{t}::"));
            if t != *m && !ancestor {
                edges.insert(t);
            }
        }
    }
    out
}

/// The modules that lie on a cycle, each cycle's members together.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for next in edges.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        edges.keys().map(|m| (m, reach(m))).collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for (m, from_m) in &reached {
        if !from_m.contains(*m) || out.iter().any(|c| c.contains(*m)) {
            continue;
        }
        let members = from_m
            .iter()
            .filter(|o| reached.get(o).is_some_and(|r| r.contains(*m)))
            .cloned()
            .collect();
        out.push(members);
    }
    out
}

#[test]
fn no_module_names_itself_back() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for source in sources() {
        let modules = modules_of(&source);
        let edges = module_edges(&modules);
        checked += edges.values().map(BTreeSet::len).sum::<usize>();
        for cycle in cycles(&edges) {
            let ties: Vec<String> = cycle
                .iter()
                .flat_map(|m| {
                    edges[m]
                        .iter()
                        .filter(|t| cycle.contains(*t))
                        .map(move |t| format!("{m} -> {t}"))
                })
                .collect();
            broken.push(format!("{}: {}", shown(&source), ties.join(", ")));
        }
    }
    // The walk reads real edges: hundreds of them across the crates.
    assert!(checked > 300, "only {checked} edges read");
    assert!(broken.is_empty(), "\n{}", broken.join("\n"));
}

/// A planted cycle is found, also when a parent's re-export hides it, and
/// a child naming its parent is no cycle.
#[test]
fn a_planted_module_cycle_is_reported() {
    let planted = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(m, t)| (m.to_string(), t.to_string()))
            .collect()
    };
    let direct = planted(&[
        ("", "mod a;"),
        ("a", "mod b; mod c; pub(crate) struct Base;"),
        (
            "a::b",
            "use super::c::{self, C};\nuse super::Base;\npub struct B;",
        ),
        ("a::c", "pub struct C; fn f() { crate::a::b::B }"),
    ]);
    let edges = module_edges(&direct);
    assert_eq!(edges["a::b"], BTreeSet::from(["a::c".to_string()]));
    assert_eq!(cycles(&edges).len(), 1);

    let hidden = planted(&[
        ("", "mod a;"),
        (
            "a",
            "mod b; mod c;\npub(crate) use b::{B as Renamed, self};",
        ),
        ("a::b", "pub struct B; fn f() { c::C }\nuse super::c;"),
        ("a::c", "pub struct C; fn f() -> super::Renamed { todo!() }"),
    ]);
    let edges = module_edges(&hidden);
    assert!(edges["a::c"].contains("a::b"), "{edges:?}");
    assert_eq!(cycles(&edges).len(), 1, "{edges:?}");

    let tree = planted(&[
        ("", "mod a;"),
        ("a", "mod b; pub use b::B; pub struct A;"),
        (
            "a::b",
            "use super::A; use crate::a::A as Again; pub struct B;",
        ),
    ]);
    assert!(cycles(&module_edges(&tree)).is_empty());
}
