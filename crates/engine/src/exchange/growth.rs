//! How a buffer grows: what the memory budget (`memory.rs`) and the
//! event stream (`stream.rs`) charge before they push.

/// The capacity of a vector of `len` bytes in `capacity` once `more` are
/// pushed: it doubles when it must grow (`Vec`'s amortised growth), or
/// takes what is needed when that is more.
pub(super) fn grown(capacity: usize, len: usize, more: usize) -> usize {
    let need = len.saturating_add(more);
    if need <= capacity {
        capacity
    } else {
        need.max(capacity.saturating_mul(2))
    }
}
