//! What a running query has spent, against its budget
//! ([`crate::config::QueryBudget`], scaled to the block).
//!
//! Two counts, both charged *before* what they pay for happens, so a query
//! stops at the first step that would pass a limit and never makes the
//! value that would:
//! - **work**, in units of about one node evaluated or one element
//!   touched: every node of the syntax tree evaluated on a value, every
//!   element a projection, flatten, slice or function goes through, every
//!   comparison, and bytes scanned, copied or compared at [`scan`] (one
//!   unit per 16);
//! - **memory**, in bytes of the values the query makes: [`VALUE`] for
//!   each, [`SLOT`] per array element, [`ENTRY`] plus the key per object
//!   member, and a string's bytes. A value shared with the input or
//!   another value (a field, an element, `@`) costs nothing: values are
//!   reference-counted, as in the crate.
//!
//! Memory is counted as it is made, never given back: a bound on all a
//! query allocates is a bound on what it holds at once.

use jmespath::ErrorReason;

/// One value made (a reference-counted node of the crate's `Variable`,
/// with its allocation header).
pub(super) const VALUE: u64 = 48;
/// One element of an array made (a reference, room to grow).
pub(super) const SLOT: u64 = 8;
/// One member of an object made, besides its key's bytes.
pub(super) const ENTRY: u64 = 32;

/// Units of work for scanning, copying or comparing `bytes` bytes.
pub(super) fn scan(bytes: usize) -> u64 {
    1 + (bytes as u64) / 16
}

/// Why evaluation stopped.
#[derive(Debug)]
pub(super) enum Fault {
    /// The next step would pass the work limit.
    Work,
    /// The next value would pass the memory limit.
    Memory,
    /// The query failed as JMESPath defines it (a type error, a wrong
    /// argument count, a slice step of 0): the crate's reason.
    Error(ErrorReason),
}

/// A query's spending so far against its limits.
#[derive(Debug, Clone)]
pub(super) struct Meter {
    pub(super) work: u64,
    pub(super) memory: u64,
    pub(super) max_work: u64,
    pub(super) max_memory: u64,
}

impl Meter {
    pub(super) fn new(max_work: u64, max_memory: u64) -> Self {
        Self {
            work: 0,
            memory: 0,
            max_work,
            max_memory,
        }
    }

    /// Charges `units` of work, or stops when they would pass the limit.
    pub(super) fn work(&mut self, units: u64) -> Result<(), Fault> {
        match self.work.checked_add(units) {
            Some(w) if w <= self.max_work => {
                self.work = w;
                Ok(())
            }
            _ => Err(Fault::Work),
        }
    }

    /// Charges `bytes` of memory, or stops when they would pass the limit.
    pub(super) fn memory(&mut self, bytes: u64) -> Result<(), Fault> {
        match self.memory.checked_add(bytes) {
            Some(m) if m <= self.max_memory => {
                self.memory = m;
                Ok(())
            }
            _ => Err(Fault::Memory),
        }
    }
}
