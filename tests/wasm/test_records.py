"""2024-11-05 session records through the host's shared data, with Envoy's
compare-and-swap and WASI randomness (docs/transports.md "The HTTP+SSE transport"):
a `POST …?session_id=…` answered `202` records its call; the `GET` stream,
another stream of the same VM, finds the record and applies the tool's own
settings. A `POST` the server refused records nothing. The slot key comes
from the host's randomness (WASI `random_get`, which the Python embedding
answers from the OS as Envoy's host does from BoringSSL), so it differs
between VMs. Shared data here follows proxy-wasm-cpp-host's
src/shared_data.cc: one version counter for all keys, a stale `cas`
refused with CasMismatch."""

from __future__ import annotations

import hashlib
import hmac
import json

from host import Vm, play
from traffic import TABLE_TEXT, sse_event, tool_result, tools_call

# list_people is compacted and TOON-encoded at the top level; its own
# settings leave it as sent.
CONFIG = json.dumps({"tools": {"list_people": {"toon": {"mode": "off"}, "clean": {"compact_json": False}}}}).encode()
SESSION = "3f2a9c1e7b5d4a60"
RESULT = tool_result(31, TABLE_TEXT)


def post(vm: Vm, status: int, session: str = SESSION):
    body = tools_call(31, "list_people", {})
    return play(
        vm,
        [
            (
                "request_headers",
                [(":method", "POST"), (":path", f"/messages/?session_id={session}"), (":authority", "mcp.example"),
                 ("content-type", "application/json"), ("content-length", str(len(body)))],
                False,
            ),
            ("request_body", body, True),
            ("response_headers", [(":status", str(status)), ("content-length", "8")], False),
            ("response_body", b"Accepted" if status == 202 else b"No such!", True),
        ],
    )


def get_stream(vm: Vm):
    events = sse_event({"x": 1}, event="endpoint").replace(
        b'data: {"x": 1}', f"data: /messages/?session_id={SESSION}".encode()
    ) + sse_event(RESULT)
    return play(
        vm,
        [
            ("request_headers", [(":method", "GET"), (":path", "/sse"), (":authority", "mcp.example"),
                                 ("accept", "text/event-stream")], True),
            ("response_headers", [(":status", "200"), ("content-type", "text/event-stream")], False),
            ("response_body", events, True),
        ],
    )


def result_text(body: bytes) -> str:
    data = [l for l in body.decode().splitlines() if l.startswith("data: {")]
    return json.loads(data[-1].removeprefix("data: "))["result"]["content"][0]["text"]


def records(vm: Vm) -> dict[bytes, bytes]:
    return {k: v for k, (v, _) in vm.shared.items() if k.startswith(b"mcp_toon.legacy.") and v}


def metric(vm: Vm, name: str) -> int:
    return sum(value for _, n, value in vm.metrics.values() if n == name)


def vm_of(plugin) -> Vm:
    vm = Vm(plugin.engine, plugin.module, CONFIG)
    assert vm.start()
    return vm


def test_an_accepted_post_is_recorded_and_the_get_stream_applies_the_tools_settings(plugin):
    vm = vm_of(plugin)
    posted = post(vm, 202)
    assert posted.trap is None and posted.client.state == "complete"
    key = vm.shared[b"mcp_toon.legacy.key"][0]
    assert len(key) == 16
    [slot] = [k for k in records(vm) if k != b"mcp_toon.legacy.key"]

    got = get_stream(vm)
    assert got.trap is None and got.client.state == "complete"
    # The record named the tool: TOON off for it, the text as sent.
    assert result_text(bytes(got.client.body)) == TABLE_TEXT
    # Read, and emptied.
    assert slot not in records(vm)

    # Another VM (another Envoy process) draws another slot key.
    other = vm_of(plugin)
    post(other, 202)
    assert other.shared[b"mcp_toon.legacy.key"][0] != key


def test_a_refused_post_records_nothing_and_the_result_falls_back_to_its_shape(plugin):
    vm = vm_of(plugin)
    refused = post(vm, 404)
    assert refused.trap is None and refused.client.state == "complete"
    assert [k for k in records(vm) if k != b"mcp_toon.legacy.key"] == []
    got = get_stream(vm)
    # No record: the top-level settings, which TOON-encode the table.
    assert result_text(bytes(got.client.body)).startswith("[mcp-toon/v1]")


def slot_of(key: bytes, session: str, call_id: str, lanes: int = 64) -> bytes:
    """crates/engine/src/exchange/session.rs `slot`: the call's lane in its session (an
    integer id counts through `legacy_session_slots`, 64 by default), then
    HMAC-SHA256 under the slot key of session, NUL, lane (8 bytes, little
    endian), NUL; its first 8 bytes, little endian, modulo 4,096."""
    lane = int(call_id) % lanes
    digest = hmac.new(key, session.encode() + b"\0" + lane.to_bytes(8, "little") + b"\0", hashlib.sha256).digest()
    return b"mcp_toon.legacy.%d" % (int.from_bytes(digest[:8], "little") % 4096)


def test_another_sessions_call_cannot_take_a_live_records_slot(plugin):
    vm = vm_of(plugin)
    post(vm, 202)
    key = vm.shared[b"mcp_toon.legacy.key"][0]
    [slot] = [k for k in records(vm) if k != b"mcp_toon.legacy.key"]
    assert slot == slot_of(key, SESSION, "31")
    ours = vm.shared[slot]
    # Only a client that knew the key could aim at the slot; the test does,
    # and sends the same call id in a session that lands on it.
    other = next(f"s{n}" for n in range(1_000_000) if f"s{n}" != SESSION and slot_of(key, f"s{n}", "31") == slot)
    post(vm, 202, session=other)
    assert vm.shared[slot] == ours
    # And the same call again while its record is live: not replaced either.
    post(vm, 202)
    assert vm.shared[slot] == ours
    assert metric(vm, "mcp_toon_passthrough_legacy_slot_busy") == 2
    got = get_stream(vm)
    assert result_text(bytes(got.client.body)) == TABLE_TEXT
