//! Page calls and handles from outsiders, against a gateway that holds one
//! cut result of Alice's (issue 37): arbitrary bodies, handles (made up or
//! Alice's with bytes changed) and credentials. Never a panic or a stall; a
//! body the plugin answers as a page call never reaches the server; a page
//! is served only with Alice's credentials; a handle accepted here
//! re-encodes to itself. Run with a libFuzzer `-timeout` (fuzz/run.sh).
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use mcp_toon::config::Settings;
use mcp_toon::page::handle::Handle;
use mcp_toon::page::keys;
use mcp_toon::exchange::serve;
use mcp_toon::shared::{Entropy, SharedMemory};
use mcp_toon::sim::Script;
use mcp_toon::stage::trim::LlmReply;

const CONFIG: &str = r#"{"hold_headers":true,"max_body_bytes":4096,"tools":{"rows":{"budget":{"tokens":300},"paging":{"enabled":true,"reissue":"always"}}},"paging":{"key":"0123456789abcdef0123456789abcdef"}}"#;
const ALICE: &str = "Bearer alice";
const STREAM: &[(&str, &str)] = &[("xds.cluster_name", "mcp"), ("xds.route_name", "r")];
const NOW_MS: u64 = 1_783_900_000_000;

struct Gateway {
    settings: Arc<Settings>,
    shared: SharedMemory,
    handle: String,
    result: Vec<u8>,
}

fn result() -> Vec<u8> {
    let rows: Vec<serde_json::Value> = (0..300)
        .map(|i| serde_json::json!({"seq": i, "message": format!("request {i} handled")}))
        .collect();
    let text = serde_json::Value::Array(rows).to_string();
    serde_json::json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": text}]}})
        .to_string()
        .into_bytes()
}

fn gateway() -> &'static Gateway {
    static G: OnceLock<Gateway> = OnceLock::new();
    G.get_or_init(|| {
        let settings = Arc::new(Settings::from_json(CONFIG).expect("fixed config"));
        let mut shared = SharedMemory::with(Entropy::Seeded(9));
        shared.now_ms = NOW_MS;
        let request = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"rows","arguments":{"n":300}}}"#;
        let result = result();
        let headers = [(":authority", "gw"), ("authorization", ALICE)];
        let t = Script {
            request_headers: &headers,
            properties: STREAM,
            shared,
            ..Script::new(request, "application/json", &result)
        }
        .play(Arc::clone(&settings), &mut |_| LlmReply::NotSent);
        let v: serde_json::Value = serde_json::from_slice(&t.response_sent).expect("a cut result");
        let notice = v["result"]["content"][1]["text"].as_str().expect("a notice").to_string();
        let start = notice.find("{\"handle\":\"").expect("a handle") + 11;
        let handle = notice[start..start + notice[start..].find('"').expect("end")].to_string();
        Gateway { settings, shared: t.host.shared, handle, result }
    })
}

fn page_call(handle: &str) -> Vec<u8> {
    serde_json::json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "mcp_toon_page", "arguments": {"handle": handle}}})
    .to_string()
    .into_bytes()
}

fuzz_target!(|data: &[u8]| {
    let g = gateway();
    let Some((&mode, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let derived = keys::derive(&g.settings.paging.keys);
    // Any handle text: no panic; one this key opened re-encodes to itself.
    if let Ok((h, 0)) = Handle::decode(&text, &derived) {
        let sealing = h.call.as_ref().map(|_| &derived[0].handle);
        assert_eq!(h.encode(sealing), text.trim());
    }
    let mut credentials = if mode & 4 != 0 { ALICE.to_string() } else { "Bearer mallory".to_string() };
    let body = match mode & 3 {
        0 => rest.to_vec(),
        1 => page_call(&text),
        2 => {
            // Alice's handle with bytes of the input spliced in.
            let mut h = g.handle.clone().into_bytes();
            let at = usize::from(rest.first().copied().unwrap_or(0)) % h.len().max(1);
            for (i, b) in rest.iter().skip(1).take(8).enumerate() {
                if let Some(c) = h.get_mut(at + i) {
                    *c = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[usize::from(*b) % 64];
                }
            }
            page_call(&String::from_utf8_lossy(&h))
        }
        _ => {
            credentials = text.to_string();
            page_call(&g.handle)
        }
    };
    let chunks = [usize::from(mode >> 3).max(1) * 7];
    let headers = [(":authority", "gw"), ("authorization", credentials.as_str())];
    let t = Script {
        request_chunks: &chunks,
        request_headers: &headers,
        properties: STREAM,
        shared: g.shared.clone(),
        ..Script::new(&body, "application/json", &g.result)
    }
    .play(Arc::clone(&g.settings), &mut |_| LlmReply::Response { status: 200, body: g.result.clone() });
    assert!(!t.stalled);
    // A request body over `max_body_bytes` is never read: it passes whole
    // (`request_too_large`, docs/configuration.md), page call or not, and
    // meets whatever the chain after the plugin does with any request.
    let read = body.len() <= g.settings.max_body_bytes;
    let answered = read && serve::parse(&body, "mcp_toon_page", usize::MAX).is_some();
    if answered || t.local_reply.is_some() {
        assert!(t.request_sent.is_empty(), "a page call reached the server");
    }
    if let Some(reply) = &t.local_reply {
        let v: serde_json::Value = serde_json::from_slice(&reply.body).unwrap_or_default();
        let served = reply.status == 200 && v["result"].get("isError").is_none();
        if served {
            // Only Alice's credentials (as sent, byte for byte) get a page.
            assert_eq!(credentials, ALICE, "a page for another caller");
        }
    }
});
