//! The keys pages use, derived from `paging.key` (one or several, for
//! rotation: the first seals, any opens) and from a random key every
//! worker of one Envoy shares.
//!
//! Each configured key gives three independent keys, HMAC-SHA256 (RFC
//! 2104) of a label under it, so no key serves two purposes:
//! - the handle key: XChaCha20-Poly1305 of a sealed handle's call
//!   ([`super::handle`]);
//! - the owner key: the binding of a sealed handle to its owner
//!   ([`super::owner`]), the same on every gateway with the key;
//! - the mark key: the header that marks a re-issued call coming back
//!   through the gateway's own listener ([`super::mark`]).
//!
//! Pages in the store are bound with the local key instead: 32 random
//! bytes in shared data (`mcp_toon.owner.key`), made once per Envoy by
//! the first VM that configures paging, read by every stream. It needs no
//! rotation and never leaves the process.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::shared::Services;

/// 32 bytes of key.
pub(crate) type Key = [u8; 32];

/// The keys derived from one configured key.
#[derive(Clone)]
pub struct Derived {
    pub handle: Key,
    pub(crate) owner: Key,
    pub mark: Key,
}

// Keys never reach a log line.
impl std::fmt::Debug for Derived {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Derived(<redacted>)")
    }
}

/// HMAC-SHA256 of `parts` under `key`.
pub(crate) fn hmac(key: &[u8], parts: &[&[u8]]) -> Key {
    let mut out = [0u8; 32];
    // HMAC takes keys of any length: never an error.
    if let Ok(mut mac) = <Hmac<Sha256> as Mac>::new_from_slice(key) {
        for p in parts {
            mac.update(p);
        }
        out.copy_from_slice(&mac.finalize().into_bytes());
    }
    out
}

impl Derived {
    pub(crate) fn of(key: &[u8]) -> Self {
        Derived {
            handle: hmac(key, &[b"mcp-toon/handle/2"]),
            owner: hmac(key, &[b"mcp-toon/owner/1"]),
            mark: hmac(key, &[b"mcp-toon/reissue-mark/1"]),
        }
    }
}

/// The derived keys of every configured key, the sealing one first.
pub fn derive(keys: &[Vec<u8>]) -> Vec<Derived> {
    keys.iter().map(|k| Derived::of(k)).collect()
}

/// The shared-data key of the local key.
const LOCAL: &str = "mcp_toon.owner.key";

/// The local key: read from shared data, made from the host's randomness
/// when absent. Two VMs configuring at the same instant may both write
/// (the ABI has no create-if-absent); the later key stands, and every
/// reader takes the stored one, so no page is bound under a key that does
/// not stand: the key is made when paging is configured, before any cut.
/// `None` without shared data or randomness (then no page is stored).
pub(crate) fn local<S: Services + ?Sized>(sessions: &mut S) -> Option<Key> {
    let read = |s: &S| {
        s.get(LOCAL)
            .and_then(|(bytes, _)| Key::try_from(bytes.as_slice()).ok())
    };
    if let Some(key) = read(sessions) {
        return Some(key);
    }
    let mut key = [0u8; 32];
    if !sessions.random(&mut key) {
        return None;
    }
    let cas = sessions.get(LOCAL).map_or(0, |(_, cas)| cas);
    sessions.set(LOCAL, &key, cas).ok();
    read(sessions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::{NoServices, SharedMemory};

    #[test]
    fn each_purpose_has_its_own_key() {
        let d = Derived::of(b"0123456789abcdef0123456789abcdef");
        assert_ne!(d.handle, d.owner);
        assert_ne!(d.owner, d.mark);
        assert_ne!(
            d.handle,
            Derived::of(b"another key of thirty-two bytes!").handle
        );
        assert!(!format!("{d:?}").contains(&format!("{}", d.handle[0])));
    }

    #[test]
    fn the_local_key_is_made_once_and_shared() {
        let mut shared = SharedMemory::default();
        let a = local(&mut shared).unwrap();
        let b = local(&mut shared).unwrap();
        assert_eq!(a, b, "every stream reads the stored key");
        assert_eq!(local(&mut NoServices), None);
    }
}
