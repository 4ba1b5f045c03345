//! What a gateway knows about a tool's annotations: whether calling it again
//! with the same arguments is safe (MCP 2025-03-26 and later,
//! `ToolAnnotations`: `readOnlyHint` — the tool does not modify its
//! environment; `idempotentHint` — repeating a call has no additional
//! effect). Learnt from `tools/list` responses passing through, per server
//! ([`StreamInfo::server`](crate::config::StreamInfo::server): route,
//! cluster and authority) and tool, in shared data so every worker knows;
//! [`SLOTS`] fixed slots (a shared-data key cannot be deleted).
//!
//! Only "safe" is worth a record: a tool not known safe is not called
//! again, whether a listing said so or none was seen. So what one server
//! lists never changes what another's record says: a record names its
//! server and tool, a reader takes it only for that pair, and a listing
//! writes only an empty slot or its own server's record (a tool that
//! stopped being safe empties it). A tool whose slot holds another
//! server's record is not learnt: it stays not known safe, never becomes
//! another tool's hint.

use serde::{Deserialize, Serialize};

use crate::shared::Services;

pub(crate) const SLOTS: u32 = 4096;

#[derive(Serialize, Deserialize)]
struct Record {
    /// The server.
    c: String,
    t: String,
    safe: bool,
}

fn key(server: &str, tool: &str) -> String {
    // FNV-1a: the same slot on every worker.
    let mut hash: u32 = 0x811c_9dc5;
    for byte in server.bytes().chain([0]).chain(tool.bytes()) {
        hash = (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193);
    }
    format!("mcp_toon.tool.{}", hash % SLOTS)
}

/// Records whether `tool` of `server` is safe to call again.
pub(crate) fn learn<H: Services + ?Sized>(host: &mut H, server: &str, tool: &str, safe: bool) {
    let k = key(server, tool);
    let held = host
        .get(&k)
        .and_then(|(v, _)| serde_json::from_slice::<Record>(&v).ok());
    match held {
        // Its own record: kept as it is, or changed below.
        Some(r) if r.c == server && r.t == tool && r.safe == safe => return,
        Some(r) if r.c == server && r.t == tool => {}
        // Another server's (or tool's) fact stays.
        Some(r) if r.safe => return,
        // Not safe: nothing worth a record.
        _ if !safe => return,
        _ => {}
    }
    let value = if safe {
        let record = Record {
            c: server.to_string(),
            t: tool.to_string(),
            safe,
        };
        match serde_json::to_vec(&record) {
            Ok(v) => v,
            Err(_) => return,
        }
    } else {
        // Emptied: the slot's memory goes back, and it is free for others.
        Vec::new()
    };
    let _ = host.set(&k, &value, 0);
}

/// What this gateway learnt about `tool` of `server`: `Some(true)` when a
/// listing of that server annotated it safe to call again.
pub(crate) fn known_safe<H: Services + ?Sized>(host: &H, server: &str, tool: &str) -> Option<bool> {
    let (value, _) = host.get(&key(server, tool))?;
    let r: Record = serde_json::from_slice(&value).ok()?;
    (r.c == server && r.t == tool && r.safe).then_some(true)
}

/// The hints of one listed tool: safe to call again when read-only or
/// idempotent.
pub(crate) fn safe_to_repeat(tool: &serde_json::value::RawValue) -> bool {
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
    fn learns_per_server_and_tool() {
        let mut host = SharedMemory::default();
        assert_eq!(known_safe(&host, "a", "t"), None);
        learn(&mut host, "a", "t", true);
        assert_eq!(known_safe(&host, "a", "t"), Some(true));
        assert_eq!(known_safe(&host, "b", "t"), None);
        learn(&mut host, "a", "t", false);
        assert_eq!(known_safe(&host, "a", "t"), None);
    }

    /// Another server on the same cluster listing a tool of the same name
    /// as safe does not make the first server's tool safe, nor does its
    /// "not safe" undo the first's.
    #[test]
    fn another_server_never_changes_a_servers_record() {
        let mut host = SharedMemory::default();
        let (a, b) = (server("a.example"), server("b.example"));
        learn(&mut host, &b, "delete_rows", true);
        assert_eq!(known_safe(&host, &a, "delete_rows"), None);
        learn(&mut host, &a, "rows", true);
        learn(&mut host, &b, "rows", false);
        assert_eq!(known_safe(&host, &a, "rows"), Some(true));
        assert_eq!(known_safe(&host, &b, "rows"), None);
    }

    /// A record in a slot another server's record holds is not written:
    /// the tool stays not known safe, and the other record is intact.
    #[test]
    fn a_slot_held_by_another_server_is_left_alone() {
        let mut host = SharedMemory::default();
        let a = server("a.example");
        learn(&mut host, &a, "rows", true);
        let target = key(&a, "rows");
        let (other, tool) = (0..)
            .map(|i| (server(&format!("h{i}.example")), format!("t{i}")))
            .find(|(s, t)| key(s, t) == target)
            .unwrap();
        learn(&mut host, &other, &tool, true);
        assert_eq!(known_safe(&host, &other, &tool), None);
        assert_eq!(known_safe(&host, &a, "rows"), Some(true));
        // Once the first server's tool is no longer safe its slot is free.
        learn(&mut host, &a, "rows", false);
        learn(&mut host, &other, &tool, true);
        assert_eq!(known_safe(&host, &other, &tool), Some(true));
    }

    fn server(authority: &str) -> String {
        crate::config::StreamInfo {
            route: Some("mcp".into()),
            cluster: Some("shared_cluster".into()),
            authority: Some(authority.into()),
        }
        .server()
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
