//! mcp-toon: cut the tokens AI agents pay for MCP `tools/call` results.
//!
//! The crate is a host-agnostic core (configuration, the MCP message model,
//! the stages and the pipeline that orders them, the per-stream exchange and
//! its report) plus thin hosts behind cargo features: proxy-wasm for Envoy
//! (`adapter`), http-wasm for Traefik (`httpwasm`), the WIT component, the
//! measuring CLI. No host's ABI is named outside its own module
//! (tests/layering.rs).

pub mod callout;
pub mod config;
pub mod convert;
pub mod driver;
pub mod exchange;
pub mod host;
pub mod intent;
pub mod json;
pub mod listing;
pub mod marker;
pub mod mcp;
pub mod media;
pub mod outcome;
pub mod page;
pub mod pipeline;
pub mod report;
pub mod shared;
#[cfg(any(test, feature = "sim"))]
pub mod sim;
pub mod sse;
pub mod stage;
pub mod tag;

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
