//! mcp-toon: cut the tokens AI agents pay for MCP `tools/call` results.
//!
//! This crate is the Envoy host, over the engine (`mcp-toon-engine`,
//! crates/engine: the pipeline, pages, the per-stream exchange and the
//! driver) and the core (`mcp-toon-core`, crates/core): the proxy-wasm
//! adapter (`adapter`, feature `plugin`), whose cdylib is the module Envoy
//! loads. The other hosts are crates of their own beside it, over the same
//! engine: `mcp-toon-traefik` (crates/traefik, http-wasm),
//! `mcp-toon-component` (crates/component, the WIT component) and
//! `mcp-toon-cli` (crates/cli, the measuring tool); none depends on
//! another, so no host can name another. The modules below are re-exported
//! under the same paths (`mcp_toon::stage`, `crate::driver`), so a path
//! reads the same on every side of a crate boundary; the boundaries
//! themselves are the dependencies: neither the engine nor the core can
//! name a host. No host's ABI is named outside its own crate or module
//! (tests/layering.rs, ARCHITECTURE.md).

#[cfg(feature = "sim")]
pub use mcp_toon_engine::sim;
pub use mcp_toon_engine::{
    callout, config, convert, driver, exchange, host, intent, json, listing, marker, mcp, media,
    outcome, page, pipeline, report, shared, sse, stage, tag,
};

#[cfg(all(feature = "plugin", target_arch = "wasm32"))]
mod adapter;

// One module is one host. Cargo unifies features across the packages a
// build selects, so the Envoy module built in one command with the Traefik
// plugin (`cargo build --workspace --target wasm32-wasip1`) would get the
// engine cut for http-wasm, without listings: build each on its own
// (`make build`, `make traefik`).
#[cfg(all(feature = "plugin", target_arch = "wasm32"))]
const _: () = assert!(
    !mcp_toon_engine::FOR_HTTP_WASM,
    "the Envoy module (`plugin`) was built with the engine's `traefik` feature: build it alone"
);

pub use config::{ConfigError, Settings};
pub use exchange::Exchange;
pub use outcome::{Outcome, Reason};
pub use report::{Decision, Report};
