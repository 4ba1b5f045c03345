//! The floor filter: every response body chunk is copied into the VM and
//! written back unchanged, nothing else. The cost of crossing the wasm
//! boundary for that many bytes, which the plugin pays whenever it reads a
//! body it may rewrite. Configured `pass`, it does not even that: every
//! callback returns at once, the least any wasm filter costs (the floor of
//! traffic the plugin leaves alone).
//!
//! Configured `calls`, it makes the host calls the plugin makes on a
//! `tools/call` it rewrites at its defaults, and does none of the work
//! between them: the request's header map and body read, the response's
//! header map read and `content-length` removed, each body chunk taken
//! into the VM (the host's buffer emptied) and the whole written back at
//! the end, the decision record set as a property, three counters
//! incremented and the log level asked. A request whose body does not name
//! `tools/call` costs it what the plugin's untouched requests cost: the
//! request read, one counter. Each host call that hands bytes to the
//! filter has the host allocate them in the VM (a call into the module),
//! which is most of what a call costs (issue 14's floor measurements).
//!
//! Like the plugin (src/adapter/), the proxy-wasm ABI 0.2.1 exports are
//! written by hand, and like the plugin's default configuration
//! (`hold_headers: false`) the response's `content-length` is removed in
//! the headers callback: a filter that may change a body's size must.
#![allow(unsafe_code)]

use std::alloc::{alloc, Layout};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ptr::null_mut;

const REQUEST_BODY: u32 = 0;
const RESPONSE_BODY: u32 = 1;
const REQUEST_HEADERS: u32 = 0;
const RESPONSE_HEADERS: u32 = 2;
const PLUGIN_CONFIGURATION: u32 = 7;
const COUNTER: u32 = 0;
const CONTINUE: u32 = 0;
const STOP_AND_BUFFER: u32 = 1;
/// About the size of the plugin's record of one TOON rewrite.
const RECORD: &[u8] = br#"{"decisions":[{"stage":"toon","outcome":"rewritten","transform":"toon","bytes_before":1049,"bytes_after":512,"tokens_before":390,"tokens_after":205,"tool":"bench","server":"bench"}]}"#;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Pass,
    Copy,
    Calls,
}

/// What one stream does, and (mode `calls`) what it holds.
struct Stream {
    mode: Mode,
    tools_call: bool,
    held: Vec<u8>,
}

thread_local! {
    /// Root context → its mode.
    static ROOTS: RefCell<HashMap<u32, Mode>> = RefCell::new(HashMap::new());
    static STREAMS: RefCell<HashMap<u32, Stream>> = RefCell::new(HashMap::new());
    /// The three counters of mode `calls`.
    static COUNTERS: RefCell<[u32; 3]> = const { RefCell::new([0; 3]) };
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
    fn proxy_remove_header_map_value(kind: u32, key: *const u8, key_len: usize) -> u32;
    fn proxy_get_header_map_pairs(kind: u32, data: *mut *mut u8, size: *mut usize) -> u32;
    fn proxy_define_metric(kind: u32, name: *const u8, len: usize, id: *mut u32) -> u32;
    fn proxy_increment_metric(id: u32, by: i64) -> u32;
    fn proxy_set_property(path: *const u8, path_len: usize, value: *const u8, len: usize) -> u32;
    fn proxy_get_log_level(level: *mut u32) -> u32;
}

#[no_mangle]
pub extern "C" fn proxy_abi_version_0_2_1() {}

/// Memory for a buffer the host hands over: `size` bytes the host fills
/// before the filter reads them.
#[no_mangle]
pub extern "C" fn proxy_on_memory_allocate(size: usize) -> *mut u8 {
    match Layout::array::<u8>(size.max(1)) {
        // SAFETY: a layout of at least one byte.
        Ok(layout) => unsafe { alloc(layout) },
        Err(_) => null_mut(),
    }
}

#[no_mangle]
pub extern "C" fn proxy_on_context_create(id: u32, parent: u32) {
    if parent == 0 {
        ROOTS.with(|r| r.borrow_mut().insert(id, Mode::Copy));
        return;
    }
    let mode = ROOTS.with(|r| r.borrow().get(&parent).copied().unwrap_or(Mode::Copy));
    let stream = Stream {
        mode,
        tools_call: false,
        held: Vec::new(),
    };
    STREAMS.with(|s| s.borrow_mut().insert(id, stream));
}

fn mode(id: u32) -> Mode {
    state(id).0
}

/// A stream's mode, and whether its request named `tools/call`.
fn state(id: u32) -> (Mode, bool) {
    STREAMS.with(|s| {
        s.borrow()
            .get(&id)
            .map_or((Mode::Pass, false), |s| (s.mode, s.tools_call))
    })
}

/// Takes ownership of bytes the host allocated in the VM and filled.
///
/// SAFETY: `data` is null or `len` bytes from proxy_on_memory_allocate(len).
unsafe fn owned(data: *mut u8, len: usize) -> Option<Vec<u8>> {
    if data.is_null() || len == 0 {
        return None;
    }
    Some(Vec::from_raw_parts(data, len, len))
}

fn get_buffer(kind: u32, start: usize, max: usize) -> Option<Vec<u8>> {
    let (mut data, mut len) = (null_mut(), 0usize);
    // SAFETY: out-pointers to locals; the host writes a pointer into memory
    // from proxy_on_memory_allocate(len) and the length it filled.
    let code = unsafe { proxy_get_buffer_bytes(kind, start, max, &mut data, &mut len) };
    if code != 0 {
        return None;
    }
    // SAFETY: as the host filled them.
    unsafe { owned(data, len) }
}

fn set_buffer(kind: u32, size: usize, bytes: &[u8]) {
    // SAFETY: a live slice for the duration of the call.
    unsafe { proxy_set_buffer_bytes(kind, 0, size, bytes.as_ptr(), bytes.len()) };
}

/// The header map read whole, as the plugin reads it (and drops it).
fn header_pairs(kind: u32) -> Option<Vec<u8>> {
    let (mut data, mut len) = (null_mut(), 0usize);
    // SAFETY: as get_buffer.
    let code = unsafe { proxy_get_header_map_pairs(kind, &mut data, &mut len) };
    if code != 0 {
        return None;
    }
    // SAFETY: as the host filled them.
    unsafe { owned(data, len) }
}

fn count(which: usize) {
    let id = COUNTERS.with(|c| c.borrow().get(which).copied().unwrap_or(0));
    // SAFETY: no pointers.
    unsafe { proxy_increment_metric(id, 1) };
}

#[no_mangle]
pub extern "C" fn proxy_on_vm_start(_root: u32, _size: usize) -> u32 {
    1
}

#[no_mangle]
pub extern "C" fn proxy_on_configure(root: u32, size: usize) -> u32 {
    let config = get_buffer(PLUGIN_CONFIGURATION, 0, size).unwrap_or_default();
    let mode = match config.trim_ascii() {
        b"pass" => Mode::Pass,
        b"calls" => Mode::Calls,
        _ => Mode::Copy,
    };
    if mode == Mode::Calls {
        for (i, name) in ["floor_decided", "floor_rewritten", "floor_bytes"]
            .iter()
            .enumerate()
        {
            let mut id = 0u32;
            // SAFETY: a live name and an out-pointer to a local.
            unsafe { proxy_define_metric(COUNTER, name.as_ptr(), name.len(), &mut id) };
            COUNTERS.with(|c| {
                if let Some(slot) = c.borrow_mut().get_mut(i) {
                    *slot = id;
                }
            });
        }
    }
    ROOTS.with(|r| r.borrow_mut().insert(root, mode));
    1
}

#[no_mangle]
pub extern "C" fn proxy_on_request_headers(id: u32, _headers: usize, _end: u32) -> u32 {
    if mode(id) == Mode::Calls {
        header_pairs(REQUEST_HEADERS);
    }
    CONTINUE
}

#[no_mangle]
pub extern "C" fn proxy_on_request_body(id: u32, size: usize, end: u32) -> u32 {
    if mode(id) != Mode::Calls {
        return CONTINUE;
    }
    if end == 0 {
        // The whole body is read at its end, as the plugin reads it.
        return STOP_AND_BUFFER;
    }
    let body = get_buffer(REQUEST_BODY, 0, size).unwrap_or_default();
    let tools_call = body.windows(12).any(|w| w == b"\"tools/call\"");
    STREAMS.with(|s| {
        if let Some(s) = s.borrow_mut().get_mut(&id) {
            s.tools_call = tools_call;
        }
    });
    if !tools_call {
        count(0);
    }
    CONTINUE
}

#[no_mangle]
pub extern "C" fn proxy_on_response_headers(id: u32, _headers: usize, _end: u32) -> u32 {
    match state(id) {
        (Mode::Pass, _) | (Mode::Calls, false) => return CONTINUE,
        (Mode::Calls, true) => {
            header_pairs(RESPONSE_HEADERS);
        }
        (Mode::Copy, _) => {}
    }
    let name = b"content-length";
    // SAFETY: a live slice for the duration of the call. A refusal leaves
    // the length, which the unchanged body still matches.
    unsafe { proxy_remove_header_map_value(RESPONSE_HEADERS, name.as_ptr(), name.len()) };
    CONTINUE
}

#[no_mangle]
pub extern "C" fn proxy_on_response_body(id: u32, size: usize, end: u32) -> u32 {
    match mode(id) {
        Mode::Pass => CONTINUE,
        Mode::Copy if size == 0 => CONTINUE,
        Mode::Copy => {
            if let Some(bytes) = get_buffer(RESPONSE_BODY, 0, size) {
                set_buffer(RESPONSE_BODY, size, &bytes);
            }
            CONTINUE
        }
        Mode::Calls => calls_response_body(id, size, end != 0),
    }
}

/// Mode `calls`: each chunk taken into the VM, the whole written back at
/// the end, then the record and the counters.
fn calls_response_body(id: u32, size: usize, end: bool) -> u32 {
    let Some(mut stream) = STREAMS.with(|s| s.borrow_mut().remove(&id)) else {
        return CONTINUE;
    };
    if stream.tools_call {
        if let Some(chunk) = get_buffer(RESPONSE_BODY, 0, size) {
            stream.held.extend_from_slice(&chunk);
        }
        if !end {
            set_buffer(RESPONSE_BODY, size, &[]);
        } else {
            set_buffer(RESPONSE_BODY, size, &stream.held);
            stream.held = Vec::new();
            let mut level = 0u32;
            let path = b"mcp_toon_floor";
            // SAFETY: live slices and an out-pointer to a local.
            unsafe {
                proxy_get_log_level(&mut level);
                proxy_set_property(path.as_ptr(), path.len(), RECORD.as_ptr(), RECORD.len());
            }
            (0..3).for_each(count);
        }
    }
    STREAMS.with(|s| s.borrow_mut().insert(id, stream));
    CONTINUE
}

#[no_mangle]
pub extern "C" fn proxy_on_done(_id: u32) -> u32 {
    1
}

#[no_mangle]
pub extern "C" fn proxy_on_log(_id: u32) {}

#[no_mangle]
pub extern "C" fn proxy_on_delete(id: u32) {
    STREAMS.with(|s| s.borrow_mut().remove(&id));
    ROOTS.with(|r| r.borrow_mut().remove(&id));
}
