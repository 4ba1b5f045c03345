//! Host services the core's report needs: counters and stream properties.

use std::collections::HashMap;

use proxy_wasm::hostcalls;
use proxy_wasm::types::MetricType;

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
        let mut ids = HashMap::new();
        for name in all_metrics() {
            if let Ok(id) = hostcalls::define_metric(MetricType::Counter, &name) {
                ids.insert(name, id);
            }
        }
        Self { ids }
    }

    pub fn record(&self, report: &Report) {
        for (name, amount) in report.metrics() {
            if let Some(id) = self.ids.get(&name) {
                let _ = hostcalls::increment_metric(*id, i64::try_from(amount).unwrap_or(i64::MAX));
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
        hostcalls::get_shared_data(key)
            .ok()
            .and_then(|(value, _cas)| value)
    }

    fn set(&mut self, key: &str, value: &[u8]) {
        let _ = hostcalls::set_shared_data(key, Some(value), None);
    }
}
