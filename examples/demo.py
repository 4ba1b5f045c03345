"""`make demo`: the demo MCP server behind Envoy with mcp-toon, every demo
tool called with the official MCP client, directly and through Envoy, and a
before/after table of what crossed the wire.

Starts the demo server and Envoy on free loopback ports and stops both (by
pid) before it exits, whatever happens.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
# The process helpers are shared with the end-to-end tests.
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
import harness  # noqa: E402

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_users", {}),
    ("search_orders", {"page": 1}),
    ("list_products", {}),
    ("station_readings", {}),
    ("get_config", {}),
    ("describe_project", {}),
    ("weather_report", {"city": "Lisbon"}),
    ("failing_lookup", {}),
    ("export_logs", {"megabytes": 3}),
]


@dataclass
class Wire:
    """One tools/call as it crossed the wire."""

    body_bytes: int
    text_bytes: int
    summary: str | None
    text: str


async def call_tools(url: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Wire]:
    """Calls tools with the official client; an httpx2 hook records each
    response's size and x-mcp-toon header as they crossed the wire."""
    seen: list[tuple[int, str | None]] = []

    async def record(response: httpx2.Response) -> None:
        if response.request.headers.get("mcp-method") == "tools/call":
            await response.aread()
            seen.append((len(response.content), response.headers.get("x-mcp-toon")))

    out: dict[str, Wire] = {}
    async with httpx2.AsyncClient(timeout=60, event_hooks={"response": [record]}) as http:
        async with Client(streamable_http_client(url, http_client=http), cache=None) as client:
            for tool, args in calls:
                seen.clear()
                result = await client.call_tool(tool, args)
                text = "".join(c.text for c in result.content if c.type == "text")
                body, summary = seen[-1] if seen else (0, None)
                out[tool] = Wire(body, len(text.encode()), summary, text)
    return out


def outcome(summary: str | None, counters_before: dict[str, float], counters_after: dict[str, float]) -> str:
    if summary:
        return summary
    # The client's own server/discover and tools/list requests move
    # not_tools_call; what is left belongs to the tools/call.
    moved = [
        k.removeprefix("mcp_toon_passthrough_")
        for k, v in counters_after.items()
        if k.startswith("mcp_toon_passthrough_")
        and k != "mcp_toon_passthrough_not_tools_call"
        and v > counters_before.get(k, 0)
    ]
    return ("passthrough=" + ",".join(moved) + " (from stats)") if moved else "?"


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="mcp-toon-demo-"))
    server = envoy = None
    try:
        server, port = harness.start_demo_server(work)
        print(f"demo MCP server (official SDK, JSON response mode): http://127.0.0.1:{port}/mcp")
        listener = harness.Listener("mcp", {"hold_headers": True})
        envoy = harness.start_envoy([listener], port, work, name="envoy-demo")
        print(f"Envoy {harness.envoy_version()} (V8) with mcp-toon:          http://127.0.0.1:{listener.port}/mcp")
        print(f"Envoy admin: http://127.0.0.1:{envoy.admin_port}/stats/prometheus   logs: {work}\n")

        rows = []
        for tool, args in CALLS:
            # One client per call on both paths, so the JSON-RPC ids (and so
            # the byte counts) match, and the counters that move belong to it.
            direct = anyio.run(call_tools, f"http://127.0.0.1:{port}/mcp", [(tool, args)])
            before = envoy.prometheus()
            via = anyio.run(call_tools, envoy.url("mcp"), [(tool, args)])[tool]
            after = envoy.prometheus()
            rows.append((tool, direct[tool], via, outcome(via.summary, before, after)))

        header = f"{'tool':<18} {'direct B':>10} {'via Envoy B':>12} {'saved':>7}   {'text B before→after':>22}   outcome"
        print(header)
        print("-" * len(header) + "-" * 24)
        total_direct = total_via = 0
        for tool, d, v, what in rows:
            saved = 100.0 * (d.body_bytes - v.body_bytes) / d.body_bytes if d.body_bytes else 0.0
            total_direct += d.body_bytes
            total_via += v.body_bytes
            texts = f"{d.text_bytes}→{v.text_bytes}"
            print(f"{tool:<18} {d.body_bytes:>10} {v.body_bytes:>12} {saved:>6.1f}%   {texts:>22}   {what}")
        small_d = sum(d.body_bytes for t, d, v, _ in rows if t != "export_logs")
        small_v = sum(v.body_bytes for t, d, v, _ in rows if t != "export_logs")
        print(f"\nall tools except export_logs: {small_d} B → {small_v} B ({100.0 * (small_d - small_v) / small_d:.1f}% fewer bytes)")
        print("export_logs (3 MB) is above max_body_bytes (1 MiB): passed through whole, counted as response_too_large.")

        sample, original = next((v.text, d.text) for t, d, v, _ in rows if t == "list_users")
        lines = sample.splitlines()
        print("\nTOON sample (list_users through Envoy, first lines):")
        for line in lines[:7]:
            print("  " + line)
        print(f"  … ({len(lines)} lines)")
        decoded = harness.toon_decode(harness.split_marker(sample))
        harness.same_json(decoded, json.loads(original))
        print("  decodes (reference TypeScript decoder) to exactly the server's JSON.")

        counters = {k: int(v) for k, v in envoy.prometheus().items() if k.startswith("mcp_toon_") and v}
        print("\nmcp-toon counters in /stats/prometheus:")
        for name, value in sorted(counters.items()):
            print(f"  {name} {value}")
        return 0
    finally:
        if envoy is not None:
            envoy.stop()
        if server is not None:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
