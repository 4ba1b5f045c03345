//! The stream's part in the VM's memory budget ([`super::Vm`]): its share
//! before a callback that may hand the core bytes, its charge after.

use super::{best_effort, Driver, VM_HELD_BYTES, VM_HELD_BYTES_MAX};
use crate::host::Host;

/// The held-bytes gauge moves in steps of this much (or to zero): it would
/// otherwise be a host call for every chunk a stream collects. Its peak is
/// set exactly.
const GAUGE_STEP: usize = 64 * 1024;

impl Driver {
    /// Bytes of the driver's own backlogs (decided, not yet in the host).
    fn backlogs(&self) -> usize {
        self.request
            .backlog
            .capacity()
            .saturating_add(self.response.backlog.capacity())
    }

    /// Before a callback that may hand the core bytes (a body chunk, the
    /// response headers with a length, a callout's reply): the most the
    /// core may hold, its share of `max_vm_held_bytes` less the backlogs.
    pub(super) fn grant(&mut self) {
        let budget = self.exchange.settings().max_vm_held_bytes;
        let room = self.vm.room(self.charged, budget);
        let backlogs = self.backlogs();
        self.exchange.allow(room.saturating_sub(backlogs));
    }

    /// After a callback: the stream is charged what it holds now, and the
    /// gauges follow the VM's ledger.
    pub(super) fn recharge(&mut self, host: &mut dyn Host) {
        let now = self.exchange.memory().saturating_add(self.backlogs());
        self.charge(host, now);
    }

    /// The stream is over: it holds nothing the VM must count (what it kept
    /// goes with it).
    pub(super) fn discharge(&mut self, host: &mut dyn Host) {
        self.charge(host, 0);
    }

    fn charge(&mut self, host: &mut dyn Host, now: usize) {
        if now == self.charged {
            return;
        }
        self.vm.charge(self.charged, now);
        self.charged = now;
        let vm = &self.vm;
        let held = vm.held.get();
        let moved = held.abs_diff(vm.held_set.get());
        if moved >= GAUGE_STEP || (held == 0 && moved > 0) {
            vm.held_set.set(held);
            let r = host.gauge(VM_HELD_BYTES, u64::try_from(held).unwrap_or(u64::MAX));
            best_effort(host, "a gauge", r);
        }
        let reserved = vm.reserved();
        if reserved > vm.reserved_peak.get() {
            vm.reserved_peak.set(reserved);
            let r = host.gauge(
                VM_HELD_BYTES_MAX,
                u64::try_from(reserved).unwrap_or(u64::MAX),
            );
            best_effort(host, "a gauge", r);
        }
    }
}

/// A stream dropped without its last callback (a host that never logs it)
/// still gives its charge back.
impl Drop for Driver {
    fn drop(&mut self) {
        self.vm.charge(self.charged, 0);
    }
}
