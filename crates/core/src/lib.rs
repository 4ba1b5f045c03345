//! mcp-toon's core: what a tool result is and what may be done to it, with
//! no notion of a stream, a store or a host. JSON and SSE readers, the MCP
//! message model, the configuration, the stages (compact, TOON, clean,
//! trim, cap, budget, projection), the tool-listing model and the record of
//! decisions. The engine (`mcp-toon`: pipeline, pages, exchange, driver and
//! the hosts) builds on it; nothing here can name the engine, because this
//! crate does not depend on it (ARCHITECTURE.md).

pub mod callout;
pub mod config;
pub mod convert;
pub mod intent;
pub mod json;
pub mod listing;
pub mod marker;
pub mod mcp;
pub mod media;
pub mod outcome;
pub mod report;
pub mod sse;
pub mod stage;
pub mod tag;

pub use config::{ConfigError, Settings};
pub use outcome::{Outcome, Reason};
pub use report::{Decision, Report};
