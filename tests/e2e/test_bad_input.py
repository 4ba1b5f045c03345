"""Bad input through the real Envoy and plugin (issue 7, "Robustness").

A raw upstream (raw_server.py) answers `tools/call` POSTs with canned bytes
no MCP SDK would send; a raw client reads the bytes exactly as they crossed
the wire. Each case asserts that the client receives the server's bytes
unchanged and that the plugin counted the named reason in
`/stats/prometheus` — or, where the input is odd but valid (integers past
2^53, backtick runs), that the rewrite is exact.

Every case runs through two listeners: `held` (hold_headers: the body is
collected with headers held, content-length kept) and `plain` (no held
headers: content-length is dropped, the body goes chunked). The plugin runs
with its default configuration otherwise, clean stage included.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import brotli
import httpx
import pytest

import harness
from harness import MARKER, Listener

LISTENERS = {
    "held": ({"hold_headers": True}, True),
    "plain": ({}, False),
    # A small response limit for the over-limit case.
    "small": ({"max_body_bytes": 65536, "max_response_bytes": 65536}, False),
    # Fenced TOON: the fence must outgrow any backtick run in the values.
    "fence": ({"toon": {"header": "fence"}}, False),
}


# --- payloads ----------------------------------------------------------------


def rows(n: int = 40, **extra: Any) -> list[dict[str, Any]]:
    return [{"id": i, "name": f"user {i}", "role": "admin" if i % 3 else "viewer", "active": i % 2 == 0, **extra} for i in range(n)]


def result(text: str, id: Any = 1) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}], "isError": False}},
        separators=(",", ":"),
    ).encode()


def table_with(value_json: str) -> str:
    """A 40-row table (compact JSON) whose row 7 has `"v": <value_json>`,
    spelled exactly as given (Python's json cannot write 1e400 or -0.0 as
    such); every other row has `"v": 1`."""
    parts = []
    for i, r in enumerate(rows()):
        body = json.dumps(r, separators=(",", ":"))[:-1]
        parts.append(body + ',"v":' + (value_json if i == 7 else "1") + "}")
    return "[" + ",".join(parts) + "]"


def deep_message(text: str) -> bytes:
    """A tool result whose structuredContent nests 10 000 arrays deep."""
    return (
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":'
        + json.dumps(text).encode()
        + b'}],"structuredContent":{"deep":'
        + b"[" * DEEP
        + b"]" * DEEP
        + b"}}}"
    )


DEEP = 10_000
TABLE = json.dumps(rows(), separators=(",", ":"))
GOOD = result(TABLE)

SSE_EVENT = b"event: message\ndata: " + GOOD + b"\n\n"


@dataclass
class Case:
    name: str
    body: bytes
    reasons: dict[str, int]  # passthrough reason -> expected count per request
    content_type: str = "application/json"
    headers: list[list[str]] = field(default_factory=list)
    framing: str = "length"
    status: int = 200
    listeners: tuple[str, ...] = ("held", "plain")
    request: Any = None  # the JSON-RPC request (default: tools/call id 1)

    def spec(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "headers": [["content-type", self.content_type], *self.headers],
            "body_b64": base64.b64encode(self.body).decode(),
            "framing": self.framing,
            "chunk": 1000,
        }


BATCH_REQUEST = [
    harness.jsonrpc("tools/call", {"name": "a", "arguments": {}}, id=1),
    {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": 1}},
    harness.jsonrpc("tools/call", {"name": "b", "arguments": {}}, id=2),
]
BATCH_RESPONSE = json.dumps(
    [
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "short one"}]}},
        {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "short two"}]}},
    ],
    separators=(",", ":"),
).encode()

CASES = [
    Case("malformed_json", GOOD[:-3] + b"]}}", {"malformed_response": 1}),
    Case("truncated_json", GOOD[: len(GOOD) // 2], {"malformed_response": 1}),
    Case("truncated_json_chunked", GOOD[: len(GOOD) // 2], {"malformed_response": 1}, framing="chunked"),
    Case("invalid_utf8", result(TABLE).replace(b"user 3", b"user \xff\xfe3"), {"invalid_utf8": 1}),
    # 10 000 levels in the message itself (structuredContent) and in a text block.
    Case("deep_message", deep_message("short text"), {"below_min_bytes": 1}),
    Case("deep_text", result("[" * DEEP + "]" * DEEP), {"not_json": 1}),
    Case("deep_text_objects", result('{"a":' * DEEP + "1" + "}" * DEEP), {"not_json": 1}),
    Case("int_beyond_2_64", result(table_with("18446744073709551616")), {"lossy_number": 1}),
    Case("float_1e400", result(table_with("1e400")), {"lossy_number": 1}),
    Case("negative_zero", result(table_with("-0.0")), {"lossy_number": 1}),
    Case(
        "duplicate_keys",
        result(TABLE.replace('"role":"viewer"', '"role":"viewer","role":"owner"', 1)),
        {"duplicate_keys": 1},
    ),
    Case("already_encoded", result(MARKER + "\n[40]{id,name}:\n" + "".join(f"  {i},user {i}\n" for i in range(40))), {"already_encoded": 1}),
    Case(
        "sse_cut_mid_event",
        SSE_EVENT[: len(SSE_EVENT) * 2 // 3],
        {"stream_truncated": 1},
        content_type="text/event-stream",
        framing="close",
    ),
    Case(
        "over_max_body_bytes",
        result(json.dumps(rows(1200), separators=(",", ":"))),
        {"response_too_large": 1},
        listeners=("small",),
    ),
    Case("gzip", gzip.compress(GOOD, mtime=0), {"content_encoding": 1}, headers=[["content-encoding", "gzip"]]),
    Case("br", brotli.compress(GOOD), {"content_encoding": 1}, headers=[["content-encoding", "br"]]),
    Case("empty_body", b"", {"malformed_response": 1}),
    Case("empty_body_chunked", b"", {"malformed_response": 1}, framing="chunked"),
    Case(
        "jsonrpc_error",
        b'{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown tool: nope","data":' + json.dumps(TABLE).encode() + b"}}",
        {"jsonrpc_error": 1},
    ),
    Case("batch_calls_and_notification", BATCH_RESPONSE, {"below_min_bytes": 2}, request=BATCH_REQUEST),
    # A result for an id the client never sent (it sent 1).
    Case("unknown_id", result(json.dumps(rows()), id=7), {"unknown_id": 1}),
]
BY_NAME = {c.name: c for c in CASES}


# --- fixtures -------------------------------------------------------------------


@pytest.fixture(scope="module")
def upstream(work_dir: Path):
    extra = {
        "good": Case("good", GOOD, {}),
        "deep_table": Case("deep_table", deep_message(TABLE), {}),
        "ints_2_53": Case("ints_2_53", result(table_with("9007199254740993")), {}),
        "backticks": Case("backticks", result(json.dumps(backtick_rows(), separators=(",", ":"))), {}),
    }
    cases = {**BY_NAME, **extra}
    spec = work_dir / "raw-cases.json"
    spec.write_text(json.dumps({name: c.spec() for name, c in cases.items()}))
    port = harness.free_port()
    proc = harness.Proc("raw-server", [str(harness.PYTHON), str(Path(__file__).parent / "raw_server.py"), str(port), str(spec)], work_dir / "raw-server.log")
    try:
        harness.wait_for_port(port, proc)
        yield port
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def envoy_raw(upstream: int, work_dir: Path):
    listeners = [Listener(name, cfg, allow) for name, (cfg, allow) in LISTENERS.items()]
    e = harness.start_envoy(listeners, upstream, work_dir, name="envoy-bad-input")
    try:
        yield e
    finally:
        e.stop()


# --- helpers ---------------------------------------------------------------------


def backtick_rows() -> list[dict[str, Any]]:
    return [{"id": i, "code": "`" * (1 + i % 9) + f"x{i}" + "`" * (1 + i % 9), "note": "``` fence ```"} for i in range(40)]


def request_body(case_request: Any) -> bytes:
    msg = case_request if case_request is not None else harness.jsonrpc("tools/call", {"name": "t", "arguments": {}}, id=1)
    return json.dumps(msg, separators=(",", ":")).encode()


REQUEST_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": harness.PROTOCOL_VERSION,
}


def send(envoy: harness.Envoy, listener: str, name: str, request: Any = None, http2: bool = False) -> tuple[int, dict[str, str], bytes]:
    """POSTs to case `name`; the body as raw wire bytes (nothing decoded)."""
    client = httpx.Client(http1=not http2, http2=http2, timeout=30)
    with client:
        with client.stream("POST", envoy.url(listener, f"/mcp/{name}"), content=request_body(request), headers=REQUEST_HEADERS) as r:
            raw = b"".join(r.iter_raw())
            assert r.http_version == ("HTTP/2" if http2 else "HTTP/1.1")
            return r.status_code, dict(r.headers), raw


# Gauges (memory), not counters: they move with any traffic.
GAUGES = ("mcp_toon_held_bytes_max", "mcp_toon_vm_memory_bytes", "mcp_toon_vm_held_bytes", "mcp_toon_vm_held_bytes_max")


def passthrough_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, int]:
    """Counters that moved, `mcp_toon_passthrough_` and `mcp_toon_` stripped."""
    out = {}
    for k, v in after.items():
        if k.startswith("mcp_toon_") and k not in GAUGES and v != before.get(k, 0.0):
            out[k.removeprefix("mcp_toon_").removeprefix("passthrough_")] = int(v - before.get(k, 0.0))
    return out


def counted(envoy: harness.Envoy, before: dict[str, float], expected: dict[str, int]) -> dict[str, int]:
    """The counters that moved since `before`, once they equal `expected`
    or after 10 s. The plugin publishes a stream's counters when it decides
    or, for streams it passed at the headers, when Envoy logs the stream,
    which can come just after the client read the last byte."""
    deadline = time.monotonic() + 10
    while True:
        delta = passthrough_delta(before, envoy.prometheus())
        if delta == expected or time.monotonic() > deadline:
            return delta
        time.sleep(0.05)


def assert_encoded(envoy: harness.Envoy, before: dict[str, float], n: int) -> None:
    """`n` blocks were encoded and nothing passed through."""
    deadline = time.monotonic() + 10
    while (delta := passthrough_delta(before, envoy.prometheus())).get("encoded") != n and time.monotonic() < deadline:
        time.sleep(0.05)
    assert delta.get("encoded") == n and set(delta) == {"encoded", "bytes_before", "bytes_after"}, delta


def first_text(body: bytes) -> str:
    return json.loads(body)["result"]["content"][0]["text"]


# --- the cases ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "listener,name",
    [(listener, c.name) for c in CASES for listener in c.listeners],
)
def test_bad_input_passes_byte_identical_and_is_counted(envoy_raw, listener, name):
    case = BY_NAME[name]
    before = envoy_raw.prometheus()
    status, headers, body = send(envoy_raw, listener, name, case.request)
    assert status == case.status
    assert body == case.body, f"{name}: {len(body)} bytes arrived, server sent {len(case.body)}"
    # Exactly the expected reasons moved: nothing encoded, cleaned or
    # counted under another reason.
    assert counted(envoy_raw, before, case.reasons) == case.reasons
    if listener == "held" and case.framing == "length":
        assert headers.get("content-length") == str(len(case.body))


def test_http2_between_client_and_envoy(envoy_raw):
    """HTTP/2 downstream (prior knowledge): passthrough stays byte-identical
    and counted, and an encoded table is the same bytes as over HTTP/1.1."""
    for name in ("truncated_json", "invalid_utf8", "gzip"):
        case = BY_NAME[name]
        before = envoy_raw.prometheus()
        status, _, body = send(envoy_raw, "held", name, http2=True)
        assert (status, body) == (200, case.body)
        assert counted(envoy_raw, before, case.reasons) == case.reasons
    before = envoy_raw.prometheus()
    status2, _, body2 = send(envoy_raw, "held", "good", http2=True)
    status1, _, body1 = send(envoy_raw, "held", "good")
    assert (status2, status1) == (200, 200)
    assert body2 == body1
    assert first_text(body2).startswith(MARKER + "\n")
    harness.same_json(harness.toon_decode(harness.split_marker(first_text(body2))), json.loads(TABLE))
    assert_encoded(envoy_raw, before, 2)


def test_integers_past_2_53_are_encoded_exactly(envoy_raw):
    """2^53 + 1 is valid JSON that TOON carries exactly: the block is
    encoded, and the TOON text spells the integer digit for digit."""
    before = envoy_raw.prometheus()
    status, _, body = send(envoy_raw, "plain", "ints_2_53")
    assert status == 200
    toon = harness.split_marker(first_text(body))
    row7 = [line for line in toon.splitlines() if line.strip().startswith("7,")]
    assert row7 == ["  7,user 7,admin,false,9007199254740993"], toon[:400]
    # The reference decoder reads numbers as doubles; compare everything but
    # the big integer through it.
    decoded = harness.toon_decode(toon)
    expected = json.loads(table_with("1"))
    decoded[7]["v"] = 1
    harness.same_json(decoded, expected)
    assert_encoded(envoy_raw, before, 1)


def test_values_full_of_backtick_runs_get_a_longer_fence(envoy_raw):
    before = envoy_raw.prometheus()
    status, _, body = send(envoy_raw, "fence", "backticks")
    assert status == 200
    text = first_text(body)
    marker, fence_open, *inner, fence_close = text.split("\n")
    assert marker == MARKER
    fence = fence_open.removesuffix("toon")
    assert set(fence) == {"`"} and fence_close == fence
    longest = max(len(run) for run in re.findall("`+", "\n".join(inner)))
    assert len(fence) > longest
    harness.same_json(harness.toon_decode("\n".join(inner)), backtick_rows())
    assert_encoded(envoy_raw, before, 1)


def test_a_table_next_to_deeply_nested_structured_content_is_encoded(envoy_raw):
    """A valid message nesting 10 000 deep outside the text: the text block
    is encoded, every byte after it (the deep structuredContent) is kept."""
    before = envoy_raw.prometheus()
    status, _, body = send(envoy_raw, "held", "deep_table")
    assert status == 200
    sent = deep_message(TABLE)
    tail = sent[sent.index(b'}],"structuredContent"') :]
    assert body.endswith(tail) and body.startswith(sent[: sent.index(b'"text":')])
    # The text item, read without parsing the deep part (Python's json
    # recurses per level).
    head = body[: body.index(b'}],"structuredContent"')] + b"}]}}"
    text = first_text(head)
    harness.same_json(harness.toon_decode(harness.split_marker(text)), json.loads(TABLE))
    assert_encoded(envoy_raw, before, 1)
