//! What a gateway knows about a tool's annotations: whether calling it again
//! with the same arguments is safe (MCP 2025-03-26 and later,
//! `ToolAnnotations`: `readOnlyHint` — the tool does not modify its
//! environment; `idempotentHint` — repeating a call has no additional
//! effect). Learnt from `tools/list` responses passing through, per route
//! cluster and tool, in shared data so every worker knows; 1,024 fixed
//! slots (a shared-data key cannot be deleted), a record checks its own
//! cluster and name so a collision reads as "unknown", never as another
//! tool's hint.

use serde::{Deserialize, Serialize};

use crate::shared::SessionStore;

const SLOTS: u32 = 1024;

#[derive(Serialize, Deserialize)]
struct Record {
    c: String,
    t: String,
    safe: bool,
}

fn key(cluster: &str, tool: &str) -> String {
    // FNV-1a, as the legacy-session slots: the same slot on every worker.
    let mut hash: u32 = 0x811c_9dc5;
    for byte in cluster.bytes().chain([0]).chain(tool.bytes()) {
        hash = (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193);
    }
    format!("mcp_toon.tool.{}", hash % SLOTS)
}

/// Records whether `tool` of the server behind `cluster` is safe to call
/// again.
pub fn learn<H: SessionStore + ?Sized>(host: &mut H, cluster: &str, tool: &str, safe: bool) {
    let record = Record {
        c: cluster.to_string(),
        t: tool.to_string(),
        safe,
    };
    if let Ok(value) = serde_json::to_vec(&record) {
        let k = key(cluster, tool);
        if host.get(&k).is_some_and(|(v, _)| v == value) {
            return;
        }
        let _ = host.set(&k, &value, 0);
    }
}

/// What this gateway learnt about `tool`, if anything.
pub fn known_safe<H: SessionStore + ?Sized>(host: &H, cluster: &str, tool: &str) -> Option<bool> {
    let (value, _) = host.get(&key(cluster, tool))?;
    let r: Record = serde_json::from_slice(&value).ok()?;
    (r.c == cluster && r.t == tool).then_some(r.safe)
}

/// The hints of one listed tool: safe to call again when read-only or
/// idempotent.
pub fn safe_to_repeat(tool: &serde_json::value::RawValue) -> bool {
    #[derive(Deserialize)]
    struct Tool {
        annotations: Option<Annotations>,
    }
    #[derive(Deserialize)]
    struct Annotations {
        #[serde(rename = "readOnlyHint")]
        read_only: Option<bool>,
        #[serde(rename = "idempotentHint")]
        idempotent: Option<bool>,
    }
    serde_json::from_str::<Tool>(tool.get())
        .ok()
        .and_then(|t| t.annotations)
        .is_some_and(|a| a.read_only == Some(true) || a.idempotent == Some(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::SharedMemory;

    #[test]
    fn learns_per_cluster_and_tool() {
        let mut host = SharedMemory::default();
        assert_eq!(known_safe(&host, "a", "t"), None);
        learn(&mut host, "a", "t", true);
        assert_eq!(known_safe(&host, "a", "t"), Some(true));
        assert_eq!(known_safe(&host, "b", "t"), None);
        learn(&mut host, "a", "t", false);
        assert_eq!(known_safe(&host, "a", "t"), Some(false));
    }

    #[test]
    fn hints_from_a_listing() {
        let raw = |s: &str| serde_json::value::RawValue::from_string(s.to_string()).unwrap();
        assert!(safe_to_repeat(&raw(
            r#"{"name":"a","annotations":{"readOnlyHint":true}}"#
        )));
        assert!(safe_to_repeat(&raw(
            r#"{"name":"a","annotations":{"readOnlyHint":false,"idempotentHint":true}}"#
        )));
        assert!(!safe_to_repeat(&raw(r#"{"name":"a"}"#)));
        assert!(!safe_to_repeat(&raw(
            r#"{"name":"a","annotations":{"destructiveHint":false}}"#
        )));
    }
}
