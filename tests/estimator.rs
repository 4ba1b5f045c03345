//! Calibration of the plugin's token estimator (`stage::budget::estimate`)
//! against `o200k_base` (tiktoken-rs): every text of `bench/estimator/`
//! (its `real/` part: the text items of real MCP servers' results, from
//! `bench/make_estimator_real.py`), the tool results of `bench/corpus/`, the
//! repository's own code and docs, and the TOON form of every JSON text
//! among them — whole, and in page-sized slices cut at line ends (what a
//! budget cuts). Fails when the estimator under-counts any slice (by more
//! than a token in a thousand),
//! any text by more than `estimate::MAX_UNDERCOUNT_PCT` percent, when the
//! real-server part is missing or under-counted in total, or when it
//! over-counts the median text by more than 15 % (a budget would then
//! waste a sixth of itself). Then it cuts international tables to token
//! budgets as the plugin does and counts every page in o200k_base tokens.
//!
//! `cargo test --test estimator -- --nocapture` prints the
//! error distribution, of everything and of the real-server part alone
//! (docs/budgets-and-pages.md quotes both).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};

use mcp_toon::stage::budget::estimate::{tokens, MAX_UNDERCOUNT_PCT};
use mcp_toon_cli::tokens::Tokenizer;

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
    files(&root.join("crates/core/src"), &["rs"], &mut paths);
    files(&root.join("crates/engine/src"), &["rs"], &mut paths);
    files(&root.join("examples"), &["py", "yaml"], &mut paths);
    files(&root.join("tests/e2e"), &["py"], &mut paths);
    files(&root.join("docs"), &["md"], &mut paths);
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
            // A page is a ceiling: no slice is under-counted, but for a
            // token in a thousand (a punctuation run such as `[[-` is two
            // tokens, counted one); a budget's pages round each unit up.
            if r < 0.999 {
                failures.push(format!("{name} slice {i}: {r:.4} ({} < {real})", tokens(s)));
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

/// Rows of `bench/international.py` (customer records of many languages
/// and scripts) as compact JSON, from the project's Python.
fn international(rows: usize, langs: &str) -> String {
    let exe = root().join(".venv/bin/python");
    assert!(
        exe.exists(),
        "{} is missing: run `make bootstrap`",
        exe.display()
    );
    let mut args = vec![
        "bench/international.py".to_string(),
        "--rows".into(),
        rows.to_string(),
    ];
    if !langs.is_empty() {
        args.extend(["--langs".to_string(), langs.to_string()]);
    }
    let out = std::process::Command::new(exe)
        .args(&args)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Cuts `table` (a tool result's one text item) to `tokens` as the plugin
/// does, after its other stages under `config`, and returns each page's
/// o200k_base tokens with the longest notice a page can carry.
fn pages_in_real_tokens(tok: &Tokenizer, config: &str, table: &str, tokens: usize) -> Vec<usize> {
    use mcp_toon::config::{Budget, ServerScope};
    use mcp_toon::stage::budget::{notice, plan, Item};
    let settings = mcp_toon::Settings::from_json(config).unwrap();
    let message = serde_json::json!({"jsonrpc": "2.0", "id": 1,
        "result": {"content": [{"type": "text", "text": table}]}})
    .to_string();
    let items = mcp_toon::pipeline::final_items(
        &settings,
        ServerScope::default(),
        "1",
        Some("export"),
        None,
        &message,
    )
    .unwrap();
    let items: Vec<Item<'_>> = items
        .iter()
        .map(|i| Item {
            text: &i.text,
            framing: i.framing,
        })
        .collect();
    let budget = Budget::Tokens(tokens);
    // The notice of a page of a paged result, at its longest: a handle of
    // 200 characters (those of a signed call are shorter).
    let handle = "A".repeat(200);
    let longest = notice::longest(
        budget,
        table.len(),
        notice::Next::Handle {
            tool: "mcp_toon_page",
            handle: &handle,
        },
    );
    let reserve = mcp_toon::stage::budget::measure(&longest, budget);
    let plan = plan(&items, budget, reserve).unwrap();
    let notice = tok.count(&longest);
    plan.pages
        .iter()
        .map(|p| tok.count(&p.text) + notice)
        .collect()
}

/// docs/budgets-and-pages.md: a budget is a ceiling in real tokens. Every page of a
/// cut international table (2.3 MB of Polish, Icelandic and Vietnamese
/// customers; tables of every script of `bench/international.py`), as TOON
/// and as JSON, is within its budget in o200k_base tokens — and pages are
/// not much smaller than they could be (the average fill is printed).
#[test]
fn budget_pages_of_international_tables_stay_within_budget() {
    let tok = Tokenizer::o200k_base().unwrap();
    let toon = "{}";
    let json = r#"{"toon":{"mode":"off"}}"#;
    let big = international(11_500, "pl,is,vi");
    assert!(big.len() > 2_200_000, "{}", big.len());
    let mixed = international(3_000, "");
    let mut cases: Vec<(String, &str, &String, usize)> = vec![
        ("pl,is,vi 2.3 MB, TOON".into(), toon, &big, 20_000),
        ("pl,is,vi 2.3 MB, TOON".into(), toon, &big, 5_000),
        ("pl,is,vi 2.3 MB, JSON".into(), json, &big, 20_000),
        ("every language, TOON".into(), toon, &mixed, 5_000),
        ("every language, JSON".into(), json, &mixed, 5_000),
    ];
    let scripts: Vec<(&str, String)> = [
        "ru,uk",
        "el",
        "ar,he",
        "hi,th",
        "zh,ja,ko",
        "de,fr,es,cs,tr,hu,ro",
    ]
    .iter()
    .map(|l| (*l, international(1_500, l)))
    .collect();
    for (langs, table) in &scripts {
        cases.push((format!("{langs}, TOON"), toon, table, 4_000));
        cases.push((format!("{langs}, JSON"), json, table, 4_000));
    }
    // English tables, for the fill the margin costs them.
    let logs =
        std::fs::read_to_string(root().join("bench/estimator/demo-export_logs.json")).unwrap();
    let users =
        std::fs::read_to_string(root().join("bench/estimator/demo-list_users.json")).unwrap();
    cases.push(("demo export_logs, TOON".into(), toon, &logs, 5_000));
    cases.push(("demo export_logs, JSON".into(), json, &logs, 5_000));
    cases.push(("demo list_users, JSON".into(), json, &users, 1_000));
    let mut over = Vec::new();
    for (name, config, table, budget) in cases {
        let pages = pages_in_real_tokens(&tok, config, table, budget);
        assert!(pages.len() > 2, "{name}: {} pages", pages.len());
        // The last page holds what is left: not a measure of fill.
        let full = &pages[..pages.len() - 1];
        let fill = full.iter().sum::<usize>() as f64 / (full.len() * budget) as f64;
        let most = pages.iter().max().unwrap();
        println!(
            "{name} at {budget}: {} pages, largest {most}, average fill {:.3}",
            pages.len(),
            fill
        );
        for (i, &n) in pages.iter().enumerate() {
            if n > budget {
                over.push(format!("{name} at {budget}: page {} is {n} tokens", i + 1));
            }
        }
    }
    assert!(over.is_empty(), "pages over budget:\n{}", over.join("\n"));
}
