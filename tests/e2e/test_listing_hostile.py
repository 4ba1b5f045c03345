"""Hostile tool listings through the real Envoy (V8, one worker; issue 41:
"the search and rewrite are linear and bounded"): a raw upstream
(raw_server.py) lists 10,000 tools, or one tool whose description is 1 MiB
of text, to listeners compacting and disclosing listings. The plugin keeps
its bounds (`listings.max_tools`: past it the listing passes as sent,
counted `listing_too_large`), compacts and keeps what fits, answers the
describe and search tools from it, and the worker goes on serving. How
long these take is the adversarial benchmark's (`cargo bench --features
sim --bench adversarial -- listing`, BENCHMARKS.md), not a timed test.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

import harness
from harness import Listener

MB = 1 << 20
LIMITS = {"hold_headers": True, "max_body_bytes": 4 * MB, "max_event_bytes": 4 * MB}
FIRST = "Reads one record by its key."
# A megabyte of prose: the first sentence, the search index's field limit
# (16 KB) and the query's limits are what bound the work.
LONG_DESCRIPTION = FIRST + " " + ("More words about records and keys. " * (MB // 35))


def tool(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {"key": {"type": "string", "description": "The record's key."}},
            "required": ["key"],
        },
    }


def listing(tools: list[dict[str, Any]]) -> bytes:
    message = {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}
    return json.dumps(message, separators=(",", ":")).encode()


MANY = listing([tool(f"tool_{i:05d}", f"Does task number {i}.") for i in range(10_000)])
LONG = listing([tool("read_record", LONG_DESCRIPTION), tool("list_keys", "Lists every key.")])
CASES = {"many": MANY, "long": LONG}


@pytest.fixture(scope="module")
def upstream(work_dir: Path):
    spec = work_dir / "listing-hostile-cases.json"
    spec.write_text(
        json.dumps(
            {
                name: {
                    "status": 200,
                    "headers": [["content-type", "application/json"]],
                    "body_b64": base64.b64encode(body).decode(),
                    "framing": "chunked",
                    "chunk": 65536,
                }
                for name, body in CASES.items()
            }
        )
    )
    port = harness.free_port()
    argv = [str(harness.PYTHON), str(Path(__file__).parent / "raw_server.py"), str(port), str(spec)]
    proc = harness.Proc("listing-hostile-server", argv, work_dir / "listing-hostile-server.log")
    try:
        harness.wait_for_port(port, proc)
        yield port
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def envoy(upstream: int, work_dir: Path):
    listeners = [
        Listener("compact", {**LIMITS, "listings": {"mode": "compact"}}),
        Listener("disclose", {**LIMITS, "listings": {"mode": "disclose", "hot": ["list_keys"]}}),
    ]
    e = harness.start_envoy(listeners, upstream, work_dir, name="envoy-listing-hostile")
    try:
        yield e
    finally:
        e.stop()


def tools_list(envoy: harness.Envoy, listener: str, case: str) -> bytes:
    r = harness.post(envoy.url(listener, f"/mcp/{case}"), harness.jsonrpc("tools/list"), timeout=120)
    assert r.status_code == 200, r.content[:300]
    return r.content


def call(envoy: harness.Envoy, listener: str, case: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A call of an added tool: the plugin answers it (the raw upstream only
    knows listings, so a call that reached it would get one back)."""
    message = harness.jsonrpc("tools/call", {"name": name, "arguments": arguments}, id=7)
    r = harness.post(envoy.url(listener, f"/mcp/{case}"), message, timeout=120)
    assert r.status_code == 200, r.content[:300]
    reply = json.loads(r.content)
    assert reply["id"] == 7 and "result" in reply, str(reply)[:300]
    return reply["result"]


def moved(before: dict[str, float], after: dict[str, float], name: str) -> int:
    return int(after.get(name, 0.0) - before.get(name, 0.0))


@pytest.mark.parametrize("listener", ["compact", "disclose"])
def test_ten_thousand_tools_pass_as_sent_past_max_tools(envoy, listener):
    before = envoy.prometheus()
    assert tools_list(envoy, listener, "many") == MANY
    after = envoy.prometheus()
    assert moved(before, after, "mcp_toon_passthrough_listing_too_large") == 1
    # Nothing of it was kept: the describe tool knows no such tool (or no
    # list at all, when this listener kept none before), and the worker
    # answers at once.
    result = call(envoy, listener, "many", "mcp_toon_describe", {"name": "tool_00001"})
    assert result["isError"] is True
    message = result["content"][0]["text"]
    assert "list the tools again" in message or "no tool named" in message, result


def test_a_megabyte_description_is_cut_to_its_first_sentence_and_described_whole(envoy):
    before = envoy.prometheus()
    got = json.loads(tools_list(envoy, "compact", "long"))["result"]["tools"]
    assert [t["name"] for t in got] == ["read_record", "list_keys", "mcp_toon_describe"]
    assert got[0]["description"] == FIRST
    assert moved(before, envoy.prometheus(), "mcp_toon_compacted") == 1
    result = call(envoy, "compact", "long", "mcp_toon_describe", {"name": "read_record"})
    assert not result.get("isError"), result
    assert json.loads(result["content"][0]["text"]) == tool("read_record", LONG_DESCRIPTION)


def test_a_megabyte_description_is_searched_within_bounds(envoy):
    got = json.loads(tools_list(envoy, "disclose", "long"))["result"]["tools"]
    names = [t["name"] for t in got]
    assert names == ["list_keys", "mcp_toon_search_tools", "mcp_toon_call_tool", "mcp_toon_describe"], names
    # A query of many terms, past the query limit (1,024 bytes, 32 terms).
    query = " ".join(["record"] * 400)
    result = call(envoy, "disclose", "long", "mcp_toon_search_tools", {"query": query})
    assert not result.get("isError"), result
    found = json.loads(result["content"][0]["text"])
    assert found[0]["name"] == "read_record", found
    # The answer carries the compact definition, not the megabyte.
    assert len(result["content"][0]["text"]) < 4096
