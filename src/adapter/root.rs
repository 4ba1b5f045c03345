//! A root context: one plugin configuration, checked once; the streams it
//! creates share it and its metrics. Its timer is the driver's.

use std::rc::Rc;
use std::sync::Arc;

use super::abi;
use super::host::{Envoy, Metrics};
use crate::config::Settings;
use crate::driver::{self, Driver, Vm};

thread_local! {
    /// The VM's shared state: one per worker thread (each Envoy worker
    /// runs its own VM), shared by every root context (plugin
    /// configuration) it serves, so the memory budget counts every stream
    /// of the VM's memory, whichever configuration it runs under.
    static VM: Rc<Vm> = Rc::default();
}

#[derive(Default)]
pub struct Root {
    /// The root context's id: plugin-wide host calls address it.
    id: u32,
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
        match Settings::from_bytes(&bytes) {
            Ok(settings) => {
                self.settings = Arc::new(settings);
                self.metrics = Rc::new(Metrics::define());
                driver::configured(&mut self.host(), &self.settings, &self.vm);
                log::info!("mcp-toon: configuration accepted");
                true
            }
            Err(e) => {
                log::error!("{e}");
                false
            }
        }
    }

    pub fn new(id: u32) -> Self {
        Root {
            id,
            vm: VM.with(Rc::clone),
            ..Root::default()
        }
    }

    /// `proxy_on_tick`: the timer [`driver::configured`] asked for.
    pub fn tick(&self) {
        driver::tick(&mut self.host(), &self.settings);
    }

    /// Envoy as the root context sees it (no stream).
    fn host(&self) -> Envoy {
        Envoy::new(self.id, Rc::clone(&self.metrics))
    }

    pub fn stream(&self, id: u32) -> (Driver, Envoy) {
        let driver = Driver::new(Arc::clone(&self.settings), Rc::clone(&self.vm));
        (driver, Envoy::new(id, Rc::clone(&self.metrics)))
    }
}
