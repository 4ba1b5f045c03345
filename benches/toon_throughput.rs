//! Native throughput of the TOON stage (issue 7, "Benchmarks" and "Faster
//! TOON path"), in MB/s of JSON text in, for flat and nested-group tables of
//! 10 KB, 100 KB, 1 MB and 4 MB:
//!
//! - `serde+toon`: plain `serde_json::from_str::<Value>` + `toon_format::encode`
//!   (the issue's baseline; no gates, no verification);
//! - `generic`: the plugin's generic path, `stage::toon::encode_generic`
//!   (parse, classify, exactness, encode, header, size checks, duplicate-key
//!   check, verify through `toon_format::decode`);
//! - `plugin`: the plugin's path, `stage::toon::encode` (the fast path, with
//!   the same gates and verification);
//!
//! and the ratios `plugin / serde+toon` and `plugin / generic`.
//!
//! Run: `cargo bench --bench toon_throughput` (add `-- --quick` for a
//! shorter run; `-- flat`, `-- nested`, `-- 10KB` … `-- 4MB` pick shapes
//! and sizes). Each figure is the best of nine rounds (`--quick`: five) in
//! which every path runs for at least 150 ms (50 ms) in turn, timed by the
//! thread's CPU time where Linux reports it (wall clock elsewhere), so a
//! busy machine lowers the figures less and the ratios hardly at all.
//! Timing is only printed, never asserted.

// Benchmark code: a failed setup should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use mcp_toon::config::ToonSettings;
use mcp_toon::stage::literal_len;
use mcp_toon::stage::toon::{encode, encode_generic};
use serde_json::Value;
use toon_format::EncodeOptions;

const SIZES: [(&str, usize); 4] = [
    ("10 KB", 10 * 1024),
    ("100 KB", 100 * 1024),
    ("1 MB", 1024 * 1024),
    ("4 MB", 4 * 1024 * 1024),
];

/// Writes row `i` of a table.
type RowFn = fn(usize) -> String;

/// A flat row the way list-style tools return them.
fn flat_row(i: usize) -> String {
    format!(
        r#"{{"id":{i},"name":"user-{i}","email":"user{i}@example.com","active":{},"score":{}.{:02},"created":"2024-03-{:02}T10:{:02}:00Z","status":"{}","visits":{}}}"#,
        i % 3 != 0,
        i % 100,
        i % 97,
        1 + i % 28,
        i % 60,
        ["open", "closed", "pending review"][i % 3],
        i * 7 % 1000,
    )
}

/// A row with §9.4 field groups, one nested two levels.
fn nested_row(i: usize) -> String {
    format!(
        r#"{{"id":{i},"customer":{{"name":"Customer {i}","country":"{}","address":{{"city":"City {}","zip":"{:05}"}}}},"geo":{{"lat":{}.{:04},"lon":-{}.{:04}}},"total":{}.{:02},"status":"{}"}}"#,
        ["DK", "UK", "DE", "FR"][i % 4],
        i % 50,
        i * 13 % 100_000,
        i % 90,
        i * 7 % 10_000,
        1 + i % 179,
        i * 11 % 10_000,
        i * 3 % 5000,
        i % 100,
        ["paid", "refunded", "open"][i % 3],
    )
}

/// A JSON array of rows at least `size` bytes long.
fn table(size: usize, row: fn(usize) -> String) -> String {
    let mut out = String::with_capacity(size + 512);
    out.push('[');
    let mut i = 0;
    while out.len() < size {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&row(i));
        i += 1;
    }
    out.push(']');
    out
}

struct Timing {
    runs: usize,
    min: Duration,
}

/// Nanoseconds this thread has spent on a CPU (Linux schedstat), so a
/// machine shared with other work lowers the figures less; `None` elsewhere.
fn cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// Seconds per call of `f` over one run of at least `min`, by thread CPU
/// time where the platform reports it, else by wall clock.
fn one_run(min: Duration, f: &mut dyn FnMut()) -> f64 {
    let start = Instant::now();
    let cpu_start = cpu_ns();
    let mut iters = 0u64;
    while start.elapsed() < min || iters == 0 {
        f();
        iters += 1;
    }
    let wall = start.elapsed().as_secs_f64();
    let secs = match (cpu_start, cpu_ns()) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
        _ => wall,
    };
    secs / iters as f64
}

/// Best MB/s of each path over `timing.runs` rounds; each round runs every
/// path once, in turn, so a burst of load elsewhere hits them alike.
fn mb_per_s(bytes: usize, timing: &Timing, paths: &mut [&mut dyn FnMut()]) -> Vec<f64> {
    let mut best = vec![f64::INFINITY; paths.len()];
    for _ in 0..timing.runs {
        for (f, b) in paths.iter_mut().zip(best.iter_mut()) {
            *b = b.min(one_run(timing.min, *f));
        }
    }
    best.iter().map(|secs| bytes as f64 / secs / 1e6).collect()
}

fn arg_value<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .find_map(|a| a.strip_prefix(name)?.strip_prefix('='))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    // For profiles and instruction counts: `--only=plugin` (or `generic`,
    // `serde+toon`) runs one path, `--iters=N` exactly N calls of it.
    let only = arg_value(&args, "--only");
    let fixed_iters: Option<u64> = arg_value(&args, "--iters").and_then(|n| n.parse().ok());
    let timing = if quick {
        Timing {
            runs: 5,
            min: Duration::from_millis(50),
        }
    } else {
        Timing {
            runs: 9,
            min: Duration::from_millis(150),
        }
    };
    // Other arguments pick shapes (`flat`, `nested`) and sizes (`10KB`,
    // `1MB`); none picks all.
    let names: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let wanted = |choices: &[&str], item: &str| {
        let relevant: Vec<&&String> = names
            .iter()
            .filter(|n| choices.iter().any(|c| c == &n.as_str()))
            .collect();
        relevant.is_empty() || relevant.iter().any(|n| n.as_str() == item)
    };
    let settings = ToonSettings::default();
    let options = EncodeOptions::default();

    let clock = if cpu_ns().is_some() {
        "thread CPU time"
    } else {
        "wall clock"
    };
    if only.is_none() {
        println!(
            "TOON stage throughput, MB/s of JSON in, by {clock}; best of {} interleaved runs of >= {:?}",
            timing.runs, timing.min
        );
        println!(
            "{:<7} {:>7} {:>11} {:>9} {:>9} {:>11} {:>11} {:>7}",
            "shape", "size", "serde+toon", "generic", "plugin", "plugin/s+t", "plugin/gen", "saved"
        );
    }
    let shapes: [(&str, RowFn); 2] = [("flat", flat_row), ("nested", nested_row)];
    for (shape, row) in shapes {
        if !wanted(&["flat", "nested"], shape) {
            continue;
        }
        for (label, size) in SIZES {
            if !wanted(&["10KB", "100KB", "1MB", "4MB"], &label.replace(' ', "")) {
                continue;
            }
            let text = table(size, row);
            let wire = literal_len(&text);
            let fast = encode(&text, wire, &settings);
            let Ok(emission) = &fast else {
                panic!("{shape} {label}: not encoded: {fast:?}");
            };
            let mut baseline = || {
                let value: Value = serde_json::from_str(black_box(&text)).unwrap();
                black_box(toon_format::encode(&value, &options).unwrap());
            };
            let mut generic = || {
                black_box(encode_generic(black_box(&text), wire, &settings).unwrap());
            };
            let mut plugin = || {
                black_box(encode(black_box(&text), wire, &settings).unwrap());
            };
            if let Some(path) = only {
                let f: &mut dyn FnMut() = match path {
                    "plugin" => &mut plugin,
                    "generic" => &mut generic,
                    _ => &mut baseline,
                };
                match fixed_iters {
                    Some(n) => (0..n).for_each(|_| f()),
                    None => {
                        let mb = mb_per_s(text.len(), &timing, &mut [f]);
                        println!("{shape:<7} {label:>7} {path} {:.1} MB/s", mb[0]);
                    }
                }
                continue;
            }
            // The two paths agree (no timing is asserted).
            let generic_result = encode_generic(&text, wire, &settings);
            assert_eq!(fast, generic_result, "{shape} {label}: paths disagree");
            let mb = mb_per_s(
                text.len(),
                &timing,
                &mut [&mut baseline, &mut generic, &mut plugin],
            );
            let (base, gen, plug) = (mb[0], mb[1], mb[2]);
            println!(
                "{:<7} {:>7} {:>11.1} {:>9.1} {:>9.1} {:>10.1}x {:>10.1}x {:>6.0}%",
                shape,
                label,
                base,
                gen,
                plug,
                plug / base,
                plug / gen,
                100.0 - emission.len() as f64 * 100.0 / text.len() as f64,
            );
        }
    }
}
