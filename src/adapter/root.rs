//! Root context: reads and validates the plugin configuration, defines the
//! metrics, creates one HTTP context per stream.

use std::rc::Rc;
use std::sync::Arc;

use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::ContextType;

use super::abi;
use super::host::{Envoy, Metrics};
use super::http::Stream;
use crate::config::Settings;
use crate::driver::{Driver, Vm};

#[derive(Default)]
pub struct Root {
    settings: Arc<Settings>,
    metrics: Rc<Metrics>,
    vm: Rc<Vm>,
}

impl Context for Root {}

impl RootContext for Root {
    /// Returning false makes Envoy refuse the plugin, so a bad configuration
    /// never runs half-applied.
    fn on_configure(&mut self, _size: usize) -> bool {
        let bytes = abi::get_buffer(abi::Buffer::PluginConfiguration, 0, usize::MAX)
            .ok()
            .flatten()
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        match Settings::from_json(&text) {
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

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Stream {
            driver: Driver::new(Arc::clone(&self.settings), Rc::clone(&self.vm)),
            host: Envoy {
                metrics: Rc::clone(&self.metrics),
            },
        }))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}
