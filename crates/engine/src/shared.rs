//! What the host shares between the streams of one proxy, seen by the
//! core: shared data with compare-and-swap versions, the clock and random
//! bytes ([`Services`]). The driver's one implementation carries each
//! call to the [`crate::host::Host`]; [`SharedMemory`] keeps them in memory
//! for the in-memory host and the core's tests.

/// Why a shared-data write did not happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unstored {
    /// The key changed since it was read (compare-and-swap).
    Changed,
    /// The host refused the write.
    Refused,
}

/// What the host shares between the streams of one proxy (proxy-wasm
/// shared data: every worker of one Envoy, per `vm_id`), with the clock and
/// the randomness: 2024-11-05 session records, trim boundaries, marker
/// tags, and the page store with its handles all go through it.
pub trait Services {
    /// A key's value and its version; `None` when absent or unreadable.
    fn get(&self, key: &str) -> Option<(Vec<u8>, u32)>;
    /// Stores `value` if the key is still at version `cas` (0: whatever it
    /// holds). An empty value clears the key.
    fn set(&mut self, key: &str, value: &[u8], cas: u32) -> Result<(), Unstored>;
    /// Fills `out` with random bytes; false when the host has none.
    fn random(&mut self, out: &mut [u8]) -> bool;
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// For hosts without shared state or randomness: legacy streams fall back
/// to shapes, and trim, which needs random boundaries, fails open.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoServices;

impl Services for NoServices {
    fn get(&self, _key: &str) -> Option<(Vec<u8>, u32)> {
        None
    }
    fn set(&mut self, _key: &str, _value: &[u8], _cas: u32) -> Result<(), Unstored> {
        Err(Unstored::Refused)
    }
    fn random(&mut self, _out: &mut [u8]) -> bool {
        false
    }
    fn now_ms(&self) -> u64 {
        0
    }
}

/// Shared data kept in memory, with a clock and random bytes: the shared
/// data of the in-memory host ([`crate::driver::MemoryHost`]: the CLI, the
/// component, the scripted host) and of the core's own tests.
#[derive(Debug, Default, Clone)]
pub struct SharedMemory {
    data: std::collections::HashMap<String, (Vec<u8>, u32)>,
    /// The last version handed out (versions are never 0, as Envoy's).
    version: u32,
    pub now_ms: u64,
    pub(crate) entropy: Entropy,
}

/// Where [`SharedMemory`]'s random bytes come from.
#[derive(Debug, Clone)]
pub enum Entropy {
    /// splitmix64 over a counter: distinct bytes on every call, not
    /// secret, and runs repeat (the CLI and the scripted host make no
    /// callouts outside tests).
    Counter(u64),
    /// None: trim fails open, results are cut without pages.
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

impl Default for Entropy {
    fn default() -> Self {
        Entropy::Counter(0)
    }
}

impl SharedMemory {
    /// Memory with random bytes from `entropy`.
    pub fn with(entropy: Entropy) -> Self {
        SharedMemory {
            entropy,
            ..SharedMemory::default()
        }
    }

    #[cfg(test)]
    pub(crate) fn keys(&self) -> usize {
        self.data.len()
    }

    #[cfg(test)]
    /// Every key with its value and version.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&String, &(Vec<u8>, u32))> {
        self.data.iter()
    }

    #[cfg(test)]
    /// The values that are not empty (an empty value is a cleared key).
    pub(crate) fn values(&self) -> Vec<&[u8]> {
        self.data
            .values()
            .map(|(v, _)| v.as_slice())
            .filter(|v| !v.is_empty())
            .collect()
    }

    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.data.values().map(|(v, _)| v.len()).sum()
    }
}

impl Services for SharedMemory {
    fn get(&self, key: &str) -> Option<(Vec<u8>, u32)> {
        self.data.get(key).cloned()
    }

    fn set(&mut self, key: &str, value: &[u8], cas: u32) -> Result<(), Unstored> {
        if cas != 0 && self.data.get(key).is_some_and(|(_, v)| *v != cas) {
            return Err(Unstored::Changed);
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
            Entropy::Counter(state) => {
                for chunk in buf.chunks_mut(8) {
                    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                    let mut z = *state;
                    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                    z ^= z >> 31;
                    let bytes = z.to_le_bytes();
                    chunk.copy_from_slice(bytes.get(..chunk.len()).unwrap_or_default());
                }
                true
            }
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
