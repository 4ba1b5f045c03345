//! Page handles: what an agent passes to the page tool.
//!
//! A handle names a cut result (16 random bytes from the host: WASI
//! `random_get`, which Envoy backs with BoringSSL's `RAND_bytes`), the page
//! it fetches, and where the gateway that cut the result keeps that page.
//! When a key is configured it also carries the original call — tool,
//! arguments, a digest of the cut result, the binding to its owner, an
//! expiry and whether the tool may be called again — sealed with
//! XChaCha20-Poly1305 (RFC 8439 AEAD with the extended nonce of
//! draft-irtf-cfrg-xchacha), so any gateway with the key can serve the page
//! by calling the tool again, none accepts a handle it did not seal, and
//! nobody without the key reads the arguments.
//!
//! Layout (little-endian), then base64url without padding (RFC 4648 §5):
//!
//! ```text
//! u8 version (2) | u8 flags (bit 0: sealed call follows) | id[16]
//! u32 page | u32 pages | u32 first_slot (u32::MAX: not stored)
//! [sealed:] ciphertext of
//!             u32 expires_s | digest[12] | binding[8] | u8 reissue
//!             u8 budget kind | u32 budget | u16 len, tool | u32 len, arguments
//!           tag[16]
//! ```
//!
//! The first 30 bytes are the associated data: in clear (the store path
//! needs no key) but authenticated. The nonce is the first 24 bytes of
//! SHA-256 of them: distinct for every page of every result, and never
//! sent. One header always seals the same call (a result's handles differ
//! only in their page), so no nonce seals two messages; a handle's length
//! is computed without sealing ([`Handle::encoded_len`]) for that reason.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{KeyInit, Tag, XChaCha20Poly1305, XNonce};
use sha2::{Digest, Sha256};

use super::keys::{Derived, Key};
use crate::config::Budget;

const VERSION: u8 = 2;
const SEALED: u8 = 1;
const HEADER_BYTES: usize = 30;
const TAG_BYTES: usize = 16;
pub use crate::mcp::MAX_ARGUMENTS;
const MAX_TOOL: usize = 1024;
/// `first_slot` of a cut whose pages are not kept in a store.
pub(crate) const NOT_STORED: u32 = u32::MAX;
/// The longest handle text read: a sealed one with the longest tool and
/// arguments fits.
const MAX_TEXT: usize = 4096;

/// The original call, carried by sealed handles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedCall {
    /// Unix seconds after which the handle is refused.
    pub(crate) expires_s: u32,
    /// Of the cut result ([`crate::page::cut::digest`]).
    pub(crate) digest: [u8; 12],
    /// The owner the result was cut for, under the sealing key's owner
    /// key ([`crate::page::owner::Owner::binding`]).
    pub(crate) binding: [u8; 8],
    /// The gateway that cut the result knew the tool safe to call again.
    pub(crate) reissue: bool,
    pub(crate) budget: Budget,
    pub(crate) tool: String,
    /// `params.arguments` as the client sent it (raw JSON), or empty.
    pub(crate) arguments: String,
}

impl SealedCall {
    /// Short enough to travel in a handle.
    pub(crate) fn fits(&self) -> bool {
        self.arguments.len() <= MAX_ARGUMENTS && self.tool.len() <= MAX_TOOL
    }

    fn plaintext_len(&self) -> usize {
        4 + 12 + 8 + 1 + 1 + 4 + 2 + self.tool.len() + 4 + self.arguments.len()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handle {
    pub(crate) id: [u8; 16],
    /// The page this handle fetches (1-based; page 1 went out with the
    /// result).
    pub page: u32,
    pub pages: u32,
    /// Store slot of page 2; page `p` is at `first_slot + p - 2` modulo the
    /// store's size.
    pub(crate) first_slot: u32,
    pub call: Option<SealedCall>,
}

/// Why a handle was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Not a handle this plugin writes.
    Malformed,
    /// Sealed, but not with any key configured here (or none is).
    Forged,
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn nonce(header: &[u8]) -> [u8; 24] {
    let d = Sha256::new()
        .chain_update(b"mcp-toon/handle-nonce/2\0")
        .chain_update(header)
        .finalize();
    let mut out = [0u8; 24];
    out.copy_from_slice(d.get(..24).unwrap_or(&[0; 24]));
    out
}

impl Handle {
    fn sealed_call(&self, sealing: bool) -> Option<&SealedCall> {
        self.call.as_ref().filter(|c| sealing && c.fits())
    }

    fn header(&self, sealed: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        out.push(VERSION);
        out.push(if sealed { SEALED } else { 0 });
        out.extend_from_slice(&self.id);
        put_u32(&mut out, self.page);
        put_u32(&mut out, self.pages);
        put_u32(&mut out, self.first_slot);
        out
    }

    /// The handle as an agent sees it. A call is sealed with `key` (a
    /// configured key's handle key); without one (or with arguments over
    /// [`MAX_ARGUMENTS`]) it is left out.
    pub fn encode(&self, key: Option<&Key>) -> String {
        let call = self.sealed_call(key.is_some());
        let mut out = self.header(call.is_some());
        if let (Some(c), Some(key)) = (call, key) {
            let mut plain = Vec::with_capacity(c.plaintext_len() + TAG_BYTES);
            put_u32(&mut plain, c.expires_s);
            plain.extend_from_slice(&c.digest);
            plain.extend_from_slice(&c.binding);
            plain.push(u8::from(c.reissue));
            let (kind, n) = match c.budget {
                Budget::Tokens(n) => (0u8, n),
                Budget::Bytes(n) => (1u8, n),
            };
            plain.push(kind);
            put_u32(&mut plain, u32::try_from(n).unwrap_or(u32::MAX));
            plain.extend_from_slice(&u16::try_from(c.tool.len()).unwrap_or(0).to_le_bytes());
            plain.extend_from_slice(c.tool.as_bytes());
            put_u32(&mut plain, u32::try_from(c.arguments.len()).unwrap_or(0));
            plain.extend_from_slice(c.arguments.as_bytes());
            let cipher = XChaCha20Poly1305::new(key.into());
            let n = nonce(&out);
            // Sealing fails only past 256 GiB of plaintext.
            if let Ok(tag) =
                cipher.encrypt_in_place_detached(XNonce::from_slice(&n), &out, &mut plain)
            {
                out.extend_from_slice(&plain);
                out.extend_from_slice(&tag);
            } else if let Some(flags) = out.get_mut(1) {
                *flags = 0;
            }
        }
        URL_SAFE_NO_PAD.encode(out)
    }

    /// Characters of [`Handle::encode`]'s text, without sealing anything:
    /// sizing a notice must not seal a call the result's handles will not
    /// carry (the nonce would seal two messages).
    pub fn encoded_len(&self, sealing: bool) -> usize {
        let bytes = HEADER_BYTES
            + self
                .sealed_call(sealing)
                .map_or(0, |c| c.plaintext_len() + TAG_BYTES);
        // base64 without padding: 4 characters per 3 bytes, rounded up.
        (bytes * 4).div_ceil(3)
    }

    /// Reads a handle; a sealed one must open under one of `keys` (the
    /// derived keys of `paging.key`, in order). Returns the handle and
    /// which key opened it (0 for an unsealed handle).
    pub fn decode(text: &str, keys: &[Derived]) -> Result<(Handle, usize), Refused> {
        if text.len() > MAX_TEXT {
            return Err(Refused::Malformed);
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(text.trim())
            .map_err(|_| Refused::Malformed)?;
        let header = bytes.get(..HEADER_BYTES).ok_or(Refused::Malformed)?;
        let mut r = Reader {
            bytes: header,
            at: 0,
        };
        if r.u8()? != VERSION {
            return Err(Refused::Malformed);
        }
        let flags = r.u8()?;
        let id: [u8; 16] = r.array()?;
        let (page, pages, first_slot) = (r.u32()?, r.u32()?, r.u32()?);
        if page < 2 || page > pages || flags & !SEALED != 0 {
            return Err(Refused::Malformed);
        }
        let rest = bytes.get(HEADER_BYTES..).unwrap_or_default();
        let (call, opened_with) = if flags & SEALED != 0 {
            let split = rest
                .len()
                .checked_sub(TAG_BYTES)
                .ok_or(Refused::Malformed)?;
            let (sealed, tag) = rest.split_at(split);
            let n = nonce(header);
            let opened = keys.iter().enumerate().find_map(|(i, k)| {
                let mut plain = sealed.to_vec();
                let cipher = XChaCha20Poly1305::new((&k.handle).into());
                cipher
                    .decrypt_in_place_detached(
                        XNonce::from_slice(&n),
                        header,
                        &mut plain,
                        Tag::from_slice(tag),
                    )
                    .ok()
                    .map(|()| (plain, i))
            });
            let (plain, i) = opened.ok_or(Refused::Forged)?;
            (Some(read_call(&plain)?), i)
        } else {
            if !rest.is_empty() {
                return Err(Refused::Malformed);
            }
            (None, 0)
        };
        Ok((
            Handle {
                id,
                page,
                pages,
                first_slot,
                call,
            },
            opened_with,
        ))
    }

    /// The handle of the page after this one, if any.
    pub(crate) fn next(&self) -> Option<Handle> {
        (self.page < self.pages).then(|| Handle {
            page: self.page + 1,
            ..self.clone()
        })
    }

    /// Store slot of this handle's page, for a store of `slots` pages.
    pub(crate) fn slot(&self, slots: usize) -> Option<usize> {
        if self.first_slot == NOT_STORED || slots == 0 {
            return None;
        }
        let first = usize::try_from(self.first_slot).ok()?;
        let offset = usize::try_from(self.page).ok()?.checked_sub(2)?;
        Some((first + offset) % slots)
    }
}

/// The call in an opened handle: the sealing gateway wrote it, so a
/// malformed one means a bug or another version, never an attack.
fn read_call(plain: &[u8]) -> Result<SealedCall, Refused> {
    let mut r = Reader {
        bytes: plain,
        at: 0,
    };
    let expires_s = r.u32()?;
    let digest: [u8; 12] = r.array()?;
    let binding: [u8; 8] = r.array()?;
    let reissue = r.u8()? != 0;
    let kind = r.u8()?;
    let n = usize::try_from(r.u32()?).unwrap_or(usize::MAX);
    let budget = match kind {
        0 => Budget::Tokens(n),
        1 => Budget::Bytes(n),
        _ => return Err(Refused::Malformed),
    };
    let tool_len = usize::from(u16::from_le_bytes(r.array()?));
    let tool = r.text(tool_len)?;
    let args_len = usize::try_from(r.u32()?).unwrap_or(usize::MAX);
    let arguments = r.text(args_len)?;
    if r.at != plain.len() {
        return Err(Refused::Malformed);
    }
    Ok(SealedCall {
        expires_s,
        digest,
        binding,
        reissue,
        budget,
        tool,
        arguments,
    })
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], Refused> {
        let end = self.at.checked_add(n).ok_or(Refused::Malformed)?;
        let s = self.bytes.get(self.at..end).ok_or(Refused::Malformed)?;
        self.at = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Refused> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, Refused> {
        Ok(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32, Refused> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn text(&mut self, n: usize) -> Result<String, Refused> {
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| Refused::Malformed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> Vec<Derived> {
        vec![Derived::of(b"0123456789abcdef0123456789abcdef")]
    }

    fn handle(call: bool) -> Handle {
        Handle {
            id: [7; 16],
            page: 2,
            pages: 30,
            first_slot: 4090,
            call: call.then(|| SealedCall {
                expires_s: 1_900_000_000,
                digest: [1; 12],
                binding: [2; 8],
                reissue: true,
                budget: Budget::Tokens(20_000),
                tool: "export_logs".into(),
                arguments: r#"{"megabytes":3}"#.into(),
            }),
        }
    }

    #[test]
    fn round_trips_sealed_and_unsealed() {
        let k = keys();
        for call in [false, true] {
            let h = handle(call);
            let text = h.encode(Some(&k[0].handle));
            assert!(text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
            assert_eq!(Handle::decode(&text, &k), Ok((h.clone(), 0)));
            assert_eq!(text.len(), h.encoded_len(true));
        }
        // What an agent pays for a handle.
        assert_eq!(handle(false).encode(None).len(), 40);
        assert_eq!(handle(true).encode(Some(&k[0].handle)).len(), 144);
        // No key: the call is left out.
        assert_eq!(handle(true).encode(None), handle(false).encode(None));
        assert_eq!(handle(true).encoded_len(false), 40);
    }

    #[test]
    fn the_arguments_are_unreadable_without_the_key() {
        let k = keys();
        let text = handle(true).encode(Some(&k[0].handle));
        let bytes = URL_SAFE_NO_PAD.decode(&text).unwrap();
        for needle in [&b"megabytes"[..], b"export_logs", &[2u8; 8]] {
            assert!(!bytes.windows(needle.len()).any(|w| w == needle));
        }
    }

    #[test]
    fn a_changed_byte_or_another_key_is_refused() {
        let k = keys();
        let text = handle(true).encode(Some(&k[0].handle));
        let other = vec![Derived::of(b"another key, also thirty-two bytes long")];
        assert_eq!(Handle::decode(&text, &other), Err(Refused::Forged));
        assert_eq!(Handle::decode(&text, &[]), Err(Refused::Forged));
        let mut bytes = URL_SAFE_NO_PAD.decode(&text).unwrap();
        for i in 0..bytes.len() {
            bytes[i] ^= 0x01;
            let forged = URL_SAFE_NO_PAD.encode(&bytes);
            assert!(Handle::decode(&forged, &k).is_err(), "byte {i}");
            bytes[i] ^= 0x01;
        }
        for junk in ["", "x", "!!!!", &"A".repeat(5000)] {
            assert_eq!(Handle::decode(junk, &k), Err(Refused::Malformed), "{junk}");
        }
    }

    #[test]
    fn rotation_seals_with_the_first_and_opens_with_any() {
        let old = Derived::of(b"the old key, thirty-two bytes long");
        let new = Derived::of(b"the new key, thirty-two bytes long");
        let text = handle(true).encode(Some(&old.handle));
        let both = vec![new.clone(), old.clone()];
        assert_eq!(Handle::decode(&text, &both), Ok((handle(true), 1)));
        let fresh = handle(true).encode(Some(&both[0].handle));
        assert_eq!(Handle::decode(&fresh, &both), Ok((handle(true), 0)));
        assert_eq!(Handle::decode(&fresh, &[old]), Err(Refused::Forged));
    }

    #[test]
    fn pages_and_slots_follow_each_other() {
        let h = handle(false);
        assert_eq!(h.slot(4096), Some(4090));
        let mut n = h.clone();
        for _ in 0..7 {
            n = n.next().unwrap();
        }
        assert_eq!(n.page, 9);
        assert_eq!(n.slot(4096), Some(1));
        let last = Handle { page: 30, ..h };
        assert_eq!(last.next(), None);
    }
}
