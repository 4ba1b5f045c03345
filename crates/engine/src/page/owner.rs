//! Who a page belongs to: the caller a result was cut for, on the server it
//! came from. A page call must show the same identity, session and server,
//! or it is refused (`page_foreign`) — whatever handle it carries.
//!
//! The identity comes from where `paging.owner` says
//! ([`OwnerSource`]): the request's credentials (`authorization` and
//! `cookie`, the default), a header an authentication filter sets, or the
//! dynamic metadata it sets (jwt_authn's payload, ext_authz's metadata);
//! `none` keeps only the session and the server. What is kept of it is a
//! SHA-256 digest, in the stream's memory only; what is stored with a page
//! or sealed into a handle is an HMAC-SHA256 of that digest with the
//! session and the server scope (cluster, route name, authority) under a
//! key ([`super::keys`]), truncated to 8 bytes: never a credential, and
//! nothing anyone without the key can test a guessed credential against.
//!
//! The plugin trusts what the filters before it let through: it sits after
//! authentication and authorization (README "Where it goes in the filter
//! chain"), so the credentials of a page call have passed the chain.

use sha2::{Digest, Sha256};

use super::keys::{self, Key};
use crate::config::{OwnerSource, StreamInfo};

/// A stream's owner, as a digest of who and where.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Owner {
    digest: [u8; 32],
    /// An identity was found (for the record and tests; an anonymous
    /// caller is bound by session and server alone).
    identified: bool,
}

// Nothing of the identity reaches a log line.
impl std::fmt::Debug for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Owner")
            .field("identified", &self.identified)
            .finish_non_exhaustive()
    }
}

/// The request headers named `name` (ASCII case ignored), in order.
fn values<'h>(
    headers: &'h [(String, String)],
    name: &'h str,
) -> impl Iterator<Item = &'h str> + 'h {
    headers
        .iter()
        .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// Adds one length-prefixed part to a digest: parts never run together.
/// One copy of SHA-256's update, not one per call site.
#[inline(never)]
fn field(h: &mut Sha256, value: &[u8]) {
    h.update((value.len() as u64).to_le_bytes());
    h.update(value);
}

impl Owner {
    /// The owner of a stream with these request headers, this metadata
    /// (the property [`OwnerSource::Metadata`] names, read by the host),
    /// on this server.
    pub(crate) fn of(
        source: &OwnerSource,
        headers: &[(String, String)],
        metadata: Option<&[u8]>,
        stream: &StreamInfo,
    ) -> Owner {
        let mut identity = Sha256::new();
        let mut parts = 0usize;
        let mut add = |h: &mut Sha256, v: &[u8]| {
            field(h, v);
            parts += 1;
        };
        let header;
        let (kind, names): (&[u8], &[&str]) = match source {
            OwnerSource::Credentials => (b"credentials", &["authorization", "cookie"]),
            OwnerSource::Header(name) => {
                header = [name.as_str()];
                (b"header", &header)
            }
            OwnerSource::Metadata(_) => (b"metadata", &[]),
            OwnerSource::None => (b"none", &[]),
        };
        field(&mut identity, kind);
        for name in names {
            // The name, then its values: `cookie: x` is not `authorization: x`.
            field(&mut identity, name.as_bytes());
            for v in values(headers, name) {
                add(&mut identity, v.as_bytes());
            }
        }
        if let (OwnerSource::Metadata(_), Some(m)) = (source, metadata.filter(|m| !m.is_empty())) {
            add(&mut identity, m);
        }
        let identified = parts > 0;
        let mut h = Sha256::new();
        // An anonymous caller: the same for every caller without one.
        let who = if identified {
            identity.finalize().into()
        } else {
            [0u8; 32]
        };
        field(&mut h, b"mcp-toon/owner/2");
        field(&mut h, &who);
        let session = values(headers, "mcp-session-id").next().unwrap_or("");
        for part in [
            Some(session),
            stream.cluster.as_deref(),
            stream.route.as_deref(),
            stream.authority.as_deref(),
        ] {
            field(&mut h, part.unwrap_or("").as_bytes());
        }
        Owner {
            digest: h.finalize().into(),
            identified,
        }
    }

    /// Whether the caller showed an identity.
    #[cfg(test)]
    pub(crate) fn identified(&self) -> bool {
        self.identified
    }

    /// The binding kept with a page or sealed into a handle, under `key`
    /// (the local key or a configured key's owner key).
    pub(crate) fn binding(&self, key: &Key) -> [u8; 8] {
        let mac = keys::hmac(key, &[b"mcp-toon/binding/2\0", &self.digest]);
        let mut out = [0u8; 8];
        out.copy_from_slice(mac.get(..8).unwrap_or(&[0; 8]));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    fn stream(cluster: &str) -> StreamInfo {
        StreamInfo {
            route: Some("mcp".into()),
            cluster: Some(cluster.into()),
            authority: Some("gw.example".into()),
        }
    }

    const KEY: Key = [7; 32];

    #[test]
    fn credentials_bind_and_nothing_else_matches() {
        let s = stream("crm");
        let of = |h: &[(&str, &str)]| {
            Owner::of(&OwnerSource::Credentials, &headers(h), None, &s).binding(&KEY)
        };
        let alice = of(&[("authorization", "Bearer alice")]);
        assert_eq!(
            alice,
            of(&[("Authorization", "Bearer alice"), ("x-other", "1")])
        );
        for other in [
            of(&[("authorization", "Bearer mallory")]),
            of(&[]),
            of(&[("authorization", "Bearer alice"), ("cookie", "sid=1")]),
            of(&[("authorization", "Bearer alice"), ("mcp-session-id", "s1")]),
            of(&[("cookie", "Bearer alice")]),
        ] {
            assert_ne!(alice, other);
        }
        // Another server, or another key: another binding.
        let elsewhere = Owner::of(
            &OwnerSource::Credentials,
            &headers(&[("authorization", "Bearer alice")]),
            None,
            &stream("billing"),
        );
        assert_ne!(alice, elsewhere.binding(&KEY));
        let o = Owner::of(
            &OwnerSource::Credentials,
            &headers(&[("authorization", "Bearer alice")]),
            None,
            &s,
        );
        assert_ne!(o.binding(&KEY), o.binding(&[8; 32]));
        assert!(o.identified());
        assert!(!format!("{o:?}").contains("alice"));
    }

    #[test]
    fn a_header_or_metadata_identity() {
        let s = stream("crm");
        let by_header = |v: &str| {
            Owner::of(
                &OwnerSource::Header("x-user".into()),
                &headers(&[("x-user", v), ("authorization", "Bearer shared")]),
                None,
                &s,
            )
        };
        assert_eq!(by_header("alice"), by_header("alice"));
        assert_ne!(by_header("alice"), by_header("bob"));
        let anonymous = by_header("");
        assert!(!anonymous.identified());
        let meta =
            |m: Option<&[u8]>| Owner::of(&OwnerSource::Metadata(vec!["a".into()]), &[], m, &s);
        assert_eq!(meta(Some(b"alice")), meta(Some(b"alice")));
        assert_ne!(meta(Some(b"alice")), meta(Some(b"bob")));
        assert_eq!(meta(None), meta(Some(b"")), "empty is none");
        // `none`: the session and server alone, whatever the credentials.
        let none = |h: &[(&str, &str)]| Owner::of(&OwnerSource::None, &headers(h), None, &s);
        assert_eq!(
            none(&[("authorization", "Bearer alice")]),
            none(&[("authorization", "Bearer mallory")])
        );
        assert_ne!(
            none(&[("mcp-session-id", "a")]),
            none(&[("mcp-session-id", "b")])
        );
    }
}
