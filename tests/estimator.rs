//! Calibration of the plugin's token estimator (`stage::budget::estimate`)
//! against `o200k_base` (tiktoken-rs): every text of `bench/estimator/`
//! (its `real/` part: the text items of real MCP servers' results, from
//! `bench/make_estimator_real.py`), the tool results of `bench/corpus/`, the
//! repository's own code and docs, and the TOON form of every JSON text
//! among them — whole, and in page-sized slices cut at line ends (what a
//! budget cuts). Fails when the estimator under-counts any of them by more
//! than `estimate::MAX_UNDERCOUNT_PCT` percent, when the real-server part
//! is missing or under-counted in total, or when it over-counts the median
//! text by more than 15 % (a budget would then waste a sixth of itself).
//!
//! `cargo test --features cli --test estimator -- --nocapture` prints the
//! error distribution, of everything and of the real-server part alone
//! (README "Budgets" quotes both).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};

use mcp_toon::cli::tokens::Tokenizer;
use mcp_toon::stage::budget::estimate::{tokens, MAX_UNDERCOUNT_PCT};

/// Bytes of a slice: about 4,000 tokens of JSON, as a small page.
const SLICE_BYTES: usize = 12_000;

/// The real-server part of the corpus (bench/make_estimator_real.py): the
/// servers of the real-server tier, each present.
const REAL: &str = "bench/estimator/real/";
const REAL_SERVERS: [&str; 4] = ["filesystem", "git", "memory", "time"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, exts, out);
        } else if p.extension().is_some_and(|e| exts.iter().any(|x| e == *x)) {
            out.push(p);
        }
    }
}

/// (name, text) of every calibration text.
fn corpus() -> Vec<(String, String)> {
    let root = root();
    let name = |p: &Path| p.strip_prefix(&root).unwrap().display().to_string();
    let mut out = Vec::new();
    let mut paths = Vec::new();
    files(
        &root.join("bench/estimator"),
        &[
            "json", "txt", "html", "patch", "log", "ndjson", "md", "csv", "sql",
        ],
        &mut paths,
    );
    files(&root.join("src"), &["rs"], &mut paths);
    files(&root.join("examples"), &["py", "yaml"], &mut paths);
    files(&root.join("tests/e2e"), &["py"], &mut paths);
    for p in paths {
        out.push((name(&p), std::fs::read_to_string(&p).unwrap()));
    }
    out.push((
        "README.md".into(),
        std::fs::read_to_string(root.join("README.md")).unwrap(),
    ));
    let mut corpus = Vec::new();
    files(&root.join("bench/corpus"), &["json"], &mut corpus);
    for p in corpus {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        for (i, item) in v["result"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            if let Some(t) = item["text"].as_str() {
                out.push((format!("{}#{i}", name(&p)), t.to_string()));
            }
        }
    }
    let toon: Vec<(String, String)> = out
        .iter()
        .filter(|(_, t)| t.trim_start().starts_with(['[', '{']))
        .filter_map(|(n, t)| {
            mcp_toon::convert::json_to_toon(t)
                .ok()
                .map(|x| (format!("{n} (TOON)"), x))
        })
        .collect();
    out.extend(toon);
    out
}

/// Line-aligned slices of about `SLICE_BYTES`.
fn slices(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + SLICE_BYTES).min(text.len());
        while end < text.len() && (text.as_bytes()[end - 1] != b'\n' || !text.is_char_boundary(end))
        {
            end += 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn summary(label: &str, ratios: &mut [f64]) -> (f64, f64) {
    ratios.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "{label}: n={} estimate/o200k_base min {:.3} p10 {:.3} median {:.3} p90 {:.3} max {:.3}",
        ratios.len(),
        quantile(ratios, 0.0),
        quantile(ratios, 0.1),
        quantile(ratios, 0.5),
        quantile(ratios, 0.9),
        quantile(ratios, 1.0)
    );
    (quantile(ratios, 0.0), quantile(ratios, 0.5))
}

#[test]
fn estimator_never_undercounts_beyond_the_bound() {
    let tok = Tokenizer::o200k_base().unwrap();
    let floor = 1.0 - f64::from(MAX_UNDERCOUNT_PCT) / 100.0;
    let mut docs = Vec::new();
    let mut pages = Vec::new();
    let mut failures = Vec::new();
    let (mut est_total, mut real_total) = (0usize, 0usize);
    // The real-server part on its own: ratios, totals, names.
    let mut servers = Vec::new();
    let (mut server_est, mut server_real) = (0usize, 0usize);
    let mut server_names = Vec::new();
    for (name, text) in corpus() {
        let real = tok.count(&text);
        if real == 0 {
            continue;
        }
        let est = tokens(&text);
        est_total += est;
        real_total += real;
        let r = est as f64 / real as f64;
        docs.push(r);
        if let Some(file) = name.strip_prefix(REAL) {
            servers.push(r);
            server_est += est;
            server_real += real;
            server_names.push(file.to_string());
        }
        if r < floor {
            failures.push(format!(
                "{name}: estimate {est}, o200k_base {real} ({r:.3})"
            ));
        }
        for (i, s) in slices(&text).into_iter().enumerate() {
            let real = tok.count(s);
            // Tiny tails say little about a page-sized cut.
            if real < 1000 {
                continue;
            }
            let r = tokens(s) as f64 / real as f64;
            pages.push(r);
            if r < floor {
                failures.push(format!("{name} slice {i}: {r:.3}"));
            }
        }
    }
    let (_, median) = summary("texts", &mut docs);
    summary("page-sized slices", &mut pages);
    println!(
        "all texts: estimate {est_total}, o200k_base {real_total} ({:.3})",
        est_total as f64 / real_total as f64
    );
    summary("real-server texts", &mut servers);
    println!(
        "real-server texts: estimate {server_est}, o200k_base {server_real} ({:.3})",
        server_est as f64 / server_real as f64
    );
    assert!(docs.len() > 100, "corpus too small: {}", docs.len());
    for server in REAL_SERVERS {
        assert!(
            server_names.iter().any(|n| n.starts_with(server)),
            "no {server} results in {REAL}: run bench/make_estimator_real.py"
        );
    }
    assert!(
        server_est as f64 >= server_real as f64 * floor,
        "real-server texts under-counted in total: {server_est} < {server_real}"
    );
    assert!(
        failures.is_empty(),
        "under-counted beyond {MAX_UNDERCOUNT_PCT} %:\n{}",
        failures.join("\n")
    );
    assert!(
        median <= 1.15,
        "median over-count {median:.3}: tune the estimator down"
    );
}
