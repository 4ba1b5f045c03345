"""`make bench`, real MCP servers: what mcp-toon at its default configuration
does to the results of servers this project did not write.

npm `@modelcontextprotocol/server-filesystem` and `server-memory`, PyPI
`mcp-server-git` and `mcp-server-time` (stdio, bridged to Streamable HTTP by
npm `supergateway`), on the real-server tier's fixtures
(tests/e2e/workspace.py: a project folder, a git repository with indented
changes, a knowledge graph). Every call of the tier's plans is made with the
official TypeScript client directly and through Envoy with the plugin at
`{}`; per call: the response bytes as they crossed the wire, the bytes and
o200k_base tokens of the text items (counted by `mcp-toon measure`, built by
`make cli`), and the outcome (`identical`, `compact` JSON, `toon`), checked
with the same rule as the tier (`peers.compare`).

Writes the table into BENCHMARKS.md as the section "Real MCP servers"
(replacing it if there; scripts/bench.py writes the others) and prints it.
Run from the repository root after `make build cli`:
.venv/bin/python scripts/bench_real.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

import artifacts  # noqa: E402
import harness  # noqa: E402
import measure  # noqa: E402
import peers  # noqa: E402
import workspace  # noqa: E402

OUT = ROOT / "BENCHMARKS.md"
HEADING = "## Real MCP servers (default configuration)"


def label(call: dict[str, Any], servers: workspace.Servers) -> str:
    """The call, short: the tool and what it was asked about."""
    name, args = call["name"], call["arguments"]
    if "path" in args:
        path = Path(args["path"])
        rel = path.relative_to(servers.root) if path.is_relative_to(servers.root) else path
        return f"{name} `{rel}`" + (f" (head {args['head']})" if "head" in args else "") + (f" `{args['pattern']}`" if "pattern" in args else "")
    if "paths" in args:
        return f"{name} ({len(args['paths'])} files)"
    if "revision" in args:
        return f"{name} `{args['revision']}`"
    if "target" in args:
        return f"{name} `{args['target']}`"
    if "query" in args:
        return f"{name} `{args['query']}`"
    if "timezone" in args:
        return f"{name} {args['timezone']}"
    if "source_timezone" in args:
        return f"{name} {args['source_timezone']} → {args['target_timezone']}"
    for key in ("entities", "relations", "observations", "deletions", "entityNames", "names"):
        if key in args:
            return f"{name} ({len(args[key])})"
    return name


def texts_of(message: dict[str, Any]) -> list[str]:
    return [c["text"] for c in message.get("result", {}).get("content", []) if c.get("type") == "text"]


def pct(before: int, after: int) -> str:
    return f"{100.0 * (before - after) / before:.1f} %" if before else "–"


def run() -> tuple[list[dict[str, Any]], str]:
    rows: list[dict[str, Any]] = []
    # A fixed folder: file paths appear in the file server's answers, so a
    # random temporary name would move the token counts from run to run.
    work = artifacts.TARGET / "bench-real"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    servers = workspace.start_servers(work)
    try:
        envoy = peers.start_envoy_for({n: (b.port, {}) for n, b in servers.bridged.items()}, work, "envoy-bench-real")
        try:
            for server, calls in servers.plans().items():
                direct = peers.ts_calls(servers.bridged[server].url, calls)
                via = peers.ts_calls(envoy.url(server), calls)
                seen: dict[str, int] = {}
                for call, d, v in zip(calls, direct["calls"], via["calls"], strict=True):
                    d_msg, v_msg = peers.wire_message(d.get("contentType"), d["body"]), peers.wire_message(v.get("contentType"), v["body"])
                    if server == "time":  # the clock moved between the two calls
                        mask = lambda c: peers.wire_message(c.get("contentType"), workspace.mask_instants(c["body"]))  # noqa: E731
                        outcomes = peers.compare(mask(d), mask(v))
                    else:
                        outcomes = peers.compare(d_msg, v_msg)
                    name = label(call, servers)
                    seen[name] = seen.get(name, 0) + 1
                    rows.append({
                        "server": server,
                        "call": name if seen[name] == 1 else f"{name} (call {seen[name]})",
                        "body": (len(d["body"].encode()), len(v["body"].encode())),
                        "texts": (texts_of(d_msg), texts_of(v_msg)),
                        "outcome": ", ".join(outcomes) if outcomes else "no text (image item, unchanged)",
                    })
        finally:
            envoy.stop()
    finally:
        servers.stop()
    counts = measure.tokens(
        {f"{i}/{side}": row["texts"][side] for i, row in enumerate(rows) for side in (0, 1)}, work
    )
    for i, row in enumerate(rows):
        row["tokens"] = (counts[f"{i}/0"], counts[f"{i}/1"])
        row["text_bytes"] = tuple(sum(len(t.encode()) for t in row["texts"][side]) for side in (0, 1))
    return rows, str(direct.get("protocolVersion"))


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| server | call | response bytes direct → via | text bytes | o200k tokens | tokens saved | outcome |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        (bd, bv), (td, tv), (kd, kv) = r["body"], r["text_bytes"], r["tokens"]
        lines.append(f"| {r['server']} | {r['call']} | {bd:,} → {bv:,} | {td:,} → {tv:,} | {kd:,} → {kv:,} | {pct(kd, kv)} | {r['outcome']} |")
    lines.append("")
    lines.append("| server | calls | identical | compact JSON | TOON | text bytes | o200k tokens | tokens saved |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    for server in [*dict.fromkeys(r["server"] for r in rows), None]:
        mine = [r for r in rows if server is None or r["server"] == server]
        count = lambda o: sum(r["outcome"].split(", ").count(o) for r in mine)  # noqa: E731
        td, tv = sum(r["text_bytes"][0] for r in mine), sum(r["text_bytes"][1] for r in mine)
        kd, kv = sum(r["tokens"][0] for r in mine), sum(r["tokens"][1] for r in mine)
        name = f"**all {len({r['server'] for r in mine})}**" if server is None else server
        lines.append(f"| {name} | {len(mine)} | {count('identical')} | {count('compact')} | {count('toon')} | {td:,} → {tv:,} | {kd:,} → {kv:,} | {pct(kd, kv)} |")
    return "\n".join(lines)


def section(rows: list[dict[str, Any]], protocol: str, seconds: float) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    versions = json.loads((ROOT / "tests/e2e/package.json").read_text())["dependencies"]
    servers_reqs = [l for l in (ROOT / "scripts/requirements-servers.txt").read_text().splitlines() if l and not l.startswith("#")]
    return f"""{HEADING}

Command: `.venv/bin/python scripts/bench_real.py` (part of `make bench`; run on
{datetime.now(timezone.utc).strftime("%Y-%m-%d")} at commit `{commit}`, {seconds:.0f} s).

Servers this project did not write, each a stdio server bridged to Streamable
HTTP by supergateway {versions["supergateway"]}: `@modelcontextprotocol/server-filesystem`
{versions["@modelcontextprotocol/server-filesystem"]}, `@modelcontextprotocol/server-memory`
{versions["@modelcontextprotocol/server-memory"]} (npm), {", ".join(f"`{r}`" for r in servers_reqs)} (PyPI);
the fixtures of the real-server tier (`tests/e2e/workspace.py`, made in
`target/bench-real/`: a project
folder with code, HTML, a PEM certificate, JSON files and a log; a git
repository with indented changes; a knowledge graph). Each call made with the
official TypeScript client (`@modelcontextprotocol/sdk` {versions["@modelcontextprotocol/sdk"]},
MCP {protocol}) directly and through Envoy {harness.envoy_version()} (V8) with mcp-toon
at its default configuration (`{{}}`). Response bytes as they crossed the
wire (supergateway answers with event streams); text bytes and o200k_base
tokens of the `content[]` text items, counted by `{measure.cli_name()} measure`.
Outcome, checked as in `tests/e2e/test_real_servers.py`: `identical` (byte for
byte), `compact` (compact JSON: the same tokens, so the same value and
strings), `toon` (the marker and TOON that the reference TypeScript decoder
turns into the identical value). Instants in `mcp-server-time` results are
masked before comparing (the clock moves between the two calls).

{table(rows)}
"""


def splice(text: str, new: str) -> str:
    """BENCHMARKS.md with this section replaced (or appended)."""
    start = text.find(HEADING)
    if start < 0:
        return text.rstrip("\n") + "\n\n" + new
    end = text.find("\n## ", start + len(HEADING))
    return text[:start] + new + (text[end + 1 :] if end >= 0 else "")


def main() -> None:
    missing = peers.missing()
    if missing:
        raise SystemExit(f"missing {', '.join(map(str, missing))}: run scripts/bootstrap.sh")
    started = time.monotonic()
    rows, protocol = run()
    new = section(rows, protocol, time.monotonic() - started)
    print(new)
    OUT.write_text(splice(OUT.read_text() if OUT.exists() else "# Benchmarks\n", new))
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
