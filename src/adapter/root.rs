//! A root context: one plugin configuration, checked once; the streams it
//! creates share it and its metrics.

use std::rc::Rc;
use std::sync::Arc;

use super::abi;
use super::host::{Envoy, Metrics};
use crate::config::Settings;
use crate::driver::{Driver, Vm};

#[derive(Default)]
pub struct Root {
    settings: Arc<Settings>,
    metrics: Rc<Metrics>,
    vm: Rc<Vm>,
}

impl Root {
    /// Reads and checks the plugin configuration (`size` bytes; none means
    /// all defaults). False makes Envoy refuse the plugin.
    pub fn configure(&mut self, size: usize) -> bool {
        let bytes = if size == 0 {
            Vec::new()
        } else {
            match abi::get_buffer(abi::Buffer::PluginConfiguration, 0, size) {
                Ok(Some(bytes)) => bytes,
                other => {
                    log::error!("mcp-toon configuration: unreadable ({other:?})");
                    return false;
                }
            }
        };
        match Settings::from_json(&String::from_utf8_lossy(&bytes)) {
            Ok(settings) => {
                self.settings = Arc::new(settings);
                self.metrics = Rc::new(Metrics::define());
                log::info!("mcp-toon: configuration accepted");
                true
            }
            Err(e) => {
                log::error!("{e}");
                false
            }
        }
    }

    pub fn stream(&self, id: u32) -> (Driver, Envoy) {
        let driver = Driver::new(Arc::clone(&self.settings), Rc::clone(&self.vm));
        (driver, Envoy::new(id, Rc::clone(&self.metrics)))
    }
}
