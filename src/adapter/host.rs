//! Host services the core's report and the legacy-session pairing need:
//! counters and shared data, through the panic-free ABI wrappers.

use std::collections::HashMap;

use super::abi;
use crate::exchange::SessionStore;
use crate::report::{all_metrics, Report};

/// Counter ids by name. Defined once per VM; Envoy shows them in `/stats`
/// and `/stats/prometheus`.
#[derive(Default)]
pub struct Metrics {
    ids: HashMap<String, u32>,
}

impl Metrics {
    pub fn define() -> Self {
        let ids = all_metrics()
            .into_iter()
            .filter_map(|name| abi::define_counter(&name).ok().map(|id| (name, id)))
            .collect();
        Self { ids }
    }

    pub fn record(&self, report: &Report) {
        for (name, amount) in report.metrics() {
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

impl SessionStore for SharedData {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        abi::get_shared_data(key).ok().flatten()
    }

    fn set(&mut self, key: &str, value: &[u8]) {
        let _ = abi::set_shared_data(key, value);
    }
}
