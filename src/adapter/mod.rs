//! The proxy-wasm adapter: the ABI's exports hand each event to the core's
//! [`crate::driver::Driver`] (`exports.rs`), and the core's host calls come
//! back through [`host::Envoy`] onto the ABI's imports (`abi.rs`). No
//! decision about a stream is made here; the comments say where a host
//! constraint shapes the code.

mod abi;
mod exports;
#[cfg(feature = "fault-injection")]
mod fault;
mod host;
mod logger;
mod root;
