//! The proxy-wasm host calls the plugin makes, without panics.
//!
//! The proxy-wasm Rust SDK's wrappers `panic!` on any status they do not
//! expect (and its `Context` methods `unwrap` them): a host that answers
//! `InternalFailure` to an HTTP call, or `NotFound` to a body write outside
//! a buffering callback, would trap the VM and fail every stream on it. So
//! the adapter calls the ABI (proxy-wasm ABI 0.2.1, the `env` imports the
//! SDK itself declares) through these wrappers, which turn every status into
//! a value. The SDK still provides the callback dispatcher and the memory
//! allocator the host uses to hand buffers back.
#![allow(unsafe_code)] // FFI: the only unsafe code in the crate; each block documents its contract.

use std::ptr::null_mut;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A host status other than `Ok` (proxy-wasm ABI `WasmResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostError(pub u32);

type HostResult<T> = Result<T, HostError>;

const OK: u32 = 0;
const NOT_FOUND: u32 = 1;
/// `WasmResult::CasMismatch`: the key changed since it was read.
pub const CAS_MISMATCH: u32 = 8;

/// `BufferType` of the ABI.
#[derive(Clone, Copy)]
#[repr(u32)]
pub enum Buffer {
    RequestBody = 0,
    ResponseBody = 1,
    CallResponseBody = 4,
    PluginConfiguration = 7,
}

/// The header maps (`MapType` of the ABI) the plugin uses.
#[derive(Clone, Copy)]
#[repr(u32)]
pub enum Headers {
    Request = 0,
    Response = 2,
    CallResponse = 6,
}

#[link(wasm_import_module = "env")]
extern "C" {
    fn proxy_get_buffer_bytes(
        kind: u32,
        start: usize,
        max: usize,
        data: *mut *mut u8,
        size: *mut usize,
    ) -> u32;
    fn proxy_set_buffer_bytes(
        kind: u32,
        start: usize,
        size: usize,
        data: *const u8,
        len: usize,
    ) -> u32;
    fn proxy_get_header_map_value(
        kind: u32,
        key: *const u8,
        key_len: usize,
        data: *mut *mut u8,
        size: *mut usize,
    ) -> u32;
    fn proxy_replace_header_map_value(
        kind: u32,
        key: *const u8,
        key_len: usize,
        value: *const u8,
        value_len: usize,
    ) -> u32;
    fn proxy_remove_header_map_value(kind: u32, key: *const u8, key_len: usize) -> u32;
    fn proxy_get_property(
        path: *const u8,
        path_len: usize,
        data: *mut *mut u8,
        size: *mut usize,
    ) -> u32;
    fn proxy_set_property(
        path: *const u8,
        path_len: usize,
        value: *const u8,
        value_len: usize,
    ) -> u32;
    fn proxy_get_shared_data(
        key: *const u8,
        key_len: usize,
        data: *mut *mut u8,
        size: *mut usize,
        cas: *mut u32,
    ) -> u32;
    fn proxy_set_shared_data(
        key: *const u8,
        key_len: usize,
        value: *const u8,
        value_len: usize,
        cas: u32,
    ) -> u32;
    fn proxy_continue_stream(stream: u32) -> u32;
    fn proxy_get_header_map_pairs(kind: u32, data: *mut *mut u8, size: *mut usize) -> u32;
    fn proxy_send_local_response(
        status: u32,
        details: *const u8,
        details_len: usize,
        body: *const u8,
        body_len: usize,
        headers: *const u8,
        headers_len: usize,
        grpc_status: i32,
    ) -> u32;
    fn proxy_set_tick_period_milliseconds(period: u32) -> u32;
    fn proxy_get_current_time_nanoseconds(time: *mut u64) -> u32;
    fn proxy_define_metric(kind: u32, name: *const u8, name_len: usize, id: *mut u32) -> u32;
    fn proxy_increment_metric(id: u32, offset: i64) -> u32;
    fn proxy_record_metric(id: u32, value: u64) -> u32;
}

// WASI preview 1, which Envoy's proxy-wasm host implements
// (proxy-wasm-cpp-host `wasi_unstable_random_get`: BoringSSL `RAND_bytes`,
// at most 64 KiB per call).
#[link(wasm_import_module = "wasi_snapshot_preview1")]
extern "C" {
    fn random_get(buf: *mut u8, len: usize) -> u16;
}

/// Takes ownership of a buffer the host allocated through the SDK's
/// `proxy_on_memory_allocate` (a `Vec<u8>` of exactly `size` capacity).
fn owned(data: *mut u8, size: usize) -> Vec<u8> {
    if data.is_null() || size == 0 {
        return Vec::new();
    }
    // SAFETY: the host filled `size` bytes of memory it obtained from
    // `proxy_on_memory_allocate(size)`, which the SDK implements as
    // `Vec::with_capacity(size)` + `forget`; ownership passes to us here.
    unsafe { Vec::from_raw_parts(data, size, size) }
}

fn status(code: u32) -> HostResult<()> {
    if code == OK {
        Ok(())
    } else {
        Err(HostError(code))
    }
}

/// Bytes `start..start+max` of a buffer; `Ok(None)` when the host has none.
pub fn get_buffer(kind: Buffer, start: usize, max: usize) -> HostResult<Option<Vec<u8>>> {
    let (mut data, mut size) = (null_mut(), 0usize);
    // SAFETY: out-pointers to locals; the host writes a pointer and a size.
    let code = unsafe { proxy_get_buffer_bytes(kind as u32, start, max, &mut data, &mut size) };
    match code {
        OK => Ok(Some(owned(data, size))),
        NOT_FOUND => Ok(None),
        other => Err(HostError(other)),
    }
}

/// Replaces `size` bytes at `start` of a buffer with `value`.
pub fn set_buffer(kind: Buffer, start: usize, size: usize, value: &[u8]) -> HostResult<()> {
    // SAFETY: `value` is a live slice for the duration of the call.
    status(unsafe { proxy_set_buffer_bytes(kind as u32, start, size, value.as_ptr(), value.len()) })
}

/// One header value; `Ok(None)` when absent. Not UTF-8 counts as absent.
pub fn get_header(kind: Headers, name: &str) -> HostResult<Option<String>> {
    let (mut data, mut size) = (null_mut(), 0usize);
    // SAFETY: `name` is live for the call; out-pointers to locals.
    let code = unsafe {
        proxy_get_header_map_value(kind as u32, name.as_ptr(), name.len(), &mut data, &mut size)
    };
    match code {
        OK => Ok(String::from_utf8(owned(data, size)).ok()),
        NOT_FOUND => Ok(None),
        other => Err(HostError(other)),
    }
}

/// Sets (or, with `None`, removes) a header.
pub fn set_header(kind: Headers, name: &str, value: Option<&str>) -> HostResult<()> {
    // SAFETY: `name` and `value` are live slices for the call.
    status(unsafe {
        match value {
            Some(v) => proxy_replace_header_map_value(
                kind as u32,
                name.as_ptr(),
                name.len(),
                v.as_ptr(),
                v.len(),
            ),
            None => proxy_remove_header_map_value(kind as u32, name.as_ptr(), name.len()),
        }
    })
}

/// Property paths are their segments joined by NUL (ABI `get_property`).
fn path(segments: &[&str]) -> Vec<u8> {
    segments.join("\0").into_bytes()
}

pub fn get_property(segments: &[&str]) -> HostResult<Option<Vec<u8>>> {
    let p = path(segments);
    let (mut data, mut size) = (null_mut(), 0usize);
    // SAFETY: `p` is live for the call; out-pointers to locals.
    let code = unsafe { proxy_get_property(p.as_ptr(), p.len(), &mut data, &mut size) };
    match code {
        OK => Ok(Some(owned(data, size))),
        NOT_FOUND => Ok(None),
        other => Err(HostError(other)),
    }
}

pub fn set_property(segments: &[&str], value: &[u8]) -> HostResult<()> {
    let p = path(segments);
    // SAFETY: `p` and `value` are live slices for the call.
    status(unsafe { proxy_set_property(p.as_ptr(), p.len(), value.as_ptr(), value.len()) })
}

pub fn get_shared_data(key: &str) -> HostResult<Option<Vec<u8>>> {
    get_shared_data_cas(key).map(|v| v.map(|(value, _)| value))
}

/// A shared value and its compare-and-swap version.
pub fn get_shared_data_cas(key: &str) -> HostResult<Option<(Vec<u8>, u32)>> {
    let (mut data, mut size, mut cas) = (null_mut(), 0usize, 0u32);
    // SAFETY: `key` is live for the call; out-pointers to locals.
    let code =
        unsafe { proxy_get_shared_data(key.as_ptr(), key.len(), &mut data, &mut size, &mut cas) };
    match code {
        OK => Ok(Some((owned(data, size), cas))),
        NOT_FOUND => Ok(None),
        other => Err(HostError(other)),
    }
}

/// Stores a value; no compare-and-swap (cas 0).
pub fn set_shared_data(key: &str, value: &[u8]) -> HostResult<()> {
    set_shared_data_cas(key, value, 0)
}

/// Stores a value if the key is still at version `cas` (0: whatever it
/// is at); [`CAS_MISMATCH`] otherwise.
pub fn set_shared_data_cas(key: &str, value: &[u8], cas: u32) -> HostResult<()> {
    // SAFETY: `key` and `value` are live slices for the call.
    status(unsafe {
        proxy_set_shared_data(key.as_ptr(), key.len(), value.as_ptr(), value.len(), cas)
    })
}

/// Every header of a map, in order (`Ok(empty)` when there are none).
/// Pairs that are not UTF-8 are left out.
pub fn get_headers(kind: Headers) -> HostResult<Vec<(String, String)>> {
    let (mut data, mut size) = (null_mut(), 0usize);
    // SAFETY: out-pointers to locals.
    let code = unsafe { proxy_get_header_map_pairs(kind as u32, &mut data, &mut size) };
    match code {
        OK => Ok(parse_pairs(&owned(data, size))),
        NOT_FOUND => Ok(Vec::new()),
        other => Err(HostError(other)),
    }
}

/// The ABI's map encoding: u32 count, then (u32 key length, u32 value
/// length) per pair, then each key and value followed by a NUL.
fn parse_pairs(bytes: &[u8]) -> Vec<(String, String)> {
    let u32_at = |at: usize| -> Option<usize> {
        let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        usize::try_from(u32::from_le_bytes(b)).ok()
    };
    let Some(count) = u32_at(0) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut p = 4usize.saturating_add(count.saturating_mul(8));
    for n in 0..count {
        let (Some(k), Some(v)) = (u32_at(4 + n * 8), u32_at(8 + n * 8)) else {
            break;
        };
        let key = bytes.get(p..p.saturating_add(k));
        p = p.saturating_add(k + 1);
        let value = bytes.get(p..p.saturating_add(v));
        p = p.saturating_add(v + 1);
        if let (Some(key), Some(value)) = (key, value) {
            if let (Ok(key), Ok(value)) = (std::str::from_utf8(key), std::str::from_utf8(value)) {
                out.push((key.to_string(), value.to_string()));
            }
        }
    }
    out
}

fn serialize_pairs(pairs: &[(String, String)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&u32::try_from(pairs.len()).unwrap_or(0).to_le_bytes());
    for (k, v) in pairs {
        out.extend_from_slice(&u32::try_from(k.len()).unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&u32::try_from(v.len()).unwrap_or(0).to_le_bytes());
    }
    for (k, v) in pairs {
        out.extend_from_slice(k.as_bytes());
        out.push(0);
        out.extend_from_slice(v.as_bytes());
        out.push(0);
    }
    out
}

/// Answers the current request with this response instead of the
/// upstream's (ABI `send_local_response`; Envoy's `sendLocalReply`).
pub fn send_local_response(
    status: u16,
    details: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> HostResult<()> {
    let pairs = serialize_pairs(headers);
    // SAFETY: every slice is live for the call; -1: not gRPC.
    self::status(unsafe {
        proxy_send_local_response(
            u32::from(status),
            details.as_ptr(),
            details.len(),
            body.as_ptr(),
            body.len(),
            pairs.as_ptr(),
            pairs.len(),
            -1,
        )
    })
}

/// Calls the root context's `on_tick` every `period`.
pub fn set_tick_period(period: Duration) -> HostResult<()> {
    let ms = u32::try_from(period.as_millis()).unwrap_or(u32::MAX);
    // SAFETY: no pointers.
    status(unsafe { proxy_set_tick_period_milliseconds(ms) })
}

/// Fills `buf` with random bytes from the host (WASI `random_get`).
pub fn random(buf: &mut [u8]) -> bool {
    for chunk in buf.chunks_mut(65_536) {
        // SAFETY: `chunk` is a live, writable slice of `len` bytes.
        if unsafe { random_get(chunk.as_mut_ptr(), chunk.len()) } != 0 {
            return false;
        }
    }
    true
}

/// Starts an HTTP call to an Envoy cluster; returns its token.
///
/// This one host call goes through the SDK: its dispatcher routes
/// `on_http_call_response` by a token → context map that only the SDK's
/// `dispatch_http_call` fills, and it traps on a token it does not know (a
/// raw `proxy_http_call` left every reply trapping the VM and the response
/// paused for good). The SDK panics only on statuses the ABI does not
/// specify for this call (it returns `Ok`, `BadArgument` for an unknown
/// cluster or missing pseudo-headers, `InternalFailure` when the host
/// cannot send; `InvalidMemoryAccess` cannot happen with live slices).
pub fn http_call(
    cluster: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> HostResult<u32> {
    proxy_wasm::hostcalls::dispatch_http_call(
        cluster,
        headers.to_vec(),
        Some(body),
        Vec::new(),
        timeout,
    )
    .map_err(|s| HostError(s as u32))
}

/// Resumes a paused request (ABI `continue_stream(HttpRequest)`).
pub fn resume_request() -> HostResult<()> {
    // SAFETY: no pointers.
    status(unsafe { proxy_continue_stream(0) })
}

/// Resumes a paused response (ABI `continue_stream(HttpResponse)`).
pub fn resume_response() -> HostResult<()> {
    // SAFETY: no pointers.
    status(unsafe { proxy_continue_stream(1) })
}

pub fn now() -> SystemTime {
    let mut nanos = 0u64;
    // SAFETY: out-pointer to a local.
    let code = unsafe { proxy_get_current_time_nanoseconds(&mut nanos) };
    if code == OK {
        UNIX_EPOCH + Duration::from_nanos(nanos)
    } else {
        UNIX_EPOCH
    }
}

/// Defines a counter; returns its id.
pub fn define_counter(name: &str) -> HostResult<u32> {
    let mut id = 0u32;
    // SAFETY: `name` is live for the call; `id` is a local.
    status(unsafe { proxy_define_metric(0, name.as_ptr(), name.len(), &mut id) }).map(|()| id)
}

pub fn increment(id: u32, offset: i64) -> HostResult<()> {
    // SAFETY: no pointers.
    status(unsafe { proxy_increment_metric(id, offset) })
}

/// Defines a gauge; returns its id.
pub fn define_gauge(name: &str) -> HostResult<u32> {
    let mut id = 0u32;
    // SAFETY: `name` is live for the call; `id` is a local.
    status(unsafe { proxy_define_metric(1, name.as_ptr(), name.len(), &mut id) }).map(|()| id)
}

pub fn record(id: u32, value: u64) -> HostResult<()> {
    // SAFETY: no pointers.
    status(unsafe { proxy_record_metric(id, value) })
}

/// Bytes of this VM's linear memory. It only grows (wasm has no way to
/// give pages back), so it is the VM's peak since it started.
pub fn memory_bytes() -> usize {
    #[cfg(target_arch = "wasm32")]
    {
        core::arch::wasm32::memory_size(0).saturating_mul(65536)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        0
    }
}
