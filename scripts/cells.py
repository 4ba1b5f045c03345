"""The cells of the Envoy section (scripts/bench.py) that scripts/instructions.py
measures too: the result bodies, the listeners, the floor filter and the
requests each row sends. Both scripts read them here, so neither names the
other's internals."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

import artifacts  # noqa: E402
import harness  # noqa: E402


def sh(argv: list[str], env: dict[str, str] | None = None) -> str:
    print("+", shlex.join(argv), file=sys.stderr, flush=True)
    r = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if r.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r.stdout


def result(text: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}], "isError": False}}, separators=(",", ":")).encode()


def tabular_text(size: int) -> str:
    """A JSON array of uniform rows, about `size` bytes compact."""
    rows, total, i = [], 2, 0
    while total < size - 120:
        row = {"id": i, "sku": f"SKU-{i:05d}", "name": f"Widget {i}", "price": round(3.5 + i * 0.25, 2), "stock": i * 7 % 113, "active": i % 4 != 0}
        rows.append(row)
        total += len(json.dumps(row, separators=(",", ":"))) + 1
        i += 1
    return json.dumps(rows, separators=(",", ":"))


def non_tabular_text(size: int) -> str:
    """A JSON document, not a table: sections with varying nested arrays."""
    sections, total, i = [], 40, 0
    doc = {"title": "Quarterly review", "sections": sections}
    while total < size - 160:
        section = {"heading": f"Part {i}", "body": "Shipping times improved while returns stayed flat. " * (1 + i % 3), "tags": ["ops", "q3"][: 1 + i % 2], "refs": [{"doc": i, "page": i % 7}] * (i % 3)}
        sections.append(section)
        total += len(json.dumps(section, separators=(",", ":"))) + 1
        i += 1
    return json.dumps(doc, separators=(",", ":"))


def source_text(size: int) -> str:
    """A source file, about `size` bytes, as a filesystem server's read_file
    returns it: lines of code with indentation, quotes and backslashes, not
    JSON, so that every stage at its defaults leaves it as it is."""
    lines, total, i = [], 0, 0
    while total < size:
        block = [
            f"def handler_{i}(request, retries={i % 5}):",
            f'    """Answer request {i}; see "docs/handlers.md" for the rules."""',
            f"    path = request.path.replace('\\\\', '/')",
            f"    if not path.startswith('/api/v{i % 3}'):",
            f"        raise ValueError(f\"bad path: {{path!r}}\\n\")",
            f"    return {{'id': {i}, 'ok': True, 'path': path}}",
            "",
        ]
        lines.extend(block)
        total += sum(len(line) + 1 for line in block)
        i += 1
    return "\n".join(lines)[:size]


def table_rows(n: int) -> list[dict[str, Any]]:
    """`n` rows of the shape `tabular_text` writes."""
    return [{"id": i, "sku": f"SKU-{i:05d}", "name": f"Widget {i}", "price": round(3.5 + i * 0.25, 2), "stock": i * 7 % 113, "active": i % 4 != 0} for i in range(n)]


# The same 600-row table (about 53 KB compact) as servers write it: compact;
# with Python's default separators (`json.dumps(rows)`: ", " and ": ");
# pretty (`JSON.stringify(rows, null, 2)`, Python's `indent=2`). Issue 39:
# the spaced and pretty ones cost 4-5 times the compact one through Envoy.
LAYOUTS = {
    "tabular-600": lambda rows: json.dumps(rows, separators=(",", ":")),
    "tabular-600-spaced": lambda rows: json.dumps(rows),
    "tabular-600-pretty": lambda rows: json.dumps(rows, indent=2),
}


def dbhub_text(n: int) -> str:
    """A select of `n` rows as `@bytebase/dbhub` answers it: the rows two
    levels below the root, beside the statement's other fields, written
    with `JSON.stringify(result, null, 2)`."""
    result = {"success": True, "data": {"statements": [{"sql": f"SELECT * FROM products LIMIT {n}", "rows": table_rows(n), "rowCount": n}], "totalStatements": 1}}
    return json.dumps(result, indent=2)


def envoy_bodies() -> dict[str, bytes]:
    """The Envoy section's result bodies, by case name."""
    bodies = {}
    for label, size in SIZES:
        bodies[f"tabular-{label}"] = body_of(tabular_text, size)
        bodies[f"nontabular-{label}"] = body_of(non_tabular_text, size)
    # A tools/call result the plugin leaves unchanged at its defaults,
    # read to its end to know that: text that is not JSON.
    bodies["source-64k"] = body_of(source_text, 64 * 1024)
    for name, layout in LAYOUTS.items():
        bodies[name] = result(layout(table_rows(600)))
    bodies["dbhub-500"] = result(dbhub_text(500))
    for label, within in LARGE_TABLES:
        bodies[f"tabular-{label}"] = body_of(tabular_text, None, within)
    return bodies


CLEAN_OFF = {"html_to_markdown": False, "strip_base64": False, "collapse_whitespace": False, "compact_json": False}
# (label, listener name, what it runs): None no wasm filter; "pass"/"copy"/
# "calls" the floor filter (benches/floor/) so configured; a dict, mcp-toon with
# that configuration.
ENVOY_LISTENERS: list[tuple[str, str, Any]] = [
    ("no plugin", "none", None),
    ("empty wasm filter", "empty", "pass"),
    ("floor: body copied through the VM", "floor", "copy"),
    ("floor + the plugin's host calls", "calls", "calls"),
    ("plugin, every stage off", "off", {"toon": {"mode": "off"}, "clean": CLEAN_OFF}),
    ("plugin, defaults", "adaptive", {}),
]
# Sizes of the result text: 1 KB and 64 KB; "1m": the largest text whose
# body (the text escaped into a JSON string) stays within 1 MiB less 1 KiB
# (the size the plugin read at most before max_response_bytes, 16 MiB).
SIZES = (("1k", 1024), ("64k", 64 * 1024), ("1m", None))
BODY_1M = 1024 * 1024 - 1024
# Tables as database tools return them: the largest whose body stays within
# 4 MiB and 16 MiB less 1 KiB (max_response_bytes, 16 MiB by default: past
# it a body passes untouched).
LARGE_TABLES = (("4m", 4 * 1024 * 1024 - 1024), ("16m", 16 * 1024 * 1024 - 1024))


def body_of(make: Callable[[int], str], size: int | None, within: int = BODY_1M) -> bytes:
    if size is not None:
        return result(make(size))
    size = within
    while len(body := result(make(size))) > within:
        size -= (len(body) - within) * 4 // 5 + 256
    return body
FLOOR_WASM = artifacts.TARGET / "floor" / "wasm32-wasip1" / "release" / "mcp_toon_floor.wasm"



def build_wasm(crate: str, target_dir: str) -> list[str]:
    """Builds one of the bench's own crates (benches/CRATE/) for
    wasm32-wasip1 into target/TARGET_DIR/ (FLOOR_WASM, CORE_WASM); the
    command."""
    cmd = ["cargo", "build", "--quiet", "--release", "--target", "wasm32-wasip1", "--manifest-path", f"benches/{crate}/Cargo.toml", "--target-dir", str(artifacts.TARGET / target_dir)]
    sh(cmd)
    return cmd


def floor_tweak(config: dict[str, Any]) -> None:
    """Points the floor listeners' wasm filter at the floor module, each in
    a VM of its own, configured `pass`, `copy` or `calls`."""
    for lst in config["static_resources"]["listeners"]:
        what = next((w for _, name, w in ENVOY_LISTENERS if name == lst["name"]), None)
        if not isinstance(what, str):
            continue
        hcm = lst["filter_chains"][0]["filters"][0]["typed_config"]
        wasm = next(f for f in hcm["http_filters"] if f["name"] == "envoy.filters.http.wasm")
        cfg = wasm["typed_config"]["config"]
        cfg["vm_config"]["vm_id"] = f"floor_{what}"
        cfg["vm_config"]["code"]["local"]["filename"] = str(FLOOR_WASM)
        cfg["configuration"]["value"] = what
        cfg.pop("allow_on_headers_stop_iteration", None)


def tools_call() -> bytes:
    return json.dumps(harness.jsonrpc("tools/call", {"name": "bench", "arguments": {}}, id=1), separators=(",", ":")).encode()


def resources_read() -> bytes:
    """A request the plugin leaves alone: the same canned response answers it."""
    return json.dumps(harness.jsonrpc("resources/read", {"uri": "file:///bench.json"}, id=1), separators=(",", ":")).encode()


# MCP 2026-07-28 (SEP-2243): a client names the method (and the tool or
# resource) of every request in headers; a request the plugin leaves alone
# is then decided before its body is read.
ROUTING_HEADERS = {"mcp-method": "resources/read", "mcp-name": "file:///bench.json"}
RESOURCES_READ = "tabular-64k (resources/read)"
RESOURCES_READ_2026 = "tabular-64k (resources/read + Mcp-Method)"


def request_rows(names: list[str]) -> list[tuple[str, str, bytes, dict[str, str]]]:
    """(row, canned case, request body, request headers) of the Envoy
    section: every result answers a tools/call; the 64 KB table also
    answers a request that is not one, without and with the 2026-07-28
    routing headers."""
    rows = [(name, name, tools_call(), {}) for name in names]
    at = next(i for i, r in enumerate(rows) if r[0] == "tabular-64k") + 1
    rows[at:at] = [
        (RESOURCES_READ, "tabular-64k", resources_read(), {}),
        (RESOURCES_READ_2026, "tabular-64k", resources_read(), ROUTING_HEADERS),
    ]
    return rows
