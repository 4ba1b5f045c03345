//! mcp-toon's engine, over the core (`mcp-toon-core`, crates/core): the
//! pipeline that orders the stages, pages, the per-stream exchange and the
//! driver every host calls, through the [`host::Host`] trait. It names no
//! host: the hosts are crates above it, one each (`mcp-toon` at the root:
//! Envoy's proxy-wasm adapter; `mcp-toon-traefik`, http-wasm;
//! `mcp-toon-component`, the WIT component; `mcp-toon-cli`, the CLI), and
//! the compiler keeps them there. The core's
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

/// Whether this build is cut for the http-wasm host (feature `traefik`:
/// on wasm32, listings are left out of the module). The Envoy module
/// refuses to build so (the root's src/lib.rs).
pub const FOR_HTTP_WASM: bool = cfg!(feature = "traefik");

pub use config::{ConfigError, Settings};
pub use exchange::Exchange;
pub use outcome::{Outcome, Reason};
pub use report::{Decision, Report};
