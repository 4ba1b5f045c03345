//! The floor filter: every response body chunk is copied into the VM and
//! written back unchanged, nothing else. The cost of crossing the wasm
//! boundary for that many bytes, which the plugin pays whenever it reads a
//! body it may rewrite. Configured `pass`, it does not even that: every
//! callback returns at once, the least any wasm filter costs (the floor of
//! traffic the plugin leaves alone).
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

const RESPONSE_BODY: u32 = 1;
const RESPONSE_HEADERS: u32 = 2;
const PLUGIN_CONFIGURATION: u32 = 7;
const CONTINUE: u32 = 0;

thread_local! {
    /// Root context → copies bodies (configuration not `pass`).
    static ROOTS: RefCell<HashMap<u32, bool>> = RefCell::new(HashMap::new());
    /// Streams that copy bodies.
    static COPIES: RefCell<HashMap<u32, bool>> = RefCell::new(HashMap::new());
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
        ROOTS.with(|r| r.borrow_mut().insert(id, true));
        return;
    }
    let copy = ROOTS.with(|r| r.borrow().get(&parent).copied().unwrap_or(true));
    COPIES.with(|c| c.borrow_mut().insert(id, copy));
}

fn copies(id: u32) -> bool {
    COPIES.with(|c| c.borrow().get(&id).copied().unwrap_or(false))
}

/// Takes ownership of a buffer the host filled.
fn get_buffer(kind: u32, start: usize, max: usize) -> Option<Vec<u8>> {
    let (mut data, mut len) = (null_mut(), 0usize);
    // SAFETY: out-pointers to locals; the host writes a pointer into memory
    // from proxy_on_memory_allocate(len) and the length it filled.
    let code = unsafe { proxy_get_buffer_bytes(kind, start, max, &mut data, &mut len) };
    if code != 0 || data.is_null() || len == 0 {
        return None;
    }
    // SAFETY: `len` bytes the host allocated through
    // proxy_on_memory_allocate(len) and filled; ownership passes here.
    Some(unsafe { Vec::from_raw_parts(data, len, len) })
}

#[no_mangle]
pub extern "C" fn proxy_on_vm_start(_root: u32, _size: usize) -> u32 {
    1
}

#[no_mangle]
pub extern "C" fn proxy_on_configure(root: u32, size: usize) -> u32 {
    let config = get_buffer(PLUGIN_CONFIGURATION, 0, size).unwrap_or_default();
    let copy = config.trim_ascii() != b"pass";
    ROOTS.with(|r| r.borrow_mut().insert(root, copy));
    1
}

#[no_mangle]
pub extern "C" fn proxy_on_request_headers(_id: u32, _headers: usize, _end: u32) -> u32 {
    CONTINUE
}

#[no_mangle]
pub extern "C" fn proxy_on_request_body(_id: u32, _size: usize, _end: u32) -> u32 {
    CONTINUE
}

#[no_mangle]
pub extern "C" fn proxy_on_response_headers(id: u32, _headers: usize, _end: u32) -> u32 {
    if !copies(id) {
        return CONTINUE;
    }
    let name = b"content-length";
    // SAFETY: a live slice for the duration of the call. A refusal leaves
    // the length, which the unchanged body still matches.
    unsafe { proxy_remove_header_map_value(RESPONSE_HEADERS, name.as_ptr(), name.len()) };
    CONTINUE
}

#[no_mangle]
pub extern "C" fn proxy_on_response_body(id: u32, size: usize, _end: u32) -> u32 {
    if size == 0 || !copies(id) {
        return CONTINUE;
    }
    let Some(bytes) = get_buffer(RESPONSE_BODY, 0, size) else {
        return CONTINUE;
    };
    // SAFETY: a live slice for the duration of the call.
    unsafe { proxy_set_buffer_bytes(RESPONSE_BODY, 0, size, bytes.as_ptr(), bytes.len()) };
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
    COPIES.with(|c| c.borrow_mut().remove(&id));
    ROOTS.with(|r| r.borrow_mut().remove(&id));
}
