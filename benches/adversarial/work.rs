//! Work, as opposed to time: the instructions one exchange executes,
//! counted by valgrind's callgrind on this same binary (`--once`).
//!
//! Time is what a worker thread pays, so it is what the benchmark measures
//! first. But time per byte also rises when a working set outgrows a cache
//! (L2 is a few MiB here, and a 1 MiB body with its copies passes it) or
//! when other tenants of a small shared machine take the shared caches, and
//! that rise can span two doublings. Instruction counts see none of it:
//! they are exact, repeatable and blind to caches, so they tell work that
//! grows faster than the input (a rescan, a quadratic insert: 4x per
//! doubling) from a constant factor the memory hierarchy adds (bounded by
//! the ratio of memory to cache latency, however large the input). A
//! family whose time stays over the limit is therefore failed only when its
//! instructions grow too; without valgrind the time verdict stands.

use std::process::Command;

/// Largest accepted instruction ratio per doubling. Linear work is 2.00 and
/// counts have no noise; the margin is for an amortised growth step (a
/// buffer's doubling copy, a table's resize) that lands in one doubling.
/// `n log n` at these sizes is about 2.12; quadratic work is 4.
pub const MAX_WORK_RATIO: f64 = 2.3;

/// Native seconds above which a size is not counted: callgrind runs 20 to
/// 100 times slower, and a case that slow is over the cap's spirit anyway.
pub const MAX_COUNTED_SECS: f64 = 0.5;

/// The symbol callgrind counts under: one exchange, without the input's
/// generation or the timing loop (`exchange` in main.rs is never inlined).
const COUNTED: &str = "adversarial::exchange";

/// Instructions of one exchange of `family` (by exact name) at `kib` KiB,
/// under the configuration `--default` selects when `default`; `Err` says
/// why there is no count (valgrind missing, the run failed).
pub fn instructions(family: &str, kib: usize, default: bool) -> Result<u64, String> {
    let exe = std::env::current_exe().map_err(|e| format!("this binary: {e}"))?;
    let mut cmd = Command::new("valgrind");
    cmd.args([
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        &format!("--toggle-collect={COUNTED}"),
    ])
    .arg(exe)
    .args(["--once", &kib.to_string(), family]);
    if default {
        cmd.arg("--default");
    }
    let out = cmd
        .output()
        .map_err(|e| format!("valgrind not run ({e}); install it to count instructions"))?;
    let log = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "valgrind failed: {}",
            log.lines().last().unwrap_or("")
        ));
    }
    // `==PID== Collected : N`
    log.lines()
        .find_map(|l| {
            l.split_once("Collected :")
                .map(|(_, n)| n.trim().parse().ok())
        })
        .flatten()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("no count from valgrind (is `{COUNTED}` inlined?)"))
}
