//! Host services the core's report needs: counters and stream properties.

use std::collections::HashMap;

use proxy_wasm::hostcalls;
use proxy_wasm::types::MetricType;

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
