//! Which tools declare the plugin's arguments (the trim intent, the agent's
//! query) in their own `inputSchema`. For those the argument is the tool's:
//! a call keeps it, and the plugin does not act on it.
//! The plugin learns it from the `tools/list` responses it sees, per server
//! scope (the matching `servers[]` entry, or the top level), and keeps it in
//! shared data so that every worker's streams know it.
//!
//! A call to a tool no listing has shown (the listing went through another
//! proxy, or the process restarted since) is treated as not declaring it:
//! the argument name is the operator's choice (`trim.intent_argument`),
//! picked not to collide with real tools' arguments.
//!
//! The record of one scope is bounded ([`MAX_RECORD_BYTES`]): a server that
//! lists more declaring tools than fit has the rest counted
//! `listing_record_full` (and their argument taken out, as for an unseen
//! tool).

use indexmap::IndexMap;

use super::{Exchange, SessionStore, Unstored};
use crate::outcome::Reason;
use crate::pipeline::Listed;
use crate::report::Decision;

/// The most bytes the record of one server scope takes in shared data.
pub const MAX_RECORD_BYTES: usize = 64 * 1024;

/// Tool name → the plugin's argument names its schema declares.
pub(super) type Declared = IndexMap<String, Vec<String>>;

impl Exchange {
    fn declared_key(&self) -> String {
        format!(
            "mcp_toon.declares.{}",
            self.settings.scope_label(self.scope)
        )
    }

    /// What this stream's scope has learnt.
    pub(super) fn declared(&self, sessions: &dyn SessionStore) -> Declared {
        sessions
            .get(&self.declared_key())
            .and_then(|(v, _)| serde_json::from_slice(&v).ok())
            .unwrap_or_default()
    }

    /// A listing passed: remember its declaring tools, forget the others it
    /// names. Compare-and-swap: listings of two workers may cross.
    pub(super) fn learn(&mut self, listed: &[Listed], sessions: &mut dyn SessionStore) {
        if listed.is_empty() {
            return;
        }
        let key = self.declared_key();
        for _ in 0..3 {
            let (value, cas) = sessions.get(&key).unwrap_or_default();
            let mut record: Declared = serde_json::from_slice(&value).unwrap_or_default();
            let before = record.clone();
            let full = merge(&mut record, listed);
            if record == before {
                self.count_full(full);
                return;
            }
            let Ok(bytes) = serde_json::to_vec(&record) else {
                return;
            };
            match sessions.set(&key, &bytes, cas) {
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
