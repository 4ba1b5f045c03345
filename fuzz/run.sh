#!/usr/bin/env bash
# Runs one fuzz target: `fuzz/run.sh TARGET [SECONDS [LIBFUZZER FLAGS…]]`
# (default 300 s; e.g. `-runs=10000000` to stop after that many runs), after
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
# `query` (issue 37): a query's cost is in its expression, not its size, so
# 16 KiB of query and result are enough, and many more runs fit; the
# process's memory is held to 512 MB (the attack it stands for took
# gigabytes), a limit libFuzzer checks as it runs.
set -euo pipefail
target=${1:?usage: fuzz/run.sh TARGET [SECONDS]}
seconds=${2:-300}
case "$target" in
    query) limits=(-max_len=16384 -rss_limit_mb=512) ;;
    *) limits=(-max_len=262144) ;;
esac
cd "$(dirname "$0")"
mkdir -p "corpus/$target"
# SANITIZER=none runs without AddressSanitizer (safe Rust gains little from
# it, and runs several times faster: how the `query` target reached its
# millions of runs).
exec cargo +nightly fuzz run -O -s "${SANITIZER:-address}" "$target" "corpus/$target" "seeds/$target" -- \
    -timeout=3 "${limits[@]}" -max_total_time="$seconds" -print_final_stats=1 "${@:3}"
