"""MCP exchanges the tier plays through the plugin, as data, and the scripts
that cut them into host events.

Each `Exchange` is one Streamable HTTP `POST` (MCP 2025-06-18 §Transports):
a JSON-RPC `tools/call` request and its answer, as `application/json` or as
`text/event-stream`. The response body is also given as its *units*: the
pieces the plugin decides on independently — the whole document for JSON,
each event for SSE (WHATWG HTML §9.2.6: an event ends at a blank line; the
bytes of an unfinished event are never dispatched). `oracle.py` checks what
the client got against them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Optional

from host import Pairs, Reply

# A table the TOON stage encodes (tabular, ≥ 4 rows, ≥ 500 bytes), with
# non-ASCII text so that chunk cuts fall inside UTF-8 characters.
ROWS = [
    {"id": 1000 + i, "name": name, "city": city, "role": "admin" if i % 3 == 0 else "dev", "active": i % 2 == 0}
    for i, (name, city) in enumerate(
        [
            ("Ada Lovelace", "London"),
            ("Grace Hopper", "Arlington"),
            ("Édith Clarke", "Ellicott"),
            ("Alan Turing", "Wilmslow"),
            ("Hedy Lamarr", "Wien"),
            ("Ken Thompson", "New Orleans"),
            ("Margaret Hamilton", "Paoli"),
            ("Sophie Wilson", "Leeds"),
            ("Ōno Taiichi", "大連"),
            ("Barbara Liskov", "Los Angeles"),
        ]
    )
]
TABLE_TEXT = json.dumps(ROWS, indent=2, ensure_ascii=False)

INTENT = "only the admins"
# An OpenAI-compatible chat completion answering the trim callout with a
# smaller extract (docs/trim.md).
TRIM_REPLY = Reply(
    200,
    json.dumps(
        {"choices": [{"index": 0, "message": {"role": "assistant", "content": json.dumps(ROWS[::3], ensure_ascii=False)}}]}
    ).encode(),
    [("content-type", "application/json")],
)
# What Envoy's async client answers when the callout times out.
TIMEOUT_REPLY = Reply(504, b"upstream request timeout", [("content-type", "text/plain")])

TRAILERS: Pairs = [("x-digest", "sha-256=:demo:")]


def tools_call(call_id: int, tool: str, arguments: dict) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    ).encode()


def tool_result(call_id: int, text: str) -> dict:
    return {"jsonrpc": "2.0", "id": call_id, "result": {"content": [{"type": "text", "text": text}], "isError": False}}


def json_body(message: dict) -> bytes:
    return json.dumps(message, ensure_ascii=False).encode()


def sse_event(data: dict, *, event: Optional[str] = "message", id_: Optional[str] = None, eol: str = "\n") -> bytes:
    lines = []
    if event:
        lines.append(f"event: {event}")
    if id_:
        lines.append(f"id: {id_}")
    lines.append("data: " + json.dumps(data, ensure_ascii=False))
    return (eol.join(lines) + eol + eol).encode()


def progress(token: str, n: int) -> dict:
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": n, "total": 3}}


@dataclass
class Exchange:
    name: str
    config: dict
    request: bytes
    response_type: str
    units: list[bytes]
    # Held headers need Envoy's allow_on_headers_stop_iteration too
    # (docs/envoy.md "Content length and the x-mcp-toon header").
    allow_on_headers_stop_iteration: bool = False
    # The LLM answer to the trim callout, when the exchange makes one.
    reply: Optional[Reply] = None
    # Whether the plugin may rewrite this response at all (False: it must
    # pass through byte-identical, and not hold anything).
    rewrites: bool = True
    status: int = 200
    extra_response_headers: Pairs = field(default_factory=list)

    @property
    def response(self) -> bytes:
        return b"".join(self.units)

    @property
    def configuration(self) -> bytes:
        return json.dumps(self.config).encode()

    def request_headers(self) -> Pairs:
        return [
            (":method", "POST"),
            (":path", "/mcp"),
            (":authority", "mcp.example"),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("accept-encoding", "gzip"),
            ("content-length", str(len(self.request))),
        ]

    def response_headers(self, *, length: bool = True) -> Pairs:
        headers = [(":status", str(self.status)), ("content-type", self.response_type)]
        if length and self.response_type == "application/json":
            headers.append(("content-length", str(len(self.response))))
        return headers + list(self.extra_response_headers)


JSON_TABLE = Exchange(
    "json",
    {},
    tools_call(7, "list_people", {}),
    "application/json",
    [json_body(tool_result(7, TABLE_TEXT))],
)

JSON_HELD = Exchange(
    "json-held-headers",
    {"hold_headers": True},
    tools_call(7, "list_people", {}),
    "application/json",
    [json_body(tool_result(7, TABLE_TEXT))],
    allow_on_headers_stop_iteration=True,
)

SSE = Exchange(
    "sse",
    {},
    tools_call(9, "list_people", {}),
    "text/event-stream",
    [
        sse_event(progress("p-9", 1)),
        b": keep-alive\n\n",
        sse_event(tool_result(9, TABLE_TEXT), id_="9-1", eol="\r\n"),
        sse_event(progress("p-9", 3)),
    ],
)

TRIM = {"trim": {"enabled": True, "threshold_bytes": 200, "timeout_ms": 2000}}

JSON_TRIM = Exchange(
    "json-trim",
    TRIM,
    tools_call(11, "list_people", {"expected_info": INTENT, "team": "core"}),
    "application/json",
    [json_body(tool_result(11, TABLE_TEXT))],
    reply=TRIM_REPLY,
)

SSE_TRIM = Exchange(
    "sse-trim",
    TRIM,
    tools_call(12, "list_people", {"expected_info": INTENT}),
    "text/event-stream",
    [
        sse_event(progress("p-12", 1)),
        sse_event(tool_result(12, TABLE_TEXT), id_="12-1"),
        sse_event(progress("p-12", 2)),
        b": keep-alive\n\n",
        sse_event(progress("p-12", 3)),
    ],
    reply=TRIM_REPLY,
)

# A response the plugin has no reason to touch: the answer to
# `initialize`. It must pass through byte-identical and never be held.
PASSTHROUGH = Exchange(
    "passthrough",
    {},
    json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
               "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode(),
    "application/json",
    [json_body({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "s", "version": "1"}, "instructions": "x" * 600}})],
    rewrites=False,
)

EXCHANGES = [JSON_TABLE, JSON_HELD, SSE, JSON_TRIM, SSE_TRIM, PASSTHROUGH]
BY_NAME = {e.name: e for e in EXCHANGES}


def cut(data: bytes, offsets: tuple[int, ...]) -> list[bytes]:
    """`data` split at the given offsets (0 < offset < len)."""
    points = [0, *sorted(offsets), len(data)]
    return [data[a:b] for a, b in zip(points, points[1:])]


def script(
    ex: Exchange,
    *,
    response_cuts: tuple[int, ...] = (),
    request_cuts: tuple[int, ...] = (),
    trailers: bool = False,
    request_trailers: bool = False,
    reply: Optional[Reply] = None,
    reply_after: Optional[int] = None,
    response_length: bool = True,
) -> list[tuple]:
    """The events of one exchange, the usual order: request headers, body
    (cut), then response headers, body (cut), optional trailers. `reply`
    answers the callout after response chunk number `reply_after` (None:
    after the whole response)."""
    events: list[tuple] = [("request_headers", ex.request_headers(), False)]
    parts = cut(ex.request, request_cuts)
    for i, part in enumerate(parts):
        events.append(("request_body", part, i == len(parts) - 1 and not request_trailers))
    if request_trailers:
        events.append(("request_trailers", [("x-request-digest", "demo")]))
    events.append(("response_headers", ex.response_headers(length=response_length), False))
    parts = cut(ex.response, response_cuts)
    reply = reply if reply is not None else ex.reply
    for i, part in enumerate(parts):
        events.append(("response_body", part, i == len(parts) - 1 and not trailers))
        if reply is not None and reply_after == i:
            events.append(("reply", reply))
    if trailers:
        events.append(("response_trailers", list(TRAILERS)))
    if reply is not None and (reply_after is None or reply_after >= len(parts)):
        events.append(("reply", reply))
    return events
