#!/usr/bin/env bash
# Runs one fuzz target: `fuzz/run.sh TARGET [SECONDS]` (default 300), after
# `python3 make_seeds.py`. Needs cargo-fuzz and a nightly toolchain.
#
# -timeout=3: an input that takes more than three seconds is a finding,
# saved as fuzz/artifacts/TARGET/timeout-* (issue 13: every stage is linear
# in its input or stops at a work budget, and 256 KiB takes tens of
# milliseconds even under AddressSanitizer). libFuzzer's timer is wall
# clock: on a machine busy with other work a one-second limit fired on an
# input that takes 0.04 s of CPU.
# -max_len=262144: inputs large enough for a quadratic stage to show (the
# issue's shapes took 4 s at 256 KB natively).
set -euo pipefail
target=${1:?usage: fuzz/run.sh TARGET [SECONDS]}
seconds=${2:-300}
cd "$(dirname "$0")"
mkdir -p "corpus/$target"
exec cargo +nightly fuzz run -O "$target" "corpus/$target" "seeds/$target" -- \
    -timeout=3 -max_len=262144 -max_total_time="$seconds" -print_final_stats=1
