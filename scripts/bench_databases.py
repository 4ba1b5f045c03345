"""`make bench`, database MCP servers: what mcp-toon at its default
configuration does to the results of five database and spreadsheet servers
this project did not write, on real databases (issue 39).

PyPI `mcp-server-sqlite` on SQLite, npm `@modelcontextprotocol/server-postgres`
and `@bytebase/dbhub` on PostgreSQL (Debian's), PyPI `mcp-server-motherduck`
on DuckDB loaded from CSV, PyPI `excel-mcp-server` on an .xlsx workbook, each
bridged from stdio to Streamable HTTP by supergateway, on the data of
tests/e2e/db_fixtures.py (customers with names in many scripts, orders;
6,000 customers make a whole-table select of about 1 MB). Each server's plan
(tests/e2e/databases.py) runs with the official TypeScript client through
one Envoy, on a listener without the plugin and one with it at `{}`; each
call is checked with the database tier's rule (`databases.compare`). Per
call: response bytes as they crossed the wire, text bytes, o200k_base tokens
of the text items without and with the plugin (counted by `mcp-toon
measure`, `make cli`), and the best lossless rewrite: the fewest tokens of
the server's text, the compact JSON (UTF-8) of its value, and the plugin's
marker and TOON of that value (`mcp-toon encode`); the value read from JSON,
or from the Python literal mcp-server-sqlite writes (`ast.literal_eval`).

Writes the section "Database MCP servers (default configuration)" into
BENCHMARKS.md (replacing it if there) and prints it. With `--capture`, also
writes each server's 500-row result and its whole-table result
(tests/fixtures/databases/, see its README).

Run from the repository root after `make build cli`:
.venv/bin/python scripts/bench_databases.py [--capture]
"""

from __future__ import annotations

import argparse
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

import databases  # noqa: E402
import db_fixtures  # noqa: E402
import artifacts  # noqa: E402
import harness  # noqa: E402
import measure  # noqa: E402

OUT = ROOT / "BENCHMARKS.md"
HEADING = "## Database MCP servers (default configuration)"
CORPUS = ROOT / "tests" / "fixtures" / "databases"
# What --capture keeps of each server's whole-table read (the others are
# made again by this script; the files stay a few MB).
CAPTURE_ALL = {"sqlite", "dbhub", "excel"}
SMALL = 512 * 1024


def pct(before: int, after: int) -> str:
    return f"{100.0 * (before - after) / before:.1f} %" if before else "–"


def label(m: databases.Measured, page: int | None) -> str:
    e = m.exchange
    if e.kind == "select all" and page is not None:
        return f"select all, page {page} (`{e.name}`)"
    if e.kind == "write" and e.server == "excel":
        return f"write (`{e.name}`)"
    return f"{e.kind} (`{e.name}`)"


def rows_of(measured: list[databases.Measured]) -> list[dict[str, Any]]:
    out = []
    pages: dict[str, int] = {}
    for m in measured:
        e = m.exchange
        page = None
        if e.server == "excel" and e.kind == "select all":
            pages[e.server] = page = pages.get(e.server, 0) + 1
        out.append({
            "server": e.server,
            "call": label(m, page),
            "body": tuple(len(c.get("body", "").encode()) for c in (e.bare, e.via)),
            "text_bytes": m.text_bytes,
            "tokens": m.tokens,
            "best": m.best,
            "outcome": ", ".join(m.outcomes) or "no text",
        })  # fmt: skip
    return out


def summary_line(name: str, mine: list[dict[str, Any]]) -> str:
    td, tv = sum(r["text_bytes"][0] for r in mine), sum(r["text_bytes"][1] for r in mine)
    kd, kv = sum(r["tokens"][0] for r in mine), sum(r["tokens"][1] for r in mine)
    best = sum(r["best"] for r in mine)
    return f"| {name} | {len(mine)} | {td:,} → {tv:,} | {kd:,} → {kv:,} | {pct(kd, kv)} | {best:,} | {pct(kd, best)} |"


def tables(rows: list[dict[str, Any]]) -> tuple[str, str]:
    calls = [
        "| server | call | response bytes without → with | text bytes | o200k tokens without → with | saved | best lossless | outcome |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        (bd, bv), (td, tv), (kd, kv) = r["body"], r["text_bytes"], r["tokens"]
        calls.append(f"| {r['server']} | {r['call']} | {bd:,} → {bv:,} | {td:,} → {tv:,} | {kd:,} → {kv:,} | {pct(kd, kv)} | {r['best']:,} ({pct(kd, r['best'])}) | {r['outcome']} |")
    summary = [
        "| server | calls | text bytes without → with | o200k tokens without → with plugin | saved | best lossless | best saved |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for server in dict.fromkeys(r["server"] for r in rows):
        summary.append(summary_line(server, [r for r in rows if r["server"] == server]))
    n = len({r["server"] for r in rows})
    summary.append(summary_line(f"**all {n}**", rows))
    small = [r for r in rows if r["text_bytes"][0] < SMALL]
    summary.append(summary_line(f"all {n}, results under 512 KiB", small))
    summary.append(summary_line(f"all {n}, 500-row selects", [r for r in rows if r["call"].startswith("select 500")]))
    return "\n".join(summary), "\n".join(calls)


def versions() -> str:
    npm = json.loads((ROOT / "tests/e2e/package.json").read_text())["dependencies"]
    pins = {}
    for f in ("requirements-servers.txt", "requirements-sqlite.txt"):
        for line in (ROOT / "scripts" / f).read_text().splitlines():
            if "==" in line and not line.startswith("#"):
                name, version = line.split("==", 1)
                pins[name.strip()] = version.strip()
    pg = databases.pg_bin()
    # "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
    said = subprocess.run([str(pg / "postgres"), "--version"], capture_output=True, text=True).stdout.split() if pg else []
    pg_version = f"PostgreSQL {said[2]}" if len(said) > 2 else "PostgreSQL"
    return (
        f"`mcp-server-sqlite` {pins.get('mcp-server-sqlite', '?')} (with `mcp` {pins.get('mcp', '?')}), "
        f"`@modelcontextprotocol/server-postgres` {npm['@modelcontextprotocol/server-postgres']} and "
        f"`@bytebase/dbhub` {npm['@bytebase/dbhub']} on {pg_version}, "
        f"`mcp-server-motherduck` {pins.get('mcp-server-motherduck', '?')}, "
        f"`excel-mcp-server` {pins.get('excel-mcp-server', '?')}; supergateway {npm['supergateway']}, "
        f"`@modelcontextprotocol/sdk` {npm['@modelcontextprotocol/sdk']} (the client)"
    )


def section(rows: list[dict[str, Any]], seconds: float) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    summary, calls = tables(rows)
    return f"""{HEADING}

Command: `.venv/bin/python scripts/bench_databases.py` (part of `make bench`; run on
{datetime.now(timezone.utc).strftime("%Y-%m-%d")} at commit `{commit}`{" (with uncommitted changes)" if dirty else ""}, {seconds:.0f} s).

Database and spreadsheet servers this project did not write: {versions()}.
Each a stdio server bridged to Streamable HTTP, on the data of
`tests/e2e/db_fixtures.py`: {db_fixtures.CUSTOMERS:,} customers (names, cities
and notes in eleven languages and scripts, e-mail addresses, dates, decimal
credit limits, booleans, NULLs) and {db_fixtures.ORDERS:,} orders (timestamps,
decimal totals, currencies, NULL ship times), in a SQLite file, a PostgreSQL
database of the test's own cluster, CSV files DuckDB loads, and an .xlsx
workbook. Each server's plan (`tests/e2e/databases.py`): its schema, a
table's columns, selects of 5 customers, 50 orders with their customer's
name, 500 orders (`SELECT * FROM orders ORDER BY id LIMIT 500`), an aggregate
(revenue by country and currency; in the workbook, COUNTIF/SUMIF formulas on
a sheet added for them), a write and its undo where the server allows them
(server-postgres runs every query read-only: refused), a query with a typo,
and the whole customers table (`SELECT * FROM customers ORDER BY id`: about
1 MB; the spreadsheet server answers at most 10,000 cells a call, so it
takes seven pages). motherduck runs with `--max-rows 100000 --max-chars
100000000` (by default it cuts results at 1,024 rows and 50,000 characters).

Every call made with the official TypeScript client through Envoy
{harness.envoy_version()} (V8), on a listener without the plugin and one with
mcp-toon at `{{}}`. Text bytes and o200k_base tokens of the `content[]` text
items (motherduck and excel also send `structuredContent`, not counted),
counted by `{measure.cli_name()} measure`. Outcome, checked as in
`tests/e2e/test_databases.py`: `identical`, `json` (a JSON text whose value is
the server's) or `toon` (the marker and TOON the reference TypeScript decoder
reads back to the server's value); `error` (a JSON-RPC error) and `isError`
results pass byte for byte. Best lossless: the fewest tokens of the server's
text, the compact JSON (UTF-8) of its value and the plugin's marker and TOON
of that value (`mcp-toon encode`); the value read from the JSON text, or
from the Python literal mcp-server-sqlite writes (`str(rows)`, read with
`ast.literal_eval`).

{summary}

{calls}
"""


def splice(text: str, new: str) -> str:
    """BENCHMARKS.md with this section replaced (or appended)."""
    start = text.find(HEADING)
    if start < 0:
        return text.rstrip("\n") + "\n\n" + new
    end = text.find("\n## ", start + len(HEADING))
    return text[:start] + new + (text[end + 1 :] if end >= 0 else "")


def capture(measured: list[databases.Measured]) -> list[Path]:
    """Each server's 500-row result and (for CAPTURE_ALL) its whole-table
    result (the spreadsheet server's first page), the text item exactly as
    the server sent it: `.json` when it is JSON, `.txt` otherwise."""
    CORPUS.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for m in measured:
        e = m.exchange
        if e.kind == "select 500":
            name = f"{e.server}-select-500"
        elif e.kind == "select all" and e.server in CAPTURE_ALL:
            name = f"{e.server}-select-all" + ("-page-1" if e.server == "excel" else "")
        else:
            continue
        if name in written:
            continue
        (text,) = databases.texts_of(e.messages()[0])
        try:
            json.loads(text)
            suffix = "json"
        except ValueError:
            suffix = "txt"
        path = CORPUS / f"{name}.{suffix}"
        path.write_bytes(text.encode())
        written[name] = path
    return list(written.values())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--capture", action="store_true", help=f"also write the 500-row and whole-table results into {CORPUS.relative_to(ROOT)}/")
    args = ap.parse_args()
    missing = databases.missing()
    if missing:
        raise SystemExit(f"missing {', '.join(map(str, missing))}: run scripts/bootstrap.sh")
    started = time.monotonic()
    # A fixed folder: the workbook's path appears in no answer, but a fixed
    # place keeps the run's files where they can be looked at afterwards.
    work = artifacts.TARGET / "bench-databases"
    shutil.rmtree(work, ignore_errors=True)
    measured = databases.measured(databases.exchange(work).calls, work)
    rows = rows_of(measured)
    new = section(rows, time.monotonic() - started)
    print(new)
    OUT.write_text(splice(OUT.read_text() if OUT.exists() else "# Benchmarks\n", new))
    print(f"wrote {OUT}", file=sys.stderr)
    if args.capture:
        for path in capture(measured):
            print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
