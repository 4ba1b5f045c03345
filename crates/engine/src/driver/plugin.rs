//! What the driver does for the plugin as a whole, outside any stream: the
//! page store's timer, and the metrics it moves.

use std::time::Duration;

use super::shared::Shared;
use super::{best_effort, Vm, HELD_BYTES_MAX, VM_HELD_BYTES, VM_HELD_BYTES_MAX, VM_MEMORY_BYTES};
use crate::config::Settings;
use crate::host::{Host, LogLevel};
use crate::page::store::Store;
use crate::report::Figures;
use crate::report::STORE_GAUGES;
use crate::shared::Services;

/// Every gauge the driver may set, for a host that defines them up front.
pub fn all_gauges() -> Vec<&'static str> {
    let mut names = vec![
        HELD_BYTES_MAX,
        VM_MEMORY_BYTES,
        VM_HELD_BYTES,
        VM_HELD_BYTES_MAX,
    ];
    names.extend(STORE_GAUGES);
    names
}

/// The property [`configured`] reads to tell Envoy: Envoy answers it in
/// every context, a root context's included (`plugin_vm_id`, possibly
/// empty); APISIX's wasm-nginx-module refuses every property read outside
/// a request but `plugin_root_id` (BadArgument), and other hosts may not
/// know it (NotFound).
pub const ENVOY_PROPERTY: &str = "plugin_vm_id";

/// A configuration was accepted. The host is asked once whether it is
/// Envoy, which runs body callbacks unasked: then no stream of the VM sets
/// the APISIX body flags ([`super::Vm`]); any other answer keeps them.
/// With a page store, its owner key is made now ([`crate::page::keys`]).
/// Expired pages are emptied on every write, and on a timer so their
/// memory goes back without traffic. A host that refuses the timer keeps
/// them until the next write (logged).
pub fn configured(host: &mut dyn Host, settings: &Settings, vm: &Vm) {
    let envoy = matches!(host.property(&[ENVOY_PROPERTY]), Ok(Some(_)));
    vm.bodies_unasked.set(envoy);
    if !settings.paging_anywhere() || settings.paging.store_bytes == 0 {
        return;
    }
    // The key stored pages are bound with, made before any stream cuts a
    // result: every worker's VM then reads the one that stands.
    if crate::page::keys::local(&mut Shared(host)).is_none() {
        host.log(
            LogLevel::Warn,
            "mcp-toon: no shared data or randomness for the page store's key; pages are not stored",
        );
    }
    let period = (settings.paging.ttl_s / 2).clamp(1, 60);
    if let Err(e) = host.set_tick_period(Duration::from_secs(period)) {
        host.log(
            LogLevel::Warn,
            &format!(
                "mcp-toon: page store timer refused ({e:?}); expired pages go at the next write"
            ),
        );
    }
}

/// The timer [`configured`] asked for: empties expired pages.
pub fn tick(host: &mut dyn Host, settings: &Settings) {
    if !settings.paging_anywhere() || settings.paging.store_bytes == 0 {
        return;
    }
    let paging = &settings.paging;
    let mut shared = Shared(host);
    let now_s = u32::try_from(shared.now_ms() / 1000).unwrap_or(u32::MAX);
    let swept = Store::new(&mut shared, paging.store_pages, paging.store_bytes).sweep(now_s);
    match swept {
        Ok(figures) => store_figures(host, &figures),
        // Shared data refused or contended: the next write or tick sweeps.
        Err(e) => host.log(
            LogLevel::Debug,
            &format!("mcp-toon: page store sweep not done ({e:?})"),
        ),
    }
}

/// The page store's counters and gauges after a write or a sweep.
pub(super) fn store_figures(host: &mut dyn Host, figures: &Figures) {
    for (name, amount) in figures.counters() {
        let r = host.count(name, amount);
        best_effort(host, "counting", r);
    }
    for (name, value) in figures.gauges() {
        let r = host.gauge(name, value);
        best_effort(host, "a gauge", r);
    }
}
