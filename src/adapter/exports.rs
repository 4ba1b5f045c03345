//! The proxy-wasm ABI 0.2.1 exports: the host's events, routed to the
//! stream they belong to and handed to its driver.
//!
//! They are written here instead of taken from the proxy-wasm Rust SDK,
//! whose dispatcher holds its context maps borrowed while a callback runs
//! and `unwrap`s host statuses: a host that logs or destroys a stream from
//! inside a host call (proxy-wasm-rust-sdk issues #43, #70, #255: Envoy
//! resets a stream synchronously when a write passes its buffer limit, and
//! calls `proxy_on_log` right there) or refuses `proxy_set_effective_context`
//! trapped the VM, failing every stream on it. Here a stream's state is
//! borrowed only for its own callback; an event that arrives while it is
//! (`proxy_on_log`, `proxy_on_delete` from inside a host call) is kept and
//! run when that callback returns. A resume the driver asks for is made
//! then too, as Envoy itself defers `continue_stream` past the VM call: a
//! host that delivers the next callbacks inside it finds the stream free.
#![allow(unsafe_code)] // the ABI's exports must keep their names (`no_mangle`)

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use rustc_hash::FxHashMap as HashMap;

use super::abi;
use super::host::{self, Envoy};
use super::root::Root;
use crate::driver::Driver;
use crate::host::{Action, Direction};

/// One stream's driver and host, and what arrived while it was busy.
struct Slot {
    stream: RefCell<(Driver, Envoy)>,
    log_later: Cell<bool>,
    delete_later: Cell<bool>,
}

thread_local! {
    // Keyed by context ids, which Envoy chooses.
    static ROOTS: RefCell<HashMap<u32, Root>> = RefCell::new(HashMap::default());
    static STREAMS: RefCell<HashMap<u32, Rc<Slot>>> = RefCell::new(HashMap::default());
}

fn slot(id: u32) -> Option<Rc<Slot>> {
    STREAMS.with(|s| s.borrow().get(&id).cloned())
}

/// Runs a stream callback; `busy`: the answer when the stream is in a
/// callback already (a host re-entering; Envoy never does for these).
fn stream<R>(id: u32, busy: R, f: impl FnOnce(&mut Driver, &mut Envoy) -> R) -> R {
    let Some(slot) = slot(id) else {
        return busy;
    };
    let (result, resume) = match slot.stream.try_borrow_mut() {
        Ok(mut s) => {
            let (driver, host) = &mut *s;
            let r = f(driver, host);
            (r, host.take_resume())
        }
        Err(_) => {
            log::warn!("mcp-toon: a callback arrived while stream {id} was in one; it passes");
            return busy;
        }
    };
    after(id, &slot, resume);
    result
}

/// What waited for the callback to return: the resume it asked for, then a
/// log and a delete that arrived inside it.
fn after(id: u32, slot: &Slot, resume: Option<Direction>) {
    if let Some(direction) = resume {
        if let Err(e) = abi::resume(direction) {
            if let Ok(mut s) = slot.stream.try_borrow_mut() {
                let (driver, host) = &mut *s;
                driver.resume_refused(host, e);
            }
        }
    }
    if slot.log_later.take() {
        if let Ok(mut s) = slot.stream.try_borrow_mut() {
            let (driver, host) = &mut *s;
            driver.log(host);
        }
    }
    if slot.delete_later.take() {
        STREAMS.with(|s| s.borrow_mut().remove(&id));
    }
}

fn answer(action: Action) -> u32 {
    // FilterHeadersStatus / FilterDataStatus / FilterTrailersStatus: 0
    // Continue, 1 StopIteration (for a body: StopIterationAndBuffer).
    match action {
        Action::Continue => 0,
        Action::Pause => 1,
    }
}

#[no_mangle]
pub extern "C" fn _initialize() {
    extern "C" {
        fn __wasm_call_ctors();
    }
    // SAFETY: the linker's constructor list, run once before any other
    // export as the wasm32-wasip1 reactor ABI requires.
    unsafe { __wasm_call_ctors() };
    super::logger::install();
}

#[no_mangle]
pub extern "C" fn proxy_abi_version_0_2_1() {}

#[no_mangle]
pub extern "C" fn proxy_on_memory_allocate(size: usize) -> *mut u8 {
    abi::allocate(size)
}

#[no_mangle]
pub extern "C" fn proxy_on_context_create(id: u32, parent: u32) {
    if parent == 0 {
        ROOTS.with(|r| r.borrow_mut().insert(id, Root::new(id)));
        return;
    }
    let Some(stream) = ROOTS.with(|r| r.borrow().get(&parent).map(|root| root.stream(id))) else {
        log::warn!("mcp-toon: stream {id} of unknown root {parent}");
        return;
    };
    let slot = Slot {
        stream: RefCell::new(stream),
        log_later: Cell::new(false),
        delete_later: Cell::new(false),
    };
    STREAMS.with(|s| s.borrow_mut().insert(id, Rc::new(slot)));
}

#[no_mangle]
pub extern "C" fn proxy_on_vm_start(_root: u32, _size: usize) -> u32 {
    1
}

/// Returning 0 makes Envoy refuse the plugin, so a bad configuration never
/// runs half-applied.
#[no_mangle]
pub extern "C" fn proxy_on_configure(root: u32, size: usize) -> u32 {
    let accepted = ROOTS.with(|r| {
        r.borrow_mut()
            .get_mut(&root)
            .is_some_and(|r| r.configure(size))
    });
    u32::from(accepted)
}

#[no_mangle]
pub extern "C" fn proxy_on_tick(root: u32) {
    ROOTS.with(|r| {
        if let Some(root) = r.borrow().get(&root) {
            root.tick();
        }
    });
}

#[no_mangle]
pub extern "C" fn proxy_on_request_headers(id: u32, _headers: usize, end: u32) -> u32 {
    #[cfg(feature = "fault-injection")]
    super::fault::maybe_trap();
    answer(stream(id, Action::Continue, |d, h| {
        d.request_headers(h, end != 0)
    }))
}

#[no_mangle]
pub extern "C" fn proxy_on_request_body(id: u32, size: usize, end: u32) -> u32 {
    answer(stream(id, Action::Continue, |d, h| {
        d.request_body(h, size, end != 0)
    }))
}

#[no_mangle]
pub extern "C" fn proxy_on_request_trailers(id: u32, _trailers: usize) -> u32 {
    answer(stream(id, Action::Continue, |d, h| d.request_trailers(h)))
}

#[no_mangle]
pub extern "C" fn proxy_on_response_headers(id: u32, _headers: usize, end: u32) -> u32 {
    answer(stream(id, Action::Continue, |d, h| {
        d.response_headers(h, end != 0)
    }))
}

#[no_mangle]
pub extern "C" fn proxy_on_response_body(id: u32, size: usize, end: u32) -> u32 {
    answer(stream(id, Action::Continue, |d, h| {
        d.response_body(h, size, end != 0)
    }))
}

#[no_mangle]
pub extern "C" fn proxy_on_response_trailers(id: u32, _trailers: usize) -> u32 {
    answer(stream(id, Action::Continue, |d, h| d.response_trailers(h)))
}

/// A callout's reply, on whichever context the host delivers it: the
/// stream that made the call is found by its token.
#[no_mangle]
pub extern "C" fn proxy_on_http_call_response(
    context: u32,
    token: u32,
    _headers: usize,
    body: usize,
    _trailers: usize,
) {
    let Some(id) = host::callout_stream(token) else {
        log::warn!("mcp-toon: reply to unknown callout {token}");
        return;
    };
    if id != context {
        if let Err(e) = abi::set_effective_context(id) {
            // Host calls then address the context the reply came on.
            log::warn!("mcp-toon: effective context {id} refused ({e:?})");
        }
    }
    stream(id, (), |d, h| d.callout_reply(h, body));
}

#[no_mangle]
pub extern "C" fn proxy_on_done(_id: u32) -> u32 {
    1
}

#[no_mangle]
pub extern "C" fn proxy_on_log(id: u32) {
    let Some(slot) = slot(id) else { return };
    let free = slot.stream.try_borrow_mut().map(|mut s| {
        let (driver, host) = &mut *s;
        driver.log(host);
    });
    if free.is_err() {
        // A reset inside a host call: logged when that call's callback
        // returns.
        slot.log_later.set(true);
    }
}

#[no_mangle]
pub extern "C" fn proxy_on_delete(id: u32) {
    if ROOTS.with(|r| r.borrow_mut().remove(&id)).is_some() {
        return;
    }
    let Some(slot) = slot(id) else { return };
    if slot.stream.try_borrow_mut().is_ok() {
        STREAMS.with(|s| s.borrow_mut().remove(&id));
    } else {
        slot.delete_later.set(true);
    }
}
