//! What one guest instance keeps between requests.
//!
//! http-wasm-host-go keeps a pool of instances of the module (a Go
//! `sync.Pool`, one pool per router that uses the middleware): a request
//! takes one, holds it until its response is handled, and puts it back.
//! So requests on one instance never overlap, concurrent requests run on
//! as many instances, and which instance a request gets is the pool's
//! choice (sequential requests alternated between two instances in
//! Traefik 3.7; the Go collector may drop idle instances). What an
//! instance keeps — the page store, the tools a listing showed, the
//! counters — is its own: README "Loading it in Traefik" has what that
//! means for pages, measured.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::config::Loaded;
use super::io::HttpWasm;
use super::random::Random;
use mcp_toon_engine::config::Settings;
use mcp_toon_engine::driver::Vm;
use mcp_toon_engine::host::LogLevel;
use mcp_toon_engine::shared::SharedMemory;

/// How often an instance writes its counters (at `info`), at the first
/// request after the period: http-wasm has no timer.
pub const COUNTERS_EVERY: Duration = Duration::from_secs(60);

/// One instance's state.
pub struct Instance {
    pub settings: Arc<Settings>,
    pub vm: Rc<Vm>,
    pub log_level: Option<LogLevel>,
    /// The "shared data" of this instance's streams (proxy-wasm's spans a
    /// whole Envoy): the page store and what listings taught.
    pub shared: SharedMemory,
    pub random: Random,
    /// Counters and gauges since the instance started.
    pub counters: BTreeMap<String, u64>,
    pub gauges: BTreeMap<String, u64>,
    /// The driver's timer: its period, and when it is next due.
    pub tick: Option<(Duration, SystemTime)>,
    /// When the counters are next written.
    pub counters_due: SystemTime,
}

impl Instance {
    /// An instance for these options, its random generator seeded from the
    /// host and the configuration's secrets.
    pub fn new(loaded: Loaded, io: &dyn HttpWasm) -> Self {
        let mut wasi = [0u8; 32];
        let wasi_ok = io.random(&mut wasi);
        let now = io.now();
        let nanos = nanos(now).to_le_bytes();
        let settings = loaded.settings;
        let keys = settings.paging.keys.concat();
        let random = Random::seeded(&[
            &wasi,
            &[u8::from(wasi_ok)],
            &nanos,
            &keys,
            settings.marker_key.as_bytes(),
        ]);
        Instance {
            settings: Arc::new(settings),
            vm: Rc::new(Vm::default()),
            log_level: loaded.log_level,
            shared: SharedMemory::default(),
            random,
            counters: BTreeMap::new(),
            gauges: BTreeMap::new(),
            tick: None,
            counters_due: now + COUNTERS_EVERY,
        }
    }

    /// Whether a line at `level` is written.
    pub fn logs(&self, level: LogLevel) -> bool {
        let rank = |l: LogLevel| match l {
            LogLevel::Debug => 0,
            LogLevel::Info => 1,
            LogLevel::Warn => 2,
        };
        self.log_level
            .is_some_and(|lowest| rank(level) >= rank(lowest))
    }

    /// The counters and gauges as one log line.
    pub fn counters_line(&self) -> String {
        let mut line = String::from("mcp-toon: this instance's counters since it started:");
        for (name, value) in self.counters.iter().chain(self.gauges.iter()) {
            line.push_str(&format!(" {name}={value}"));
        }
        line
    }
}

/// Nanoseconds since the Unix epoch (0 before it).
pub fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
