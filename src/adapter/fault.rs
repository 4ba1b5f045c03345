//! A test-only way to make the VM fail on demand (cargo feature
//! `fault-injection`, never in the release build: `make build` does not
//! enable it, and `tests/e2e/test_failure_policy.py` checks the shipped
//! module carries none of it). A request with the header
//! [`TRAP_HEADER`]`: trap` executes a wasm `unreachable` in its headers
//! callback: the trap Envoy turns into a VM failure, so the e2e suite can
//! show what the configured `failure_policy` does with the traffic after
//! it.

use super::abi;

/// The request header that traps the VM.
pub const TRAP_HEADER: &str = "x-mcp-toon-fault";

/// Traps when the current request asks for it.
pub fn maybe_trap() {
    if let Ok(Some(value)) = abi::get_header(abi::Headers::Request, TRAP_HEADER) {
        if value == "trap" {
            core::arch::wasm32::unreachable();
        }
    }
}
