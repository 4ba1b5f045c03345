"""Hostile tool results through the real Envoy (issue 13, "linear time").

A raw upstream (raw_server.py) answers with about 1 MB of each input shape
that made a stage superlinear — wrapped base64 and 16-column lines of one
letter, `<rt>` and `<div title="<">` nesting, attribute floods, a table
spanning four billion columns, tables only the generic TOON path decides,
JSON that the walks (validation, compaction, TOON's parse) must refuse or
compact in linear time (half a million levels of nesting, escapes, a wide
object, a number of a million digits), Python literals (`str(rows)` read
as data, and texts the reader must refuse in linear time), a batch of
thousands of calls, SSE events that never end — with
`max_body_bytes` raised to 4 MiB so that the plugin examines them.

One Envoy (one worker: `--concurrency 1`) has three listeners on the same
upstream: `bare` (no plugin: the baseline), `default` (the plugin at its
default configuration) and `transforms` (every clean transform opted in).
Each case asserts what arrives (byte-identical, or transformed where the
transform is linear) and the counted reason (a work budget's, where a stage
gave up). How long each takes through the plugin against Envoy alone is a
benchmark, tests/e2e/bench_hostile.py (`make bench`), not a timed test. Last,
while one such response is in flight on the worker, a second client's small
request is answered before it ends (an order, see the test).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import httpx
import pytest

import harness
from harness import Listener

MB = 1 << 20
BIG = 4 * MB

CONFIGS = {
    "default": {"max_body_bytes": BIG, "max_event_bytes": BIG},
    "transforms": {
        "max_body_bytes": BIG,
        "max_event_bytes": BIG,
        "clean": {"html_to_markdown": True, "strip_base64": True, "collapse_whitespace": True, "remove_nulls": True},
    },
}

REQUEST_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": harness.PROTOCOL_VERSION,
}
CALL = harness.jsonrpc("tools/call", {"name": "fetch", "arguments": {}}, id=1)


# --- payloads ------------------------------------------------------------------


def result(text: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}}, separators=(",", ":")).encode()


def repeat(unit: str, n: int = MB, head: str = "") -> str:
    return head + unit * ((n - len(head)) // len(unit))


def wrapped_base64(width: int, n: int = MB) -> str:
    rng = random.Random(7)
    raw = base64.b64encode(rng.randbytes(n * 3 // 4)).decode()
    return "\n".join(raw[i : i + width] for i in range(0, len(raw), width)) + "\n"


def sparse_list(n: int) -> str:
    """Rows of about `n` bytes, every tenth lacking a key: the fast path
    reads them as a list of objects (TOON spec §9.4)."""
    rows = []
    size = 2
    i = 0
    while size < n:
        row = {"id": i, "name": f"user-{i}"} if i % 10 == 9 else {"id": i, "name": f"user-{i}", "tag": "t"}
        rows.append(row)
        size += len(json.dumps(row, separators=(",", ":"))) + 1
        i += 1
    return json.dumps(rows, separators=(",", ":"))


def sparse_rows(n: int = MB) -> str:
    """Sparse rows and, beside them, an array nesting past the fast
    parser's bound (100 levels): only the generic TOON path decides it, as
    in the adversarial bench's toon_sparse_rows (rows lacking a key alone
    take the fast path)."""
    deep = "[" * 101 + "]" * 101
    return '{"deep":' + deep + ',"rows":' + sparse_list(n - len(deep) - 17) + "}"


def sparse_exactly(n: int) -> str:
    """sparse_rows of exactly `n` bytes (the last name padded)."""
    text = sparse_rows(n - 64)
    value = json.loads(text)
    value["rows"][-1]["name"] += "x" * (n - len(text))
    out = json.dumps(value, separators=(",", ":"))
    assert len(out) == n, (len(out), n)
    return out


def group_rows(n: int = MB) -> str:
    unit = '{"id":1,"g":{"a":1,"b":2,"c":3,"d":4}},{"id":2,"g":{"d":4,"c":3,"b":2,"a":1}},'
    return "[" + repeat(unit, n - 2).rstrip(",") + "]"


def table(n: int = MB) -> str:
    rows, size, i = [], 2, 0
    while size < n:
        row = {"id": i, "name": f"user-{i}", "email": f"user{i}@example.com", "active": i % 2 == 0, "score": i % 100 + 0.5}
        rows.append(row)
        size += len(json.dumps(row, separators=(",", ":"))) + 1
        i += 1
    return json.dumps(rows, separators=(",", ":"))


def pretty_table(n: int = MB) -> str:
    """The ordinary JSON input of this size: a table written with indent=2
    (compacted, then TOON)."""
    rows, size, i = [], 2, 0
    while size < n:
        row = {"id": i, "name": f"user-{i}", "active": i % 2 == 0}
        rows.append(row)
        size += len(json.dumps(row, indent=2)) + 4
        i += 1
    return json.dumps(rows, indent=2)


def deep_pretty(n: int = MB) -> str:
    """Arrays nested about n/4 deep, one per line: what the JSON walks
    (validation, compaction, TOON's parse) must refuse in linear time."""
    half = n // 4
    return "[\n" * half + "]\n" * half


def json_walks() -> dict[str, str]:
    """The JSON walks' hostile shapes, about 1 MB each."""
    return {
        "json_deep": "[" * (MB // 2) + "]" * (MB // 2),
        "json_deep_pretty": deep_pretty(),
        "json_escapes": json.dumps(["\u00e9\n\"\\" * 64] * (MB // 470), indent=1, ensure_ascii=False),
        "json_wide_object": "{" + ", ".join(f'"k{i}": {i}' for i in range(MB // 18)) + "}",
        "json_long_number": "[" + "7" * MB + "]",
    }


# Per JSON walk: the counters it moves, and whether it arrives compacted.
COMPACTED = {"cleaned": 1, "clean_compact_json": 1, "bytes_before": -1, "bytes_after": -1, "not_tabular": 1}
JSON_WALK_COUNTS: dict[str, tuple[dict[str, int], bool]] = {
    "json_deep": ({"not_json": 1}, False),
    "json_deep_pretty": ({"not_json": 1}, False),
    "json_escapes": (COMPACTED, True),
    "json_wide_object": (COMPACTED, True),
    "json_long_number": ({"not_tabular": 1}, False),
}


def compacted(original: str) -> Callable[[bytes], None]:
    """The text arrives compact: the same JSON value, no layout."""

    def check(body: bytes) -> None:
        text = text_of(body)
        assert len(text) < len(original) and json.loads(text) == json.loads(original)
        assert "\n" not in text and ", " not in text[:1000]

    return check


def py_rows(n: int = MB) -> str:
    """`str(rows)` of a table, as PyPI mcp-server-sqlite sends every result:
    a Python literal the plugin reads as data (clean.python_literal)."""
    rows = []
    size = 2
    i = 0
    while size < n:
        row = {"id": i, "name": f"Customer {i}", "score": i % 9 + 0.5, "ok": i % 2 == 0, "note": None}
        size += len(repr(row)) + 2
        rows.append(row)
        i += 1
    return str(rows)


def python_literal(body: bytes) -> None:
    text = text_of(body)
    assert text.startswith(harness.MARKER) and "From a Python literal" in text.split("\n", 1)[0], text[:300]


def page(n: int = MB) -> str:
    unit = (
        '<div class="section"><h2 id="s">Section</h2><p>Some <b>bold</b> and '
        '<a href="https://example.com/x">a link</a> in a paragraph.</p><ul><li>one</li><li>two</li></ul></div>\n'
    )
    return repeat(unit, n, "<!doctype html><html><head><title>Doc</title></head><body>")


def batch(n: int = MB, reverse: bool = True) -> tuple[list[dict[str, Any]], bytes]:
    """A batch of calls and one of their results, each result after every
    call but its own (in reverse order: a scan for each id finds it last)."""
    calls = n // 110
    request = [harness.jsonrpc("tools/call", {"name": "t", "arguments": {}}, id=i) for i in range(calls)]
    ids = reversed(range(calls)) if reverse else range(calls)
    response = [{"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "x"}]}} for i in ids]
    return request, json.dumps(response, separators=(",", ":")).encode()


def long_ids(n: int = MB, id_bytes: int = 300) -> tuple[list[dict[str, Any]], bytes]:
    """A batch of calls whose ids are past `max_id_bytes` (256), and their
    table results: none is followed, so the response passes as sent."""
    rows = table(600)
    calls = n // (id_bytes + len(rows) + 120)
    ids = [f"{i:06d}" + "x" * (id_bytes - 8) for i in range(calls)]
    request = [harness.jsonrpc("tools/call", {"name": "t", "arguments": {}}, id=i) for i in ids]
    response = [{"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": rows}]}} for i in ids]
    return request, json.dumps(response, separators=(",", ":")).encode()


def sse(body: str) -> bytes:
    return body.encode()


def sse_batch() -> bytes:
    """BATCH_REQUEST's results, one event each, in reverse order."""
    results = json.loads(batch()[1])
    return "".join("event: message\ndata: " + json.dumps(r, separators=(",", ":")) + "\n\n" for r in results).encode()


def sse_events(text: str, n: int = MB) -> bytes:
    """Events each carrying `text` as a tool result, to about `n` bytes."""
    event = "event: message\ndata: " + result(text).decode() + "\n\n"
    return (event * max(1, n // len(event))).encode()


@dataclass
class Case:
    name: str
    body: bytes
    # Per configuration: the reasons the plugin must count (passthrough
    # reasons, or `cleaned`), and a check of a changed body (None: the body
    # must arrive byte-identical).
    counts: dict[str, dict[str, int]]
    changed: dict[str, Callable[[bytes], None]] = field(default_factory=dict)
    # The ordinary input of the same size and kind whose time through the
    # plugin is what a linear stage costs (a case name, or None: nothing
    # but the default path).
    like: str | None = None
    content_type: str = "application/json"
    request: Any = None
    # raw_server.py options that replace or add to the wire form.
    wire: dict[str, Any] = field(default_factory=dict)

    def spec(self) -> dict[str, Any]:
        return {
            "status": 200,
            "headers": [["content-type", self.content_type]],
            "body_b64": base64.b64encode(self.body).decode(),
            "framing": "length",
            **self.wire,
        }


def text_of(body: bytes) -> str:
    return json.loads(body)["result"]["content"][0]["text"]


def stripped(body: bytes) -> None:
    text = text_of(body)
    assert text.startswith("<stripped: ") and len(text) < 100, text[:200]


def collapsed(body: bytes) -> None:
    assert "\n\n\n" not in text_of(body)


def markdown(body: bytes) -> None:
    text = text_of(body)
    assert "<div" not in text and "## Section" in text, text[:200]


BATCH_REQUEST, BATCH_RESPONSE = batch()
LONG_IDS_REQUEST, LONG_IDS_RESPONSE = long_ids()
SPARSE_EVENTS = sse_events(sparse_rows(15 * 1024))
SPARSE_COUNTS = {"below_threshold": 1, "toon_budget": SPARSE_EVENTS.count(b"event: ") - 1}
_, BATCH_IN_ORDER = batch(reverse=False)

# Bodies the plugin's stages must handle in linear time. `counts` lists the
# counters one request moves, per listener.
CASES = [
    # Ordinary inputs of the same size: what linear costs.
    Case("plain_text", result(repeat("just some words in a sentence. ")), {"default": {"not_json": 1}, "transforms": {"not_json": 1}}),
    Case("page", result(page()), {"default": {"not_json": 1}, "transforms": {"cleaned": 1, "clean_html_to_markdown": 1, "bytes_before": -1, "bytes_after": -1, "not_json": 1}}, {"transforms": markdown}),
    Case("blob", result(base64.b64encode(random.Random(3).randbytes(MB * 3 // 4)).decode()), {"default": {"not_json": 1}, "transforms": {"cleaned": 1, "clean_strip_base64": 1, "bytes_before": -1, "bytes_after": -1, "below_min_bytes": 1}}, {"transforms": stripped}),
    Case("batch_in_order", BATCH_IN_ORDER, {"default": {"below_min_bytes": len(BATCH_REQUEST)}, "transforms": {"below_min_bytes": len(BATCH_REQUEST)}}, request=BATCH_REQUEST),
    Case("table", result(table()), {"default": {"encoded": 1, "cleaned": 0, "bytes_before": -1, "bytes_after": -1}, "transforms": {"encoded": 1, "bytes_before": -1, "bytes_after": -1}}, {"default": lambda b: None, "transforms": lambda b: None}),
    # Issue 13's measurements.
    Case("b64_lines", result(repeat("AAAAAAAAAAAAAAAA\n")), {"default": {"not_json": 1}, "transforms": {"not_json": 1}}, like="plain_text"),
    Case("b64_wrapped_80", result(wrapped_base64(80)), {"default": {"not_json": 1}, "transforms": {"cleaned": 1, "clean_strip_base64": 1, "bytes_before": -1, "bytes_after": -1, "below_min_bytes": 1}}, {"transforms": stripped}, like="blob"),
    Case("html_rt", result(repeat("<rt>x", head="<html><body><p>a</p>")), {"default": {"not_json": 1}, "transforms": {"html_budget": 1, "not_json": 1}}, like="page"),
    Case("html_div_title", result(repeat('<div title="<">', head="<html><body>")), {"default": {"not_json": 1}, "transforms": {"html_budget": 1, "not_json": 1}}, like="page"),
    Case("html_ul_li", result(repeat("<ul><li>", head="<html><body>")), {"default": {"not_json": 1}, "transforms": {"html_budget": 1, "not_json": 1}}, like="page"),
    Case("html_attributes", result("<html><body><div" + "".join(f" a{i}" for i in range(MB // 8)) + ">x</div>"), {"default": {"not_json": 1}, "transforms": {"html_budget": 1, "not_json": 1}}, like="page"),
    Case("html_colspan", result(repeat("<tr><td colspan=4000000000>cell</td></tr>", head="<table>")), {"default": {"not_json": 1}, "transforms": {"html_budget": 1, "not_json": 1}}, like="page"),
    Case("whitespace", result(repeat("a \t \n\n\n  \t")), {"default": {"not_json": 1}, "transforms": {"cleaned": 1, "clean_collapse_whitespace": 1, "bytes_before": -1, "bytes_after": -1, "not_json": 1}}, {"transforms": collapsed}, like="plain_text"),
    # The JSON walks (validation, compaction, TOON's parse): nesting, escapes,
    # a wide object, a huge number; the ordinary input is a pretty table.
    Case("pretty_table", result(pretty_table()), {"default": {"cleaned": 1, "clean_compact_json": 1, "encoded": 1, "bytes_before": -1, "bytes_after": -1}, "transforms": {"cleaned": 1, "clean_compact_json": 1, "encoded": 1, "bytes_before": -1, "bytes_after": -1}}, {"default": lambda b: None, "transforms": lambda b: None}),
    *[
        Case(name, result(text), {"default": counts, "transforms": counts}, compact and {"default": compacted(text), "transforms": compacted(text)} or {}, like="pretty_table")
        for name, text in json_walks().items()
        for counts, compact in [JSON_WALK_COUNTS[name]]
    ],
    # Python literals (clean.python_literal, on by default): a table read
    # and encoded is the ordinary input; a text refused at its last byte, a
    # megabyte of tuples opening (read whole, past the nesting bound at
    # once) and one dict of very many keys are the hostile ones.
    Case("py_rows", result(py_rows()), {"default": {"cleaned": 1, "clean_python_literal": 1, "encoded": 1, "bytes_before": -1, "bytes_after": -1}, "transforms": {"cleaned": 1, "clean_python_literal": 1, "encoded": 1, "bytes_before": -1, "bytes_after": -1}}, {"default": python_literal, "transforms": python_literal}),
    Case("py_near_miss", result(py_rows()[:-1] + "}"), {"default": {"not_json": 1}, "transforms": {"not_json": 1}}, like="py_rows"),
    Case("py_deep_tuples", result(repeat("(")), {"default": {"not_json": 1}, "transforms": {"not_json": 1}}, like="py_rows"),
    Case("py_many_keys", result("{" + ", ".join(f"'key {i}': True" for i in range(MB // 16)) + "}"), {"default": {"not_tabular": 1}, "transforms": {"not_tabular": 1}}, like="py_rows"),
    # TOON: what only the generic path decides.
    Case("toon_sparse_rows", result(sparse_rows()), {"default": {"toon_budget": 1}, "transforms": {"toon_budget": 1}}, like="table"),
    Case("toon_group_rows", result(group_rows()), {"default": {"toon_budget": 1}, "transforms": {"toon_budget": 1}}, like="table"),
    # The request parse: every result of a batch finds its call.
    Case("request_batch", BATCH_RESPONSE, {"default": {"below_min_bytes": len(BATCH_REQUEST)}, "transforms": {"below_min_bytes": len(BATCH_REQUEST)}}, like="batch_in_order", request=BATCH_REQUEST),
    # The same batch answered on an event stream, one result per event.
    Case("request_batch_sse", sse_batch(), {"default": {"below_min_bytes": len(BATCH_REQUEST)}, "transforms": {"below_min_bytes": len(BATCH_REQUEST)}}, like="batch_in_order", content_type="text/event-stream", request=BATCH_REQUEST),
    # Bounded state: thousands of calls whose ids are past max_id_bytes.
    # None is followed (nothing of them is kept); every table passes as sent.
    Case("request_long_ids", LONG_IDS_RESPONSE, {"default": {"id_too_long": len(LONG_IDS_REQUEST)}, "transforms": {"id_too_long": len(LONG_IDS_REQUEST)}}, like="batch_in_order", request=LONG_IDS_REQUEST),
    # SSE framing: an event that never ends, one whose JSON never closes.
    Case("sse_no_end", sse("data: " + "x" * MB), {"default": {"stream_truncated": 1}, "transforms": {"stream_truncated": 1}}, like="sse_text_event", content_type="text/event-stream"),
    Case("sse_unclosed_quote", sse('data: {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"' + "x" * MB + "\n\n"), {"default": {"malformed_response": 1}, "transforms": {"malformed_response": 1}}, like="sse_text_event", content_type="text/event-stream"),
    # Their ordinary counterpart: one event of the same size, a text result.
    Case("sse_text_event", sse_events(repeat("just some words in a sentence. "), n=1), {"default": {"not_json": 1}, "transforms": {"not_json": 1}}, content_type="text/event-stream"),
    # One TOON budget per event: many events of generic-path tables.
    # The first event's table uses the stream's generic budget (16 KiB), the
    # others find it spent.
    Case("sse_sparse_events", SPARSE_EVENTS, {"default": SPARSE_COUNTS, "transforms": SPARSE_COUNTS}, like="sse_table_events", content_type="text/event-stream"),
    Case("sse_table_events", sse_events(table(15 * 1024)), {"default": {}, "transforms": {}}, content_type="text/event-stream"),
    Case("small", result("ok"), {"default": {"below_min_bytes": 1}, "transforms": {"below_min_bytes": 1}}),
]
BOUNDARY = [
    Case("generic_at", result(sparse_exactly(16 * 1024)), {}),
    Case("generic_over", result(sparse_exactly(16 * 1024 + 1)), {}),
]
# A JSON-RPC id and a tool name at their limits (256 bytes) and one past:
# a table the plugin encodes when it follows the call, byte-identical when
# it does not. The id counts as its JSON text (quotes included).
SMALL_TABLE = table(8 * 1024)


def call_of(id_: Any, tool: str) -> tuple[dict[str, Any], bytes]:
    response = {"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": SMALL_TABLE}]}}
    return harness.jsonrpc("tools/call", {"name": tool, "arguments": {}}, id=id_), json.dumps(response, separators=(",", ":")).encode()


ENCODED = {"encoded": 1, "bytes_before": -1, "bytes_after": -1}
LIMITS = [
    Case(name, body, {"default": counts}, request=request)
    for name, (request, body), counts in [
        ("id_at", call_of("i" * 254, "fetch"), ENCODED),
        ("id_over", call_of("i" * 255, "fetch"), {"id_too_long": 1}),
        ("tool_at", call_of(1, "t" * 256), ENCODED),
        ("tool_over", call_of(1, "t" * 257), {"tool_name_too_long": 1}),
    ]
]
# A server text that starts with the marker: passed as sent, and never with
# a valid tag.
MARKER_KEY = "e2e-marker-key-0123456789"
SERVER_MARKER = Case("server_marker", result(harness.MARKER + "\n" + SMALL_TABLE), {})
KEYED_TABLE = Case("keyed_table", call_of(1, "fetch")[1], {})
BY_NAME = {c.name: c for c in CASES}
HOSTILE = [c for c in CASES if c.name not in ("plain_text", "page", "blob", "batch_in_order", "table", "pretty_table", "py_rows", "sse_table_events", "sse_text_event", "small")]
# Issue 13's stalls, each as one SSE event on a stream the upstream keeps
# open (raw_server.py `gate`): the event goes out when the test opens the
# gate, the stream ends when the test releases it or HOLD_S seconds later.
BESIDE = ["b64_lines", "html_rt", "html_div_title", "toon_group_rows"]
HOLD_S = 5
GATED = {
    name: Case(
        f"{name}_gated",
        sse_events(text_of(BY_NAME[name].body), n=1),
        BY_NAME[name].counts,
        content_type="text/event-stream",
        wire={"framing": "chunked", "chunk": 64 * 1024, "gate": True, "hold": HOLD_S},
    )
    for name in BESIDE
}


# --- fixtures --------------------------------------------------------------------


@pytest.fixture(scope="module")
def upstream(work_dir: Path):
    spec = work_dir / "hostile-cases.json"
    cases = CASES + BOUNDARY + LIMITS + [SERVER_MARKER, KEYED_TABLE] + list(GATED.values())
    spec.write_text(json.dumps({c.name: c.spec() for c in cases}))
    port = harness.free_port()
    proc = harness.Proc("hostile-server", [str(harness.PYTHON), str(Path(__file__).parent / "raw_server.py"), str(port), str(spec)], work_dir / "hostile-server.log")
    try:
        harness.wait_for_port(port, proc)
        yield port
    finally:
        proc.stop()


def without_plugin(name: str) -> Callable[[dict[str, Any]], None]:
    def tweak(config: dict[str, Any]) -> None:
        for lst in config["static_resources"]["listeners"]:
            if lst["name"] == name:
                hcm = lst["filter_chains"][0]["filters"][0]["typed_config"]
                hcm["http_filters"] = [f for f in hcm["http_filters"] if f["name"] != "envoy.filters.http.wasm"]

    return tweak


@pytest.fixture(scope="module")
def envoy(upstream: int, work_dir: Path):
    listeners = [
        Listener("bare", {}),
        *(Listener(name, cfg) for name, cfg in CONFIGS.items()),
        Listener("keyed", {**CONFIGS["default"], "marker_key": MARKER_KEY}),
    ]
    e = harness.start_envoy(listeners, upstream, work_dir, name="envoy-hostile", tweak=without_plugin("bare"))
    try:
        yield e
    finally:
        e.stop()


# --- helpers -----------------------------------------------------------------------


def send(envoy: harness.Envoy, listener: str, case: Case, timeout: float = 120) -> tuple[float, bytes]:
    """POSTs `case` on its own connection; seconds until the last byte, and
    the body as it arrived."""
    body = json.dumps(case.request if case.request is not None else CALL, separators=(",", ":")).encode()
    with httpx.Client(timeout=timeout) as client:
        start = time.monotonic()
        with client.stream("POST", envoy.url(listener, f"/mcp/{case.name}"), content=body, headers=REQUEST_HEADERS) as r:
            raw = b"".join(r.iter_raw())
            assert r.status_code == 200
        return time.monotonic() - start, raw


GAUGES = ("mcp_toon_held_bytes_max", "mcp_toon_vm_memory_bytes", "mcp_toon_vm_held_bytes", "mcp_toon_vm_held_bytes_max")


def moved(before: dict[str, float], after: dict[str, float]) -> dict[str, int]:
    out = {}
    for k, v in after.items():
        if k.startswith("mcp_toon_") and k not in GAUGES and v != before.get(k, 0.0):
            out[k.removeprefix("mcp_toon_").removeprefix("passthrough_")] = int(v - before.get(k, 0.0))
    return out


def counted(envoy: harness.Envoy, before: dict[str, float], expected: dict[str, int]) -> dict[str, int]:
    """The counters that moved, once their names are the expected ones
    (-1: any amount, for byte counters) or after 10 s."""

    def matches(delta: dict[str, int]) -> bool:
        return set(delta) == set(expected) and all(v == -1 or delta[k] == v for k, v in expected.items())

    deadline = time.monotonic() + 10
    while True:
        delta = moved(before, envoy.prometheus())
        if matches(delta) or time.monotonic() > deadline:
            return {k: (-1 if expected.get(k) == -1 else v) for k, v in delta.items()}
        time.sleep(0.05)


def expected_counts(case: Case, listener: str) -> dict[str, int]:
    return {k: v for k, v in case.counts[listener].items() if v != 0}


# --- the cases ------------------------------------------------------------------------


@pytest.mark.parametrize("listener", list(CONFIGS))
@pytest.mark.parametrize("name", [c.name for c in HOSTILE])
def test_hostile_result_arrives_as_sent_or_bounded(envoy, listener, name):
    """What arrives, and the reason counted: byte-identical where no linear
    transform applies, transformed where one does, and a work budget's
    reason (`html_budget`, `toon_budget`) where a stage gave up. How long
    it takes is a benchmark (tests/e2e/bench_hostile.py, in `make bench`),
    not a timed test."""
    case = BY_NAME[name]
    before = envoy.prometheus()
    _, body = send(envoy, listener, case)
    check = case.changed.get(listener)
    if check is None:
        assert body == case.body, f"{name}: {len(body)} bytes arrived, the server sent {len(case.body)}"
    else:
        assert body != case.body
        check(body)
    expected = expected_counts(case, listener)
    assert counted(envoy, before, expected) == expected


def gate(upstream: int, action: str, case: Case) -> None:
    """Opens (`_gate`: answered once the event is written to Envoy) or
    releases (`_release`: the stream ends) a gated case, at the upstream
    itself."""
    r = httpx.post(f"http://127.0.0.1:{upstream}/{action}/{case.name}", timeout=60)
    assert r.status_code in (200, 404), r.status_code  # 404: the hold already ended it


def beside(envoy: harness.Envoy, upstream: int, listener: str, case: Case) -> tuple[list[str], bytes, bytes, float]:
    """The hostile event on a held stream, then a small request: the order
    in which the two responses completed, both bodies, and the seconds the
    small one took (for bench_hostile.py)."""
    order: list[str] = []
    big: list[bytes] = []
    started = threading.Event()
    failed: list[BaseException] = []

    def hostile() -> None:
        try:
            with httpx.Client(timeout=120) as client:
                body = json.dumps(CALL, separators=(",", ":")).encode()
                with client.stream("POST", envoy.url(listener, f"/mcp/{case.name}"), content=body, headers=REQUEST_HEADERS) as r:
                    assert r.status_code == 200
                    started.set()
                    big.append(b"".join(r.iter_raw()))
                order.append("hostile")
        except BaseException as exc:  # re-raised below
            failed.append(exc)
            started.set()

    thread = threading.Thread(target=hostile)
    thread.start()
    try:
        # The stream is open on the worker (its headers reached the
        # client); now the event: once the gate answers, it is written to
        # Envoy's upstream connection.
        assert started.wait(60) and not failed, failed
        gate(upstream, "_gate", case)
        took, small = send(envoy, listener, BY_NAME["small"])
        order.append("small")
    finally:
        gate(upstream, "_release", case)
        thread.join(timeout=120)
    assert not failed, failed
    return order, small, big[0], took


@pytest.mark.parametrize("listener", list(CONFIGS))
@pytest.mark.parametrize("name", BESIDE)
def test_a_second_client_is_answered_beside_a_hostile_response(envoy, upstream, listener, name):
    """One worker (`--concurrency 1`). The upstream sends the hostile
    result as one SSE event on a stream it keeps open, and ends the stream
    when the test says so or HOLD_S seconds after the event. Once the event
    is on its way to Envoy, a second client sends a small request.

    A worker the event stalls serves nothing else until the stage returns:
    when that takes longer than the hold, the stream's end is already
    waiting when the worker is free again, and the hostile response
    completes first (its end needs one write; the small request still needs
    a round trip to the upstream). A worker that is not stalled answers the
    small request while the stream is held, and only then does the test
    end the stream. So the small response must complete first — an order,
    not a duration (no ordering can tell a stall from a slow worker without
    some clock; the hold is that clock, HOLD_S seconds against the ~12-20 s
    stalls of issue 13). The event arrives as sent and its stage counted
    its reason: the plugin did examine it."""
    case = GATED[name]
    before = envoy.prometheus()
    order, small, big, _ = beside(envoy, upstream, listener, case)
    assert order == ["small", "hostile"], order
    assert small == BY_NAME["small"].body
    assert big == case.body, f"{len(big)} bytes arrived, the server sent {len(case.body)}"
    merged: dict[str, int] = {}
    for c in (case, BY_NAME["small"]):
        for k, v in expected_counts(c, listener).items():
            merged[k] = v if v == -1 else merged.get(k, 0) + v
    assert counted(envoy, before, merged) == merged


@pytest.mark.parametrize("listener", list(CONFIGS))
def test_the_generic_toon_budget_at_its_boundary(envoy, listener):
    """16 KiB of text that only the generic TOON path decides is decided
    (here: not smaller, `below_threshold`); one byte more is `toon_budget`."""
    for case, reason in zip(BOUNDARY, ("below_threshold", "toon_budget")):
        before = envoy.prometheus()
        _, body = send(envoy, listener, case)
        assert body == case.body
        assert counted(envoy, before, {reason: 1}) == {reason: 1}


# --- bounded state and the marker (issue 13 items 2 and 5) -------------------------


def test_ids_and_tool_names_at_their_limits(envoy):
    """At 256 bytes the call is followed (its table encoded); one byte more
    and it passes as sent, counted."""
    for case in LIMITS:
        before = envoy.prometheus()
        _, body = send(envoy, "default", case)
        expected = case.counts["default"]
        if "encoded" in expected:
            assert text_of(body).startswith(harness.MARKER + "\n"), case.name
        else:
            assert body == case.body, case.name
        assert counted(envoy, before, expected) == expected, case.name


def tag_is_valid(text: str, key: bytes) -> bool:
    """docs/security.md "What the marker proves", verbatim."""
    head, nl, rest = text.partition("\n")
    body, _, tag = head.rpartition(" tag=")
    mac = hmac.new(key, (body + nl + rest).encode(), hashlib.sha256).digest()[:16]
    return len(tag) == 22 and hmac.compare_digest(tag, base64.urlsafe_b64encode(mac).rstrip(b"=").decode())


def test_a_server_marker_passes_as_sent_and_only_the_plugins_blocks_carry_a_valid_tag(envoy):
    for listener in ("default", "keyed"):
        _, body = send(envoy, listener, SERVER_MARKER)
        assert body == SERVER_MARKER.body, listener
    assert not tag_is_valid(text_of(SERVER_MARKER.body), MARKER_KEY.encode())

    _, body = send(envoy, "keyed", KEYED_TABLE)
    text = text_of(body)
    head, _, toon = text.partition("\n")
    assert head.startswith(harness.MARKER + " tag=") and tag_is_valid(text, MARKER_KEY.encode())
    harness.same_json(harness.toon_decode(toon), json.loads(SMALL_TABLE))
    assert not tag_is_valid(text, b"another-key-0123456789")
    assert not tag_is_valid(text.replace("user-1,", "user-2,", 1), MARKER_KEY.encode())
    # Without a key, the same table carries no tag.
    _, plain = send(envoy, "default", KEYED_TABLE)
    assert text_of(plain).startswith(harness.MARKER + "\n")
