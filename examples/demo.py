"""`make demo`: the demo MCP server behind Envoy with mcp-toon, every demo
tool called with the official MCP client, directly and through Envoy, and a
before/after table of what crossed the wire: response bytes, and the bytes and
o200k_base tokens of the text items. Tokens are counted by the project's own
CLI (`mcp-toon measure --format json`, built by `make cli`), the same code that
measures captured payloads.

The plugin runs as an operator would configure it (PLUGIN_CONFIG): the
defaults — lossless only, nothing an agent may send back changes — for
every tool, and the lossy clean transforms turned on for the few tools whose
results an agent reads but never copies back (a fetched web page, an
attachment, a chart, a log).

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
import measure  # noqa: E402

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
    # The clean stage's demo tools.
    ("fetch_docs_page", {}),
    ("get_attachment", {}),
    ("inventory_report", {}),
    ("render_chart", {}),
    ("tail_logs", {}),
]

# Per-tool opt-ins of the lossy transforms (docs/stages.md "Recipes"). Every other
# tool gets the defaults: compact JSON and adaptive TOON, both lossless.
PLUGIN_CONFIG: dict[str, Any] = {
    "hold_headers": True,
    "tools": {
        # Web fetch: pages and attachments are read, not edited; markup and
        # inline images cost tokens and carry little.
        "fetch_docs_page": {"clean": {"html_to_markdown": True, "strip_base64": True}},
        "get_attachment": {"clean": {"strip_base64": True}},
        "render_chart": {"clean": {"strip_base64": True}},
        # Logs: padded columns say nothing an agent needs.
        "tail_logs": {"clean": {"collapse_whitespace": True}},
    },
}

@dataclass
class Wire:
    """One tools/call as it crossed the wire."""

    body_bytes: int
    text_bytes: int
    summary: str | None
    text: str
    texts: list[str]
    tokens: int = 0


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
                texts = [c.text for c in result.content if c.type == "text"]
                text = "".join(texts)
                body, summary = seen[-1] if seen else (0, None)
                out[tool] = Wire(body, len(text.encode()), summary, text, texts)
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


def count_tokens(wires: dict[str, Wire], work: Path) -> None:
    """Sets each Wire's o200k_base token count of its text items."""
    counts = measure.tokens({key: wire.texts for key, wire in wires.items()}, work)
    for key, wire in wires.items():
        wire.tokens = counts[key]


def pct(before: int, after: int) -> float:
    return 100.0 * (before - after) / before if before else 0.0


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="mcp-toon-demo-"))
    server = envoy = None
    try:
        server, port = harness.start_demo_server(work)
        print(f"demo MCP server (official SDK, JSON response mode): http://127.0.0.1:{port}/mcp")
        listener = harness.Listener("mcp", PLUGIN_CONFIG)
        # The same plugin with no per-tool opt-in: what the opted-in tools
        # get from the defaults alone.
        defaults = harness.Listener("defaults", {"hold_headers": True})
        envoy = harness.start_envoy([listener, defaults], port, work, name="envoy-demo")
        print(f"Envoy {harness.envoy_version()} (V8) with mcp-toon:          http://127.0.0.1:{listener.port}/mcp")
        print(f"Envoy admin: http://127.0.0.1:{envoy.admin_port}/stats/prometheus   logs: {work}")
        print(f"plugin configuration: {json.dumps(PLUGIN_CONFIG)}\n")

        rows = []
        for tool, args in CALLS:
            # One client per call on both paths, so the JSON-RPC ids (and so
            # the byte counts) match, and the counters that move belong to it.
            direct = anyio.run(call_tools, f"http://127.0.0.1:{port}/mcp", [(tool, args)])
            before = envoy.prometheus()
            via = anyio.run(call_tools, envoy.url("mcp"), [(tool, args)])[tool]
            after = envoy.prometheus()
            rows.append((tool, direct[tool], via, outcome(via.summary, before, after)))
        opted_in = {tool: anyio.run(call_tools, envoy.url("defaults"), [(tool, {})])[tool] for tool in PLUGIN_CONFIG["tools"]}

        wires = {f"{t}/direct": d for t, d, _, _ in rows} | {f"{t}/via": v for t, _, v, _ in rows}
        wires |= {f"{t}/defaults": w for t, w in opted_in.items()}
        count_tokens(wires, work)

        header = (
            f"{'tool':<18} {'direct B':>9} {'via Envoy B':>11} {'saved':>6}   {'text B before→after':>20}"
            f"   {'tokens before→after':>20} {'saved':>6}   outcome"
        )
        print(header)
        print("-" * len(header) + "-" * 24)
        for tool, d, v, what in rows:
            texts = f"{d.text_bytes}→{v.text_bytes}"
            tokens = f"{d.tokens}→{v.tokens}"
            print(
                f"{tool:<18} {d.body_bytes:>9} {v.body_bytes:>11} {pct(d.body_bytes, v.body_bytes):>5.1f}%   {texts:>20}"
                f"   {tokens:>20} {pct(d.tokens, v.tokens):>5.1f}%   {what}"
            )
        small = [(d, v) for t, d, v, _ in rows if t != "export_logs"]
        small_d, small_v = sum(d.body_bytes for d, _ in small), sum(v.body_bytes for _, v in small)
        tok_d, tok_v = sum(d.tokens for d, _ in small), sum(v.tokens for _, v in small)
        print(f"\nall tools except export_logs: {small_d} B → {small_v} B ({pct(small_d, small_v):.1f}% fewer bytes); "
              f"text tokens {tok_d} → {tok_v} ({pct(tok_d, tok_v):.1f}% fewer o200k_base tokens)")
        plain = [(d, v) for t, d, v, _ in rows if t != "export_logs" and t not in PLUGIN_CONFIG["tools"]]
        plain_d, plain_v = sum(d.body_bytes for d, _ in plain), sum(v.body_bytes for _, v in plain)
        ptok_d, ptok_v = sum(d.tokens for d, _ in plain), sum(v.tokens for _, v in plain)
        print(f"the {len(plain)} tools at the defaults alone (no opt-in; export_logs aside): {plain_d} B → {plain_v} B "
              f"({pct(plain_d, plain_v):.1f}% fewer bytes); text tokens {ptok_d} → {ptok_v} ({pct(ptok_d, ptok_v):.1f}% fewer)")
        print("export_logs (3 MB) is above max_body_bytes (1 MiB): passed through whole, counted as response_too_large.")
        print("Tokens: o200k_base, of the text items only (render_chart's image item is not text), "
              f"counted by {measure.cli_name()} measure.")

        print("\nThe opted-in tools with the defaults alone (no content changes; JSON only compacted):")
        direct_of = {t: d for t, d, _, _ in rows}
        for tool, w in opted_in.items():
            d = direct_of[tool]
            print(
                f"  {tool:<18} text B {d.text_bytes}→{w.text_bytes}   tokens {d.tokens}→{w.tokens} "
                f"({pct(d.tokens, w.tokens):.1f}% fewer)   {w.summary}"
            )

        sample, original = next((v.text, d.text) for t, d, v, _ in rows if t == "list_users")
        lines = sample.splitlines()
        print("\nTOON sample (list_users through Envoy, first lines):")
        for line in lines[:7]:
            print("  " + line)
        print(f"  … ({len(lines)} lines)")
        decoded = harness.toon_decode(harness.split_marker(sample))
        harness.same_json(decoded, json.loads(original))
        print("  decodes (reference TypeScript decoder) to exactly the server's JSON.")

        markdown = next(v.text for t, _, v, _ in rows if t == "fetch_docs_page")
        lines = [line for line in markdown.splitlines() if line.strip()]
        print("\nHTML → Markdown sample (fetch_docs_page through Envoy, first lines):")
        for line in lines[:8]:
            print("  " + line)
        print(f"  … ({len(markdown.splitlines())} lines)")

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
