//! Page handles: what an agent passes to the page tool.
//!
//! A handle names a cut result (16 random bytes from the host: WASI
//! `random_get`, which Envoy backs with BoringSSL's `RAND_bytes`), the page
//! it fetches, and where the gateway that cut the result keeps that page.
//! When a key is configured it also carries the original call — tool,
//! arguments, a digest of the cut result, the session it belongs to, an
//! expiry and whether the tool may be called again — signed with
//! HMAC-SHA256 (RFC 2104; the tag truncated to 128 bits, §5), so any
//! gateway with the key can serve the page by calling the tool again, and
//! none accepts a handle it did not sign.
//!
//! Layout (little-endian), then base64url without padding (RFC 4648 §5):
//!
//! ```text
//! u8 version (1) | u8 flags (bit 0: signed call follows) | id[16]
//! u32 page | u32 pages | u32 first_slot (u32::MAX: not stored)
//! [signed:] u32 expires_s | digest[12] | binding[8] | u8 reissue
//!           u8 budget kind | u32 budget | u16 len, tool | u32 len, arguments
//!           tag[16] = HMAC-SHA256(key, everything before)[..16]
//! ```

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::config::Budget;

const VERSION: u8 = 1;
const SIGNED: u8 = 1;
const TAG_BYTES: usize = 16;
/// Arguments longer than this are not carried: the handle would cost an
/// agent more tokens than it saves. Such results page from the store only.
pub const MAX_ARGUMENTS: usize = 512;
/// `first_slot` of a cut whose pages are not kept in a store.
pub const NOT_STORED: u32 = u32::MAX;

/// The original call, carried by signed handles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// Unix seconds after which the handle is refused.
    pub expires_s: u32,
    /// Of the cut result ([`crate::page::cut::digest`]).
    pub digest: [u8; 12],
    /// Session and route the result belongs to ([`crate::page::binding`]).
    pub binding: [u8; 8],
    /// The gateway that cut the result knew the tool safe to call again.
    pub reissue: bool,
    pub budget: Budget,
    pub tool: String,
    /// `params.arguments` as the client sent it (raw JSON), or empty.
    pub arguments: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handle {
    pub id: [u8; 16],
    /// The page this handle fetches (1-based; page 1 went out with the
    /// result).
    pub page: u32,
    pub pages: u32,
    /// Store slot of page 2; page `p` is at `first_slot + p - 2` modulo the
    /// store's size.
    pub first_slot: u32,
    pub call: Option<Call>,
}

/// Why a handle was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Not a handle this plugin writes.
    Malformed,
    /// Signed, but not with this key (or no key is configured here).
    Forged,
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn tag(key: &[u8], data: &[u8]) -> Option<[u8; TAG_BYTES]> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).ok()?;
    mac.update(data);
    let full = mac.finalize().into_bytes();
    let mut out = [0u8; TAG_BYTES];
    out.copy_from_slice(full.get(..TAG_BYTES)?);
    Some(out)
}

impl Handle {
    /// The handle as an agent sees it. A call is signed with `key`; without
    /// a key (or with arguments over [`MAX_ARGUMENTS`]) it is left out.
    pub fn encode(&self, key: &[u8]) -> String {
        let mut out = Vec::with_capacity(64);
        out.push(VERSION);
        let call = self.call.as_ref().filter(|c| {
            !key.is_empty() && c.arguments.len() <= MAX_ARGUMENTS && c.tool.len() <= 1024
        });
        out.push(if call.is_some() { SIGNED } else { 0 });
        out.extend_from_slice(&self.id);
        put_u32(&mut out, self.page);
        put_u32(&mut out, self.pages);
        put_u32(&mut out, self.first_slot);
        if let Some(c) = call {
            put_u32(&mut out, c.expires_s);
            out.extend_from_slice(&c.digest);
            out.extend_from_slice(&c.binding);
            out.push(u8::from(c.reissue));
            let (kind, n) = match c.budget {
                Budget::Tokens(n) => (0u8, n),
                Budget::Bytes(n) => (1u8, n),
            };
            out.push(kind);
            put_u32(&mut out, u32::try_from(n).unwrap_or(u32::MAX));
            out.extend_from_slice(&u16::try_from(c.tool.len()).unwrap_or(0).to_le_bytes());
            out.extend_from_slice(c.tool.as_bytes());
            put_u32(&mut out, u32::try_from(c.arguments.len()).unwrap_or(0));
            out.extend_from_slice(c.arguments.as_bytes());
            if let Some(t) = tag(key, &out) {
                out.extend_from_slice(&t);
            }
        }
        URL_SAFE_NO_PAD.encode(out)
    }

    /// Reads a handle; a signed one must carry this key's tag.
    pub fn decode(text: &str, key: &[u8]) -> Result<Handle, Refused> {
        if text.len() > 4096 {
            return Err(Refused::Malformed);
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(text.trim())
            .map_err(|_| Refused::Malformed)?;
        let mut r = Reader {
            bytes: &bytes,
            at: 0,
        };
        if r.u8()? != VERSION {
            return Err(Refused::Malformed);
        }
        let flags = r.u8()?;
        let id: [u8; 16] = r.array()?;
        let (page, pages, first_slot) = (r.u32()?, r.u32()?, r.u32()?);
        let call = if flags & SIGNED != 0 {
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
            let signed = r.at;
            let given: [u8; TAG_BYTES] = r.array()?;
            if r.at != bytes.len() {
                return Err(Refused::Malformed);
            }
            if key.is_empty() {
                return Err(Refused::Forged);
            }
            let mut mac =
                <Hmac<Sha256> as Mac>::new_from_slice(key).map_err(|_| Refused::Forged)?;
            mac.update(bytes.get(..signed).ok_or(Refused::Malformed)?);
            // Constant-time comparison of the truncated tag.
            mac.verify_truncated_left(&given)
                .map_err(|_| Refused::Forged)?;
            Some(Call {
                expires_s,
                digest,
                binding,
                reissue,
                budget,
                tool,
                arguments,
            })
        } else {
            if r.at != bytes.len() {
                return Err(Refused::Malformed);
            }
            None
        };
        if page < 2 || page > pages {
            return Err(Refused::Malformed);
        }
        Ok(Handle {
            id,
            page,
            pages,
            first_slot,
            call,
        })
    }

    /// The handle of the page after this one, if any.
    pub fn next(&self) -> Option<Handle> {
        (self.page < self.pages).then(|| Handle {
            page: self.page + 1,
            ..self.clone()
        })
    }

    /// Store slot of this handle's page, for a store of `slots` pages.
    pub fn slot(&self, slots: usize) -> Option<usize> {
        if self.first_slot == NOT_STORED || slots == 0 {
            return None;
        }
        let first = usize::try_from(self.first_slot).ok()?;
        let offset = usize::try_from(self.page).ok()?.checked_sub(2)?;
        Some((first + offset) % slots)
    }
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

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn handle(call: bool) -> Handle {
        Handle {
            id: [7; 16],
            page: 2,
            pages: 30,
            first_slot: 4090,
            call: call.then(|| Call {
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
    fn round_trips_signed_and_unsigned() {
        for call in [false, true] {
            let h = handle(call);
            let text = h.encode(KEY);
            assert!(text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
            assert_eq!(Handle::decode(&text, KEY), Ok(h));
        }
        // What an agent pays for a handle.
        assert_eq!(handle(false).encode(KEY).len(), 40);
        assert_eq!(handle(true).encode(KEY).len(), 144);
    }

    #[test]
    fn a_changed_byte_or_another_key_is_refused() {
        let text = handle(true).encode(KEY);
        let other = b"another key, also thirty-two bytes long";
        assert_eq!(Handle::decode(&text, other), Err(Refused::Forged));
        assert_eq!(Handle::decode(&text, b""), Err(Refused::Forged));
        let mut bytes = URL_SAFE_NO_PAD.decode(&text).unwrap();
        for i in 0..bytes.len() {
            bytes[i] ^= 0x01;
            let forged = URL_SAFE_NO_PAD.encode(&bytes);
            assert!(Handle::decode(&forged, KEY).is_err(), "byte {i}");
            bytes[i] ^= 0x01;
        }
        for junk in ["", "x", "!!!!", &"A".repeat(5000)] {
            assert_eq!(Handle::decode(junk, KEY), Err(Refused::Malformed), "{junk}");
        }
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
