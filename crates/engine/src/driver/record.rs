//! Counting, publishing and observing: what the host learns about a stream.

use super::{best_effort, Driver, HELD_BYTES_MAX, RECORD_PROPERTY, VM_MEMORY_BYTES};
use crate::host::{Action, Host, LogLevel};

impl Driver {
    /// After a callback that lets the stream go on: counts what is decided,
    /// and publishes the record once nothing more can change.
    pub(super) fn settle(&mut self, host: &mut dyn Host) -> Action {
        self.count(host, false);
        if self.exchange.is_done() && self.callout.is_none() {
            self.publish(host);
        }
        Action::Continue
    }

    /// Counts the decisions made since the last count, unless a callout is
    /// in flight (and the stream goes on): its block is half-decided, and
    /// its bytes must be counted from its first stage to its last in one go.
    pub(super) fn count(&mut self, host: &mut dyn Host, last: bool) {
        if let Some(figures) = self.exchange.take_store_figures() {
            super::plugin::store_figures(host, &figures);
        }
        if self.exchange.waiting() && !last {
            return;
        }
        let report = self.exchange.report();
        for (name, amount) in report.metrics_since(self.counted) {
            let r = host.count(name, amount);
            best_effort(host, "counting", r);
        }
        self.counted = report.decisions.len();
        if !last {
            // The record of a stream still flowing stays bounded; a
            // finished one is published whole.
            let forgotten = self.exchange.forget_counted(self.counted);
            self.counted -= forgotten;
        }
    }

    pub(super) fn publish(&mut self, host: &mut dyn Host) {
        if self.published {
            return;
        }
        self.published = true;
        // The stream is over: a response that never ended reports what of
        // it passed.
        self.exchange.measured_end();
        self.count(host, true);
        let report = self.exchange.report();
        if report.is_empty() || !self.exchange.recorded() {
            return;
        }
        let record = report.to_json();
        if host.logs(LogLevel::Debug) {
            host.log(
                LogLevel::Debug,
                &format!("mcp-toon: {} {record}", report.summary()),
            );
        }
        let r = host.set_property(&[RECORD_PROPERTY], record.as_bytes());
        best_effort(host, "publishing the record", r);
    }

    /// After a response callback: what the stream holds now, and the VM's
    /// memory.
    pub(super) fn observe(&mut self, host: &mut dyn Host) {
        let held = self
            .exchange
            .held_bytes()
            .saturating_add(self.response.backlog.len());
        if held > self.vm.held_peak.get() {
            self.vm.held_peak.set(held);
            let r = host.gauge(HELD_BYTES_MAX, u64::try_from(held).unwrap_or(u64::MAX));
            best_effort(host, "a gauge", r);
        }
        let memory = host.memory_bytes();
        if memory != self.vm.memory_set.get() {
            self.vm.memory_set.set(memory);
            let r = host.gauge(VM_MEMORY_BYTES, u64::try_from(memory).unwrap_or(u64::MAX));
            best_effort(host, "a gauge", r);
        }
    }
}
