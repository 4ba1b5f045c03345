//! mcp-toon's engine, over the core (`mcp-toon-core`, crates/core): the
//! pipeline that orders the stages, pages, the per-stream exchange and the
//! driver every host calls, through the [`host::Host`] trait. It names no
//! host: the hosts are crates above it (the `mcp-toon` package at the
//! root: Envoy's proxy-wasm adapter, Traefik's http-wasm one, the WIT
//! component, the CLI), and the compiler keeps them there. The core's
//! modules are re-exported under the same paths (`crate::config`), so a
//! path reads the same on either side of the boundary.

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
#[cfg(test)]
mod testkit;

pub use config::{ConfigError, Settings};
pub use exchange::Exchange;
pub use outcome::{Outcome, Reason};
pub use report::{Decision, Report};
