//! The host's shared data, time and random bytes as the core asks for
//! them: the exchange's session records and the page store. Each refusal
//! is acted on here, the way the core's callers expect.

use crate::exchange::SessionStore;
use crate::host::{Host, HostError, LogLevel};
use crate::page::{PageHost, StoreError};

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

impl PageHost for Shared<'_> {
    /// A value the host will not give back reads as absent: a page not
    /// held (the page tool says so), a record not found (the result's
    /// shape decides).
    fn shared_get(&self, key: &str) -> Option<(Vec<u8>, u32)> {
        self.0.shared_get(key).unwrap_or_else(|e| {
            self.refused("read", e);
            None
        })
    }

    fn shared_set(&mut self, key: &str, value: &[u8], cas: u32) -> Result<(), StoreError> {
        match self.0.shared_set(key, value, cas) {
            Ok(()) => Ok(()),
            // Another stream wrote first: the store reads again and retries.
            Err(HostError::CAS_MISMATCH) => Err(StoreError::Conflict),
            Err(e) => {
                self.refused("write", e);
                Err(StoreError::Unavailable)
            }
        }
    }

    fn now_ms(&self) -> u64 {
        self.0
            .now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    /// No random bytes, no handle: the result is cut without pages.
    fn random(&mut self, buf: &mut [u8]) -> bool {
        match self.0.random(buf) {
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
}

impl SessionStore for Shared<'_> {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.shared_get(key).map(|(value, _)| value)
    }

    fn set(&mut self, key: &str, value: &[u8]) {
        // Refused: the GET stream falls back to the result's shape (logged).
        self.shared_set(key, value, 0).ok();
    }
}
