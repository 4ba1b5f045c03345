//! mcp-toon: cut the tokens AI agents pay for MCP `tools/call` results.
//!
//! This crate is the engine over the core (`mcp-toon-core`, crates/core):
//! the pipeline that orders the stages, pages, the per-stream exchange, the
//! driver every host calls, and thin hosts behind cargo features:
//! proxy-wasm for Envoy (`adapter`), http-wasm for Traefik (`httpwasm`),
//! the WIT component, the measuring CLI. The core's modules are re-exported
//! under the same paths (`mcp_toon::stage`, `crate::config`), so a path
//! reads the same on either side of the crate boundary; the boundary itself
//! is the dependency: the core cannot name anything here. No host's ABI is
//! named outside its own module (tests/layering.rs, ARCHITECTURE.md).

pub use mcp_toon_core::{
    callout, config, convert, intent, json, listing, marker, mcp, media, outcome, report, sse,
    stage, tag,
};

pub mod driver;
pub mod exchange;
pub mod host;
pub mod page;
pub mod pipeline;
pub mod shared;
#[cfg(any(test, feature = "sim"))]
pub mod sim;

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
