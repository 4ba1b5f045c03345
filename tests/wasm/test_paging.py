"""Budgets and pages through the built module: a result cut to its budget
keeps its pages in shared data (compare-and-swap, as cpp-host's
SharedData), a page call is answered by a local reply without reaching the
server, and the timer asked for at configuration sweeps expired pages."""

from __future__ import annotations

import json
import re

from host import Vm, play

KEY = "0123456789abcdef0123456789abcdef"
CONFIG = {
    "hold_headers": True,
    "max_body_bytes": 4096,
    "tools": {"rows": {"budget": {"tokens": 300}, "paging": {"enabled": True}}},
    "paging": {"key": KEY, "ttl_s": 60},
}
ROWS = [{"seq": i, "level": "info", "message": f"request {i} handled"} for i in range(300)]


def post(body: bytes) -> list[tuple]:
    headers = [(":method", "POST"), (":path", "/mcp"), (":authority", "mcp.example"),
               ("content-type", "application/json"), ("accept", "application/json"),
               ("content-length", str(len(body)))]
    return [("request_headers", headers, False), ("request_body", body[:20], False),
            ("request_body", body[20:], True)]


def call(id_: int, tool: str, args: dict) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": "tools/call",
                       "params": {"name": tool, "arguments": args}}).encode()


def result(id_: int) -> bytes:
    text = json.dumps(ROWS, separators=(",", ":"))
    return json.dumps({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": text}]}}).encode()


def texts(body: bytes) -> list[str]:
    return [c["text"] for c in json.loads(bytes(body))["result"]["content"]]


def handle(notice: str):
    m = re.search(r'\{"handle":"([^"]+)"', notice)
    return m.group(1) if m else None


def test_pages_live_in_shared_data_and_are_answered_locally(engine, module):
    vm = Vm(engine, module, json.dumps(CONFIG).encode(), allow_on_headers_stop_iteration=True)
    assert vm.start(), vm.logs
    assert vm.tick_period_ms > 0, "a store asks for the timer"
    body = result(3)
    cut = play(vm, post(call(3, "rows", {"n": 300})) + [
        ("response_headers", [(":status", "200"), ("content-type", "application/json"),
                              ("content-length", str(len(body)))], False),
        ("response_body", body[:1000], False), ("response_body", body[1000:], True)])
    assert cut.trap is None and cut.unexpected == []
    assert cut.server.body == call(3, "rows", {"n": 300}), "not a page call: it reaches the server"
    first = texts(cut.client.body)
    assert len(first) == 2 and first[1].startswith("[mcp-toon] Result cut"), first
    assert vm.shared, "the rest is kept in shared data"
    notice, pages = first[1], 1
    while (h := handle(notice)) is not None:
        page = play(vm, post(call(4, "mcp_toon_page", {"handle": h})))
        assert page.trap is None and page.unexpected == []
        assert page.client.local_reply == 200
        assert page.server.body == b"" and page.server.state == "reset", "a page call never reaches the server"
        got = texts(page.client.body)
        assert json.loads(bytes(page.client.body))["id"] == 4
        notice, pages = got[-1], pages + 1
    assert pages > 2, pages

    # The timer sweeps expired pages: a later clock empties the store.
    held = sum(len(v) for v, _ in vm.shared.values())
    vm.clock_ns += 61 * 10**9
    vm.tick()
    assert vm.trap is None
    assert sum(len(v) for v, _ in vm.shared.values()) < held


def test_every_store_write_takes_a_new_version(engine, module):
    """Results cut one after another each keep their pages; every key the
    store wrote carries its own version (the host's one counter, as
    cpp-host's nextCas), so a stale compare-and-swap cannot pass."""
    vm = Vm(engine, module, json.dumps(CONFIG).encode(), allow_on_headers_stop_iteration=True)
    assert vm.start()
    for n in range(3):
        body = result(3)
        out = play(vm, post(call(3, "rows", {"n": n})) + [
            ("response_headers", [(":status", "200"), ("content-type", "application/json")], False),
            ("response_body", body, True)])
        assert out.trap is None
        assert handle(texts(out.client.body)[-1]) is not None
    versions = [v for _, v in vm.shared.values()]
    assert len(set(versions)) == len(versions), "every write takes a new version (cpp-host nextCas)"
