//! Peak memory of one stream in the plugin's core (issue 7, "Benchmarks"):
//! the core runs natively under a counting global allocator and is driven
//! the way the proxy-wasm adapter drives it (request, response headers,
//! response body in 16 KiB chunks, each step's output dropped as Envoy
//! takes it). The figure is the peak of bytes allocated during the
//! response minus what was allocated before it, for tool results of 64 KiB
//! to 4 MiB: a table (encoded as TOON) and prose (passes unchanged).
//!
//! In the wasm module the same allocations come from the VM's linear
//! memory, which grows to the high-water mark and stays there; so the peak
//! per stream is also about what a busy VM holds.
//!
//! Run: `cargo bench --bench stream_memory` (prints a Markdown table).
//! `STREAM_MEMORY_ONLY=table` (or `prose`) runs one kind alone.

#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
// A counting global allocator needs `unsafe impl GlobalAlloc`; it only
// forwards to the system allocator. The plugin itself has no unsafe code
// outside its proxy-wasm ABI.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mcp_toon::config::StreamInfo;
use mcp_toon::exchange::{NoSessions, Out, RequestHead, ResponseHead};
use mcp_toon::{Exchange, Settings};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let now = CURRENT.fetch_add(new_size - layout.size(), Ordering::Relaxed)
                    + (new_size - layout.size());
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const CALL: &[u8] =
    br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"export","arguments":{}}}"#;

fn flat_row(i: usize) -> String {
    format!(
        r#"{{"id":{i},"name":"user-{i}","email":"user{i}@example.com","active":{},"score":{}.{:02},"created":"2024-03-{:02}T10:{:02}:00Z","status":"{}"}}"#,
        i % 3 != 0,
        i % 100,
        i % 97,
        1 + i % 28,
        i % 60,
        ["open", "closed", "pending review"][i % 3],
    )
}

/// A JSON-RPC tool result of about `size` bytes whose text is a table or prose.
fn body(size: usize, table: bool) -> Vec<u8> {
    let mut text = String::new();
    if table {
        text.push('[');
        let mut i = 0;
        while text.len() < size - 200 {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&flat_row(i));
            i += 1;
        }
        text.push(']');
    } else {
        while text.len() < size - 200 {
            text.push_str(
                "The migration moved every tenant to the new storage tier without downtime. ",
            );
        }
        // No trailing blank: collapse_whitespace would trim it.
        text.truncate(text.trim_end().len());
    }
    let msg = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}});
    msg.to_string().into_bytes()
}

/// Peak bytes the core allocated while taking `response`, and the size of
/// what it sent.
fn run(settings: &Arc<Settings>, response: &[u8], announced: bool) -> (usize, usize) {
    let mut e = Exchange::new(Arc::clone(settings));
    let stream = StreamInfo::default();
    e.request_headers(RequestHead {
        stream: &stream,
        method: "POST",
        path: "/mcp",
        content_type: Some("application/json"),
        accept: Some("application/json, text/event-stream"),
        end_of_stream: false,
        headers: &[],
        mcp_method: None,
        mcp_name: None,
    });
    e.request_chunk(CALL, true, &mut NoSessions);
    e.response_headers(
        ResponseHead {
            status: Some(200),
            content_type: Some("application/json"),
            content_encoding: None,
            content_length: announced.then_some(response.len()),
            end_of_stream: false,
        },
        &mut NoSessions,
    );
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let mut sent = 0;
    let chunks: Vec<&[u8]> = response.chunks(16 * 1024).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let step = e.response_chunk(chunk, i + 1 == chunks.len(), &mut NoSessions);
        sent += match &step.out {
            Out::Input => chunk.len(),
            Out::Bytes { bytes, .. } => bytes.len(),
        };
    }
    let peak = PEAK.load(Ordering::Relaxed) - base;
    drop(e);
    (peak, sent)
}

fn main() {
    let settings = Arc::new(Settings::from_json(r#"{"max_body_bytes":16777216}"#).unwrap());
    println!("| result | body bytes | bytes sent | peak core allocation | peak / body |");
    println!("|---|---:|---:|---:|---:|");
    for (label, size) in [
        ("64 KiB", 64 << 10),
        ("256 KiB", 256 << 10),
        ("1 MiB", 1 << 20),
        ("4 MiB", 4 << 20),
    ] {
        for table in [true, false] {
            // `STREAM_MEMORY_ONLY=table` or `=prose`: one kind, for a heap
            // profiler (valgrind --tool=massif) to look at alone.
            let only = std::env::var("STREAM_MEMORY_ONLY").ok();
            if only.is_some_and(|o| o != if table { "table" } else { "prose" }) {
                continue;
            }
            let response = body(size, table);
            // A body with a `content-length` is collected into one buffer
            // of that size; a chunked one grows by doubling.
            for announced in [true, false] {
                if !(announced || table && size == 1 << 20) {
                    continue;
                }
                let (peak, sent) = run(&settings, &response, announced);
                let kind = match (table, announced) {
                    (true, true) => "table (encoded)",
                    (true, false) => "table (encoded), chunked",
                    (false, _) => "prose (passes)",
                };
                println!(
                    "| {label} {kind} | {} | {} | {} | {:.2} |",
                    response.len(),
                    sent,
                    peak,
                    peak as f64 / response.len() as f64
                );
            }
        }
    }
}
