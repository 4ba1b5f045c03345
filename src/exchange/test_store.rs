//! A [`SessionStore`] for the core's tests: shared data with versions as
//! Envoy keeps them (`SharedData::set`: a non-zero `cas` must match), a
//! clock the test moves, and random bytes from a counter (repeatable runs).

use std::collections::HashMap;

use super::{SessionStore, Unstored};

#[derive(Debug, Default)]
pub struct Store {
    pub data: HashMap<String, (Vec<u8>, u32)>,
    version: u32,
    pub now_ms: u64,
    random: u8,
    /// Refuse randomness (a host without it).
    pub no_random: bool,
}

impl Store {
    /// The non-empty values.
    pub fn values(&self) -> Vec<&[u8]> {
        self.data
            .values()
            .map(|(v, _)| v.as_slice())
            .filter(|v| !v.is_empty())
            .collect()
    }
}

impl SessionStore for Store {
    fn get(&self, key: &str) -> Option<(Vec<u8>, u32)> {
        self.data.get(key).cloned()
    }

    fn set(&mut self, key: &str, value: &[u8], cas: u32) -> Result<(), Unstored> {
        if let Some((_, v)) = self.data.get(key) {
            if cas != 0 && cas != *v {
                return Err(Unstored::Changed);
            }
        }
        self.version += 1;
        self.data
            .insert(key.to_string(), (value.to_vec(), self.version));
        Ok(())
    }

    fn random(&mut self, out: &mut [u8]) -> bool {
        if self.no_random {
            return false;
        }
        for b in out {
            self.random = self.random.wrapping_add(37);
            *b = self.random;
        }
        true
    }

    fn now_ms(&self) -> u64 {
        self.now_ms
    }
}
