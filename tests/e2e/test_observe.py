"""Everything is visible: counters in Envoy's /stats/prometheus, the decision
record in the access log (filter state `wasm.mcp_toon`) and at debug level
in Envoy's log."""

from __future__ import annotations

import json
import re
import time

import httpx

import harness
from harness import call_tool, jsonrpc, post


# Gauges (memory), not counters: they move with any traffic.
GAUGES = ("mcp_toon_held_bytes_max", "mcp_toon_vm_memory_bytes", "mcp_toon_vm_held_bytes", "mcp_toon_vm_held_bytes_max")


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {
        k: v - before.get(k, 0.0)
        for k, v in after.items()
        if k.startswith("mcp_toon_") and k not in GAUGES and v != before.get(k, 0.0)
    }


def test_counters_move_in_prometheus(demo, envoy):
    url = envoy.url("held")
    before = envoy.prometheus()
    # Every metric is defined at configure time, so each shows up at once.
    for name in ("mcp_toon_encoded", "mcp_toon_annotated", "mcp_toon_bytes_before", "mcp_toon_bytes_after",
                 "mcp_toon_passthrough_not_tabular", "mcp_toon_passthrough_response_too_large"):
        assert name in before, name

    encoded = call_tool(url, "list_users")
    call_tool(url, "describe_project")  # prose: not_json
    call_tool(url, "failing_lookup")  # is_error
    call_tool(url, "export_logs", {"megabytes": 17}, timeout=120)  # response_too_large: past max_response_bytes, 16 MiB
    call_tool(url, "list_users", headers={"x-demo-force-gzip": "1"})  # content_encoding
    post(url, jsonrpc("tools/list"))  # not_tools_call
    httpx.get(envoy.url("held", "/nothing-here"), timeout=10)  # request_not_jsonrpc
    after = envoy.prometheus()

    summary = re.fullmatch(r"encoded=1 bytes=(\d+)->(\d+)", encoded.headers["x-mcp-toon"])
    assert summary
    assert delta(before, after) == {
        "mcp_toon_encoded": 1,
        "mcp_toon_bytes_before": int(summary[1]),
        "mcp_toon_bytes_after": int(summary[2]),
        "mcp_toon_passthrough_not_json": 1,
        "mcp_toon_passthrough_is_error": 1,
        "mcp_toon_passthrough_response_too_large": 1,
        "mcp_toon_passthrough_content_encoding": 1,
        "mcp_toon_passthrough_not_tools_call": 1,
        "mcp_toon_passthrough_request_not_jsonrpc": 1,
    }
    # The same counters under /stats, Envoy's own naming.
    stats = envoy.admin("/stats?filter=mcp_toon_encoded")
    assert re.search(r"^wasmcustom\.mcp_toon_encoded: \d+$", stats, re.M), stats


def wait_for_line(read, pattern: str, timeout: float = 10.0) -> str:
    """The first line of read() matching pattern, polling (Envoy flushes its
    file access log about once a second)."""
    deadline = time.monotonic() + timeout
    while True:
        for line in read().splitlines():
            if re.search(pattern, line):
                return line
        if time.monotonic() > deadline:
            raise AssertionError(f"no line matching {pattern!r}:\n{read()[-3000:]}")
        time.sleep(0.2)


def test_decision_record_reaches_access_log_and_debug_log(demo, envoy):
    request_id = 424242017
    response = post(envoy.url("held"), jsonrpc("tools/call", {"name": "list_users", "arguments": {}}, id=request_id))
    assert response.status_code == 200

    line = wait_for_line(envoy.access_log.read_text, rf'"id":"{request_id}"')
    assert line.startswith("[held] POST /mcp 200 "), line
    record = json.loads(line.split(" mcp_toon=", 1)[1])
    [decision] = record["decisions"]
    text = response.json()["result"]["content"][0]["text"]
    assert decision == {
        "stage": "toon",
        "outcome": "encoded",
        "id": str(request_id),
        "tool": "list_users",
        "block": 0,
        "bytes_before": decision["bytes_before"],
        "bytes_after": len(text.encode()),
        "lossless": True,
    }
    assert decision["bytes_before"] > decision["bytes_after"]
    # %BYTES_SENT% is what went downstream: the rewritten body.
    assert int(line.split()[4]) == len(response.content)

    debug = wait_for_line(envoy.proc.log, rf"mcp-toon: encoded=1 bytes=\d+->\d+ .*\"id\":\"{request_id}\"")
    assert "[debug][wasm]" in debug
    assert json.loads(debug.split("->", 1)[1].split(" ", 1)[1]) == record


def test_passthrough_decisions_are_recorded_too(demo, envoy):
    request_id = 424242018
    post(envoy.url("plain"), jsonrpc("tools/call", {"name": "failing_lookup", "arguments": {}}, id=request_id))
    line = wait_for_line(envoy.access_log.read_text, rf'"id":"{request_id}"')
    assert line.startswith("[plain] ")
    record = json.loads(line.split(" mcp_toon=", 1)[1])
    assert [(d["outcome"], d.get("reason")) for d in record["decisions"]] == [("passthrough", "is_error")]
