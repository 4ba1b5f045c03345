//! The project stage (issue 16): tokens before and after projection on the
//! corpus in `bench/corpus/`, and the native time of operator rules and of
//! JMESPath queries on 64 KB and 1 MB results.
//!
//! Tokens (`o200k_base`) are those of the tool result's text: as the server
//! sent it, as the plugin emits it with its defaults (clean, TOON), with an
//! operator rule, and with an agent query — each through the plugin's own
//! pipeline (`measure_body`), so TOON still applies after projection.
//!
//! Run: `cargo bench --bench projection` (prints Markdown;
//! `scripts/bench.py` puts it into BENCHMARKS.md). Prints figures, asserts
//! only that every projection applied and cut tokens.

#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

use std::path::PathBuf;
use std::time::Instant;

use mcp_toon::config::project::Path;
use mcp_toon::config::Rules;
use mcp_toon::stage::project::{rules, Query};
use mcp_toon::Settings;
use mcp_toon_cli::measure::{measure_body, Target};
use mcp_toon_cli::tokens::Tokenizer;
use serde_json::{json, Value};

/// (payload, operator rules as a `project` patch, agent query)
const CASES: &[(&str, &str, &str)] = &[
    (
        "tabular-github-issues",
        r#"{"drop": ["[].updated_at", "[].milestone"]}"#,
        "[?state=='open'].{number: number, title: title}",
    ),
    (
        "paged-crm-contacts",
        r#"{"keep": ["total", "items[].name", "items[].email"]}"#,
        "items[?country=='GB'].{name: name, email: email}",
    ),
    (
        "nested-orders",
        r#"{"drop": ["[].shipping", "[].customer.id"]}"#,
        "[?status=='refunded'].{id: order_id, amount: total.amount}",
    ),
    (
        "semi-uniform-logs",
        r#"{"drop": ["[].trace_id", "[].latency_ms"]}"#,
        "[?level=='ERROR'].{ts: ts, service: service, msg: msg}",
    ),
];

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench/corpus")
}

/// Tokens of the text blocks after the pipeline with `config`, the call
/// carrying `query`.
fn tokens_after(
    config: &str,
    query: Option<&str>,
    body: &[u8],
    tok: &Tokenizer,
) -> (usize, usize, bool) {
    let settings = Settings::from_json(config).unwrap();
    let target = Target {
        query: query.map(str::to_string),
        ..Target::default()
    };
    let rows = measure_body(&settings, &target, tok, body);
    let row = &rows[0];
    let projected = row
        .decisions
        .iter()
        .any(|d| d.stage == "project" && d.outcome != "passthrough");
    (row.tokens_before, row.tokens_after, projected)
}

fn pct(after: usize, before: usize) -> String {
    format!(
        "{after} ({:+.1} %)",
        (after as f64 / before as f64 - 1.0) * 100.0
    )
}

fn tokens_table(tok: &Tokenizer) {
    println!("| payload | server | defaults (clean, TOON) | operator rule | with the rule | agent query | with the query |");
    println!("|---|---:|---:|---|---:|---|---:|");
    let (mut t_server, mut t_default, mut t_rule, mut t_query) = (0, 0, 0, 0);
    for (name, rule, query) in CASES {
        let body = std::fs::read(corpus().join(format!("{name}.json"))).unwrap();
        let (server, default, _) = tokens_after("{}", None, &body, tok);
        let (_, ruled, applied) =
            tokens_after(&format!(r#"{{"project": {rule}}}"#), None, &body, tok);
        assert!(
            applied && ruled < default,
            "{name}: the rule did not cut tokens"
        );
        let (_, queried, applied) =
            tokens_after(r#"{"project": {"queries": true}}"#, Some(query), &body, tok);
        assert!(
            applied && queried < default,
            "{name}: the query did not cut tokens"
        );
        let rule_compact: Value = serde_json::from_str(rule).unwrap();
        println!(
            "| `{name}` | {server} | {} | `{}` | {} | `{query}` | {} |",
            pct(default, server),
            rule_compact,
            pct(ruled, server),
            pct(queried, server)
        );
        t_server += server;
        t_default += default;
        t_rule += ruled;
        t_query += queried;
    }
    println!(
        "| total | {t_server} | {} | | {} | | {} |",
        pct(t_default, t_server),
        pct(t_rule, t_server),
        pct(t_query, t_server)
    );
}

/// A GitHub-search-like result of about `size` bytes: rows with `*_url`
/// and `node_id` fields, a nested user.
fn issues(size: usize) -> String {
    let mut rows = Vec::new();
    let mut len = 2;
    let mut i = 0;
    while len < size {
        let row = json!({
            "id": 1_000_000 + i, "node_id": format!("I_kwDOA{i:08}"), "number": i,
            "title": format!("Issue number {i} about the parser"),
            "state": if i % 3 == 0 { "closed" } else { "open" },
            "html_url": format!("https://github.com/o/r/issues/{i}"),
            "comments_url": format!("https://api.github.com/repos/o/r/issues/{i}/comments"),
            "user": {"login": format!("user{}", i % 50), "id": i % 50, "node_id": "MDQ6VXNlcjE=",
                     "avatar_url": "https://avatars.githubusercontent.com/u/1?v=4"},
            "labels": [{"name": "bug", "color": "d73a4a"}], "comments": i % 9,
            "created_at": "2026-11-01T08:00:00Z"
        })
        .to_string();
        len += row.len() + 1;
        rows.push(row);
        i += 1;
    }
    format!("[{}]", rows.join(","))
}

/// Median milliseconds of `f` over enough runs to take about half a second.
fn time(mut f: impl FnMut()) -> f64 {
    f();
    let mut samples = Vec::new();
    let start = Instant::now();
    while samples.len() < 5 || (start.elapsed().as_secs_f64() < 0.5 && samples.len() < 200) {
        let t = Instant::now();
        f();
        samples.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    samples[samples.len() / 2]
}

fn speed_table() {
    let drop = Rules {
        keep: Default::default(),
        drop: ["**.*_url", "**.node_id"]
            .iter()
            .map(|p| Path::parse(p).unwrap())
            .collect::<Vec<_>>()
            .into(),
    };
    let queries = [
        (
            "filter and select",
            "[?state=='open'].{number: number, title: title, user: user.login}",
        ),
        ("sort by a key", "sort_by(@, &title)[*].number"),
        // Near the limits the cost bound allows.
        (
            "costliest accepted",
            "map(&{a: to_string(@), b: [user, labels, title]}, sort_by(@, &title))",
        ),
    ];
    println!(
        "| result | operator rule (drop `**.*_url`, `**.node_id`) | {} |",
        queries.map(|q| q.0).join(" | ")
    );
    println!("|---|---:|{}", "---:|".repeat(queries.len()));
    for (label, size) in [("64 KB", 64 * 1024), ("1 MB", 1024 * 1024)] {
        let text = issues(size);
        let r = time(|| {
            rules::apply(&text, &drop).unwrap();
        });
        let mut cells = vec![format!("{r:.2} ms")];
        for (_, q) in queries {
            let query = Query::parse(q, 1024).unwrap();
            let ms = time(|| {
                // A result larger than the block is refused after the work.
                let _ = query.apply(&text);
            });
            cells.push(format!("{ms:.2} ms"));
        }
        println!("| {label} ({} bytes) | {} |", text.len(), cells.join(" | "));
    }
    println!();
    for (name, q) in queries {
        let c = Query::parse(q, 1024).unwrap().cost().unwrap();
        println!(
            "- {name}: `{q}` (bound: output ≤ {}×, work ≤ {}× the input)",
            c.size, c.work
        );
    }
}

fn main() {
    let tok = Tokenizer::o200k_base().unwrap();
    tokens_table(&tok);
    println!();
    speed_table();
}
