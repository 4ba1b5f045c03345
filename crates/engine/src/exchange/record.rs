//! What a record says of a response that passes whole: one decision per
//! call of the request, with its id and tool, and the response's bytes —
//! announced by its `content-length`, or counted to its end, read or not
//! (README "Observing decisions").

use super::{Exchange, Phase};
use crate::outcome::Reason;
use crate::report::Decision;

impl Exchange {
    /// The rest of the response goes on unchanged, for `reason`: one
    /// decision per call the request made (its id and tool), each taking
    /// the response's size once it ends ([`Exchange::passed`]).
    pub(super) fn pass_response(&mut self, reason: Reason) {
        self.record_calls(reason);
        self.phase = Phase::Done;
    }

    /// Records `reason` for the response as a whole: once for each call of
    /// the request (a batch's response answers them all), with its id and
    /// tool; measured, so it carries the response's bytes.
    pub(super) fn record_calls(&mut self, reason: Reason) {
        let calls: Vec<Decision> = self
            .request
            .info
            .calls
            .iter()
            .map(|c| Decision {
                id: Some(c.id.clone()),
                tool: c.tool.clone(),
                ..Decision::response(reason)
            })
            .collect();
        if calls.is_empty() {
            self.push_measured(Decision::response(reason));
        }
        for d in calls {
            self.push_measured(d);
        }
    }

    /// Pushes a decision that reports the response's bytes: its size when
    /// known, else what has passed so far, until the response ends.
    pub(super) fn push_measured(&mut self, mut d: Decision) {
        let bytes = self.response.size.unwrap_or(self.response.bytes);
        d.bytes_before = bytes;
        d.bytes_after = bytes;
        if self.response.size.is_none() {
            self.response.measured.push(
                self.report
                    .omitted
                    .saturating_add(self.report.decisions.len()),
            );
        }
        self.report.push(d);
    }

    /// Response body bytes that went on without being handed to the core
    /// (it stopped reading, or never read): counted for the decisions that
    /// report the response's size. `end`: the response ended. Returns true
    /// when that completed the record, which the host may publish now.
    pub(crate) fn passed(&mut self, size: usize, end: bool) -> bool {
        if self.response.measured.is_empty() {
            return false;
        }
        self.response.bytes = self.response.bytes.saturating_add(size);
        if end {
            self.measured_end();
            return true;
        }
        false
    }

    /// The response ended (or the stream did): the measured decisions take
    /// its size.
    pub(crate) fn measured_end(&mut self) {
        let bytes = *self.response.size.get_or_insert(self.response.bytes);
        let omitted = self.report.omitted;
        for at in std::mem::take(&mut self.response.measured) {
            let Some(i) = at.checked_sub(omitted) else {
                continue;
            };
            if let Some(d) = self.report.decisions.get_mut(i) {
                d.bytes_before = bytes;
                d.bytes_after = bytes;
            }
        }
    }
}
