//! The host's shared data, clock and random bytes as the core asks for
//! them ([`Services`]): the exchange's session records, trim
//! boundaries and marker tags, and the page store. The one implementation
//! over [`Host`]; each refusal is acted on here, the way the core's callers
//! expect.

use crate::host::{Host, HostError, LogLevel, CAS_MISMATCH};
use crate::shared::{Services, Unstored};

/// A host seen as the core's shared store.
pub(super) struct Shared<'a>(pub(super) &'a mut dyn Host);

impl Shared<'_> {
    fn refused(&self, what: &str, e: HostError) {
        self.0.log(
            LogLevel::Debug,
            &format!("mcp-toon: shared data {what} refused ({e:?})"),
        );
    }
}

impl Services for Shared<'_> {
    /// A value the host will not give back reads as absent: a page not
    /// held (the page tool says so), a record not found (the result's
    /// shape decides).
    fn get(&self, key: &str) -> Option<(Vec<u8>, u32)> {
        self.0.shared_get(key).unwrap_or_else(|e| {
            self.refused("read", e);
            None
        })
    }

    fn set(&mut self, key: &str, value: &[u8], cas: u32) -> Result<(), Unstored> {
        match self.0.shared_set(key, value, cas) {
            Ok(()) => Ok(()),
            // Another stream wrote first: the caller reads again and
            // retries, or leaves that stream's value alone.
            Err(CAS_MISMATCH) => Err(Unstored::Changed),
            Err(e) => {
                // No page kept; a GET stream falls back to the result's shape.
                self.refused("write", e);
                Err(Unstored::Refused)
            }
        }
    }

    /// No random bytes: trim fails open, results are cut without pages.
    fn random(&mut self, out: &mut [u8]) -> bool {
        match self.0.random(out) {
            Ok(()) => true,
            Err(e) => {
                self.0.log(
                    LogLevel::Debug,
                    &format!("mcp-toon: random bytes refused ({e:?})"),
                );
                false
            }
        }
    }

    fn now_ms(&self) -> u64 {
        self.0
            .now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}
