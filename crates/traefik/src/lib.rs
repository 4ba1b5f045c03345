//! The http-wasm adapter: the same core and driver as the proxy-wasm
//! plugin, as a Traefik middleware plugin (Traefik ≥ 3.0 runs WebAssembly
//! middleware through the http-wasm handler ABI, http-wasm.io
//! "http-handler-abi", on http-wasm-host-go and wazero). The crate
//! `mcp-toon-traefik`, a host over the engine beside the others (it
//! depends on none of them); built for wasm32-wasip1 with `make traefik`
//! (target/wasm32-wasip1/release/mcp_toon_traefik.wasm); the Envoy module
//! carries none of it.
//!
//! The ABI is not proxy-wasm's: the guest exports `handle_request` and
//! `handle_response`, and a body is not handed over chunk by chunk but
//! buffered whole by the host (`buffer_request` / `buffer_response`,
//! enabled per request), then read and written by the guest. So the
//! adapter pulls a buffered body in pieces and hands each to the
//! [`mcp_toon_engine::driver::Driver`] as a body callback ([`pump`]), and carries
//! out the driver's host calls on the ABI ([`host`]). It decides nothing:
//! the one choice it makes, whether the host buffers a response, is the
//! driver's answer ([`mcp_toon_engine::driver::Driver::wants_response`]) under the
//! host's constraint that a buffered response is released only at its end
//! (a GET event stream never ends: it is never buffered).
//!
//! What the host lacks is refused at load by the configuration layer
//! ([`mcp_toon_engine::config::Capabilities::HTTP_WASM`]); README "Loading it in
//! Traefik" says what happens instead where a field is accepted.
//!
//! Layout: [`io`] is the ABI as a trait (the imports on wasm32, a scripted
//! host in tests), [`config`] reads Traefik's middleware options,
//! [`instance`] is what one guest instance keeps between requests,
//! [`host`] the core's `Host` on the ABI, [`pump`] a body pulled through
//! the driver, [`flow`] one request and its response, `exports` the ABI's
//! exports.

pub mod config;
#[cfg(target_arch = "wasm32")]
mod exports;
pub mod flow;
pub mod host;
pub mod instance;
pub mod io;
pub mod pump;
pub mod random;
#[cfg(test)]
mod tests;
