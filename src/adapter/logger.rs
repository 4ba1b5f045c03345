//! The `log` crate's records (the plugin's own and html5ever's) as
//! `proxy_log` calls. Envoy filters them by its wasm log level.

use super::abi::{self, Level};

struct HostLog;

static LOGGER: HostLog = HostLog;

impl log::Log for HostLog {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let level = match record.level() {
            log::Level::Error => Level::Error,
            log::Level::Warn => Level::Warn,
            log::Level::Info => Level::Info,
            log::Level::Debug => Level::Debug,
            log::Level::Trace => Level::Trace,
        };
        // A line the host refuses has nowhere else to go.
        abi::log(level, &record.args().to_string()).ok();
    }

    fn flush(&self) {}
}

/// Debug lines (the decision record) reach Envoy, which filters them by
/// its own wasm log level; trace would let dependencies log per byte.
pub fn install() {
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(log::LevelFilter::Debug);
    }
}
