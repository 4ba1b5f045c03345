//! The http-wasm handler ABI (http-wasm.io "http-handler-abi", module
//! `http_handler`) as a trait: the imports on wasm32 ([`Abi`]), a scripted
//! host in the tests. Every call is one host call; the host traps on
//! misuse (a response header set after the next handler without
//! `buffer_response`, a request header after it), so callers check first.

use std::time::SystemTime;

/// `header_kind` of the ABI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderKind {
    Request = 0,
    Response = 1,
}

/// `body_kind` of the ABI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    Request = 0,
    Response = 1,
}

/// `feature_buffer_request`: the host keeps the request body so the next
/// handler can read it after the guest did.
pub const BUFFER_REQUEST: u32 = 1;
/// `feature_buffer_response`: the host holds the next handler's whole
/// response (status, headers, body) until `handle_response` returns.
pub const BUFFER_RESPONSE: u32 = 2;

/// `log_level` of the ABI (debug is -1 "to prevent users from accidentally
/// defaulting to it").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug = -1,
    Info = 0,
    Warn = 1,
    Error = 2,
}

/// The host calls the adapter makes.
pub trait HttpWasm {
    /// Enables features for this request (or for every request, before
    /// the first); returns every feature now enabled.
    fn enable_features(&mut self, features: u32) -> u32;
    /// The guest configuration (Traefik: the middleware's options as JSON).
    fn config(&self) -> Vec<u8>;
    fn log(&self, level: Level, message: &str);
    fn method(&self) -> String;
    /// The request URI, query included.
    fn uri(&self) -> String;
    /// Header names of a message, lowercase (http-wasm-host-go lowercases
    /// them), `host` included for a request.
    fn header_names(&self, kind: HeaderKind) -> Vec<String>;
    fn header_values(&self, kind: HeaderKind, name: &str) -> Vec<String>;
    fn set_header(&mut self, kind: HeaderKind, name: &str, value: &str);
    fn remove_header(&mut self, kind: HeaderKind, name: &str);
    /// Up to `max` (> 0) more bytes of a body, and whether it ended.
    fn read_body(&mut self, kind: BodyKind, max: usize) -> (Vec<u8>, bool);
    /// The first call for a body replaces it; later calls append.
    fn write_body(&mut self, kind: BodyKind, bytes: &[u8]);
    /// Only in `handle_response` with `buffer_response`: the host traps
    /// otherwise (http-wasm-host-go asserts its buffering writer).
    fn status(&self) -> u16;
    fn set_status(&mut self, status: u16);
    /// WASI `random_get`: Traefik leaves wazero's default source, which is
    /// deterministic ([`super::random`] says what is done about it).
    fn random(&self, out: &mut [u8]) -> bool;
    /// WASI `clock_time_get` (realtime): the wall clock, which Traefik
    /// gives its guests (`WithSysWalltime`).
    fn now(&self) -> SystemTime;
    /// Bytes of the instance's linear memory.
    fn memory_bytes(&self) -> usize;
}

#[cfg(target_arch = "wasm32")]
pub use imports::Abi;

#[cfg(target_arch = "wasm32")]
mod imports {
    #![allow(unsafe_code)] // FFI: each block documents its contract.

    use super::{BodyKind, HeaderKind, HttpWasm, Level};
    use std::time::SystemTime;

    #[link(wasm_import_module = "http_handler")]
    extern "C" {
        fn enable_features(features: u32) -> u32;
        fn get_config(buf: *mut u8, limit: u32) -> u32;
        fn log(level: i32, message: *const u8, len: u32);
        fn get_method(buf: *mut u8, limit: u32) -> u32;
        fn get_uri(buf: *mut u8, limit: u32) -> u32;
        fn get_header_names(kind: u32, buf: *mut u8, limit: u32) -> u64;
        fn get_header_values(
            kind: u32,
            name: *const u8,
            name_len: u32,
            buf: *mut u8,
            limit: u32,
        ) -> u64;
        fn set_header_value(kind: u32, name: *const u8, name_len: u32, value: *const u8, len: u32);
        fn remove_header(kind: u32, name: *const u8, name_len: u32);
        fn read_body(kind: u32, buf: *mut u8, limit: u32) -> u64;
        fn write_body(kind: u32, body: *const u8, len: u32);
        fn get_status_code() -> u32;
        fn set_status_code(status: u32);
    }

    #[link(wasm_import_module = "wasi_snapshot_preview1")]
    extern "C" {
        fn random_get(buf: *mut u8, len: usize) -> u16;
    }

    /// A length the ABI carries as i32: larger ones are not sent (no
    /// message, name or body the plugin writes comes near 2 GiB).
    fn len32(n: usize) -> Option<u32> {
        u32::try_from(n).ok().filter(|n| *n <= i32::MAX as u32)
    }

    /// The ABI's read convention: the host writes the value only when it
    /// fits `limit` and returns its length either way, so a first try
    /// with a small buffer learns the length, and a second reads it.
    fn read_value(call: impl Fn(*mut u8, u32) -> u64) -> (Vec<u8>, u32) {
        let mut buf = vec![0u8; 2048];
        for _ in 0..2 {
            let limit = len32(buf.len()).unwrap_or(0);
            let got = call(buf.as_mut_ptr(), limit);
            let (count, len) = ((got >> 32) as u32, got as u32);
            let len_usize = len as usize;
            if len_usize <= buf.len() {
                buf.truncate(len_usize);
                return (buf, count);
            }
            buf = vec![0u8; len_usize];
        }
        (Vec::new(), 0)
    }

    /// NUL-terminated values ("foo\0bar\0"), as the ABI writes several.
    fn split_nul(bytes: &[u8]) -> Vec<String> {
        let mut parts: Vec<&[u8]> = bytes.split(|b| *b == 0).collect();
        // The last value's terminator leaves an empty tail.
        parts.pop();
        parts
            .into_iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect()
    }

    fn text(call: impl Fn(*mut u8, u32) -> u32) -> String {
        let (bytes, _) = read_value(|buf, limit| u64::from(call(buf, limit)));
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The host, as the imports reach it.
    pub struct Abi;

    impl HttpWasm for Abi {
        fn enable_features(&mut self, features: u32) -> u32 {
            // SAFETY: no pointers.
            unsafe { enable_features(features) }
        }

        fn config(&self) -> Vec<u8> {
            // SAFETY: `buf` is a live, writable slice of `limit` bytes.
            read_value(|buf, limit| u64::from(unsafe { get_config(buf, limit) })).0
        }

        fn log(&self, level: Level, message: &str) {
            let Some(len) = len32(message.len()) else {
                return;
            };
            // SAFETY: `message` is live for the call.
            unsafe { log(level as i32, message.as_ptr(), len) }
        }

        fn method(&self) -> String {
            // SAFETY: `buf` is a live, writable slice of `limit` bytes.
            text(|buf, limit| unsafe { get_method(buf, limit) })
        }

        fn uri(&self) -> String {
            // SAFETY: as above.
            text(|buf, limit| unsafe { get_uri(buf, limit) })
        }

        fn header_names(&self, kind: HeaderKind) -> Vec<String> {
            // SAFETY: as above.
            let (bytes, _) =
                read_value(|buf, limit| unsafe { get_header_names(kind as u32, buf, limit) });
            split_nul(&bytes)
        }

        fn header_values(&self, kind: HeaderKind, name: &str) -> Vec<String> {
            let Some(name_len) = len32(name.len()).filter(|n| *n > 0) else {
                // An empty name makes the host trap.
                return Vec::new();
            };
            // SAFETY: `name` is live for the call; `buf` as above.
            let (bytes, _) = read_value(|buf, limit| unsafe {
                get_header_values(kind as u32, name.as_ptr(), name_len, buf, limit)
            });
            split_nul(&bytes)
        }

        fn set_header(&mut self, kind: HeaderKind, name: &str, value: &str) {
            let (Some(n), Some(v)) = (len32(name.len()).filter(|n| *n > 0), len32(value.len()))
            else {
                return;
            };
            // SAFETY: `name` and `value` are live for the call.
            unsafe { set_header_value(kind as u32, name.as_ptr(), n, value.as_ptr(), v) }
        }

        fn remove_header(&mut self, kind: HeaderKind, name: &str) {
            let Some(n) = len32(name.len()).filter(|n| *n > 0) else {
                return;
            };
            // SAFETY: `name` is live for the call.
            unsafe { remove_header(kind as u32, name.as_ptr(), n) }
        }

        fn read_body(&mut self, kind: BodyKind, max: usize) -> (Vec<u8>, bool) {
            let max = max.clamp(1, 1 << 30);
            let mut buf = vec![0u8; max];
            let limit = len32(max).unwrap_or(1);
            // SAFETY: `buf` is a live, writable slice of `limit` bytes
            // (never 0: the host traps on a zero limit).
            let got = unsafe { read_body(kind as u32, buf.as_mut_ptr(), limit) };
            let (eof, len) = ((got >> 32) != 0, (got as u32) as usize);
            buf.truncate(len.min(max));
            (buf, eof)
        }

        fn write_body(&mut self, kind: BodyKind, bytes: &[u8]) {
            let Some(len) = len32(bytes.len()) else {
                return;
            };
            // SAFETY: `bytes` is live for the call.
            unsafe { write_body(kind as u32, bytes.as_ptr(), len) }
        }

        fn status(&self) -> u16 {
            // SAFETY: no pointers.
            u16::try_from(unsafe { get_status_code() }).unwrap_or(0)
        }

        fn set_status(&mut self, status: u16) {
            // SAFETY: no pointers.
            unsafe { set_status_code(u32::from(status)) }
        }

        fn random(&self, out: &mut [u8]) -> bool {
            out.chunks_mut(65_536).all(|chunk| {
                // SAFETY: `chunk` is a live, writable slice of `len` bytes.
                unsafe { random_get(chunk.as_mut_ptr(), chunk.len()) == 0 }
            })
        }

        fn now(&self) -> SystemTime {
            SystemTime::now()
        }

        fn memory_bytes(&self) -> usize {
            core::arch::wasm32::memory_size(0).saturating_mul(65_536)
        }
    }
}
