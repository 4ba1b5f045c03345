//! The proxy-wasm host calls the plugin makes (ABI 0.2.1, the `env`
//! imports), without panics: every status becomes a value.
//!
//! The proxy-wasm Rust SDK's wrappers `panic!` on any status they do not
//! expect (and its dispatcher `unwrap`s them): a host that answers
//! `InternalFailure` to an HTTP call or `BadArgument` to a log line would
//! trap the VM and fail every stream on it. So the plugin does without the
//! SDK: these wrappers for the imports, `exports.rs` for the exports.
#![allow(unsafe_code)] // FFI: the only unsafe code in the crate; each block documents its contract.

use std::ptr::null_mut;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::host::HeaderMap;

pub use crate::host::{HostError, HostResult};

const OK: u32 = 0;
const NOT_FOUND: u32 = 1;

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
    fn proxy_close_stream(stream: u32) -> u32;
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
    fn proxy_http_call(
        upstream: *const u8,
        upstream_len: usize,
        headers: *const u8,
        headers_len: usize,
        body: *const u8,
        body_len: usize,
        trailers: *const u8,
        trailers_len: usize,
        timeout_ms: u32,
        token: *mut u32,
    ) -> u32;
    fn proxy_set_effective_context(context: u32) -> u32;
    fn proxy_log(level: u32, message: *const u8, len: usize) -> u32;
    fn proxy_get_log_level(level: *mut u32) -> u32;
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

/// Memory the host asks for (`proxy_on_memory_allocate`) to hand a buffer
/// back: a boxed slice of exactly `size` bytes, released to the host.
pub fn allocate(size: usize) -> *mut u8 {
    let slice: Box<[u8]> = vec![0u8; size].into_boxed_slice();
    Box::into_raw(slice).cast::<u8>()
}

/// Takes ownership of a buffer the host filled in memory from [`allocate`].
fn owned(data: *mut u8, size: usize) -> Vec<u8> {
    if data.is_null() || size == 0 {
        return Vec::new();
    }
    // SAFETY: the host filled `size` bytes of memory it obtained from
    // `proxy_on_memory_allocate(size)`, which [`allocate`] made as a boxed
    // slice of exactly `size` bytes (capacity == length); ownership passes
    // to us here.
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

/// A shared value and its compare-and-swap version.
pub fn get_shared_data(key: &str) -> HostResult<Option<(Vec<u8>, u32)>> {
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

/// Stores a value if the key is still at version `cas` (0: whatever it is
/// at); `CasMismatch` otherwise.
pub fn set_shared_data(key: &str, value: &[u8], cas: u32) -> HostResult<()> {
    // SAFETY: `key` and `value` are live slices for the call.
    status(unsafe {
        proxy_set_shared_data(key.as_ptr(), key.len(), value.as_ptr(), value.len(), cas)
    })
}

/// Every header of a map, in order (`Ok(empty)` when there are none).
/// Pairs that are not UTF-8 are left out.
pub fn get_headers(kind: Headers) -> HostResult<HeaderMap> {
    let (mut data, mut size) = (null_mut(), 0usize);
    // SAFETY: out-pointers to locals.
    let code = unsafe { proxy_get_header_map_pairs(kind as u32, &mut data, &mut size) };
    match code {
        OK => Ok(parse_pairs(&owned(data, size))),
        NOT_FOUND => Ok(HeaderMap::default()),
        other => Err(HostError(other)),
    }
}

/// The pairs encoding [`pairs`] writes, read back; a truncated map ends
/// where its bytes do.
fn parse_pairs(bytes: &[u8]) -> HeaderMap {
    let u32_at = |at: usize| -> Option<usize> {
        let b: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
        usize::try_from(u32::from_le_bytes(b)).ok()
    };
    let Some(count) = u32_at(0) else {
        return HeaderMap::default();
    };
    let mut out = HeaderMap::default();
    let mut p = count.saturating_mul(8).saturating_add(4);
    for n in 0..count {
        let at = n.saturating_mul(8).saturating_add(4);
        let (Some(k), Some(v)) = (u32_at(at), u32_at(at.saturating_add(4))) else {
            break;
        };
        let key = bytes.get(p..p.saturating_add(k));
        p = p.saturating_add(k).saturating_add(1);
        let value = bytes.get(p..p.saturating_add(v));
        p = p.saturating_add(v).saturating_add(1);
        let (Some(key), Some(value)) = (key, value) else {
            break;
        };
        if let (Ok(key), Ok(value)) = (std::str::from_utf8(key), std::str::from_utf8(value)) {
            out.push(key, value);
        }
    }
    out
}

/// Answers the current request with this response instead of the
/// upstream's (ABI `send_local_response`; Envoy's `sendLocalReply`).
pub fn send_local_response(
    status: u16,
    details: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HostResult<()> {
    let headers = pairs(headers);
    // SAFETY: every slice is live for the call; -1: not gRPC.
    self::status(unsafe {
        proxy_send_local_response(
            u32::from(status),
            details.as_ptr(),
            details.len(),
            body.as_ptr(),
            body.len(),
            headers.as_ptr(),
            headers.len(),
            -1,
        )
    })
}

/// Calls the root context's `proxy_on_tick` every `period`.
pub fn set_tick_period(period: Duration) -> HostResult<()> {
    let ms = u32::try_from(period.as_millis()).unwrap_or(u32::MAX);
    // SAFETY: no pointers.
    status(unsafe { proxy_set_tick_period_milliseconds(ms) })
}

/// Fills `buf` with random bytes from the host (WASI `random_get`); its
/// errno as the error.
pub fn random(buf: &mut [u8]) -> HostResult<()> {
    for chunk in buf.chunks_mut(65_536) {
        // SAFETY: `chunk` is a live, writable slice of `len` bytes.
        let errno = unsafe { random_get(chunk.as_mut_ptr(), chunk.len()) };
        if errno != 0 {
            return Err(HostError(u32::from(errno)));
        }
    }
    Ok(())
}

/// Starts an HTTP call to an Envoy cluster; returns its token.
pub fn http_call(
    cluster: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> HostResult<u32> {
    let headers = pairs(headers);
    let trailers = pairs(&[]);
    let timeout_ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
    let mut token = 0u32;
    // SAFETY: every pointer is a live slice for the call; `token` a local.
    let code = unsafe {
        proxy_http_call(
            cluster.as_ptr(),
            cluster.len(),
            headers.as_ptr(),
            headers.len(),
            body.as_ptr(),
            body.len(),
            trailers.as_ptr(),
            trailers.len(),
            timeout_ms,
            &mut token,
        )
    };
    status(code).map(|()| token)
}

/// A header map in the ABI's pairs encoding: the count, each name's and
/// value's length (u32 little-endian), then each name and value followed by
/// a NUL.
fn pairs(map: &[(&str, &str)]) -> Vec<u8> {
    let len = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
    let size = 4 + map
        .iter()
        .map(|(n, v)| n.len() + v.len() + 10)
        .sum::<usize>();
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(&len(map.len()));
    for (name, value) in map {
        out.extend_from_slice(&len(name.len()));
        out.extend_from_slice(&len(value.len()));
    }
    for (name, value) in map {
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        out.extend_from_slice(value.as_bytes());
        out.push(0);
    }
    out
}

/// Makes `context` the one later host calls address (a callout reply may
/// arrive on another context).
pub fn set_effective_context(context: u32) -> HostResult<()> {
    // SAFETY: no pointers.
    status(unsafe { proxy_set_effective_context(context) })
}

/// Log levels of the ABI.
#[derive(Clone, Copy)]
#[repr(u32)]
pub enum Level {
    Trace = 0,
    Debug = 1,
    Info = 2,
    Warn = 3,
    Error = 4,
}

/// The lowest level the host writes (ABI 0.2.1 `proxy_get_log_level`:
/// Envoy's level for wasm logs, which `/logging` may change at run time).
pub fn log_level() -> HostResult<u32> {
    let mut level = 0u32;
    // SAFETY: out-pointer to a local.
    status(unsafe { proxy_get_log_level(&mut level) })?;
    Ok(level)
}

pub fn log(level: Level, message: &str) -> HostResult<()> {
    // SAFETY: `message` is live for the call.
    status(unsafe { proxy_log(level as u32, message.as_ptr(), message.len()) })
}

/// Resumes a paused direction (ABI `continue_stream`: 0 the request, 1 the
/// response).
pub fn resume(direction: crate::host::Direction) -> HostResult<()> {
    let stream = match direction {
        crate::host::Direction::Request => 0,
        crate::host::Direction::Response => 1,
    };
    // SAFETY: no pointers.
    status(unsafe { proxy_continue_stream(stream) })
}

/// Ends the stream (ABI `close_stream`, 0: the request side; Envoy resets
/// the stream).
pub fn close(direction: crate::host::Direction) -> HostResult<()> {
    let stream = match direction {
        crate::host::Direction::Request => 0,
        crate::host::Direction::Response => 1,
    };
    // SAFETY: no pointers.
    status(unsafe { proxy_close_stream(stream) })
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
