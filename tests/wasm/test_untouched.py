"""Traffic the plugin will not change is not copied into the VM (DESIGN
"Off means off, and costs (almost) nothing"), seen from the host: which
`env` calls the built module makes on such a stream.

- A configuration under which nothing can change passes every stream at
  its request headers: not a header, body or property read, no record
  written; counted `policy_off`.
- A tool whose policy changes nothing: the request body is read (it names
  the tool), the response is not.
- MCP 2026-07-28 routing headers (SEP-2243) naming a method, or a tool,
  the plugin leaves alone: neither body is read."""

from __future__ import annotations

import json

from host import Vm, play
from traffic import TABLE_TEXT, json_body, tool_result, tools_call

OFF = {"toon": {"mode": "off"}, "clean": {"compact_json": False}}
RESPONSE = json_body(tool_result(7, TABLE_TEXT))


def exchange(plugin, config: dict, method: str = "tools/call", extra: list | None = None, unchanged: bool = True,
             **vm_options):
    """One stream through a fresh VM (`vm_options` for the host); the VM
    and the calls the module made for the stream."""
    vm = Vm(plugin.engine, plugin.module, json.dumps(config).encode(), **vm_options)
    assert vm.start()
    before = len(vm.calls)
    params = {"name": "list_people", "arguments": {}} if method == "tools/call" else {"uri": "file:///x"}
    body = tools_call(7, "list_people", {}) if method == "tools/call" else json.dumps(
        {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).encode()
    outcome = play(
        vm,
        [
            ("request_headers", [(":method", "POST"), (":path", "/mcp"), (":authority", "mcp.example"),
                                 ("content-type", "application/json"),
                                 ("accept", "application/json, text/event-stream"), *(extra or [])], False),
            ("request_body", body, True),
            ("response_headers", [(":status", "200"), ("content-type", "application/json"),
                                  ("content-length", str(len(RESPONSE)))], False),
            ("response_body", RESPONSE[:1000], False),
            ("response_body", RESPONSE[1000:], True),
        ],
    )
    assert outcome.trap is None, outcome.trap
    assert (bytes(outcome.client.body) == RESPONSE) == unchanged, "the response arrives as sent, or rewritten"
    assert bytes(outcome.server.body) == body, "the request arrives as sent"
    return vm, vm.calls[before:]


def named(calls, name: str, callback: str | None = None) -> list:
    return [c for c in calls if c.name == name and (callback is None or c.callback.startswith(callback))]


def metric(vm: Vm, name: str) -> int:
    return sum(value for _, n, value in vm.metrics.values() if n == name)


def test_a_configuration_that_changes_nothing_reads_nothing(plugin):
    vm, calls = exchange(plugin, OFF)
    reads = [c for c in calls if c.name in ("proxy_get_buffer_bytes", "proxy_get_header_map_pairs",
                                            "proxy_get_header_map_value", "proxy_get_property")]
    assert reads == [], reads
    assert named(calls, "proxy_set_property") == [], "no record"
    assert named(calls, "proxy_set_buffer_bytes") == []
    assert metric(vm, "mcp_toon_passthrough_policy_off") == 1


def test_a_tool_that_changes_nothing_has_its_response_unread(plugin):
    config = {"tools": {"list_people": OFF}}
    vm, calls = exchange(plugin, config)
    assert len(named(calls, "proxy_get_buffer_bytes", "on_request_body")) == 1
    assert named(calls, "proxy_get_buffer_bytes", "on_response") == []
    assert named(calls, "proxy_get_header_map_pairs", "on_response") == []
    assert named(calls, "proxy_set_buffer_bytes") == []
    assert metric(vm, "mcp_toon_passthrough_mode_off") == 1
    # The same tool at the defaults: its response is read (and rewritten).
    _, calls = exchange(plugin, {}, unchanged=False)
    assert named(calls, "proxy_get_buffer_bytes", "on_response") != []


def test_routing_headers_naming_what_stays_leave_both_bodies_unread(plugin):
    for method, extra, reason in [
        ("resources/read", [("mcp-method", "resources/read"), ("mcp-name", "file:///x")], "not_tools_call"),
        ("tools/call", [("mcp-method", "tools/call"), ("mcp-name", "list_people")], "mode_off"),
    ]:
        config = {"tools": {"list_people": OFF}}
        vm, calls = exchange(plugin, config, method, extra)
        assert named(calls, "proxy_get_buffer_bytes") == [], (method, named(calls, "proxy_get_buffer_bytes"))
        assert metric(vm, f"mcp_toon_passthrough_{reason}") == 1, method
    # Without them (an earlier revision), the request body is read.
    _, calls = exchange(plugin, {"tools": {"list_people": OFF}}, "resources/read")
    assert len(named(calls, "proxy_get_buffer_bytes", "on_request_body")) == 1
