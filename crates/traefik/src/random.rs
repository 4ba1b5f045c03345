//! Random bytes on a host whose WASI `random_get` is deterministic.
//!
//! Traefik instantiates a wasm guest without `WithRandSource`, so wazero's
//! default applies: a fixed seed, the same sequence in every instance
//! (measured with Traefik 3.7: every new instance's first 8 bytes were
//! `538c7f96b164bf1b`). Page ids drawn from it would repeat across the
//! instances of one Traefik and be known to anyone. So the bytes the core
//! asks for come from HMAC-SHA256 (RFC 2104) keyed by a seed that mixes
//! `random_get` (real on a host that seeds it), the operator's secret (the
//! configuration requires `paging.key` where pages are kept,
//! [`mcp_toon_engine::config::Capabilities::HTTP_WASM`]) and the wall clock's
//! nanoseconds at the instance's start and at every request. Each draw
//! moves the key on, so one output says nothing of the next.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// A keyed generator of random bytes.
pub struct Random {
    key: [u8; 32],
    counter: u64,
}

impl Random {
    /// A generator seeded with each of `material`.
    pub fn seeded(material: &[&[u8]]) -> Self {
        let mut h = Sha256::new();
        h.update(b"mcp-toon/httpwasm/random/1");
        for m in material {
            h.update((m.len() as u64).to_le_bytes());
            h.update(m);
        }
        Random {
            key: h.finalize().into(),
            counter: 0,
        }
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC takes a key of any length: this cannot fail.
        <HmacSha256 as Mac>::new_from_slice(&self.key)
            .unwrap_or_else(|_| <HmacSha256 as Mac>::new(&Default::default()))
    }

    /// Mixes more material (a request's arrival time) into the key.
    pub fn mix(&mut self, material: &[u8]) {
        let mut mac = self.mac();
        mac.update(b"mix");
        mac.update(material);
        self.key = mac.finalize().into_bytes().into();
    }

    /// Fills `out`; the key moves on after every call.
    pub fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(32) {
            self.counter = self.counter.wrapping_add(1);
            let mut mac = self.mac();
            mac.update(b"out");
            mac.update(&self.counter.to_le_bytes());
            let block: [u8; 32] = mac.finalize().into_bytes().into();
            for (o, b) in chunk.iter_mut().zip(block) {
                *o = b;
            }
        }
        self.mix(b"next");
    }
}

#[cfg(test)]
mod tests {
    use super::Random;

    /// Two instances with the same deterministic WASI bytes but started at
    /// different nanoseconds draw different bytes; one instance never
    /// repeats a draw.
    #[test]
    fn instances_seeded_apart_draw_apart() {
        let wasi = [7u8; 32];
        let mut a = Random::seeded(&[&wasi, &1u64.to_le_bytes()]);
        let mut b = Random::seeded(&[&wasi, &2u64.to_le_bytes()]);
        let (mut x, mut y, mut z) = ([0u8; 16], [0u8; 16], [0u8; 16]);
        a.fill(&mut x);
        b.fill(&mut y);
        a.fill(&mut z);
        assert_ne!(x, y);
        assert_ne!(x, z);
        // Longer than one block, and an odd length.
        let mut long = [0u8; 77];
        a.fill(&mut long);
        assert!(long[32..64] != long[..32] && long[64..] != long[..13]);
        // The same seed, the same draws: nothing else goes in.
        let mut c = Random::seeded(&[&wasi, &1u64.to_le_bytes()]);
        let mut w = [0u8; 16];
        c.fill(&mut w);
        assert_eq!(w, x);
    }
}
