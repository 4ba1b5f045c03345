//! Marker tags: what lets a client tell the plugin's output from a server
//! text that merely starts the same way.
//!
//! Without `marker_key` the marker is a format hint, not a proof: any
//! server can send a text that starts with `[mcp-toon/v1]`, and the plugin
//! passes such a text unchanged (`already_encoded`), as it passes every
//! server text it does not rewrite. With a key, the first line of every
//! block the plugin writes a header line for — the TOON marker line, or
//! the note of a trimmed block — ends with a tag:
//!
//! ```text
//! <first line> tag=<22 characters>
//! ```
//!
//! where the 22 characters are base64url without padding (RFC 4648 §5) of
//! the first 16 bytes of HMAC-SHA256 (RFC 2104; truncation per §5) under the
//! key of the block's whole text without the 27 bytes ` tag=…`. Without the
//! key nobody can write a valid tag, so a server text that starts with the
//! marker never carries one. To verify: if the first line ends with ` tag=`
//! and 22 base64url characters, take them out of the text, compute the
//! HMAC of what remains (UTF-8) and compare in constant time ([`verify`]).
//! A valid tag proves the plugin wrote that exact text for some call — not
//! for which one (a text an agent copied elsewhere and a server returned
//! later verifies too: it is still the plugin's own output, byte for byte).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// What precedes the tag on the first line.
pub(crate) const TAG_PREFIX: &str = " tag=";
/// Base64url characters of a 16-byte tag.
pub(crate) const TAG_CHARS: usize = 22;
/// Bytes the tag adds to a block.
pub(crate) const TAG_LEN: usize = TAG_PREFIX.len() + TAG_CHARS;

/// A tag-sized stand-in the stages size the block with; [`sign`] replaces
/// it once the text is final.
pub fn placeholder() -> String {
    format!("{TAG_PREFIX}{}", "A".repeat(TAG_CHARS))
}

fn mac(key: &[u8], text: &str) -> Option<String> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).ok()?;
    mac.update(text.as_bytes());
    let digest = mac.finalize().into_bytes();
    Some(URL_SAFE_NO_PAD.encode(digest.get(..16)?))
}

/// Where the tag of `text` sits: the byte range of ` tag=…` at the end of
/// its first line, if the line ends with one.
fn tag_span(text: &str) -> Option<std::ops::Range<usize>> {
    let end = text.find('\n').unwrap_or(text.len());
    let start = end.checked_sub(TAG_LEN)?;
    let tag = text.get(start..end)?;
    let chars = tag.strip_prefix(TAG_PREFIX)?;
    chars
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        .then_some(start..end)
}

/// `text` (whose first line ends with the [`placeholder`]) with its tag.
pub fn sign(text: &str, key: &[u8]) -> Option<String> {
    let span = tag_span(text)?;
    let mut unsigned = String::with_capacity(text.len() - TAG_LEN);
    unsigned.push_str(text.get(..span.start)?);
    unsigned.push_str(text.get(span.end..)?);
    let tag = mac(key, &unsigned)?;
    let mut out = String::with_capacity(text.len());
    out.push_str(text.get(..span.start)?);
    out.push_str(TAG_PREFIX);
    out.push_str(&tag);
    out.push_str(text.get(span.end..)?);
    Some(out)
}

/// Whether `text` carries a valid tag under `key`.
pub fn verify(text: &str, key: &[u8]) -> bool {
    let Some(span) = tag_span(text) else {
        return false;
    };
    let (Some(head), Some(tail), Some(given)) = (
        text.get(..span.start),
        text.get(span.end..),
        text.get(span.start + TAG_PREFIX.len()..span.end),
    ) else {
        return false;
    };
    let Ok(mut m) = <Hmac<Sha256> as Mac>::new_from_slice(key) else {
        return false;
    };
    m.update(head.as_bytes());
    m.update(tail.as_bytes());
    let Ok(given) = URL_SAFE_NO_PAD.decode(given) else {
        return false;
    };
    // Constant time (hmac's `verify_truncated_left`).
    m.verify_truncated_left(&given).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef-test-key";

    #[test]
    fn a_signed_text_verifies_and_nothing_else_does() {
        let text = format!("[mcp-toon/v1] TOON{}\nrows[1]{{a}}:\n  1", placeholder());
        let signed = sign(&text, KEY).unwrap();
        assert_eq!(signed.len(), text.len());
        assert!(verify(&signed, KEY));
        // The placeholder is no tag; another key, a changed byte anywhere,
        // or a text without a tag do not verify.
        assert!(!verify(&text, KEY));
        assert!(!verify(&signed, b"another-key-0123456"));
        assert!(!verify(&signed.replace("  1", "  2"), KEY));
        assert!(!verify(&signed.replacen("TOON", "TOOM", 1), KEY));
        assert!(!verify("[mcp-toon/v1] TOON\nrows[1]{a}:\n  1", KEY));
    }

    #[test]
    fn the_recipe_in_the_readme() {
        // Independent of `sign`: HMAC of the text without ` tag=…`.
        let unsigned = "[mcp-toon: trimmed]\n{\"a\":1}";
        let tag = mac(KEY, unsigned).unwrap();
        let signed = format!("[mcp-toon: trimmed] tag={tag}\n{{\"a\":1}}");
        assert_eq!(tag.len(), TAG_CHARS);
        assert!(verify(&signed, KEY));
        assert_eq!(
            sign(
                &format!("[mcp-toon: trimmed]{}\n{{\"a\":1}}", placeholder()),
                KEY
            )
            .unwrap(),
            signed
        );
    }
}
