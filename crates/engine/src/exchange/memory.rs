//! The stream's part in the VM's memory budget (`driver::Vm`): what its
//! core holds, the room the driver gives it before each callback, and what
//! happens past it — the stream is not read further, and what it held goes
//! on as it came (`vm_memory_budget`).

use super::growth::grown;
use super::response::Reading;
use super::{Direction, Exchange, Phase, Step};
use crate::outcome::Reason;

impl Exchange {
    /// The stream's share of the VM's memory budget: the most bytes it may
    /// hold in the core from now on (its bodies, events and queues). The
    /// driver sets it before each callback from what the VM's other
    /// streams hold.
    pub(crate) fn allow(&mut self, room: usize) {
        self.room = room;
    }

    /// Bytes of the VM's memory the stream's core takes now: its request
    /// and response buffers (their capacity, which is what the allocator
    /// gave), the events it holds, and a job waiting for its callout with
    /// the blocks the stages read from it. A JSON body that announced its
    /// length counts whole from its headers: it is collected into one
    /// buffer of that size.
    pub(crate) fn memory(&self) -> usize {
        let response = match &self.phase {
            Phase::Response(Reading::Buffering(body)) => {
                body.bytes.capacity().max(body.announced().unwrap_or(0))
            }
            Phase::Response(Reading::Streaming(state)) => state.memory(),
            Phase::Response(Reading::Waiting(waiting)) => {
                let (job, after) = waiting.as_ref();
                job.body_len()
                    .saturating_mul(crate::config::VM_WORK_FACTOR)
                    .saturating_add(after.capacity())
            }
            _ => 0,
        };
        self.request.body.bytes.capacity().saturating_add(response)
    }

    /// The stream would hold more than its share of the VM's budget with
    /// `bytes` more (a callout's reply, read whole).
    pub(crate) fn over_room_by(&self, bytes: usize) -> bool {
        self.memory().saturating_add(bytes) > self.room
    }

    /// The stream would hold more than its share of the VM's budget once
    /// `more` bytes of response are added to what it holds: a collected
    /// body's buffer grows by doubling (one that announced its length is
    /// sized for it already), and an event stream's chunk waits in its
    /// framer and queue.
    pub(super) fn over_room(&self, more: usize) -> bool {
        let grows = match &self.phase {
            Phase::Response(Reading::Waiting(waiting)) => {
                let after = &waiting.1;
                grown(after.capacity(), after.len(), more) - after.capacity()
            }
            Phase::Response(Reading::Buffering(body)) if body.announced().is_some() => 0,
            Phase::Response(Reading::Buffering(body)) => {
                let bytes = &body.bytes;
                grown(bytes.capacity(), bytes.len(), more) - bytes.capacity()
            }
            Phase::Response(Reading::Streaming(state)) => state.growth(more),
            _ => 0,
        };
        self.memory().saturating_add(grows) > self.room
    }

    /// The response is not read further: what the core holds of it goes
    /// on as it came, then `chunk`, and the rest passes untouched.
    pub(super) fn over_budget(&mut self, chunk: &[u8]) -> Step {
        let mut held = self.abandon(Direction::Response);
        self.pass_response(Reason::VmMemoryBudget);
        let mut step = if held.is_empty() {
            Step::input()
        } else {
            held.extend_from_slice(chunk);
            Step::send(held)
        };
        // Held headers go out with the server's own length.
        step.content_length = self.final_length(None);
        step
    }
}
