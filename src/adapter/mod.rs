//! The proxy-wasm adapter: Envoy's callbacks go to the core's
//! [`crate::driver::Driver`], and the core's host calls come back through
//! [`host::Envoy`]. No decision about a stream is made here; the comments
//! say where a host constraint shapes the code.

mod abi;
mod host;
mod http;
mod root;

proxy_wasm::main! {{
    // Debug lines (the decision record) reach Envoy, which filters them by
    // its own wasm log level; trace would let dependencies log per byte.
    proxy_wasm::set_log_level(proxy_wasm::types::LogLevel::Debug);
    proxy_wasm::set_root_context(|_| -> Box<dyn proxy_wasm::traits::RootContext> {
        Box::new(root::Root::default())
    });
}}
