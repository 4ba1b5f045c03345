//! Which tools declare the plugin's arguments (the trim intent, the agent's
//! query) in their own `inputSchema`. For those the argument is the tool's:
//! a call keeps it, and the plugin does not act on it.
//! The plugin learns it from the `tools/list` responses it sees, per server
//! ([`StreamInfo::server`](crate::config::StreamInfo::server): route,
//! cluster and authority), and keeps it in shared data so that every
//! worker's streams know it. What one server's listing says never changes
//! another server's record: two servers behind one cluster, or under one
//! `servers[]` entry, may name a tool alike and declare different
//! arguments.
//!
//! A call to a tool no listing has shown (the listing went through another
//! proxy, or the process restarted since) is treated as not declaring it:
//! the argument name is the operator's choice (`trim.intent_argument`),
//! picked not to collide with real tools' arguments.
//!
//! Shared data keys cannot be deleted (proxy-wasm ABI 0.2.1) and a client
//! chooses the authority, so the records live in a fixed number of slots
//! ([`SLOTS`]), one server each, chosen by HMAC-SHA256 under the process's
//! slot key (the one of the 2024-11-05 records: no client can aim at
//! another server's slot). A slot held by another server's record is not
//! taken until that record has gone a day without a listing; meanwhile the
//! new server's declaring tools are counted `listing_record_full` (and
//! their argument taken out, as for an unseen tool). The record of one
//! server is bounded too ([`MAX_RECORD_BYTES`]): a server that lists more
//! declaring tools than fit has the rest counted the same way.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::{Exchange, Services, Unstored};
use crate::outcome::Reason;
use crate::pipeline::Listed;
use crate::report::Decision;

/// The most bytes the record of one server takes in shared data.
pub(crate) const MAX_RECORD_BYTES: usize = 64 * 1024;
/// Slots of server records.
pub(crate) const SLOTS: u32 = 1024;
/// A record not refreshed by a listing for this long gives its slot up to
/// another server (and is refreshed when half that has passed).
pub(crate) const STALE_S: u64 = 86_400;

/// Tool name → the plugin's argument names its schema declares.
pub(super) type Declared = IndexMap<String, Vec<String>>;

/// One server's record in its slot.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    /// The server ([`StreamInfo::server`](crate::config::StreamInfo::server)).
    s: String,
    /// When a listing last wrote it, in seconds since the Unix epoch.
    at: u64,
    d: Declared,
}

/// The slot of `server` under the slot key.
pub(super) fn slot(key: &[u8], server: &str) -> Option<String> {
    let n = super::session::keyed(key, &[b"declares", server.as_bytes()], u64::from(SLOTS))?;
    Some(format!("mcp_toon.declares.{n}"))
}

impl Exchange {
    /// What the stream's server has taught.
    pub(super) fn declared(&self, sessions: &mut dyn Services) -> Declared {
        let server = self.stream_info.server();
        let Some(key) = super::session::hash_key(sessions, false) else {
            // No key yet: nothing was ever learnt.
            return Declared::default();
        };
        slot(&key, &server)
            .and_then(|k| sessions.get(&k))
            .and_then(|(v, _)| serde_json::from_slice::<Record>(&v).ok())
            .filter(|r| r.s == server)
            .map(|r| r.d)
            .unwrap_or_default()
    }

    /// A listing passed: remember its declaring tools, forget the others it
    /// names, in the record of its own server. Compare-and-swap: listings
    /// of two workers may cross.
    pub(super) fn learn(&mut self, listed: &[Listed], sessions: &mut dyn Services) {
        if listed.is_empty() {
            return;
        }
        let declaring = listed.iter().filter(|(_, a)| !a.is_empty()).count();
        let server = self.stream_info.server();
        let Some(key) = super::session::hash_key(sessions, declaring > 0) else {
            return;
        };
        let Some(slot) = slot(&key, &server) else {
            return;
        };
        let now = sessions.now_ms() / 1000;
        for _ in 0..3 {
            let (value, cas) = sessions.get(&slot).unwrap_or_default();
            let held = serde_json::from_slice::<Record>(&value).ok();
            let mut record = match held {
                Some(r) if r.s == server => r,
                Some(r) if now.saturating_sub(r.at) < STALE_S => {
                    // Another server's live record: left alone.
                    if declaring > 0 {
                        self.count_full(declaring);
                    }
                    return;
                }
                _ => Record {
                    s: server.clone(),
                    ..Record::default()
                },
            };
            let before = record.d.clone();
            let full = merge(&mut record.d, listed);
            let fresh = now.saturating_sub(record.at) < STALE_S / 2;
            if record.d == before && (fresh || record.d.is_empty()) {
                self.count_full(full);
                return;
            }
            record.at = now;
            let Ok(bytes) = serde_json::to_vec(&record) else {
                return;
            };
            match sessions.set(&slot, &bytes, cas) {
                Ok(()) => {
                    self.count_full(full);
                    return;
                }
                Err(Unstored::Changed) => continue,
                Err(Unstored::Refused) => return,
            }
        }
    }

    fn count_full(&mut self, n: usize) {
        for _ in 0..n {
            self.report
                .push(Decision::response(Reason::ListingRecordFull));
        }
    }
}

/// Applies a listing to a record; returns how many declaring tools did
/// not fit. Sizes are those of the compact JSON, counted as it grows.
fn merge(record: &mut Declared, listed: &[Listed]) -> usize {
    for (name, args) in listed {
        if args.is_empty() {
            record.shift_remove(name);
        }
    }
    let mut size = serde_json::to_vec(&*record).map_or(0, |b| b.len());
    let mut full = 0;
    for (name, args) in listed.iter().filter(|(_, a)| !a.is_empty()) {
        let grown = match record.get(name) {
            // The member replaced in place.
            Some(old) => size
                .saturating_add(entry_len(name, args))
                .saturating_sub(entry_len(name, old)),
            // A new member, after a comma unless it is the first.
            None => size
                .saturating_add(entry_len(name, args))
                .saturating_add(usize::from(!record.is_empty())),
        };
        if grown > MAX_RECORD_BYTES {
            full += 1;
            continue;
        }
        size = grown;
        record.insert(name.clone(), args.clone());
    }
    full
}

/// Bytes of one member of the record's compact JSON: `"name":[...]`.
fn entry_len(name: &str, args: &[String]) -> usize {
    let name = serde_json::to_string(name).map_or(0, |s| s.len());
    let args = serde_json::to_string(args).map_or(0, |s| s.len());
    name + 1 + args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_adds_declaring_tools_and_removes_the_others_it_names() {
        let mut record = Declared::new();
        record.insert("gone".into(), vec!["expected_info".into()]);
        record.insert("kept".into(), vec!["expected_info".into()]);
        let listed = vec![
            ("gone".to_string(), vec![]),
            ("new".to_string(), vec!["expected_info".to_string()]),
        ];
        assert_eq!(merge(&mut record, &listed), 0);
        assert_eq!(
            record.keys().collect::<Vec<_>>(),
            vec!["kept", "new"],
            "a tool the listing does not name stays (listings are paged)"
        );
    }

    #[test]
    fn the_record_stops_at_its_limit() {
        let arg = vec!["expected_info".to_string()];
        let name = |i: usize| format!("tool-{i:06}");
        let per = entry_len(&name(0), &arg) + 1;
        let listed: Vec<Listed> = (0..MAX_RECORD_BYTES / per + 10)
            .map(|i| (name(i), arg.clone()))
            .collect();
        let mut record = Declared::new();
        let full = merge(&mut record, &listed);
        let bytes = serde_json::to_vec(&record).unwrap().len();
        assert!(bytes <= MAX_RECORD_BYTES, "{bytes}");
        assert!(MAX_RECORD_BYTES - bytes < per, "filled up to the limit");
        assert_eq!(full + record.len(), listed.len());
        assert!(full > 0);
    }

    /// A listing that makes the record exactly `MAX_RECORD_BYTES` of
    /// compact JSON: `n` tools, the last one's name padded to fit.
    fn listing_of(bytes: usize) -> Vec<Listed> {
        let arg = vec!["expected_info".to_string()];
        let name = |i: usize| format!("tool-{i:06}");
        let per = entry_len(&name(0), &arg) + 1;
        let n = (bytes - 2) / per - 1;
        let mut listed: Vec<Listed> = (0..n).map(|i| (name(i), arg.clone())).collect();
        // `{` + n members and their commas + the last member + `}`.
        let used = 2 + n * per;
        let last = "x".repeat(bytes - used - entry_len("", &arg));
        listed.push((last, arg));
        listed
    }

    #[test]
    fn a_record_of_exactly_the_limit_fits_and_one_byte_more_does_not() {
        let listed = listing_of(MAX_RECORD_BYTES);
        let mut record = Declared::new();
        assert_eq!(
            merge(&mut record, &listed),
            0,
            "at the limit: every tool recorded"
        );
        assert_eq!(serde_json::to_vec(&record).unwrap().len(), MAX_RECORD_BYTES);
        assert_eq!(record.len(), listed.len());

        let mut listed = listed;
        let last = listed.last_mut().unwrap();
        last.0.push('x');
        let mut record = Declared::new();
        assert_eq!(
            merge(&mut record, &listed),
            1,
            "one byte past: the last is not recorded"
        );
        assert_eq!(record.len(), listed.len() - 1);
        assert!(!record.contains_key(&listed.last().unwrap().0));
        assert!(serde_json::to_vec(&record).unwrap().len() < MAX_RECORD_BYTES);

        // The same, growing a record that already holds a member, and
        // replacing a member in place.
        let mut record = Declared::new();
        assert_eq!(merge(&mut record, &listed[..1]), 0);
        assert_eq!(merge(&mut record, &listed[1..listed.len() - 1]), 0);
        let mut grown = listed.last().unwrap().clone();
        grown.0.pop();
        assert_eq!(merge(&mut record, &[grown.clone()]), 0);
        assert_eq!(serde_json::to_vec(&record).unwrap().len(), MAX_RECORD_BYTES);
        let longer = vec!["expected_info".to_string(), "x".to_string()];
        let mut replaced = record.clone();
        assert_eq!(merge(&mut replaced, &[(grown.0.clone(), longer)]), 1);
        assert_eq!(
            replaced, record,
            "a member that would grow past the limit keeps its old value"
        );
    }
}
