//! What an outsider hands the page tool, read without a stream around it
//! (fast enough for tens of millions of inputs; `page_call` runs whole
//! streams): any handle text under two keys, any page-call body, any
//! re-issue mark. Never a panic; a handle accepted re-encodes to itself
//! under the key that opened it; a page call's id is never longer than the
//! limit; a mark verifies only as made. Run with a libFuzzer `-timeout`
//! (fuzz/run.sh).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcp_toon::page::handle::Handle;
use mcp_toon::page::keys::{self, Derived};
use mcp_toon::exchange::serve;
use mcp_toon::page::mark;

fn keys() -> &'static [Derived] {
    static K: OnceLock<Vec<Derived>> = OnceLock::new();
    K.get_or_init(|| {
        keys::derive(&[
            b"0123456789abcdef0123456789abcdef".to_vec(),
            b"an older key, thirty-two bytes long".to_vec(),
        ])
    })
}

fuzz_target!(|data: &[u8]| {
    let keys = keys();
    let text = String::from_utf8_lossy(data);
    if let Ok((h, opened)) = Handle::decode(&text, keys) {
        let sealing = h.call.as_ref().map(|_| &keys[opened].handle);
        assert_eq!(h.encode(sealing), text.trim(), "re-encodes to itself");
        assert!(h.page >= 2 && h.page <= h.pages);
        assert_eq!(h.encoded_len(h.call.is_some()), text.trim().len());
    }
    match serve::parse(data, "mcp_toon_page", 64) {
        Some(serve::Parsed::Call(call)) => assert!(call.id.len() <= 64),
        Some(serve::Parsed::IdTooLong) | None => {}
    }
    // A mark made for one call verifies for it alone.
    let (path, authority) = text.split_once('\n').unwrap_or((&text, ""));
    let made = mark::make(&keys[0].mark, 1000, 30_000, path, authority, "c");
    assert!(mark::verify(keys, &made, 1000, path, authority, "c"));
    assert!(!mark::verify(keys, &made, 1000, path, authority, "d"));
    assert!(!mark::verify(keys, &text, 1000, path, authority, "c") || text.trim() == made);
});
