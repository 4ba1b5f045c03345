//! Pages on demand: the rest of a result the budget stage cut, fetched with
//! a synthetic tool the plugin adds to `tools/list` and answers itself.
//!
//! Two ways to serve a page, and a page call may land on any gateway
//! (MCP 2026-07-28 has no sessions: any request may reach any instance):
//!
//! - **From the store** ([`store`]) of the gateway that cut the result:
//!   every page is kept in proxy-wasm shared data when the result is cut, so
//!   a page call is one shared-data read. Needs the page call to reach the
//!   same Envoy (one instance, or routing that keeps a client on one).
//! - **By calling the tool again** ([`reissue`]): a signed handle
//!   ([`handle`]) carries the original call; a gateway that does not hold
//!   the page re-issues the `tools/call` to the route's cluster, runs the
//!   same stages, checks the digest of the result against the one in the
//!   handle (a changed result is reported, never mixed) and returns the
//!   page. Only for tools annotated read-only or idempotent, or configured
//!   so (calling a tool again must be safe).
//!
//! The page tool is answered from the request path: its call never reaches
//! the server ([`serve`]).

pub mod cut;
pub mod handle;
pub mod reissue;
pub mod serve;
pub mod store;
pub mod tools;

use sha2::{Digest, Sha256};

/// What the store needs of the host: shared data with compare-and-swap,
/// the time and random bytes. Every method has a default that says "not
/// available", so a host without shared data cuts results without keeping
/// their pages.
pub trait PageHost {
    /// A shared value and its version for compare-and-swap.
    fn shared_get(&self, key: &str) -> Option<(Vec<u8>, u32)> {
        let _ = key;
        None
    }
    /// Stores `value` if the key is still at version `cas` (0: whatever it
    /// is at).
    fn shared_set(&mut self, key: &str, value: &[u8], cas: u32) -> Result<(), StoreError> {
        let _ = (key, value, cas);
        Err(StoreError::Unavailable)
    }
    /// Milliseconds since the Unix epoch (0 when unknown).
    fn now_ms(&self) -> u64 {
        0
    }
    /// Fills `buf` from a cryptographically secure source; false when the
    /// host has none.
    fn random(&mut self, buf: &mut [u8]) -> bool {
        let _ = buf;
        false
    }
}

/// The store's calls, named for it.
trait Shared {
    fn get(&self, key: &str) -> Option<(Vec<u8>, u32)>;
    fn set(&mut self, key: &str, value: &[u8], cas: u32) -> Result<(), StoreError>;
}

impl<H: PageHost + ?Sized> Shared for H {
    fn get(&self, key: &str) -> Option<(Vec<u8>, u32)> {
        self.shared_get(key)
    }
    fn set(&mut self, key: &str, value: &[u8], cas: u32) -> Result<(), StoreError> {
        self.shared_set(key, value, cas)
    }
}

/// A refused shared-data write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreError {
    /// Someone wrote the key since it was read (compare-and-swap).
    Conflict,
    /// No shared data, or the host refused.
    Unavailable,
}

/// What a page belongs to: the MCP session (`Mcp-Session-Id`, MCP
/// 2025-03-26 to 2025-11-25; none in 2026-07-28, where a handle is a
/// capability) and the route's cluster, hashed. A handle from another
/// session or for another server is refused.
pub fn binding(session: Option<&str>, cluster: Option<&str>) -> [u8; 8] {
    let mut h = Sha256::new();
    h.update(b"mcp-toon/binding/1\0");
    h.update(session.unwrap_or("").as_bytes());
    h.update([0]);
    h.update(cluster.unwrap_or("").as_bytes());
    let d = h.finalize();
    let mut out = [0u8; 8];
    out.copy_from_slice(d.get(..8).unwrap_or(&[0; 8]));
    out
}

/// A response the plugin sends itself, without the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// How a JSON-RPC response is framed for the client: JSON, or one SSE
/// `message` event (MCP 2025-03-26 and later, Streamable HTTP: the server
/// answers a POST with either; the client lists both in `Accept`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Json,
    Sse,
}

impl Framing {
    /// JSON unless the client accepts only event streams.
    pub fn for_accept(accept: Option<&str>) -> Self {
        let media: Vec<String> = accept
            .unwrap_or("")
            .split(',')
            .map(crate::exchange::media_type)
            .collect();
        let json = media
            .iter()
            .any(|m| m == "application/json" || m == "*/*" || m == "application/*");
        let sse = media.iter().any(|m| m == "text/event-stream");
        if sse && !json {
            Framing::Sse
        } else {
            Framing::Json
        }
    }

    /// A 200 carrying `message` (a JSON-RPC response).
    pub fn reply(self, message: &str, summary: Option<String>) -> LocalReply {
        let (content_type, body) = match self {
            Framing::Json => ("application/json", message.as_bytes().to_vec()),
            Framing::Sse => (
                "text/event-stream",
                format!("event: message\ndata: {message}\n\n").into_bytes(),
            ),
        };
        let mut headers = vec![
            ("content-type".to_string(), content_type.to_string()),
            ("cache-control".to_string(), "no-store".to_string()),
        ];
        if let Some(s) = summary {
            headers.push((crate::report::SUMMARY_HEADER.to_string(), s));
        }
        LocalReply {
            status: 200,
            headers,
            body,
        }
    }
}

/// A JSON-RPC response whose result is a `CallToolResult` of text items.
/// `id` is the request's id as its JSON text. MCP 2026-07-28 results carry
/// `resultType` (`"complete"`); earlier revisions have no such field.
pub fn tool_result(id: &str, texts: &[&str], is_error: bool, modern: bool) -> String {
    let content: Vec<serde_json::Value> = texts
        .iter()
        .map(|t| serde_json::json!({"type": "text", "text": t}))
        .collect();
    let mut result = serde_json::Map::new();
    result.insert("content".into(), serde_json::Value::Array(content));
    if is_error {
        result.insert("isError".into(), serde_json::Value::Bool(true));
    }
    if modern {
        result.insert("resultType".into(), "complete".into());
    }
    let id_value: serde_json::Value = serde_json::from_str(id).unwrap_or(serde_json::Value::Null);
    serde_json::json!({"jsonrpc": "2.0", "id": id_value, "result": result}).to_string()
}

/// The first MCP revision whose results carry `resultType`.
const MODERN: &str = "2026-07-28";

/// Whether a request speaks MCP 2026-07-28 or later: its protocol version
/// travels in `params._meta` (and the `MCP-Protocol-Version` header).
pub fn is_modern(version: Option<&str>) -> bool {
    version.is_some_and(|v| v >= MODERN)
}

/// Shared data kept in memory, with a clock and random bytes: the shared
/// data of the in-memory host ([`crate::driver::MemoryHost`]: the CLI, the
/// component, the scripted host) and of the core's own tests.
#[derive(Debug, Default, Clone)]
pub struct SharedMemory {
    data: std::collections::HashMap<String, (Vec<u8>, u32)>,
    version: u32,
    pub now_ms: u64,
    pub entropy: Entropy,
}

/// Where [`SharedMemory`]'s random bytes come from.
#[derive(Debug, Default, Clone)]
pub enum Entropy {
    /// None: results are cut without pages.
    #[default]
    None,
    /// xorshift64* from this seed: deterministic test data, not a secret.
    Seeded(u64),
    /// SipHash of a counter keyed by the standard library's per-process
    /// random keys (WASI `random` on wasm32-wasip2): the component's.
    Keyed {
        keys: std::collections::hash_map::RandomState,
        counter: u64,
    },
}

impl SharedMemory {
    /// Memory with random bytes from `entropy`.
    pub fn with(entropy: Entropy) -> Self {
        SharedMemory {
            entropy,
            ..SharedMemory::default()
        }
    }

    pub fn keys(&self) -> usize {
        self.data.len()
    }

    pub fn bytes(&self) -> usize {
        self.data.values().map(|(v, _)| v.len()).sum()
    }
}

impl PageHost for SharedMemory {
    fn shared_get(&self, key: &str) -> Option<(Vec<u8>, u32)> {
        self.data.get(key).cloned()
    }

    fn shared_set(&mut self, key: &str, value: &[u8], cas: u32) -> Result<(), StoreError> {
        if cas != 0 && self.data.get(key).is_some_and(|(_, v)| *v != cas) {
            return Err(StoreError::Conflict);
        }
        self.version = self.version.wrapping_add(1).max(1);
        self.data
            .insert(key.to_string(), (value.to_vec(), self.version));
        Ok(())
    }

    fn now_ms(&self) -> u64 {
        self.now_ms
    }

    fn random(&mut self, buf: &mut [u8]) -> bool {
        use std::hash::BuildHasher;
        match &mut self.entropy {
            Entropy::None => false,
            Entropy::Seeded(seed) => {
                for b in buf {
                    *seed ^= *seed >> 12;
                    *seed ^= *seed << 25;
                    *seed ^= *seed >> 27;
                    *b = (seed.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8;
                }
                true
            }
            Entropy::Keyed { keys, counter } => {
                for chunk in buf.chunks_mut(8) {
                    *counter = counter.wrapping_add(1);
                    let word = keys.hash_one(*counter).to_le_bytes();
                    chunk.copy_from_slice(word.get(..chunk.len()).unwrap_or(&[]));
                }
                true
            }
        }
    }
}
