//! Host services the core's report and the legacy-session pairing need:
//! counters and shared data, through the panic-free ABI wrappers.

use std::cell::Cell;
use std::collections::HashMap;

use super::abi;
use crate::exchange::SessionStore;
use crate::page::store::Figures;
use crate::page::{PageHost, StoreError};
use crate::report::{all_metrics, Report, METRIC_PREFIX, STORE_GAUGES};

/// Gauge: the most response bytes one stream held between callbacks on
/// this VM (an incomplete trailing SSE event, events queued behind a
/// callout, a buffered JSON body).
pub const HELD_BYTES_MAX: &str = "mcp_toon_held_bytes_max";
/// Gauge: this VM's wasm linear memory in bytes (its peak: it never
/// shrinks).
pub const VM_MEMORY_BYTES: &str = "mcp_toon_vm_memory_bytes";

/// Counter ids by name, and the two memory gauges. Defined once per VM;
/// Envoy shows them in `/stats` and `/stats/prometheus`.
#[derive(Default)]
pub struct Metrics {
    ids: HashMap<String, u32>,
    held_max: Option<u32>,
    memory: Option<u32>,
    held_peak: Cell<usize>,
    /// The page store's gauges, by name.
    store: HashMap<String, u32>,
}

impl Metrics {
    pub fn define() -> Self {
        let ids = all_metrics()
            .into_iter()
            .filter_map(|name| abi::define_counter(&name).ok().map(|id| (name, id)))
            .collect();
        let store = STORE_GAUGES
            .iter()
            .map(|g| format!("{METRIC_PREFIX}_{g}"))
            .filter_map(|name| abi::define_gauge(&name).ok().map(|id| (name, id)))
            .collect();
        Self {
            ids,
            held_max: abi::define_gauge(HELD_BYTES_MAX).ok(),
            memory: abi::define_gauge(VM_MEMORY_BYTES).ok(),
            held_peak: Cell::new(0),
            store,
        }
    }

    /// The page store's counters and gauges after a write or a sweep.
    pub fn store(&self, figures: &Figures) {
        for (name, amount) in figures.counters() {
            if let Some(id) = self.ids.get(&name) {
                let _ = abi::increment(*id, i64::try_from(amount).unwrap_or(i64::MAX));
            }
        }
        for (name, value) in figures.gauges() {
            if let Some(id) = self.store.get(&name) {
                let _ = abi::record(*id, value);
            }
        }
    }

    /// After a response callback: what the stream holds now, and the VM's
    /// memory.
    pub fn observe(&self, held: usize) {
        if held > self.held_peak.get() {
            self.held_peak.set(held);
            if let Some(id) = self.held_max {
                let _ = abi::record(id, u64::try_from(held).unwrap_or(u64::MAX));
            }
        }
        if let Some(id) = self.memory {
            let _ = abi::record(id, u64::try_from(abi::memory_bytes()).unwrap_or(u64::MAX));
        }
    }

    /// Counts the decisions of `report` from `start` on.
    pub fn record(&self, report: &Report, start: usize) {
        for (name, amount) in report.metrics_since(start) {
            if let Some(id) = self.ids.get(&name) {
                let _ = abi::increment(*id, i64::try_from(amount).unwrap_or(i64::MAX));
            }
        }
    }
}

/// Proxy-wasm shared data: one key-value space for every VM with the same
/// `vm_id` on this Envoy (all worker threads), so a POST seen on one worker
/// can be paired with the event stream another worker carries.
pub struct SharedData;

impl PageHost for SharedData {
    fn shared_get(&self, key: &str) -> Option<(Vec<u8>, u32)> {
        abi::get_shared_data_cas(key).ok().flatten()
    }

    fn shared_set(&mut self, key: &str, value: &[u8], cas: u32) -> Result<(), StoreError> {
        match abi::set_shared_data_cas(key, value, cas) {
            Ok(()) => Ok(()),
            Err(abi::HostError(abi::CAS_MISMATCH)) => Err(StoreError::Conflict),
            Err(_) => Err(StoreError::Unavailable),
        }
    }

    fn now_ms(&self) -> u64 {
        abi::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    fn random(&mut self, buf: &mut [u8]) -> bool {
        abi::random(buf)
    }
}

impl SessionStore for SharedData {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        abi::get_shared_data(key).ok().flatten()
    }

    fn set(&mut self, key: &str, value: &[u8]) {
        let _ = abi::set_shared_data(key, value);
    }
}
