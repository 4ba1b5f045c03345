//! The mark of a re-issued call that comes back through the gateway.
//!
//! With `paging.reissue_cluster` the plugin sends a re-issued `tools/call`
//! to a cluster that reaches the gateway's own listener (or an internal
//! listener), so every filter of the chain — authentication, RBAC,
//! ext_authz, rate limits, credential injection — runs on it as on any
//! call. The plugin meets the call again there: the mark tells it that
//! this call is its own, to pass untouched (no argument stripped, no page
//! call answered, the answer not rewritten), since the stream that
//! re-issued it runs the stages on the answer.
//!
//! ```text
//! x-mcp-toon-reissue: 1.<expires_s>.<tag>
//! ```
//!
//! `tag` is base64url (RFC 4648 §5) of the first 16 bytes of HMAC-SHA256
//! (RFC 2104) under the mark key ([`super::keys`]) of the expiry, the
//! call's `:path`, `:authority` and the cluster it must reach. Nobody
//! without `paging.key` can make one; the plugin removes it before the call
//! goes on, so the server never sees it; it expires with the re-issue's
//! timeout. A mark that does not verify is removed and counted
//! (`reissue_mark_invalid`), and the call is treated as any other.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use super::keys::{self, Derived, Key};

/// The request header that carries the mark.
pub(crate) const HEADER: &str = "x-mcp-toon-reissue";
/// Seconds a mark outlives the re-issue's own timeout (clocks of the
/// gateway's workers are one clock, but a call may queue).
const SLACK_S: u32 = 5;

fn tag(key: &Key, expires_s: u32, path: &str, authority: &str, cluster: &str) -> String {
    let mac = keys::hmac(
        key,
        &[
            b"mcp-toon/reissue-mark/1\0",
            &expires_s.to_le_bytes(),
            &(path.len() as u64).to_le_bytes(),
            path.as_bytes(),
            &(authority.len() as u64).to_le_bytes(),
            authority.as_bytes(),
            cluster.as_bytes(),
        ],
    );
    URL_SAFE_NO_PAD.encode(mac.get(..16).unwrap_or_default())
}

/// The mark of a call re-issued now (`now_s`), with `timeout_ms`.
pub fn make(
    key: &Key,
    now_s: u32,
    timeout_ms: u64,
    path: &str,
    authority: &str,
    cluster: &str,
) -> String {
    let ttl = u32::try_from(timeout_ms.div_ceil(1000)).unwrap_or(u32::MAX);
    let expires_s = now_s.saturating_add(ttl).saturating_add(SLACK_S);
    format!(
        "1.{expires_s}.{}",
        tag(key, expires_s, path, authority, cluster)
    )
}

/// Whether `value` is a live mark, under any of `keys`, for a call to
/// `path` at `authority` routed to `cluster`.
pub fn verify(
    keys: &[Derived],
    value: &str,
    now_s: u32,
    path: &str,
    authority: &str,
    cluster: &str,
) -> bool {
    let mut parts = value.trim().split('.');
    let (Some("1"), Some(expires), Some(given), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let Ok(expires_s) = expires.parse::<u32>() else {
        return false;
    };
    if expires_s <= now_s {
        return false;
    }
    keys.iter().any(|k| {
        let want = tag(&k.mark, expires_s, path, authority, cluster);
        // Constant time: a byte-by-byte comparison that does not stop early.
        want.len() == given.len()
            && want
                .bytes()
                .zip(given.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_live_mark_for_the_same_call_verifies() {
        let keys = vec![Derived::of(b"0123456789abcdef0123456789abcdef")];
        let m = make(&keys[0].mark, 1000, 30_000, "/mcp", "gw:8080", "mcp");
        assert!(verify(&keys, &m, 1000, "/mcp", "gw:8080", "mcp"));
        assert!(verify(&keys, &m, 1034, "/mcp", "gw:8080", "mcp"));
        assert!(
            !verify(&keys, &m, 1035, "/mcp", "gw:8080", "mcp"),
            "expired"
        );
        assert!(!verify(&keys, &m, 1000, "/other", "gw:8080", "mcp"));
        assert!(!verify(&keys, &m, 1000, "/mcp", "evil:8080", "mcp"));
        assert!(!verify(&keys, &m, 1000, "/mcp", "gw:8080", "billing"));
        let other = vec![Derived::of(b"another key, also thirty-two bytes")];
        assert!(!verify(&other, &m, 1000, "/mcp", "gw:8080", "mcp"));
        // A later expiry with the old tag, or junk.
        let moved = m.replacen("1.1035.", "1.9999.", 1);
        assert!(!verify(&keys, &moved, 1000, "/mcp", "gw:8080", "mcp"));
        for junk in ["", "1", "1.x.y", "2.1035.AAAA", &format!("{m}.x")] {
            assert!(
                !verify(&keys, junk, 1000, "/mcp", "gw:8080", "mcp"),
                "{junk}"
            );
        }
    }
}
