"""Where the plugin module's own time goes, by function (issue 14: profile the
wasm build itself, not only native).

scripts/instructions.py counts a request's instructions through Envoy and
splits them by Envoy, the module and libc, but cannot name the module's
functions: V8 compiles them with no symbols, and Envoy offers no way to
pass V8 its `--perf-basic-prof` flag. Wasmtime can: built with its function
names kept, the same module runs in Wasmtime (Cranelift) with a perf map,
driven by the wasm tier's host and exchange script (tests/wasm/host.py,
traffic.py) on the Envoy bench's tools/call and result bodies (response in
16 KiB chunks, default configuration, the host's log level at info as
Envoy's),
while `perf record` samples the process. Only samples in compiled wasm
count: the share of each function is of the module's own time. Cranelift
is not V8, so read it for where the time goes, not for how much.

Run: .venv/bin/python scripts/wasm_profile.py [--rows tabular-64k,...]
[--exchanges N] [--top K]. It needs `perf` (software cpu-clock events, so
`kernel.perf_event_paranoid` ≤ 2) and the wasm tier's virtual environment
with Wasmtime (`bash tests/wasm/run.sh` makes it in target/component-venv).
The named module is built into target/profile-wasm.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
import artifacts  # noqa: E402

TARGET = artifacts.TARGET / "profile-wasm"
MODULE = TARGET / "wasm32-wasip1" / "release" / "mcp_toon.wasm"
VENV_PYTHON = ROOT / "target" / "component-venv" / "bin" / "python"
ROWS = ["tabular-1k", "tabular-64k", "nontabular-64k", "tabular-1m", "source-64k"]
CHUNK = 16 * 1024
# proxy-wasm log levels: 2 is info, Envoy's default; the plugin formats its
# debug line only for a host that writes debug.
INFO = 2


def child(module: str, request: str, response: str, exchanges: int) -> None:
    """Runs in the sampled process: `exchanges` exchanges on one VM."""
    sys.path.insert(0, str(ROOT / "tests" / "wasm"))
    import wasmtime
    from host import Vm, play
    from traffic import Exchange, script

    config = wasmtime.Config()
    config.profiler = "perfmap"
    engine = wasmtime.Engine(config)
    vm = Vm(engine, wasmtime.Module.from_file(engine, module), b"{}")
    vm.log_level = INFO
    if not vm.start():
        raise SystemExit("the plugin refused its configuration")
    resp = Path(response).read_bytes()
    exchange = Exchange("bench", {}, Path(request).read_bytes(), "application/json", [resp])
    events = script(exchange, response_cuts=tuple(range(CHUNK, len(resp), CHUNK)))
    first = play(vm, events)
    if first.trap:
        raise SystemExit(f"the module trapped: {first.trap}")
    # What the client received, for the parent's heading, and whose perf
    # map (/tmp/perf-PID.map) to remove once perf has read it.
    print(len(first.client.body), os.getpid())
    for _ in range(exchanges):
        play(vm, events)


def build() -> None:
    cmd = ["cargo", "build", "--quiet", "--release", "--target", "wasm32-wasip1", "--features", "plugin"]
    env = {**os.environ, "CARGO_TARGET_DIR": str(TARGET), "CARGO_PROFILE_RELEASE_STRIP": "false"}
    print("+", " ".join(cmd), f"(CARGO_TARGET_DIR={TARGET.relative_to(ROOT)}, names kept)", file=sys.stderr, flush=True)
    subprocess.run(cmd, cwd=ROOT, env=env, check=True)


def samples(perf_data: Path) -> dict[str, int]:
    """Samples per function in compiled wasm, from `perf report`."""
    out = subprocess.run(
        ["perf", "report", "-i", str(perf_data), "--sort", "dso,sym", "--stdio", "--no-children", "-n"],
        capture_output=True, text=True, check=True,
    ).stdout
    found: dict[str, int] = defaultdict(int)
    for line in out.splitlines():
        # `  1.99%   405  [JIT] tid 23921   [.] mcp_toon::mcp::scan::literal::read::h926207cc8f235017`
        m = re.match(r"\s*[\d.]+%\s+(\d+)\s+\[JIT\].*?\[\.\]\s+(.*)$", line)
        if m:
            name = re.sub(r"::h[0-9a-f]{16}$", "", m.group(2).strip())
            found[name] += int(m.group(1))
    return found


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="tabular-64k", help=f"comma-separated, of {', '.join(ROWS)}")
    ap.add_argument("--exchanges", type=int, default=1000, help="of a 64 KB result; smaller ones get more")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--child", nargs=4, metavar=("MODULE", "REQUEST", "RESPONSE", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        module, request, response, n = args.child
        child(module, request, response, int(n))
        return
    if shutil.which("perf") is None:
        raise SystemExit("perf is not installed (Debian: linux-perf)")
    if not VENV_PYTHON.exists():
        raise SystemExit(f"{VENV_PYTHON} is missing: `bash tests/wasm/run.sh` makes it")
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        raise SystemExit(f"--rows: unknown {unknown}; allowed: {', '.join(ROWS)}")
    sys.path.insert(0, str(ROOT / "tests" / "e2e"))
    sys.path.insert(0, str(ROOT / "scripts"))
    import cells

    build()
    sizes = dict(cells.SIZES)
    with tempfile.TemporaryDirectory(prefix="mcp-toon-wasm-profile-") as tmp:
        work = Path(tmp)
        request = work / "request"
        request.write_bytes(cells.tools_call())
        for row in rows:
            kind, size = row.split("-", 1)
            text = {"tabular": cells.tabular_text, "nontabular": cells.non_tabular_text, "source": cells.source_text}[kind]
            response = work / f"{row}.response"
            response.write_bytes(cells.body_of(text, sizes[size]))
            # About as many bytes per row as `--exchanges` of 64 KB: small
            # bodies get more exchanges (up to 20 times as many), so each row
            # gathers enough samples.
            size = response.stat().st_size
            exchanges = min(max(args.exchanges * 64 * 1024 // size, 20), 20 * args.exchanges)
            data = work / f"{row}.perf"
            cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000", "-o", str(data), "--",
                   str(VENV_PYTHON), __file__, "--child", str(MODULE), str(request), str(response), str(exchanges)]
            sent, pid = (int(x) for x in subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True).stdout.split()[:2])
            found = samples(data)
            Path(f"/tmp/perf-{pid}.map").unlink(missing_ok=True)
            total = sum(found.values())
            if total == 0:
                raise SystemExit(f"{row}: no samples in compiled wasm (is the perf map written to /tmp?)")
            print(f"\n{row}: {size:,} bytes from the server, {sent:,} to the client; {exchanges} exchanges, {total:,} samples in the module; its own time by function")
            print("| function | share |\n|---|---:|")
            ranked = sorted(found.items(), key=lambda kv: -kv[1])
            for name, n in ranked[: args.top]:
                print(f"| `{name}` | {100 * n / total:.1f} % |")
            rest = sum(n for _, n in ranked[args.top :])
            print(f"| other ({max(len(ranked) - args.top, 0)} functions) | {100 * rest / total:.1f} % |")


if __name__ == "__main__":
    main()
