//! Root context: reads and validates the plugin configuration, defines the
//! metrics, creates one HTTP context per stream.

use std::rc::Rc;
use std::sync::Arc;

use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::ContextType;

use super::abi;
use super::host::{Metrics, SharedData};
use super::http::Stream;
use crate::config::Settings;
use crate::page::store::Store;
use crate::page::PageHost;

#[derive(Default)]
pub struct Root {
    settings: Arc<Settings>,
    metrics: Rc<Metrics>,
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
                // Expired pages are emptied on every write, and on this
                // timer so their memory goes back without traffic.
                if settings.paging_anywhere() && settings.paging.store_bytes > 0 {
                    let period = (settings.paging.ttl_s / 2).clamp(1, 60);
                    let _ = abi::set_tick_period(std::time::Duration::from_secs(period));
                }
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

    fn on_tick(&mut self) {
        let paging = &self.settings.paging;
        let mut host = SharedData;
        let now_s = u32::try_from(host.now_ms() / 1000).unwrap_or(u32::MAX);
        let mut store = Store::new(&mut host, paging.store_pages, paging.store_bytes);
        if let Ok(figures) = store.sweep(now_s) {
            self.metrics.store(&figures);
        }
    }

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Stream::new(
            Arc::clone(&self.settings),
            Rc::clone(&self.metrics),
        )))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}
