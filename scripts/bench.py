"""`make bench` (first part): runs the benchmarks of issue 7 and rewrites BENCHMARKS.md
with the figures and the commands that made them.

1. token savings on bench/corpus/ (cargo bench --bench token_savings), and
   before/after projection (cargo bench --bench projection);
2. native TOON stage throughput (cargo bench --bench toon_throughput);
3. through Envoy: no plugin / plugin with every stage off / plugin adaptive,
   on tabular and non-tabular results of 1 KB and 64 KB, with wrk;
4. module size and peak core memory per stream (cargo bench --bench
   stream_memory).

Run from the repository root after `make build`: .venv/bin/python scripts/bench.py
Options: --seconds N (wrk run length per cell, default 8), --only SECTION
(tokens, throughput, envoy, memory; repeatable) to rerun a part and keep the
other sections' last figures out (the file is rewritten whole).
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
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

import harness  # noqa: E402
import loadgen  # noqa: E402
from harness import Listener  # noqa: E402

OUT = ROOT / "BENCHMARKS.md"


def sh(argv: list[str], env: dict[str, str] | None = None) -> str:
    print("+", shlex.join(argv), file=sys.stderr, flush=True)
    r = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if r.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r.stdout


def machine() -> str:
    cpu = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines() if l.startswith("model name")), "?")
    return f"{os.cpu_count()} × {cpu}, {platform.system()} {platform.release()}"


# --- 1. tokens ------------------------------------------------------------------------


def tokens() -> str:
    cmd = ["cargo", "bench", "--quiet", "--features", "cli", "--bench", "token_savings"]
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
  every lossy transform, is off by default (README "Recipes").
"""


# --- 2. throughput ----------------------------------------------------------------------


def throughput() -> str:
    cmd = ["cargo", "bench", "--quiet", "--features", "cli", "--bench", "toon_throughput"]
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
    cmd = ["cargo", "bench", "--quiet", "--features", "cli", "--bench", "projection"]
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


def result(text: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}], "isError": False}}, separators=(",", ":")).encode()


def tabular_text(size: int) -> str:
    rows, i = [], 0
    while len(json.dumps(rows, separators=(",", ":"))) < size - 120:
        rows.append({"id": i, "sku": f"SKU-{i:05d}", "name": f"Widget {i}", "price": round(3.5 + i * 0.25, 2), "stock": i * 7 % 113, "active": i % 4 != 0})
        i += 1
    return json.dumps(rows, separators=(",", ":"))


def non_tabular_text(size: int) -> str:
    """A JSON document, not a table: sections with varying nested arrays."""
    sections, i = [], 0
    doc = {"title": "Quarterly review", "sections": sections}
    while len(json.dumps(doc, separators=(",", ":"))) < size - 160:
        sections.append({"heading": f"Part {i}", "body": "Shipping times improved while returns stayed flat. " * (1 + i % 3), "tags": ["ops", "q3"][: 1 + i % 2], "refs": [{"doc": i, "page": i % 7}] * (i % 3)})
        i += 1
    return json.dumps(doc, separators=(",", ":"))


CLEAN_OFF = {"html_to_markdown": False, "strip_base64": False, "collapse_whitespace": False, "compact_json": False}
ENVOY_LISTENERS = [
    ("no plugin", "none", {}),
    ("plugin, every stage off", "off", {"toon": {"mode": "off"}, "clean": CLEAN_OFF}),
    ("plugin, adaptive (defaults)", "adaptive", {}),
]


def envoy(seconds: int) -> str:
    bodies = {}
    for label, size in (("1k", 1024), ("64k", 64 * 1024)):
        bodies[f"tabular-{label}"] = result(tabular_text(size))
        bodies[f"nontabular-{label}"] = result(non_tabular_text(size))
    cases = [loadgen.Canned(name, body) for name, body in bodies.items()]
    request = json.dumps(harness.jsonrpc("tools/call", {"name": "bench", "arguments": {}}, id=1), separators=(",", ":")).encode()
    rows = []
    with tempfile.TemporaryDirectory(prefix="mcp-toon-bench-") as tmp:
        work = Path(tmp)
        upstream, port = loadgen.start_canned_upstream(cases, work)
        try:
            listeners = [Listener(name, cfg, False) for _, name, cfg in ENVOY_LISTENERS]
            e = loadgen.start_plugin_envoy(listeners, port, work, "envoy-bench", no_plugin=("none",))
            try:
                for case in cases:
                    for label, name, _ in ENVOY_LISTENERS:
                        url = e.url(name, "")
                        # Sizes as the client sees them, and a warm-up.
                        sent = harness.post(f"{url}/load/{case.name}", json.loads(request))
                        assert sent.status_code == 200, sent
                        loadgen.run_wrk(url, [case.name], None, 500, 4, threads=1, request_body=request)
                        cpu_before = cpu_seconds(e.proc.pid)
                        r = loadgen.run_wrk(url, [case.name], None, None, CONNECTIONS, threads=2, seconds=seconds, request_body=request)
                        cpu_us = (cpu_seconds(e.proc.pid) - cpu_before) * 1e6 / max(r.responses, 1)
                        assert r.non_2xx == 0 and not any(r.errors.values()), r.output
                        rows.append((case.name, len(case.body), len(sent.content), label, r, cpu_us))
                        print(f"{case.name} {label}: {r.requests_per_s:.0f} req/s p50 {r.latency_us['p50']} us p99 {r.latency_us['p99']} us, {cpu_us:.0f} us CPU/req", file=sys.stderr)
            finally:
                e.stop()
        finally:
            upstream.stop()
    lines = [
        "| result | server bytes | client bytes | Envoy | requests/s | p50 ms | p99 ms | Envoy CPU µs/request |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for name, sent, got, label, r, cpu_us in rows:
        lines.append(
            f"| {name} | {sent} | {got} | {label} | {r.requests_per_s:.0f} | {r.latency_us['p50'] / 1000:.2f} | {r.latency_us['p99'] / 1000:.2f} | {cpu_us:.0f} |"
        )
    table = "\n".join(lines)
    return f"""## Through Envoy

Command: `.venv/bin/python scripts/bench.py --only envoy --seconds {seconds}` (part of `make bench`).

One Envoy {harness.envoy_version()} (V8, `--concurrency 1`, no access or debug
log) with three listeners — no wasm filter; mcp-toon with TOON mode `off` and
every clean transform off; mcp-toon with its default configuration (compact
JSON, adaptive TOON) — in front of a second Envoy that answers with canned tool
results (`direct_response`, so no Python on the path). Each cell: `wrk -t2
-c{CONNECTIONS} -d{seconds}s` POSTing one `tools/call` (after a warm-up of 500
requests); latency is wrk's, from send to last byte, under {CONNECTIONS}
connections in flight. Both Envoys and wrk share the machine (with whatever
else runs on it), so requests/s and latency compare the rows of one run, not
machines; "Envoy CPU µs/request" is the plugin Envoy's user + system CPU time
(`/proc/PID/stat`) over the cell divided by the responses, which depends less
on what else runs. The non-tabular result is a compact JSON document
with nested arrays: TOON passes it (`not_tabular`) and it leaves unchanged.

{table}
"""


CONNECTIONS = 8


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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--only", action="append", choices=["tokens", "projection", "throughput", "envoy", "memory"])
    args = ap.parse_args()
    wanted = args.only or ["tokens", "projection", "throughput", "envoy", "memory"]
    started = time.monotonic()
    sections = []
    if "tokens" in wanted:
        sections.append(tokens())
    if "projection" in wanted:
        sections.append(projection())
    if "throughput" in wanted:
        sections.append(throughput())
    if "envoy" in wanted:
        sections.append(envoy(args.seconds))
    if "memory" in wanted:
        sections.append(memory())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    head = f"""# Benchmarks

Written by `make bench` (`scripts/bench.py`; the last section by
`scripts/bench_real.py`, with its own date and commit); do not edit by hand. Run on
{datetime.now(timezone.utc).strftime("%Y-%m-%d")} at commit `{commit}`{" (with uncommitted changes)" if dirty else ""}, on {machine()};
{time.monotonic() - started:.0f} s. The machine was shared with other work, so
absolute figures vary between runs; each section compares within one run.
"""
    OUT.write_text(head + "\n" + "\n".join(sections))
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
