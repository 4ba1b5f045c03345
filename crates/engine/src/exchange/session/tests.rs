use std::collections::HashSet;

use super::*;
use crate::config::StreamInfo;
use crate::exchange::{RequestHead, ResponseHead, ResponsePlan};
use crate::shared::SharedMemory as Store;
use crate::testkit::{exchange, request_head};

#[test]
fn session_from_either_sdk_spelling() {
    assert_eq!(
        session_in("/messages/?session_id=ab12cd").as_deref(),
        Some("ab12cd")
    );
    assert_eq!(
        session_in("/messages?x=1&sessionId=9f-8e").as_deref(),
        Some("9f-8e")
    );
    assert_eq!(session_in("/mcp"), None);
    assert_eq!(session_in("/messages?session_id="), None);
    assert_eq!(session_in("/messages?session_id=a b"), None);
    // At the 128-byte limit, and past it.
    let at = "s".repeat(128);
    assert_eq!(
        session_in(&format!("/m?session_id={at}")).as_deref(),
        Some(at.as_str())
    );
    assert_eq!(session_in(&format!("/m?session_id={at}s")), None);
}

const TTL: u64 = 600_000;
/// Slots a session takes at most, at the default `legacy_session_slots`.
const LANES: usize = 64;

/// The decision of a call whose record was not written (or wrote over its
/// session's own): it names the call.
fn refused(reason: Reason, id: &str, tool: &str) -> Vec<Decision> {
    vec![Decision {
        id: Some(id.to_string()),
        tool: Some(tool.to_string()),
        ..Decision::response(reason)
    }]
}

/// A 2024-11-05 POST of one `tools/call` in `session`, answered `status`.
fn post(store: &mut Store, session: &str, id: &str, tool: &str, status: u16) -> Exchange {
    post_with(store, "{}", session, id, tool, status)
}

fn post_with(
    store: &mut Store,
    config: &str,
    session: &str,
    id: &str,
    tool: &str,
    status: u16,
) -> Exchange {
    let mut e = exchange(config);
    let stream = StreamInfo::default();
    let path = format!("/messages/?session_id={session}");
    e.request_headers(RequestHead {
        path: &path,
        accept: None,
        ..request_head(&stream, "POST", Some("application/json"))
    });
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}"}}}}"#
    );
    e.request_chunk(body.as_bytes(), true, store);
    let head = ResponseHead {
        status: Some(status),
        content_type: Some("text/plain"),
        content_length: Some(8),
        ..ResponseHead::default()
    };
    assert_eq!(e.response_headers(head, store), ResponsePlan::Pass);
    e
}

/// The tool the GET stream of `session` finds for the result of `id`.
fn tool_of(store: &mut Store, session: &str, id: &str) -> Option<String> {
    let mut e = exchange("{}");
    e.legacy.get_stream = true;
    e.legacy.session = Some(session.to_string());
    let data = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"x"}}]}}}}"#
    );
    let calls = e.legacy_requests(&data, store).calls;
    assert_eq!(calls.len(), 1, "a tool result, by record or by shape");
    calls.into_iter().next().and_then(|c| c.tool)
}

fn records(store: &Store) -> usize {
    store
        .entries()
        .filter(|(k, (v, _))| k.as_str() != "mcp_toon.legacy.key" && !v.is_empty())
        .count()
}

#[test]
fn a_record_is_written_only_once_the_server_accepted_the_post() {
    for status in [200, 400, 404, 500] {
        let mut store = Store::default();
        post(&mut store, "s1", "1", "t", status);
        assert_eq!(records(&store), 0, "{status}");
        assert_eq!(tool_of(&mut store, "s1", "1"), None);
    }
    let mut store = Store::default();
    post(&mut store, "s1", "1", "t", 202);
    assert_eq!(records(&store), 1);
    assert_eq!(tool_of(&mut store, "s1", "1").as_deref(), Some("t"));
    assert_eq!(records(&store), 0, "cleared once read");
}

#[test]
fn records_stay_within_a_fixed_number_of_keys() {
    let mut store = Store::default();
    for session in 0..200 {
        for id in 0..64 {
            post(
                &mut store,
                &format!("s{session}"),
                &id.to_string(),
                "t",
                202,
            );
        }
    }
    // The slots, and the slot hash's key.
    assert!(store.keys() <= SLOTS as usize + 1, "{}", store.keys());
    assert!(
        store.keys() > SLOTS as usize * 9 / 10,
        "spread over the slots"
    );
}

/// Two calls of different sessions on one slot, under the store's key.
fn colliding(store: &mut Store) -> ((String, String), (String, String)) {
    let key = hash_key(store, true).unwrap();
    let first = ("s0".to_string(), "1".to_string());
    let target = slot(&key, &first.0, &first.1, LANES);
    let other = (1..)
        .map(|n| (format!("s{n}"), "1".to_string()))
        .find(|(s, id)| slot(&key, s, id, LANES) == target)
        .unwrap();
    (first, other)
}

#[test]
fn another_session_cannot_overwrite_a_live_record() {
    let mut store = Store::default();
    let ((s1, id1), (s2, id2)) = colliding(&mut store);
    post(&mut store, &s1, &id1, "victim_tool", 202);
    let attacker = post(&mut store, &s2, &id2, "attacker_tool", 202);
    assert_eq!(
        attacker.report().decisions,
        refused(Reason::LegacySlotBusy, &id2, "attacker_tool")
    );
    assert_eq!(
        tool_of(&mut store, &s1, &id1).as_deref(),
        Some("victim_tool")
    );
    // The refused call falls back to its shape: no tool, never the other's.
    assert_eq!(tool_of(&mut store, &s2, &id2), None);
}

#[test]
fn an_expired_record_gives_its_slot_up() {
    let mut store = Store::default();
    let ((s1, id1), (s2, id2)) = colliding(&mut store);
    post(&mut store, &s1, &id1, "old", 202);
    // One millisecond before the end of its life it still holds the slot.
    store.now_ms = TTL - 1;
    let early = post(&mut store, &s2, &id2, "new", 202);
    assert_eq!(early.report().decisions.len(), 1);
    store.now_ms = TTL;
    let late = post(&mut store, &s2, &id2, "new", 202);
    assert!(late.report().is_empty());
    assert_eq!(tool_of(&mut store, &s2, &id2).as_deref(), Some("new"));
    // Nor is an expired record read.
    let mut store = Store::default();
    post(&mut store, "s1", "1", "old", 202);
    store.now_ms = TTL;
    assert_eq!(tool_of(&mut store, "s1", "1"), None);
}

#[test]
fn a_second_post_of_the_same_call_cannot_replace_the_first() {
    let mut store = Store::default();
    post(&mut store, "s1", "9", "first", 202);
    let again = post(&mut store, "s1", "9", "planted", 202);
    assert_eq!(
        again.report().decisions,
        refused(Reason::LegacySlotBusy, "9", "planted")
    );
    assert_eq!(tool_of(&mut store, "s1", "9").as_deref(), Some("first"));
}

#[test]
fn a_session_may_replace_its_own_other_call_on_a_shared_slot() {
    let mut store = Store::default();
    let key = hash_key(&mut store, true).unwrap();
    let target = slot(&key, "s1", "1", LANES);
    let id2 = (2..)
        .map(|n: u32| n.to_string())
        .find(|id| slot(&key, "s1", id, LANES) == target)
        .unwrap();
    assert_eq!(
        id2,
        (1 + LANES).to_string(),
        "integer ids take lanes in turn"
    );
    post(&mut store, "s1", "1", "earlier", 202);
    let later = post(&mut store, "s1", &id2, "later", 202);
    assert_eq!(
        later.report().decisions,
        refused(Reason::LegacySessionFull, &id2, "later")
    );
    assert_eq!(tool_of(&mut store, "s1", &id2).as_deref(), Some("later"));
    assert_eq!(tool_of(&mut store, "s1", "1"), None, "falls back to shape");
}

/// `legacy_session_slots` calls of one session in flight keep their
/// records; one more takes the slot of the oldest on its lane (counted),
/// and never a slot of another session.
#[test]
fn a_session_holds_at_most_its_quota_of_slots() {
    for quota in [1usize, 4, 64] {
        let config = format!(r#"{{"legacy_session_slots":{quota}}}"#);
        let mut store = Store::default();
        // Another session's calls in flight, within its own quota.
        let theirs = quota.min(8);
        for id in 0..theirs {
            post_with(
                &mut store,
                &config,
                "victim",
                &id.to_string(),
                "theirs",
                202,
            );
        }
        let victims = records(&store);
        // Exactly the quota: every call keeps its record, unless its slot
        // is the other session's (refused) or, the lanes' slots being
        // hashed, one of its own session's (taken over): both counted.
        for id in 0..quota {
            let e = post_with(&mut store, &config, "flood", &id.to_string(), "t", 202);
            let d = &e.report().decisions;
            assert!(
                d.is_empty()
                    || *d == refused(Reason::LegacySlotBusy, &id.to_string(), "t")
                    || *d == refused(Reason::LegacySessionFull, &id.to_string(), "t"),
                "{quota}: call {id}: {d:?}"
            );
        }
        let kept = records(&store) - victims;
        assert!(kept <= quota && kept * 10 >= quota * 6, "{quota}: {kept}");
        // One past it, and a flood of many more: each takes one of the
        // session's own slots back, counted; the other session loses none.
        for id in quota..quota + 2000 {
            let e = post_with(&mut store, &config, "flood", &id.to_string(), "t", 202);
            let reasons: Vec<Reason> = e
                .report()
                .decisions
                .iter()
                .filter_map(|d| match d.outcome {
                    crate::outcome::Outcome::Passthrough(r) => Some(r),
                    _ => None,
                })
                .collect();
            assert!(
                reasons == [Reason::LegacySessionFull] || reasons == [Reason::LegacySlotBusy],
                "{quota}: call {id}: {reasons:?}"
            );
        }
        assert!(records(&store) <= victims + quota, "{quota}");
        for id in 0..theirs {
            let tool = tool_of(&mut store, "victim", &id.to_string());
            assert_eq!(tool.as_deref(), Some("theirs"), "{quota}: victim call {id}");
        }
    }
}

#[test]
fn string_ids_take_lanes_by_their_keyed_hash() {
    let mut store = Store::default();
    let key = hash_key(&mut store, true).unwrap();
    let lanes: HashSet<u64> = (0..1000)
        .map(|i| lane(&key, &format!("\"req-{i}\""), LANES).unwrap())
        .collect();
    assert_eq!(lanes.len(), LANES, "every lane taken");
    assert!(lanes.iter().all(|&l| l < LANES as u64));
    assert_eq!(lane(&key, "7", LANES), Some(7));
    assert_eq!(lane(&key, "71", LANES), Some(7));
}

#[test]
fn slots_depend_on_a_key_from_the_hosts_randomness() {
    let mut a = Store::default();
    let mut b = Store::default();
    // Another process: other random bytes, another key.
    b.random(&mut [0u8; 7]);
    let (ka, kb) = (
        hash_key(&mut a, true).unwrap(),
        hash_key(&mut b, true).unwrap(),
    );
    assert_ne!(ka, kb);
    assert_eq!(
        hash_key(&mut a, true).unwrap(),
        ka,
        "made once, then shared"
    );
    let differ = (0..100)
        .filter(|i| slot(&ka, "s", &i.to_string(), LANES) != slot(&kb, "s", &i.to_string(), LANES))
        .count();
    assert!(differ > 90, "{differ}");
    // Without randomness no key, no records: results go by their shape.
    let mut none = Store::default();
    none.entropy = crate::shared::Entropy::None;
    post(&mut none, "s1", "1", "t", 202);
    assert_eq!(none.keys(), 0);
    assert_eq!(tool_of(&mut none, "s1", "1"), None);
}

/// A store where another worker writes a slot between a read and a write.
struct Racing {
    inner: Store,
    raced: bool,
}

impl Services for Racing {
    fn get(&self, key: &str) -> Option<(Vec<u8>, u32)> {
        self.inner.get(key)
    }
    fn set(&mut self, key: &str, value: &[u8], cas: u32) -> Result<(), Unstored> {
        if !self.raced && key.starts_with("mcp_toon.legacy.") && key != HASH_KEY {
            self.raced = true;
            let other = br#"{"s":"other","id":"5","m":"tools/call","t":"theirs","exp":99999999}"#;
            self.inner.set(key, other, 0)?;
        }
        self.inner.set(key, value, cas)
    }
    fn random(&mut self, out: &mut [u8]) -> bool {
        self.inner.random(out)
    }
    fn now_ms(&self) -> u64 {
        self.inner.now_ms
    }
}

#[test]
fn a_write_that_lost_a_race_reads_the_slot_again() {
    let mut store = Racing {
        inner: Store::default(),
        raced: true,
    };
    // A slot written before (a slot never written has no version to
    // compare: two first writers both write, the later one stands).
    let key = hash_key(&mut store, true).unwrap();
    let target = slot(&key, "s1", "1", LANES).unwrap();
    store.inner.set(&target, b"", 0).unwrap();
    store.raced = false;
    let mut e = exchange("{}");
    e.legacy.session = Some("s1".to_string());
    let info = RequestInfo::parse(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mine"}}"#,
    )
    .unwrap();
    e.note_calls(&info);
    e.accepted(&mut store);
    // The compare-and-swap failed, the slot was read again and found the
    // other session's live record: left alone, counted.
    assert_eq!(
        e.report().decisions,
        refused(Reason::LegacySlotBusy, "1", "mine")
    );
    let values: HashSet<Vec<u8>> = store
        .inner
        .entries()
        .filter(|(k, _)| k.as_str() != HASH_KEY)
        .map(|(_, (v, _))| v.clone())
        .collect();
    assert!(values
        .iter()
        .all(|v| String::from_utf8_lossy(v).contains("theirs")));
}

#[test]
fn a_record_holds_only_what_the_limits_allow() {
    let config = r#"{"max_id_bytes":16,"max_tool_name_bytes":16,"trim":{"enabled":true,"max_intent_bytes":16}}"#;
    let mut store = Store::default();
    // An id past its limit: the call is not followed, nothing is written.
    let long_id = format!("\"{}\"", "i".repeat(15));
    let e = post_with(&mut store, config, "s1", &long_id, "t", 202);
    assert_eq!(
        e.report().decisions,
        vec![Decision::response(Reason::IdTooLong)]
    );
    assert_eq!(records(&store), 0);
    let long_tool = "t".repeat(17);
    post_with(&mut store, config, "s1", "1", &long_tool, 202);
    assert_eq!(records(&store), 0);
    // At the limits: written, and no field is longer.
    let id = format!("\"{}\"", "i".repeat(14));
    post_with(&mut store, config, "s1", &id, &"t".repeat(16), 202);
    assert_eq!(records(&store), 1);
    let longest = store
        .entries()
        .filter(|(k, _)| k.as_str() != HASH_KEY)
        .map(|(_, (v, _))| v.len())
        .max()
        .unwrap();
    assert!(longest < 16 * 3 + 128 + 100, "{longest}");
}

#[test]
fn an_overlong_id_on_the_get_stream_is_not_followed() {
    let mut e = exchange(r#"{"max_id_bytes":16}"#);
    e.legacy.get_stream = true;
    let id = format!("\"{}\"", "i".repeat(15));
    let data = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"x"}}]}}}}"#
    );
    let calls = e.legacy_requests(&data, &mut Store::default()).calls;
    assert!(calls.is_empty());
    assert_eq!(
        e.report().decisions,
        vec![Decision::response(Reason::IdTooLong)]
    );
}
