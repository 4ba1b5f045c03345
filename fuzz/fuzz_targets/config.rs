//! The configuration parser never panics, and an accepted configuration
//! resolves a policy for any tool.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_toon::config::{ServerScope, Settings, StreamInfo};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Settings::from_json(text) {
        Ok(s) => {
            let scope = s.server_for(&StreamInfo {
                route: Some("r".into()),
                cluster: Some("c".into()),
                authority: Some("a".into()),
            });
            let _ = s.policy(scope, Some("t"));
            let _ = s.policy(ServerScope::default(), None);
        }
        // Every refusal names a field (or the whole document) and says why.
        Err(e) => assert!(!e.message.is_empty()),
    }
});
