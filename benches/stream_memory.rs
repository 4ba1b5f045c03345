//! Peak memory of one stream in the plugin's core (issue 7, "Benchmarks"):
//! the core runs natively under a counting global allocator and is driven
//! the way the proxy-wasm adapter drives it (request, response headers,
//! response body in 16 KiB chunks, each step's output dropped as Envoy
//! takes it). The figure is the peak of bytes allocated during the
//! response minus what was allocated before it, for tool results of 64 KiB
//! to 16 MiB: a table (encoded as TOON), the same table pretty-printed
//! (compacted, then encoded), a table in one SSE event, a table cut to a
//! budget with its pages (written to shared data, which the host keeps
//! outside the VM), and prose (passes unchanged).
//!
//! In the wasm module the same allocations come from the VM's linear
//! memory, which grows to the high-water mark and stays there; so the peak
//! per stream is also about what a busy VM holds. The largest peak / body
//! is what the memory budget reserves for the stages' working memory
//! (`config::VM_WORK_FACTOR`).
//!
//! Run: `cargo bench --bench stream_memory` (prints a Markdown table).
//! `STREAM_MEMORY_ONLY=table` (or `pretty`, `sse`, `cut`, `prose`) runs one
//! kind alone.

#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
// A counting global allocator needs `unsafe impl GlobalAlloc`; it only
// forwards to the system allocator. The plugin itself has no unsafe code
// outside its proxy-wasm ABI.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mcp_toon::config::StreamInfo;
use mcp_toon::exchange::{Out, RequestHead, ResponseHead, Services, Unstored};
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

/// What a tool result's text is.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// A compact JSON table (encoded as TOON).
    Table,
    /// The same table pretty-printed (compacted, then encoded).
    Pretty,
    /// Prose (passes unchanged).
    Prose,
}

/// A JSON-RPC tool result of about `size` bytes of text.
fn body(size: usize, kind: Kind) -> Vec<u8> {
    let mut text = String::new();
    if kind == Kind::Prose {
        while text.len() < size - 200 {
            text.push_str(
                "The migration moved every tenant to the new storage tier without downtime. ",
            );
        }
        // No trailing blank: collapse_whitespace would trim it.
        text.truncate(text.trim_end().len());
    } else {
        let mut rows = Vec::new();
        let mut len = 0;
        while len < size - 200 {
            let row: serde_json::Value = serde_json::from_str(&flat_row(rows.len())).unwrap();
            len += if kind == Kind::Pretty {
                serde_json::to_string_pretty(&row).unwrap().len() + 4
            } else {
                flat_row(rows.len()).len() + 1
            };
            rows.push(row);
        }
        let rows = serde_json::Value::Array(rows);
        text = if kind == Kind::Pretty {
            serde_json::to_string_pretty(&rows).unwrap()
        } else {
            rows.to_string()
        };
    }
    let msg = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}});
    msg.to_string().into_bytes()
}

/// Shared data as the VM sees it: the host keeps what is written (outside
/// the VM's memory), so nothing is kept here; random bytes from a counter.
struct HostSide(u8);

impl Services for HostSide {
    fn get(&self, _key: &str) -> Option<(Vec<u8>, u32)> {
        None
    }
    fn set(&mut self, _key: &str, _value: &[u8], _cas: u32) -> Result<(), Unstored> {
        Ok(())
    }
    fn random(&mut self, out: &mut [u8]) -> bool {
        for b in out {
            self.0 = self.0.wrapping_add(1);
            *b = self.0;
        }
        true
    }
    fn now_ms(&self) -> u64 {
        1_000_000
    }
}

/// Peak bytes the core allocated while taking `response`, and the size of
/// what it sent. `sse`: the result comes as one event of an event stream.
fn run(settings: &Arc<Settings>, response: &[u8], announced: bool, sse: bool) -> (usize, usize) {
    let mut store = HostSide(0);
    let mut e = Exchange::new(Arc::clone(settings));
    let stream = StreamInfo::default();
    let session = [("mcp-session-id".to_string(), "s1".to_string())];
    e.request_headers(RequestHead {
        stream: &stream,
        method: "POST",
        path: "/mcp",
        content_type: Some("application/json"),
        accept: Some("application/json, text/event-stream"),
        end_of_stream: false,
        headers: &session,
        mcp_method: None,
        mcp_name: None,
        owner_metadata: None,
        reissue_mark: None,
        now_ms: 0,
    });
    e.request_chunk(CALL, true, &mut store);
    let framed;
    let response = if sse {
        framed = [b"data: ", response, b"\n\n"].concat();
        &framed[..]
    } else {
        response
    };
    e.response_headers(
        ResponseHead {
            status: Some(200),
            content_type: Some(if sse {
                "text/event-stream"
            } else {
                "application/json"
            }),
            content_encoding: None,
            content_length: announced.then_some(response.len()),
            end_of_stream: false,
        },
        &mut store,
    );
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let mut sent = 0;
    let chunks: Vec<&[u8]> = response.chunks(16 * 1024).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let step = e.response_chunk(chunk, i + 1 == chunks.len(), &mut store);
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
    let limits =
        r#""max_body_bytes":16777216,"max_response_bytes":67108864,"max_event_bytes":67108864"#;
    let defaults = Arc::new(Settings::from_json(&format!("{{{limits}}}")).unwrap());
    // A budget with pages: the cut and its pages are built in the VM.
    let budget = Arc::new(
        Settings::from_json(&format!(
            r#"{{{limits},"hold_headers":true,"tools":{{"export":{{"budget":{{"tokens":20000}},"paging":{{"enabled":true}}}}}},"paging":{{"max_result_bytes":67108864}}}}"#
        ))
        .unwrap(),
    );
    println!("| result | body bytes | bytes sent | peak core allocation | peak / body |");
    println!("|---|---:|---:|---:|---:|");
    let only = std::env::var("STREAM_MEMORY_ONLY").ok();
    for (label, size) in [
        ("64 KiB", 64 << 10),
        ("256 KiB", 256 << 10),
        ("1 MiB", 1 << 20),
        ("4 MiB", 4 << 20),
        ("16 MiB", 16 << 20),
    ] {
        // (what, kind, settings, announced, sse)
        let rows: [(&str, Kind, &Arc<Settings>, bool, bool); 6] = [
            ("table (encoded)", Kind::Table, &defaults, true, false),
            (
                "table (encoded), chunked",
                Kind::Table,
                &defaults,
                false,
                false,
            ),
            (
                "pretty table (compacted, encoded)",
                Kind::Pretty,
                &defaults,
                true,
                false,
            ),
            (
                "table in one SSE event (encoded)",
                Kind::Table,
                &defaults,
                false,
                true,
            ),
            (
                "table cut to 20,000 tokens with pages",
                Kind::Table,
                &budget,
                false,
                false,
            ),
            ("prose (passes)", Kind::Prose, &defaults, true, false),
        ];
        for (what, kind, settings, announced, sse) in rows {
            // `STREAM_MEMORY_ONLY=table` (or `prose`, `pretty`, `cut`,
            // `sse`): one kind, for a heap profiler (valgrind
            // --tool=massif) to look at alone.
            let name = match (kind, sse, Arc::ptr_eq(settings, &budget)) {
                (_, true, _) => "sse",
                (_, _, true) => "cut",
                (Kind::Table, ..) => "table",
                (Kind::Pretty, ..) => "pretty",
                (Kind::Prose, ..) => "prose",
            };
            if only.as_deref().is_some_and(|o| o != name) {
                continue;
            }
            // The chunked table once (a body that grows by doubling).
            if !announced && !sse && kind == Kind::Table && size != 1 << 20 && name == "table" {
                continue;
            }
            let response = body(size, kind);
            let (peak, sent) = run(settings, &response, announced, sse);
            println!(
                "| {label} {what} | {} | {} | {} | {:.2} |",
                response.len(),
                sent,
                peak,
                peak as f64 / response.len() as f64
            );
        }
    }
}
