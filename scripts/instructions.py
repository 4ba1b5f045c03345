"""Instructions per request through Envoy, counted by valgrind's callgrind
(part of `make bench`, section "Instructions per request through Envoy").

CPU time per request through Envoy moves with whatever else the machine
runs: on a shared 2-core machine two runs of the same build differed by
more than the plugin changes being measured. Instructions do not: the plugin
Envoy runs its own binary under `valgrind --tool=callgrind`, counting only
while a client sends N requests to one listener (`callgrind_control -i on`,
then `-i off` and a dump), after a warm-up in which V8 compiles and tiers
up the module. Two runs of one build gave the same figure to within 0.1 %.

Each figure is split by where the instructions ran: Envoy's binary (its
own code, V8's builtins among it: the crossings between Envoy and the
module), the wasm module's code as V8 compiled it (mapped outside any file)
and libc. That split is the profile of the wasm build itself that native
profiles cannot give: how much of a request is the module's own work and
how much the host's work on its behalf.

Run: .venv/bin/python scripts/instructions.py [--requests N] [--rows a,b]
[--keep DIR] [--listeners a,b] (prints the section, or with --listeners one
line per cell; --keep leaves each cell's dump in DIR); scripts/bench.py --only instructions writes it.
"""

from __future__ import annotations

import argparse
import http.client
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
sys.path.insert(0, str(ROOT / "scripts"))

import harness  # noqa: E402
import loadgen  # noqa: E402
from harness import Listener  # noqa: E402

# The listeners of the Envoy section (scripts/bench.py), in its order.
LISTENERS = ["none", "empty", "floor", "calls", "off", "adaptive"]
ROWS = ["tabular-1k", "tabular-64k", "tabular-64k (resources/read)", "tabular-64k (resources/read + Mcp-Method)", "nontabular-64k", "source-64k"]
WARM_UP = 200


def where(symbol_line: str) -> str:
    """The part of the process a callgrind_annotate line belongs to."""
    if symbol_line.rstrip().endswith("]") and "[" in symbol_line:
        obj = symbol_line.rsplit("[", 1)[1].rstrip("]\n ")
    else:
        obj = "???"
    if obj.endswith("/envoy"):
        return "envoy"
    if "libc.so" in obj or "libm.so" in obj or "ld-linux" in obj:
        return "libc"
    # No file behind the code: at the binary's low addresses, code of the
    # binary valgrind names no object for (V8's embedded builtins among it:
    # the no-plugin Envoy runs some too); far above them, the module's
    # code as V8 compiled it.
    # A recursive function's later levels carry callgrind's `'N` suffix.
    try:
        address = int(symbol_line.split("???:0x", 1)[1].split()[0].split("'", 1)[0], 16)
    except (IndexError, ValueError):
        return "other"
    return "envoy" if address < 1 << 32 else "wasm"


def split(dump: Path, requests: int) -> dict[str, float]:
    out = subprocess.run(
        ["callgrind_annotate", "--threshold=100", str(dump)], capture_output=True, text=True, check=True
    ).stdout
    parts: dict[str, float] = {}
    total = 0
    for line in out.splitlines():
        head = line.strip().split(" ", 1)
        if len(head) < 2 or not head[0].replace(",", "").isdigit() or "(" not in head[1]:
            continue
        count = int(head[0].replace(",", ""))
        if "PROGRAM TOTALS" in line:
            total = count
            continue
        part = where(line)
        parts[part] = parts.get(part, 0) + count
    result = {k: v / requests for k, v in parts.items()}
    result["total"] = total / requests
    return result


def measure(rows: list[str], requests: int, keep: Path | None = None) -> tuple[dict[tuple[str, str], dict[str, float]], list[str]]:
    import cells  # the Envoy section's bodies, listeners and floor filter

    for tool in ("valgrind", "callgrind_control", "callgrind_annotate"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is missing (Debian package valgrind)")
    cells.build_wasm("floor", "floor")
    bodies = cells.envoy_bodies()
    known = {r[0]: r for r in cells.request_rows(list(bodies))}
    wanted = [known[row] for row in rows]
    results: dict[tuple[str, str], dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="mcp-toon-instructions-") as tmp:
        work = Path(tmp)
        cases = [loadgen.Canned(c, bodies[c]) for c in sorted({c for _, c, _, _ in wanted})]
        upstream, port = loadgen.start_canned_upstream(cases, work)
        out = work / "callgrind.out"
        wrapper = [
            "valgrind", "--tool=callgrind", "--smc-check=all-non-file", "--instr-atstart=no",
            f"--callgrind-out-file={out}",
        ]
        try:
            listeners = [Listener(name, what if isinstance(what, dict) else {}, False) for _, name, what in cells.ENVOY_LISTENERS]
            e = loadgen.start_plugin_envoy(
                listeners, port, work, "envoy-callgrind", no_plugin=("none",), tweak=cells.floor_tweak,
                wrapper=wrapper, timeout=900,
            )
            pid = str(e.proc.pid)
            try:
                for row, case, request, headers in wanted:
                    n = count(row, requests)
                    for name in LISTENERS:
                        post(e.listeners[name].port, case, request, headers, WARM_UP)
                        subprocess.run(["callgrind_control", "-i", "on", pid], capture_output=True, check=True)
                        post(e.listeners[name].port, case, request, headers, n)
                        subprocess.run(["callgrind_control", "-i", "off", pid], capture_output=True, check=True)
                        before = set(work.glob("callgrind.out*"))
                        subprocess.run(["callgrind_control", "-d", pid], capture_output=True, check=True)
                        dump = next(iter(set(work.glob("callgrind.out*")) - before))
                        results[(row, name)] = split(dump, n)
                        if keep is not None:
                            slug = "".join(ch if ch.isalnum() or ch == "-" else "_" for ch in row)
                            shutil.copy(dump, keep / f"{slug}.{name}.callgrind")
                        print(f"{row} {name}: {results[(row, name)]['total'] / 1000:.1f} k instructions/request", file=sys.stderr, flush=True)
            finally:
                e.stop()
        finally:
            upstream.stop()
    cmd = ["valgrind", *wrapper[1:4], "envoy …"]
    return results, cmd


def count(row: str, requests: int) -> int:
    """Requests counted for `row`: a third as many for the 64 KB rows,
    which take valgrind minutes each (the figure is as steady)."""
    return requests if "-1k" in row else max(requests // 3, 1)


def post(port: int, case: str, request: bytes, headers: dict[str, str], n: int) -> None:
    """`n` requests in turn on one kept-alive connection."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        for _ in range(n):
            c.request("POST", f"/load/{case}", body=request, headers={
                "content-type": "application/json", "accept": "application/json, text/event-stream",
                "accept-encoding": "gzip", **headers,
            })
            r = c.getresponse()
            r.read()
            if r.status != 200:
                raise SystemExit(f"{case}: status {r.status}")
    finally:
        c.close()


def section(rows: list[str], requests: int, keep: Path | None = None) -> str:
    results, cmd = measure(rows, requests, keep)
    labels = {"none": "no plugin", "empty": "empty wasm filter", "floor": "floor: body copied through the VM",
              "calls": "floor + the plugin's host calls",
              "off": "plugin, every stage off", "adaptive": "plugin, defaults"}
    lines = [
        "| result | Envoy | k instructions / request | × no plugin | × floor | Envoy's binary | wasm code | libc |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        base = results[(row, "none")]["total"]
        floor = results[(row, "floor")]["total"]
        for name in LISTENERS:
            r = results[(row, name)]
            k = lambda part: f"{r.get(part, 0) / 1000:,.1f}"  # noqa: E731
            lines.append(
                f"| {row} | {labels[name]} | {r['total'] / 1000:,.1f} | {r['total'] / base:.2f} | {r['total'] / floor:.2f} "
                f"| {k('envoy')} | {k('wasm')} | {k('libc')} |"
            )
    return f"""## Instructions per request through Envoy

Command: `.venv/bin/python scripts/instructions.py --requests {requests}` (part of `make bench`;
`scripts/instructions.py` says how it counts).

The Envoy of the section above (same listeners, bodies and canned upstream)
runs its own binary under `{shlex.join(cmd)}`; after a warm-up of {WARM_UP}
requests, instructions are counted while one client sends {requests} requests
({count("x-64k", requests)} for the 64 KB rows), one at a time, to one listener,
and divided by their number. Unlike CPU time, the count does not move
with the rest of the machine. Split by where they ran: Envoy's binary (its
own code and V8's builtins: the crossings between Envoy and the module); the
module's wasm code as V8 compiled it; libc. Callgrind sees user space only:
the kernel's share of moving the bytes (sockets, copies), which is most of
what Envoy alone spends on a large body, is not counted, so these ratios
run higher than the CPU-time ratios above for the same rows. Read them
for where the plugin's instructions go and for comparing two builds.

{chr(10).join(lines)}
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--rows", help=f"comma-separated, of {', '.join(ROWS)}")
    ap.add_argument("--keep", type=Path, help="a folder to keep each cell's callgrind dump in, for callgrind_annotate")
    ap.add_argument("--listeners", help=f"comma-separated, of {', '.join(LISTENERS)}: only these cells, one line each "
                    "(comparing two builds: the module is the one under CARGO_TARGET_DIR, as for the e2e suite)")
    args = ap.parse_args()
    rows = args.rows.split(",") if args.rows else ROWS
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    if args.listeners:
        LISTENERS[:] = args.listeners.split(",")
        results, _ = measure(rows, args.requests, args.keep)
        for (row, name), r in results.items():
            parts = " ".join(f"{p} {r.get(p, 0) / 1000:,.1f}k" for p in ("envoy", "wasm", "libc"))
            print(f"{row} | {name} | {r['total'] / 1000:,.1f}k instructions/request ({parts})")
        return
    print(section(rows, args.requests, args.keep))


if __name__ == "__main__":
    main()
