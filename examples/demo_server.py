"""Demo MCP server for mcp-toon: the official Python SDK's MCPServer (the
FastMCP of mcp 1.x, renamed in mcp 2) over Streamable HTTP in JSON response
mode, stateless, so every POST gets one `application/json` answer.

Tools, chosen so each of the plugin's paths has a real example:

    list_users         40 rows, pretty-printed JSON array        -> encoded
    search_orders      paged envelope {"total":..,"items":[..]}  -> encoded
    list_products      a table, for per-tool overrides in tests   -> encoded
    get_config         nested, non-tabular JSON                  -> not_tabular
    describe_project   prose                                     -> not_json
    weather_report     output schema: structuredContent + text   -> not_tabular
    station_readings   output schema whose text is a table       -> encoded text,
                                                                    structuredContent untouched
    failing_lookup     isError: true (its text is a table)       -> is_error
    export_logs        a ~3 MB table (`megabytes` sets its size) -> encoded; past
                                                                    max_response_bytes
                                                                    (16 MiB) response_too_large

    echo_digest        digest of a (possibly huge) argument      -> proves a request
                                                                    arrived intact

  Paging tools (budgets and pages, issue 15):
    export_rows        `count` rows of a table, annotated        -> cut to a budget; pages
                       read-only                                    from the store or by
                                                                    calling it again
    live_feed          a table that changes on every call,        -> a re-issued page is
                       annotated read-only                          refused as changed

  Clean-stage tools (the "clean stage demo tools" block below):
    fetch_docs_page    an HTML documentation page                -> html_to_markdown
    get_attachment     JSON with a base64 blob and a data: URI   -> strip_base64
    inventory_report   pretty-printed JSON table with nulls      -> compact_json / TOON,
                                                                    remove_nulls when on
    render_chart       an image item + text embedding the image  -> image untouched,
                                                                    text strip_base64

A request carrying `x-demo-force-gzip: 1` gets its response gzip-compressed
(`content-encoding: gzip`), whatever its `accept-encoding` says, so a test can
prove a compressed body passes through the proxy intact; `x-demo-chunked: N`
sends the response without `content-length`, in N-byte pieces.

`--transport sse` and `--transport legacy-sse` serve the same tools over
event streams, plus two that report progress (see "SSE modes" below).

Run: python examples/demo_server.py --port 8931   (or MCP_DEMO_PORT=8931)
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import json
import os
import random
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

FIRST = ["Ada", "Grace", "Linus", "Barbara", "Ken", "Margaret", "Dennis", "Frances", "José", "Zoë"]
LAST = ["Lovelace", "Hopper", "Torvalds", "Liskov", "Thompson", "Hamilton", "Ritchie", "Allen", "Núñez", "Ødegård"]
ROLES = ["admin", "editor", "viewer", "owner"]
STATUSES = ["pending", "paid", "shipped", "delivered", "refunded"]
CITIES = ["Lisbon", "Osaka", "Nairobi", "Montréal", "Kraków"]


def users(n: int, seed: int = 7) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out = []
    for i in range(1, n + 1):
        first, last = rnd.choice(FIRST), rnd.choice(LAST)
        out.append(
            {
                "id": i,
                "name": f"{first} {last}",
                "email": f"{first.lower()}.{i}@example.com",
                "role": rnd.choice(ROLES),
                "active": rnd.random() > 0.2,
                "score": round(rnd.uniform(10, 99), 2),
                "created_at": f"2025-{rnd.randint(1, 12):02d}-{rnd.randint(1, 28):02d}T10:{i % 60:02d}:00Z",
            }
        )
    return out


def orders(n: int, seed: int = 11) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out = []
    for i in range(1, n + 1):
        cid = rnd.randint(1, 40)
        out.append(
            {
                "order_id": f"ORD-{10000 + i}",
                "status": rnd.choice(STATUSES),
                "total": round(rnd.uniform(5, 500), 2),
                "currency": "EUR",
                # A nested object of uniform shape: a TOON v4 field group.
                "customer": {"id": cid, "city": rnd.choice(CITIES)},
                "items": rnd.randint(1, 9),
            }
        )
    return out


def products(n: int, seed: int = 5) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    return [
        {"sku": f"SKU-{i:04d}", "title": f"Widget {i}", "price": rnd.randint(100, 9999), "stock": rnd.randint(0, 500)}
        for i in range(1, n + 1)
    ]


def log_rows(target_bytes: int) -> list[dict[str, Any]]:
    rnd = random.Random(3)
    rows: list[dict[str, Any]] = []
    size = 0
    i = 0
    while size < target_bytes:
        i += 1
        row = {
            "seq": i,
            "level": rnd.choice(["debug", "info", "warn", "error"]),
            "service": rnd.choice(["api", "worker", "billing", "search"]),
            "message": f"request {i} handled in {rnd.randint(1, 999)} ms",
        }
        rows.append(row)
        size += len(json.dumps(row)) + 2
    return rows


CONFIG = {
    "service": "inventory",
    "version": "3.4.1",
    "features": {"search": {"enabled": True, "backend": "tantivy"}, "export": {"formats": ["csv", "json"]}},
    "limits": {"rps": 200, "burst": [10, 20, 40]},
    "owners": [{"team": "core", "oncall": ["ada", "ken"]}],
}

PROSE = (
    "The inventory service keeps stock levels for every warehouse and answers "
    "availability questions for the storefront. It was split out of the monolith "
    "in 2023 and now handles roughly two hundred requests per second at peak. "
) * 4


class Weather(BaseModel):
    city: str
    temperature_c: float
    conditions: str
    wind_kph: int = Field(ge=0)


class Reading(BaseModel):
    station: str
    hour: int
    temperature_c: float
    humidity_pct: int


class Readings(BaseModel):
    station_count: int
    readings: list[Reading]


def build_server() -> MCPServer:
    mcp = MCPServer(name="mcp-toon-demo", version="1.0.0", log_level="WARNING")

    def text_result(text: str, is_error: bool = False) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)

    @mcp.tool(description="List users (a tabular JSON array).")
    def list_users(count: int = 40) -> CallToolResult:
        return text_result(json.dumps(users(count), indent=2, ensure_ascii=False))

    @mcp.tool(description="Search orders; returns one page in an envelope.")
    def search_orders(page: int = 1, per_page: int = 30) -> CallToolResult:
        rows = orders(120)
        items = rows[(page - 1) * per_page : page * per_page]
        return text_result(json.dumps({"total": len(rows), "page": page, "items": items}))

    @mcp.tool(description="List products (a compact tabular JSON array).")
    def list_products(count: int = 25) -> CallToolResult:
        return text_result(json.dumps(products(count), separators=(",", ":")))

    @mcp.tool(description="Service configuration (nested JSON, not a table).")
    def get_config() -> CallToolResult:
        return text_result(json.dumps(CONFIG, indent=2))

    @mcp.tool(description="A prose description of the project.")
    def describe_project() -> CallToolResult:
        return text_result(PROSE)

    @mcp.tool(description="Current weather for a city (structured output).")
    def weather_report(city: str = "Lisbon") -> Weather:
        return Weather(city=city, temperature_c=21.5, conditions="clear", wind_kph=12)

    @mcp.tool(description="Hourly readings of weather stations (structured output with a table).")
    def station_readings(hours: int = 12) -> Readings:
        rnd = random.Random(17)
        rows = [
            Reading(
                station=f"ST-{s}",
                hour=h,
                temperature_c=round(rnd.uniform(-5, 30), 1),
                humidity_pct=rnd.randint(20, 95),
            )
            for s in range(1, 4)
            for h in range(hours)
        ]
        return Readings(station_count=3, readings=rows)

    @mcp.tool(description="A lookup that fails: isError with a tabular body.")
    def failing_lookup() -> CallToolResult:
        detail = [{"code": f"E{i:03d}", "field": f"field_{i}", "message": "value rejected by validator"} for i in range(30)]
        return text_result(json.dumps(detail, indent=2), is_error=True)

    @mcp.tool(description="Export about `megabytes` MB of log rows (a large table).")
    def export_logs(megabytes: float = 3.0) -> CallToolResult:
        return text_result(json.dumps(log_rows(int(megabytes * 1024 * 1024))))

    @mcp.tool(description="Length and SHA-256 of `text` (for request-size tests).")
    def echo_digest(text: str) -> CallToolResult:
        digest = hashlib.sha256(text.encode()).hexdigest()
        return text_result(json.dumps({"length": len(text), "sha256": digest}))

    register_clean_tools(mcp)
    register_paging_tools(mcp)
    return mcp


# --- clean stage demo tools ---------------------------------------------------
# Results made for the clean stage (issue 4): HTML, base64 blobs, nulls in a
# pretty-printed table, an image item. Deterministic, so byte counts repeat.

DOCS_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Inventory API &mdash; Stock levels</title>
  <link rel="stylesheet" href="/static/docs.css">
  <style>
    body { font-family: system-ui, sans-serif; margin: 0; color: #1d2330; }
    nav.sidebar { position: fixed; width: 16rem; background: #f5f6f8; }
    table.params { border-collapse: collapse; width: 100%; }
    table.params td, table.params th { border: 1px solid #d0d4da; padding: .4rem .6rem; }
    .badge { display: inline-block; border-radius: 3px; padding: 0 .3rem; background: #e3f0ff; }
  </style>
  <script async src="https://analytics.example.com/tag.js"></script>
  <script>
    window.dataLayer = window.dataLayer || [];
    function gtag(){dataLayer.push(arguments);}
    gtag('js', new Date()); gtag('config', 'DOCS-1234');
  </script>
</head>
<body>
  <header class="topbar">
    <a class="logo" href="/">Inventory Docs</a>
    <form class="search" action="/search"><input type="search" name="q" placeholder="Search the docs"></form>
  </header>
  <nav class="sidebar" aria-label="Sections">
    <ul>
      <li><a href="/guide/">Guide</a></li>
      <li><a href="/api/">API reference</a>
        <ul>
          <li><a href="/api/items/">Items</a></li>
          <li class="active"><a href="/api/stock/">Stock levels</a></li>
          <li><a href="/api/warehouses/">Warehouses</a></li>
        </ul>
      </li>
      <li><a href="/changelog/">Changelog</a></li>
    </ul>
  </nav>
  <main class="content">
    <h1>Stock levels</h1>
    <p>Returns the quantity on hand for one SKU in every warehouse. Quantities are
       updated <em>within five seconds</em> of a movement; use the
       <code>as_of</code> field to tell how fresh a figure is.</p>


    <h2>Request</h2>
    <pre><code>GET /v3/stock/{sku}?warehouse=LIS-1</code></pre>
    <h2>Parameters</h2>
    <table class="params">
      <thead><tr><th>Name</th><th>In</th><th>Type</th><th>Description</th></tr></thead>
      <tbody>
        <tr><td><code>sku</code></td><td>path</td><td>string</td><td>The stock-keeping unit, e.g. <code>SKU-0042</code>.</td></tr>
        <tr><td><code>warehouse</code></td><td>query</td><td>string</td><td>Limit to one warehouse code.</td></tr>
        <tr><td><code>include_reserved</code></td><td>query</td><td>boolean</td><td>Count units reserved by open orders.</td></tr>
      </tbody>
    </table>


    <h2>Errors</h2>
    <ul>
      <li><strong>404</strong> &ndash; the SKU does not exist.</li>
      <li><strong>429</strong> &ndash; more than 200 requests per second; retry after the <code>retry-after</code> delay.</li>
    </ul>
    <p class="note"><span class="badge">Since 3.2</span> See <a href="/api/warehouses/">Warehouses</a> for the codes.</p>
  </main>
  <footer>
    <p>&copy; 2026 Inventory team &middot; <a href="/privacy">Privacy</a> &middot; <a href="/status">Status</a></p>
  </footer>
  <script src="/static/docs.js" defer></script>
</body>
</html>
"""


def demo_bytes(n: int, seed: int) -> bytes:
    """n pseudo-random bytes (a stand-in for a binary attachment)."""
    return random.Random(seed).randbytes(n)


def demo_png(width: int = 48, height: int = 48) -> bytes:
    """A real PNG (an RGB gradient), built with zlib so no imaging library is needed."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(
        b"\x00" + bytes(v for x in range(width) for v in (x * 255 // width, y * 255 // height, 128)) for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


ATTACHMENT_BYTES = 3000  # decoded size of get_attachment's blob
THUMBNAIL_BYTES = 600  # decoded size of its data: URI


def attachment() -> dict[str, Any]:
    return {
        "id": "att_7f3a9c",
        "filename": "invoice-2026-0042.pdf",
        "content_type": "application/pdf",
        "size": ATTACHMENT_BYTES,
        "sha256": hashlib.sha256(demo_bytes(ATTACHMENT_BYTES, 42)).hexdigest(),
        "uploaded_by": "ada.lovelace@example.com",
        "content_base64": base64.b64encode(demo_bytes(ATTACHMENT_BYTES, 42)).decode(),
        "thumbnail": "data:image/png;base64," + base64.b64encode(demo_bytes(THUMBNAIL_BYTES, 43)).decode(),
        "download_url": "https://files.example.com/att_7f3a9c?sig=Zm9vYmFy",
    }


def inventory_rows(n: int = 24, seed: int = 23) -> list[dict[str, Any]]:
    """Stock rows in which about a third of the optional fields are null."""
    rnd = random.Random(seed)
    rows = []
    for i in range(1, n + 1):
        rows.append(
            {
                "sku": f"SKU-{i:04d}",
                "warehouse": rnd.choice(["LIS-1", "OSA-2", "NBO-1", "YUL-3"]),
                "on_hand": rnd.randint(0, 900),
                "reserved": rnd.randint(0, 40) if rnd.random() > 0.3 else None,
                "reorder_at": rnd.randint(10, 100) if rnd.random() > 0.3 else None,
                "supplier": rnd.choice(["Acme", "Globex", "Initech"]) if rnd.random() > 0.3 else None,
                "note": None,
            }
        )
    return rows


def service_log(lines: int, seed: int = 29) -> str:
    """A log as `kubectl logs` shows one: padded columns, a blank line
    between bursts. The padding carries nothing a reader needs."""
    rnd = random.Random(seed)
    out = []
    for i in range(lines):
        level = rnd.choice(["INFO", "INFO", "INFO", "WARN", "ERROR", "DEBUG"])
        method, path = rnd.choice([("GET", "/orders"), ("GET", f"/orders/{rnd.randint(1000, 9999)}"), ("POST", "/orders"), ("GET", "/stock")])
        status = 200 if level in ("INFO", "DEBUG") else rnd.choice([404, 409, 500, 503])
        out.append(
            f"2026-11-30T10:{i // 60:02d}:{i % 60:02d}.{rnd.randint(0, 999):03d}Z  {level:<7}  {rnd.choice(['api', 'worker', 'billing']):<10}"
            f"{method:<6} {path:<22} {status:>5}  {rnd.randint(1, 1500):>6} ms    "
        )
        if i % 20 == 19:
            out.append("")
    return "\n".join(out) + "\n"


def register_clean_tools(mcp: MCPServer) -> None:
    @mcp.tool(description="Fetch a documentation page (HTML).")
    def fetch_docs_page(path: str = "/api/stock/") -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=DOCS_PAGE)])

    @mcp.tool(description="An attachment's metadata and content (JSON with a base64 blob and a data: URI).")
    def get_attachment(attachment_id: str = "att_7f3a9c") -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(attachment(), indent=2))])

    @mcp.tool(description="Stock per SKU (a pretty-printed JSON table with null fields).")
    def inventory_report() -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(inventory_rows(), indent=2))])

    @mcp.tool(description="The last `lines` lines of the service log (plain text, padded columns).")
    def tail_logs(lines: int = 80) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=service_log(lines))])

    @mcp.tool(description="Render a chart: an image item, and text that embeds the same image.")
    def render_chart() -> CallToolResult:
        png = base64.b64encode(demo_png()).decode()
        text = (
            "Chart rendered: stock on hand per warehouse, last 30 days. "
            "The same image, inline for clients that show Markdown:\n\n"
            f"![stock chart](data:image/png;base64,{png})\n"
        )
        return CallToolResult(
            content=[ImageContent(type="image", data=png, mime_type="image/png"), TextContent(type="text", text=text)]
        )


# --- end of clean stage demo tools --------------------------------------------


# --- paging demo tools (issue 15) ---------------------------------------------
# Deterministic tables large enough to cut, annotated read-only so a gateway
# may call them again to serve a page; live_feed changes on every call.

LIVE_CALLS = [0]


def export_rows_data(count: int, seed: int = 13) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    return [
        {
            "id": i,
            "sku": f"SKU-{rnd.randrange(10000):04d}",
            "warehouse": rnd.choice(["LIS-1", "OSA-2", "NBO-1", "YUL-3", "KRK-1"]),
            "on_hand": rnd.randrange(1000),
            "price": round(rnd.uniform(0.5, 999), 2),
            "note": rnd.choice(["ok", "recount", "damaged box", "Zoë's shelf", "naïve café"]),
        }
        for i in range(1, count + 1)
    ]


def register_paging_tools(mcp: MCPServer) -> None:
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @mcp.tool(description="Export `count` stock rows (a large table, read-only).", annotations=read_only)
    def export_rows(count: int = 30000) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(export_rows_data(count), ensure_ascii=False))])

    @mcp.tool(description="A feed of `count` rows that changes on every call (read-only).", annotations=read_only)
    def live_feed(count: int = 2000) -> CallToolResult:
        LIVE_CALLS[0] += 1
        rows = [{"seq": i, "call": LIVE_CALLS[0], "value": (i * 7919 + LIVE_CALLS[0]) % 1000} for i in range(count)]
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(rows))])


# --- end of paging demo tools -------------------------------------------------


class DemoTransport:
    """ASGI middleware that changes how a response travels, for tests:

    - `x-demo-force-gzip: 1`: gzip the body (`content-encoding: gzip`), with
      mtime=0 so the same response always has the same bytes;
    - `x-demo-gzip-if-accepted: 1`: the same, only if the request still
      carries an `accept-encoding` with gzip (what a compressing server does);
    - `x-demo-chunked: N`: drop `content-length` and send the body in pieces
      of N bytes (HTTP/1.1 chunked transfer encoding).
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or []) if scope["type"] == "http" else {}
        accepts_gzip = b"gzip" in headers.get(b"accept-encoding", b"")
        gzip_it = headers.get(b"x-demo-force-gzip") == b"1" or (
            headers.get(b"x-demo-gzip-if-accepted") == b"1" and accepts_gzip
        )
        piece = int(headers.get(b"x-demo-chunked", b"0") or 0)
        if not gzip_it and piece <= 0:
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def capture(message: dict) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = b"".join(chunks)
            drop = (b"content-length", b"content-encoding")
            kept = [(k, v) for k, v in start.get("headers", []) if k.lower() not in drop]
            if gzip_it:
                body = gzip.compress(body, mtime=0)
                kept.append((b"content-encoding", b"gzip"))
            if piece > 0:
                await send({**start, "headers": kept})
                for i in range(0, len(body), piece):
                    await send({"type": "http.response.body", "body": body[i : i + piece], "more_body": True})
                await send({"type": "http.response.body", "body": b""})
                return
            kept.append((b"content-length", str(len(body)).encode()))
            await send({**start, "headers": kept})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, capture)


# --- SSE modes (issue #3) -----------------------------------------------------
#
# `--transport sse`: FastMCP's default Streamable HTTP (stateful, every POST
# answered with `text/event-stream`); `--transport legacy-sse`: the HTTP+SSE
# transport of MCP 2024-11-05 (`GET /sse` event stream, `POST /messages/`).
# Both add two tools that report progress, a gate the tests open, and a tool
# that changes the tool list:
#
#     gated_report     reports progress `steps` times, waiting after each
#                      report until the test opens that step's gate
#                      (POST /demo/gate?token=T&step=N), then returns a table
#     progress_flood   reports progress `count` times, then returns a table
#     add_tool         adds a tool that echoes, and tells clients the tool
#                      list changed (`notifications/tools/list_changed`)
#
# A gate never opened fails the call (isError) after GATE_TIMEOUT_S, so a
# proxy holding progress back makes a test fail instead of hang.

import asyncio  # noqa: E402  (the SSE modes' imports stay in their block)

import anyio  # noqa: E402
from mcp.server.mcpserver import Context  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import PlainTextResponse  # noqa: E402

GATE_TIMEOUT_S = 30.0
GATES: dict[tuple[str, int], asyncio.Event] = {}


def gate(token: str, step: int) -> asyncio.Event:
    return GATES.setdefault((token, step), asyncio.Event())


def add_sse_tools(mcp: MCPServer) -> None:
    def table(rows: int) -> CallToolResult:
        text = json.dumps(users(rows), indent=2, ensure_ascii=False)
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=False)

    @mcp.tool(description="Reports progress `steps` times (each step waits for its gate), then lists users.")
    async def gated_report(ctx: Context, token: str, steps: int = 3, rows: int = 30) -> CallToolResult:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
            with anyio.move_on_after(GATE_TIMEOUT_S) as scope:
                await gate(token, step).wait()
            GATES.pop((token, step), None)
            if scope.cancelled_caught:
                return CallToolResult(
                    content=[TextContent(type="text", text=f"gate {step} of {token} never opened")], is_error=True
                )
        return table(rows)

    @mcp.tool(description="Reports progress `count` times, then lists users.")
    async def progress_flood(ctx: Context, count: int = 1000, rows: int = 30) -> CallToolResult:
        for i in range(1, count + 1):
            await ctx.report_progress(i, count)
        return table(rows)

    @mcp.tool(description="Adds a tool named `name` that echoes `text`, then tells clients the tool list changed.")
    async def add_tool(ctx: Context, name: str) -> CallToolResult:
        def added(text: str = "") -> str:
            return text

        mcp.add_tool(added, name=name, description="Echo `text` back (a tool added at run time).")
        # MCP 2026-07-28 (SEP-2575): to the client's `subscriptions/listen`
        # streams. Earlier revisions: on the client's GET stream, which a
        # 2026-07-28 connection does not have (the SDK refuses; nothing to
        # send it on).
        await ctx.notify_tools_changed()
        if ctx.protocol_version != "2026-07-28":
            await ctx.session.send_tool_list_changed()
        return CallToolResult(content=[TextContent(type="text", text=f"added {name}")])

    @mcp.custom_route("/demo/gate", methods=["POST"])
    async def open_gate(request: Request) -> PlainTextResponse:
        token = request.query_params.get("token", "")
        step = int(request.query_params.get("step", "0"))
        gate(token, step).set()
        return PlainTextResponse("open")


class SplitWrites:
    """ASGI middleware: a request carrying `x-demo-split: N` gets each body
    write cut into writes of N bytes, as they come (nothing is collected),
    so events cross the proxy in pieces."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or []) if scope["type"] == "http" else {}
        piece = int(headers.get(b"x-demo-split", b"0") or 0)
        if piece <= 0:
            await self.app(scope, receive, send)
            return

        async def split(message: dict) -> None:
            body = message.get("body", b"")
            if message["type"] != "http.response.body" or len(body) <= piece:
                await send(message)
                return
            for i in range(0, len(body), piece):
                await send({"type": "http.response.body", "body": body[i : i + piece], "more_body": True})
            if not message.get("more_body"):
                await send({"type": "http.response.body", "body": b""})

        await self.app(scope, receive, split)


def sse_app(transport: str, host: str) -> Any:
    """The ASGI app of an SSE mode (`sse` or `legacy-sse`)."""
    mcp = build_server()
    add_sse_tools(mcp)
    if transport == "legacy-sse":
        return SplitWrites(mcp.sse_app(host=host))
    return SplitWrites(mcp.streamable_http_app(host=host))


# --- end of SSE modes ----------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("MCP_DEMO_PORT", "8931")))
    parser.add_argument(
        "--transport",
        choices=["json", "sse", "legacy-sse"],
        default="json",
        help="json (default): stateless, application/json answers; sse: FastMCP's default "
        "text/event-stream answers; legacy-sse: the 2024-11-05 HTTP+SSE transport",
    )
    args = parser.parse_args()
    if args.transport != "json":
        app = sse_app(args.transport, args.host)
    else:
        app = build_server().streamable_http_app(json_response=True, stateless_http=True, host=args.host)
    uvicorn.run(DemoTransport(app), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
