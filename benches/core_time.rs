//! Native time of the plugin's core per exchange, for `scripts/bench.py`'s
//! "floor + native" column: the same request and response bodies the Envoy
//! cells use, run natively through the [`Driver`] on the in-memory host the
//! way Envoy's wasm host delivers them (request body whole; response body
//! in 16 KiB chunks), with each listener's plugin configuration.
//!
//! Run: `cargo bench --bench core_time -- MANIFEST.json`, where the
//! manifest lists `{"name", "config", "request", "response"}` (file paths
//! for the bodies) and, optionally, `"headers": {name: value}` the request
//! carries besides its content type and accept. Prints `{name: µs per exchange}` as JSON (the best of 7
//! interleaved runs of at least 100 ms, by thread CPU time on Linux), then
//! `{name: {call: how many}}`, the host calls of one exchange (each one
//! crosses the wasm boundary in the plugin).
//! `CORE_TIME_EXCHANGES=N` runs N exchanges of each case untimed, for
//! valgrind's instruction counts.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_toon::driver::{self, Driver, HostCall, MemoryHost, Vm};
use mcp_toon::host::Direction;
use mcp_toon::Settings;

struct Case {
    name: String,
    settings: Arc<Settings>,
    /// Request headers besides the content type and accept (the manifest's
    /// `headers`, e.g. MCP 2026-07-28's `mcp-method`).
    headers: Vec<(String, String)>,
    request: Vec<u8>,
    response: Vec<u8>,
}

/// One exchange, start to end; returns the bytes the client got and the
/// host calls the driver made.
fn exchange(case: &Case, vm: &Rc<Vm>) -> (usize, serde_json::Value) {
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    headers.extend(case.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    let mut host = MemoryHost::post(&headers);
    let mut driver = Driver::new(Arc::clone(&case.settings), Rc::clone(vm));
    host.headers(&mut driver, Direction::Request, false);
    host.body(&mut driver, Direction::Request, &case.request, true);
    let length = case.response.len().to_string();
    host.respond(&[
        (":status", "200"),
        ("content-type", "application/json"),
        ("content-length", &length),
    ]);
    host.headers(&mut driver, Direction::Response, false);
    let chunks: Vec<&[u8]> = case.response.chunks(16 * 1024).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        host.body(
            &mut driver,
            Direction::Response,
            chunk,
            i + 1 == chunks.len(),
        );
    }
    host.end(&mut driver);
    let mut calls = serde_json::Map::new();
    for c in HostCall::ALL {
        if host.calls(c) > 0 {
            calls.insert(format!("{c:?}"), host.calls(c).into());
        }
    }
    (host.sent(Direction::Response).len(), calls.into())
}

/// Nanoseconds this thread has spent on a CPU (Linux schedstat); `None`
/// elsewhere.
fn cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// Microseconds per call of `f` over one run of at least `min`.
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
    secs * 1e6 / iters as f64
}

// Public so that `benches/core_wasm/` runs this same program compiled to
// wasm32-wasip1 (the "V8 core µs" column).
pub fn main() {
    let manifest = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .expect("usage: core_time MANIFEST.json");
    let entries: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
    let cases: Vec<Case> = entries
        .iter()
        .map(|e| Case {
            name: e["name"].as_str().unwrap().to_string(),
            settings: Arc::new(Settings::from_json(&e["config"].to_string()).unwrap()),
            headers: e["headers"]
                .as_object()
                .map(|h| {
                    h.iter()
                        .map(|(n, v)| (n.clone(), v.as_str().unwrap().to_string()))
                        .collect()
                })
                .unwrap_or_default(),
            request: std::fs::read(e["request"].as_str().unwrap()).unwrap(),
            response: std::fs::read(e["response"].as_str().unwrap()).unwrap(),
        })
        .collect();
    // The VM as Envoy configures it: the host answers Envoy's plugin
    // property (so no stream sets APISIX's body flags).
    let vm = Rc::new(Vm::default());
    let mut root = MemoryHost::default();
    root.properties
        .insert(driver::ENVOY_PROPERTY.to_string(), Vec::new());
    for case in &cases {
        driver::configured(&mut root, &case.settings, &vm);
    }
    // `CORE_TIME_EXCHANGES=N`: exactly N exchanges of each case and no
    // timing, for an instruction count (valgrind --tool=callgrind) that
    // compares two builds without the machine's noise.
    if let Some(n) = std::env::var("CORE_TIME_EXCHANGES")
        .ok()
        .and_then(|n| n.parse::<u32>().ok())
    {
        for case in &cases {
            for _ in 0..n {
                std::hint::black_box(exchange(case, &vm));
            }
        }
        return;
    }
    let mut best = vec![f64::INFINITY; cases.len()];
    for _ in 0..7 {
        for (case, b) in cases.iter().zip(best.iter_mut()) {
            let mut f = || {
                std::hint::black_box(exchange(case, &vm));
            };
            *b = b.min(one_run(Duration::from_millis(100), &mut f));
        }
    }
    let out: serde_json::Map<String, serde_json::Value> = cases
        .iter()
        .zip(best)
        .map(|(c, us)| {
            (
                c.name.clone(),
                serde_json::json!((us * 100.0).round() / 100.0),
            )
        })
        .collect();
    println!("{}", serde_json::Value::Object(out));
    let calls: serde_json::Map<String, serde_json::Value> = cases
        .iter()
        .map(|c| (c.name.clone(), exchange(c, &vm).1))
        .collect();
    println!("{}", serde_json::Value::Object(calls));
}
