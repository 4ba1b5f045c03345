//! Tool listings (issue 41): per captured `tools/list` of bench/listings/
//! (real servers, README there), the `o200k_base` tokens of the result as
//! sent, compact at each level (with the describe tool it gains), and
//! disclosed with three hot tools (the server's first three, with the
//! search, call and describe tools); then what reaches a model through
//! most clients (each tool's name, description and inputSchema), and a
//! gateway in front of them all, disclosed with three hot tools in total:
//! three of median size, and the three largest (the worst case).
//!
//! Fails below the targets: compact (`medium`) cuts the real
//! servers' listings by at least 40 % in total, and the test tier's on the
//! wire and in what reaches a model; disclosure cuts a
//! gateway's combined listing by at least 80 % with three hot tools of
//! median size.
//!
//! Run: `cargo bench --bench listings` (prints Markdown).

#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

use std::path::PathBuf;

use mcp_toon::config::{Level, ListingMode, ListingsSettings};
use mcp_toon::listing::{self as core, Catalog, Compaction, Limits, Names};
use mcp_toon_cli::listing::{self, ListingReport};
use mcp_toon_cli::tokens::Tokenizer;

/// The servers the e2e suite runs (tests/e2e/test_real_servers.py) and
/// the reference server-everything.
const TEST_TIER: [&str; 5] = ["everything", "filesystem", "git", "memory", "time"];
const MAX_DESCRIPTION_BYTES: usize = 120;

struct Row {
    name: String,
    report: ListingReport,
    model_sent: usize,
    model_medium: usize,
    catalog: Catalog,
    last: String,
}

fn pct(before: usize, after: usize) -> f64 {
    (after as f64 - before as f64) * 100.0 / before as f64
}

fn cell(before: usize, after: usize) -> String {
    format!("{after} ({:+.1} %)", pct(before, after))
}

fn main() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench/listings");
    let tok = Tokenizer::o200k_base().unwrap();
    let settings = ListingsSettings::default();
    let names = Names {
        search: &settings.search_tool,
        call: &settings.call_tool,
        describe: &settings.describe_tool,
    };
    let describe = core::describe_tool(names);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut rows = Vec::new();
    for file in &files {
        let body = std::fs::read_to_string(file).unwrap();
        let results = listing::results(&body).unwrap();
        let mut catalog = Catalog::default();
        let wide = Limits {
            max_tools: usize::MAX,
            max_bytes: usize::MAX,
        };
        for r in &results {
            catalog.add_page(r, wide).unwrap();
        }
        let hot: Vec<String> = catalog
            .tools()
            .take(3)
            .map(|(n, _)| n.to_string())
            .collect();
        let report =
            listing::measure(&results, &settings, &hot, MAX_DESCRIPTION_BYTES, &tok).unwrap();
        let how = Compaction {
            level: Level::Medium,
            max_description_bytes: MAX_DESCRIPTION_BYTES,
        };
        let (mut model_sent, mut model_medium) = (0, 0);
        for (n, r) in results.iter().enumerate() {
            model_sent += tok.count(&listing::model_view(r).unwrap());
            let add: &[&str] = if n + 1 == results.len() {
                &[&describe]
            } else {
                &[]
            };
            let compact = core::compact_listing(r, how, add).unwrap_or_else(|| r.to_string());
            model_medium += tok.count(&listing::model_view(&compact).unwrap());
        }
        rows.push(Row {
            name: file.file_stem().unwrap().to_string_lossy().into_owned(),
            report,
            model_sent,
            model_medium,
            catalog,
            last: results.last().unwrap().to_string(),
        });
    }

    println!("| Server | Tools | As sent | light | medium | high | disclosed, 3 hot | Model's view: sent → medium |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let total = |set: &[&Row], label: &str| {
        let sum = |f: &dyn Fn(&Row) -> usize| set.iter().map(|r| f(r)).sum::<usize>();
        let sent = sum(&|r| r.report.sent.tokens);
        let model = sum(&|r| r.model_sent);
        println!(
            "| **{label}** | {} | {sent} | {} | {} | {} | {} | {model} → {} |",
            sum(&|r| r.report.tools),
            cell(sent, sum(&|r| r.report.light.tokens)),
            cell(sent, sum(&|r| r.report.medium.tokens)),
            cell(sent, sum(&|r| r.report.high.tokens)),
            cell(sent, sum(&|r| r.report.disclosed.tokens)),
            cell(model, sum(&|r| r.model_medium)),
        );
        (
            sent,
            sum(&|r| r.report.medium.tokens),
            model,
            sum(&|r| r.model_medium),
        )
    };
    for r in &rows {
        let s = r.report.sent.tokens;
        println!(
            "| {} | {} | {s} | {} | {} | {} | {} | {} → {} |",
            r.name,
            r.report.tools,
            cell(s, r.report.light.tokens),
            cell(s, r.report.medium.tokens),
            cell(s, r.report.high.tokens),
            cell(s, r.report.disclosed.tokens),
            r.model_sent,
            cell(r.model_sent, r.model_medium),
        );
    }
    let tier: Vec<&Row> = rows
        .iter()
        .filter(|r| TEST_TIER.contains(&r.name.as_str()))
        .collect();
    let all: Vec<&Row> = rows.iter().collect();
    let (tier_sent, tier_medium, tier_model, tier_model_medium) = total(&tier, "test tier");
    let (all_sent, all_medium, _, _) = total(&all, "all");

    println!();
    let added = core::added_tools(ListingMode::Disclose, names, 0, settings.max_search_results);
    let sizes: Vec<String> = added.iter().map(|t| tok.count(t).to_string()).collect();
    println!(
        "A gateway in front of several servers, each listing its hot tools and the search, call and describe tools ({} tokens), with three hot tools in total: three of median size, or the three largest:",
        sizes.join(" + ")
    );
    println!();
    println!("| Gateway | Servers | Tools | As sent | Hot tools | Disclosed |");
    println!("|---|---:|---:|---:|---|---:|");
    let gateway = |set: &[&Row], label: &str, largest: bool| {
        let mut sized: Vec<(usize, &str, &str)> = set
            .iter()
            .flat_map(|r| {
                r.catalog
                    .tools()
                    .map(move |(n, t)| (tok.count(t), n, r.name.as_str()))
            })
            .collect();
        sized.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        let from = if largest {
            0
        } else {
            (sized.len() / 2).saturating_sub(1)
        };
        let hot: Vec<(&str, &str)> = sized
            .iter()
            .skip(from)
            .take(3)
            .map(|(_, n, s)| (*s, *n))
            .collect();
        let mut disclosed = 0;
        for r in set {
            let mine: Vec<String> = hot
                .iter()
                .filter(|(s, _)| *s == r.name)
                .map(|(_, n)| n.to_string())
                .collect();
            let added = core::added_tools(
                ListingMode::Disclose,
                names,
                r.catalog.len() - mine.len(),
                settings.max_search_results,
            );
            let added: Vec<&str> = added.iter().map(String::as_str).collect();
            disclosed += tok.count(&core::disclose(&r.catalog, &mine, &added, &r.last).unwrap());
        }
        let sent: usize = set.iter().map(|r| r.report.sent.tokens).sum();
        let tools: usize = set.iter().map(|r| r.report.tools).sum();
        let hot: Vec<String> = hot.iter().map(|(s, n)| format!("{s}/{n}")).collect();
        let which = if largest { "largest" } else { "median" };
        println!(
            "| {label} | {} | {tools} | {sent} | {which}: {} | {} |",
            set.len(),
            hot.join(", "),
            cell(sent, disclosed),
        );
        (sent, disclosed)
    };
    let (g_tier_sent, g_tier) = gateway(&tier, "test tier", false);
    gateway(&tier, "test tier", true);
    let (g_all_sent, g_all) = gateway(&all, "all", false);
    gateway(&all, "all", true);

    let mut failed = Vec::new();
    if pct(all_sent, all_medium) > -40.0 {
        failed.push(format!(
            "compact (medium) cuts all listings by {:.1} %, not 40",
            -pct(all_sent, all_medium)
        ));
    }
    if pct(tier_sent, tier_medium) > -40.0 {
        failed.push(format!(
            "compact (medium) cuts the test tier's listings on the wire by {:.1} %, not 40",
            -pct(tier_sent, tier_medium)
        ));
    }
    if pct(tier_model, tier_model_medium) > -40.0 {
        failed.push(format!(
            "compact (medium) cuts what reaches a model of the test tier by {:.1} %, not 40",
            -pct(tier_model, tier_model_medium)
        ));
    }
    for (label, sent, disclosed) in [
        ("test tier", g_tier_sent, g_tier),
        ("all", g_all_sent, g_all),
    ] {
        if pct(sent, disclosed) > -80.0 {
            failed.push(format!(
                "disclosure cuts the {label} gateway by {:.1} %, not 80",
                -pct(sent, disclosed)
            ));
        }
    }
    println!();
    println!(
        "Test tier on the wire: {tier_sent} → {tier_medium} tokens at medium ({:+.1} %): its tools are small; titles that repeat the name and annotation hints whose absence no client reads as safer go, the other hints stay.",
        pct(tier_sent, tier_medium)
    );
    if !failed.is_empty() {
        panic!("below the targets of issue 41: {}", failed.join("; "));
    }
}
