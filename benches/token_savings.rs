//! Token savings on the corpus in `bench/corpus/` (issue 7, "Benchmarks"):
//! per payload, the `o200k_base` tokens (and bytes) of the tool result's
//! text as the server sent it, as compact JSON, as bare TOON
//! (`toon_format::encode`, no marker), and as the plugin emits it (its own
//! pipeline with the default configuration, marker included), then totals.
//! Fails if the plugin's output of any payload is larger than its input, in
//! bytes or tokens.
//!
//! Run: `cargo bench --bench token_savings` (prints a
//! Markdown table; `scripts/bench.py` puts it into BENCHMARKS.md). Another
//! corpus: `-- --corpus=DIR`.

#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

use std::path::PathBuf;

use mcp_toon::Settings;
use mcp_toon_cli::measure::{measure_body, Target};
use mcp_toon_cli::tokens::Tokenizer;
use serde_json::Value;
use toon_format::EncodeOptions;

#[derive(Default, Clone, Copy)]
struct Size {
    bytes: usize,
    tokens: usize,
}

impl std::ops::AddAssign for Size {
    fn add_assign(&mut self, o: Size) {
        self.bytes += o.bytes;
        self.tokens += o.tokens;
    }
}

fn cell(s: Option<Size>, original: Size) -> String {
    match s {
        None => "–".to_string(),
        Some(s) => format!(
            "{} ({:+.1} %)",
            s.tokens,
            (s.tokens as f64 - original.tokens as f64) * 100.0 / original.tokens as f64
        ),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let corpus = args
        .iter()
        .find_map(|a| a.strip_prefix("--corpus="))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench/corpus"));
    let tok = Tokenizer::o200k_base().unwrap();
    let settings = Settings::from_json("{}").unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no payloads in {}", corpus.display());

    let size = |text: &str| Size {
        bytes: text.len(),
        tokens: tok.count(text),
    };
    println!("| payload | text bytes | original tokens | compact JSON | TOON | plugin output | plugin outcome |");
    println!("|---|---:|---:|---:|---:|---:|---|");
    let (mut t_orig, mut t_compact, mut t_toon, mut t_plugin) = (
        Size::default(),
        Size::default(),
        Size::default(),
        Size::default(),
    );
    let mut larger = Vec::new();
    for path in &files {
        let body = std::fs::read(path).unwrap();
        let message: Value = serde_json::from_slice(&body).unwrap();
        let text = message["result"]["content"][0]["text"].as_str().unwrap();
        let original = size(text);
        let parsed: Option<Value> = serde_json::from_str(text).ok();
        // Not JSON: compact JSON and TOON do not apply; the text counts as is
        // in the totals.
        let compact = parsed.as_ref().map(|v| size(&v.to_string()));
        let toon = parsed
            .as_ref()
            .map(|v| size(&toon_format::encode(v, &EncodeOptions::default()).unwrap()));
        let rows = measure_body(&settings, &Target::default(), &tok, &body);
        let row = rows.iter().find(|r| r.block == Some(0)).unwrap();
        let plugin = Size {
            bytes: row.bytes_after,
            tokens: row.tokens_after,
        };
        assert_eq!(row.tokens_before, original.tokens);
        if plugin.bytes > original.bytes || plugin.tokens > original.tokens {
            larger.push(path.display().to_string());
        }
        let outcome = match &row.reason {
            Some(r) if row.outcome == "passthrough" => format!("passthrough ({r})"),
            _ => row.outcome.clone(),
        };
        let name = path.file_stem().unwrap().to_string_lossy();
        println!(
            "| {name} | {} | {} | {} | {} | {} | {outcome} |",
            original.bytes,
            original.tokens,
            cell(compact, original),
            cell(toon, original),
            cell(Some(plugin), original),
        );
        t_orig += original;
        t_compact += compact.unwrap_or(original);
        t_toon += toon.unwrap_or(original);
        t_plugin += plugin;
    }
    println!(
        "| **total** | {} | {} | {} | {} | {} | |",
        t_orig.bytes,
        t_orig.tokens,
        cell(Some(t_compact), t_orig),
        cell(Some(t_toon), t_orig),
        cell(Some(t_plugin), t_orig),
    );
    assert!(
        larger.is_empty(),
        "the plugin made these payloads larger: {larger:?}"
    );
}
