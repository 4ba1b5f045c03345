//! mcp-toon: cut the tokens AI agents pay for MCP `tools/call` results.
//!
//! This crate is the hosts, over the engine (`mcp-toon-engine`,
//! crates/engine: the pipeline, pages, the per-stream exchange and the
//! driver) and the core (`mcp-toon-core`, crates/core), behind cargo
//! features: proxy-wasm for Envoy (`adapter`), http-wasm for Traefik
//! (`httpwasm`), the WIT component, the measuring CLI. The modules below
//! are re-exported under the same paths (`mcp_toon::stage`,
//! `crate::driver`), so a path reads the same on every side of a crate
//! boundary; the boundaries themselves are the dependencies: neither the
//! engine nor the core can name a host. No host's ABI is named outside its
//! own module (tests/layering.rs, ARCHITECTURE.md).

#[cfg(feature = "sim")]
pub use mcp_toon_engine::sim;
pub use mcp_toon_engine::{
    callout, config, convert, driver, exchange, host, intent, json, listing, marker, mcp, media,
    outcome, page, pipeline, report, shared, sse, stage, tag,
};

#[cfg(all(feature = "plugin", target_arch = "wasm32"))]
mod adapter;
#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "component")]
pub mod component;
#[cfg(feature = "traefik")]
pub mod httpwasm;

// Each adapter exports its own `_initialize`: one module is one of them.
#[cfg(all(feature = "plugin", feature = "traefik", target_arch = "wasm32"))]
compile_error!(
    "features `plugin` (Envoy) and `traefik` (http-wasm) build different modules: enable one"
);

pub use config::{ConfigError, Settings};
pub use exchange::Exchange;
pub use outcome::{Outcome, Reason};
pub use report::{Decision, Report};
