//! The http-wasm exports (`handle_request`, `handle_response`) and the
//! WASI reactor's `_initialize`, which Traefik runs when it instantiates
//! the module (`WithStartFunctions("_start", "_initialize")`).
//!
//! A trap does not end an instance: http-wasm-host-go puts it back in its
//! pool as the trap left it (measured with Traefik 3.7: a `RefCell`
//! borrowed when a call trapped stayed borrowed for every later request on
//! that instance). So the instance's state is taken out of its cell for
//! the length of a call and put back after: a call that trapped leaves the
//! cell empty, and the next call starts the instance afresh from its
//! configuration (its pages and counters lost, logged).
#![allow(unsafe_code)] // the ABI's exports must keep their names (`no_mangle`)

use std::cell::Cell;

use super::config;
use super::flow::{self, Pending};
use super::instance::Instance;
use super::io::{Abi, HttpWasm, Level};

thread_local! {
    static INSTANCE: Cell<Option<Box<Instance>>> = const { Cell::new(None) };
    static PENDING: Cell<Option<Box<(u32, Pending)>>> = const { Cell::new(None) };
    /// Set for the length of an export call: found set at the start of
    /// one, the previous call trapped.
    static BUSY: Cell<bool> = const { Cell::new(false) };
    static SEQUENCE: Cell<u32> = const { Cell::new(0) };
}

/// A fresh instance from the configuration; the error as Traefik should
/// log it.
fn start(io: &mut Abi) -> Result<Box<Instance>, String> {
    let loaded = config::load(&io.config()).map_err(|e| e.to_string())?;
    let mut instance = Box::new(Instance::new(loaded, io));
    flow::configured(&mut instance, io);
    Ok(instance)
}

/// Takes the instance out of its cell for one call (starting it afresh if
/// a trap left it empty), runs `f`, and puts it back.
fn with_instance<R>(busy: R, f: impl FnOnce(&mut Instance, &mut Abi) -> R) -> R {
    let mut io = Abi;
    if BUSY.with(|b| b.replace(true)) {
        io.log(
            Level::Warn,
            "mcp-toon: an earlier call on this instance trapped; its state is started afresh",
        );
        PENDING.with(|p| p.take());
    }
    let instance = match INSTANCE.with(Cell::take) {
        Some(i) => Ok(i),
        None => start(&mut io),
    };
    let mut instance = match instance {
        Ok(i) => i,
        Err(e) => {
            // Accepted at `_initialize`, so not reachable but through a
            // host that skipped it: the request passes untouched.
            io.log(Level::Error, &e);
            BUSY.with(|b| b.set(false));
            return busy;
        }
    };
    let r = f(&mut instance, &mut io);
    INSTANCE.with(|i| i.set(Some(instance)));
    BUSY.with(|b| b.set(false));
    r
}

#[no_mangle]
pub extern "C" fn _initialize() {
    extern "C" {
        fn __wasm_call_ctors();
    }
    // SAFETY: the linker's constructor list, run once before any other
    // export as the wasm32-wasip1 reactor ABI requires.
    unsafe { __wasm_call_ctors() };
    let mut io = Abi;
    match start(&mut io) {
        Ok(instance) => {
            if instance.logs(mcp_toon_engine::host::LogLevel::Info) {
                io.log(Level::Info, "mcp-toon: configuration accepted");
            }
            INSTANCE.with(|i| i.set(Some(instance)));
        }
        Err(e) => {
            // A trap here fails the instantiation, and Traefik refuses the
            // middleware (its routers report the error): a bad
            // configuration never runs half-applied.
            io.log(Level::Error, &e);
            core::arch::wasm32::unreachable();
        }
    }
}

/// `ctx_next`: the request's sequence number in the upper 32 bits (the
/// host hands it back to `handle_response`), `next` in the lower.
#[no_mangle]
pub extern "C" fn handle_request() -> i64 {
    with_instance(1, |instance, io| {
        // A request whose response never came (the host erred before it).
        PENDING.with(|p| p.take());
        match flow::handle_request(instance, io) {
            None => 0,
            Some(pending) => {
                let seq = SEQUENCE.with(|s| {
                    let n = s.get().wrapping_add(1);
                    s.set(n);
                    n
                });
                PENDING.with(|p| p.set(Some(Box::new((seq, pending)))));
                (i64::from(seq) << 32) | 1
            }
        }
    })
}

#[no_mangle]
pub extern "C" fn handle_response(req_ctx: u32, _is_error: u32) {
    with_instance((), |instance, io| {
        let Some(pending) = PENDING.with(Cell::take) else {
            return;
        };
        let (seq, pending) = *pending;
        if seq == req_ctx {
            flow::handle_response(instance, io, pending);
        }
    })
}
