"""Tool results inside event streams, through Envoy (V8) and mcp-toon:

- the demo server in FastMCP's default Streamable HTTP mode (every POST
  answered with `text/event-stream`), called by the official client with a
  progress callback: progress arrives before the result, while the tool is
  still running, and the result arrives as marker + TOON;
- the same server over the 2024-11-05 HTTP+SSE transport with the official
  SSE client: results on the GET stream are encoded, per-tool overrides
  apply (the POST and the GET are paired through proxy-wasm shared data);
- a stream of thousands of events: the plugin's memory does not grow with
  the number of events.

The tools `gated_report` and `progress_flood` are in the demo server's "SSE
modes" block. `gated_report` waits after each progress report until the
test opens that step's gate on the server directly: the test opens it only
once the report came through Envoy, so the tool cannot finish unless each
progress event was released before the tool finished.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
import yaml
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

import harness
from harness import MARKER, Listener, same_json, split_marker, toon_decode

# The two listeners of the streamable-HTTP Envoy: defaults, and one tool off.
# A per-tool override that leaves the tool's results byte-identical.
HANDS_OFF = {"toon": {"mode": "off"}, "clean": {"compact_json": False, "collapse_whitespace": False}}
STREAM_LISTENERS = {
    "sse": {},
    "sse_tuned": {"tools": {"list_users": HANDS_OFF}},
}
LEGACY_CONFIG = {"tools": {"search_orders": HANDS_OFF}}



SSE_EXAMPLE = harness.ROOT / "examples" / "envoy-sse.yaml"


def example_routes() -> list[dict[str, Any]]:
    """The routes examples/envoy-sse.yaml documents for event streams."""
    example = yaml.safe_load(SSE_EXAMPLE.read_text())
    hcm = example["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    return hcm["route_config"]["virtual_hosts"][0]["routes"]


def set_routes(config: dict[str, Any], routes: list[dict[str, Any]]) -> None:
    for listener in config["static_resources"]["listeners"]:
        hcm = listener["filter_chains"][0]["filters"][0]["typed_config"]
        for vhost in hcm["route_config"]["virtual_hosts"]:
            vhost["routes"] = copy.deepcopy(routes)


def sse_routes(config: dict[str, Any]) -> None:
    """Event streams outlive a request timeout: the example's routes
    (`timeout: 0s`) replace the template's (60 s)."""
    set_routes(config, example_routes())


class Server:
    def __init__(self, proc: harness.Proc, port: int):
        self.proc, self.port = proc, port
        self.base = f"http://127.0.0.1:{port}"

    async def open_gate(self, token: str, step: int) -> None:
        async with httpx.AsyncClient() as h:
            r = await h.post(f"{self.base}/demo/gate", params={"token": token, "step": step})
            r.raise_for_status()


def start_server(work_dir: Path, transport: str):
    proc, port = harness.start_demo_server(work_dir, args=("--transport", transport))
    return Server(proc, port)


@pytest.fixture(scope="module")
def sse_server(work_dir: Path):
    server = start_server(work_dir, "sse")
    try:
        yield server
    finally:
        server.proc.stop()


@pytest.fixture(scope="module")
def sse_envoy(sse_server: Server, work_dir: Path):
    listeners = [Listener(name, cfg, allow_on_headers_stop_iteration=False) for name, cfg in STREAM_LISTENERS.items()]
    access_log = work_dir / "sse-access.log"
    e = harness.start_envoy(
        listeners, sse_server.port, work_dir, name="envoy-sse", access_log_path=access_log, tweak=sse_routes
    )
    e.access_log = access_log
    try:
        yield e
    finally:
        e.stop()


@pytest.fixture(scope="module")
def legacy_server(work_dir: Path):
    server = start_server(work_dir, "legacy-sse")
    try:
        yield server
    finally:
        server.proc.stop()


@pytest.fixture(scope="module")
def legacy_envoy(legacy_server: Server, work_dir: Path):
    access_log = work_dir / "legacy-access.log"
    e = harness.start_envoy(
        [Listener("legacy", LEGACY_CONFIG, allow_on_headers_stop_iteration=False)],
        legacy_server.port,
        work_dir,
        name="envoy-legacy",
        access_log_path=access_log,
        tweak=sse_routes,
    )
    e.access_log = access_log
    try:
        yield e
    finally:
        e.stop()


def text_of(result: Any) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text", result.content
    return result.content[0].text


# --- Streamable HTTP with SSE responses -------------------------------------------


async def gated_call(url: str, server: Server, token: str, steps: int, mode: str) -> tuple[list[Any], Any]:
    """Calls `gated_report` through `url`; each progress report, when it
    arrives, is recorded and opens the gate of its step. Returns the arrival
    order and the result."""
    arrivals: list[Any] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        arrivals.append(("progress", int(progress), message))
        await server.open_gate(token, int(progress))

    async with Client(url, mode=mode, cache=None) as client:
        result = await client.call_tool(
            "gated_report", {"token": token, "steps": steps}, progress_callback=on_progress
        )
    arrivals.append(("result",))
    return arrivals, result


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_progress_comes_before_the_result_which_arrives_as_toon(sse_server, sse_envoy, mode):
    steps = 4
    direct_order, direct = anyio.run(gated_call, f"{sse_server.base}/mcp", sse_server, f"d-{mode}", steps, mode)
    order, via = anyio.run(gated_call, sse_envoy.url("sse"), sse_server, f"v-{mode}", steps, mode)

    expected = [("progress", i, f"step {i} of {steps}") for i in range(1, steps + 1)] + [("result",)]
    assert direct_order == expected
    # Each report arrived, in order, before the result; and the tool could
    # only finish after the last report had crossed Envoy (it waits for the
    # gate the callback opens), so none was held until the tool finished.
    assert order == expected
    assert not direct.is_error and not via.is_error, text_of(via)

    original = json.loads(text_of(direct))
    text = text_of(via)
    assert text.startswith(MARKER + "\n"), text[:200]
    assert len(text.encode()) < len(text_of(direct).encode())
    same_json(toon_decode(split_marker(text)), original)


def test_per_tool_override_applies_on_event_streams(sse_server, sse_envoy):
    async def call(url: str) -> str:
        async with Client(url, cache=None) as client:
            return text_of(await client.call_tool("list_users", {}))

    direct = anyio.run(call, f"{sse_server.base}/mcp")
    assert anyio.run(call, sse_envoy.url("sse_tuned")) == direct
    assert anyio.run(call, sse_envoy.url("sse")).startswith(MARKER)


def split_events(raw: bytes) -> list[bytes]:
    """The events of a CRLF-framed stream (what the Python SDK writes), each
    with its blank line."""
    parts = raw.split(b"\r\n\r\n")
    assert parts[-1] == b"", raw[-200:]
    return [p + b"\r\n\r\n" for p in parts[:-1]]


async def raw_gated_call(url: str, server: Server, token: str, steps: int) -> tuple[bytes, list[str]]:
    """One raw `tools/call` of `gated_report` with a progress token. Opens a
    step's gate once its progress event has arrived complete. Returns the
    bytes as they arrived and the kinds of the events in arrival order."""
    message = harness.jsonrpc("tools/call", {"name": "gated_report", "arguments": {"token": token, "steps": steps}}, id=5)
    message["params"]["_meta"]["progressToken"] = "pt-1"
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": harness.PROTOCOL_VERSION,
        "mcp-method": "tools/call",
        "mcp-name": "gated_report",
    }
    raw = b""
    kinds: list[str] = []
    async with httpx.AsyncClient(timeout=60) as h:
        async with h.stream("POST", url, content=json.dumps(message).encode(), headers=headers) as r:
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
            async for chunk in r.aiter_raw():
                raw += chunk
                for event in split_events(raw[: raw.rfind(b"\r\n\r\n") + 4])[len(kinds) :]:
                    data = json.loads(event.split(b"data: ", 1)[1])
                    if data.get("method") == "notifications/progress":
                        kinds.append(f"progress {data['params']['progress']}")
                        await server.open_gate(token, data["params"]["progress"])
                    else:
                        kinds.append(f"response {data.get('id')}")
    return raw, kinds


def test_on_the_wire_only_the_result_event_data_changes(sse_server, sse_envoy):
    steps = 3
    direct, direct_kinds = anyio.run(raw_gated_call, f"{sse_server.base}/mcp", sse_server, "raw-d", steps)
    before = sse_envoy.prometheus()
    via, kinds = anyio.run(raw_gated_call, sse_envoy.url("sse"), sse_server, "raw-v", steps)
    after = sse_envoy.prometheus()

    expected = [f"progress {i}" for i in range(1, steps + 1)] + ["response 5"]
    assert direct_kinds == kinds == expected
    d_events, v_events = split_events(direct), split_events(via)
    assert len(d_events) == len(v_events) == steps + 1
    # Progress notifications: byte-identical, framing included.
    assert v_events[:steps] == d_events[:steps]
    # The result: the same event, one data line with new data.
    d_fields, v_fields = d_events[-1].split(b"\r\n"), v_events[-1].split(b"\r\n")
    assert d_fields[0] == v_fields[0] == b"event: message"
    assert [f[:6] for f in v_fields] == [f[:6] for f in d_fields]
    d_msg, v_msg = json.loads(d_fields[1][6:]), json.loads(v_fields[1][6:])
    d_text = d_msg["result"]["content"][0]["text"]
    v_text = v_msg["result"]["content"][0]["text"]
    v_msg["result"]["content"][0]["text"] = d_text
    assert v_msg == d_msg
    same_json(toon_decode(split_marker(v_text)), json.loads(d_text))

    # Counted like a JSON response: one encoded block, and its bytes from
    # the server's text to the text sent.
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in set(after) | set(before) if k.startswith("mcp_toon_")}
    moved = {k: v for k, v in delta.items() if v and k not in ("mcp_toon_held_bytes_max", "mcp_toon_vm_memory_bytes", "mcp_toon_vm_held_bytes", "mcp_toon_vm_held_bytes_max")}
    assert moved == {
        "mcp_toon_encoded": 1,
        "mcp_toon_cleaned": 1,
        "mcp_toon_clean_compact_json": 1,
        "mcp_toon_bytes_before": len(d_text.encode()),
        "mcp_toon_bytes_after": len(v_text.encode()),
    }, moved


def test_decision_record_names_the_sse_block(sse_server, sse_envoy):
    async def call() -> None:
        async with Client(sse_envoy.url("sse"), cache=None) as client:
            await client.call_tool("search_orders", {"page": 3})

    anyio.run(call)
    for _ in range(50):
        lines = [l for l in sse_envoy.access_log.read_text().splitlines() if '"tool":"search_orders"' in l]
        if lines:
            break
        anyio.run(anyio.sleep, 0.1)
    assert lines, sse_envoy.access_log.read_text()[-2000:]
    record = json.loads(lines[-1].split("mcp_toon=", 1)[1])
    toon = [d for d in record["decisions"] if d["stage"] == "toon"]
    assert toon and toon[-1]["outcome"] == "encoded" and toon[-1]["tool"] == "search_orders"


# --- the 2024-11-05 HTTP+SSE transport --------------------------------------------


async def legacy_calls(url: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async with Client(sse_client(url), mode="legacy", cache=None) as client:
        return [await client.call_tool(name, args) for name, args in calls]


LEGACY_CALLS = [("list_users", {}), ("search_orders", {"page": 2}), ("describe_project", {}), ("list_products", {})]


def test_legacy_transport_encodes_results_on_the_get_stream(legacy_server, legacy_envoy):
    direct = anyio.run(legacy_calls, f"{legacy_server.base}/sse", LEGACY_CALLS)
    before = legacy_envoy.prometheus()
    via = anyio.run(legacy_calls, legacy_envoy.url("legacy", "/sse"), LEGACY_CALLS)
    after = legacy_envoy.prometheus()
    by_tool = dict(zip([name for name, _ in LEGACY_CALLS], zip(direct, via)))

    for tool in ("list_users", "list_products"):
        d, v = by_tool[tool]
        assert text_of(v).startswith(MARKER + "\n"), tool
        same_json(toon_decode(split_marker(text_of(v))), json.loads(text_of(d)))
    # search_orders is tabular too, but its override (mode off) applies: the
    # GET stream knew which tool the id belonged to, from the POST's record
    # in shared data. The shape fallback alone would have encoded it.
    assert text_of(by_tool["search_orders"][1]) == text_of(by_tool["search_orders"][0])
    # Prose: not JSON, so neither compacted nor encoded; by default no
    # transform changes its characters.
    prose_direct, prose_via = (text_of(r) for r in by_tool["describe_project"])
    assert prose_via == prose_direct

    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after if k.startswith("mcp_toon_")}
    assert delta["mcp_toon_encoded"] == 2
    assert delta["mcp_toon_passthrough_mode_off"] == 1
    assert delta["mcp_toon_passthrough_not_json"] == 1
    # The 202 answers to the POSTs are not counted: their results are.
    assert delta.get("mcp_toon_passthrough_not_json_response", 0) == 0


def test_legacy_results_are_counted_while_the_stream_stays_open(legacy_server, legacy_envoy):
    """A 2024-11-05 GET stream lives as long as the session: its results
    are counted as they pass, not when it closes."""

    async def session() -> tuple[float, float]:
        before = legacy_envoy.prometheus().get("mcp_toon_encoded", 0)
        async with Client(sse_client(legacy_envoy.url("legacy", "/sse")), mode="legacy", cache=None) as client:
            await client.call_tool("list_users", {})
            during = legacy_envoy.prometheus().get("mcp_toon_encoded", 0)
        return before, during

    before, during = anyio.run(session)
    assert during == before + 1


async def raw_legacy_session(base: str, calls: list[tuple[str, dict[str, Any]]]) -> list[bytes]:
    """A raw 2024-11-05 session: GET /sse, then initialize, initialized and
    one tools/call per entry POSTed to the endpoint the stream names. Returns
    the GET stream's events (LF or CRLF framed as the server wrote them)."""
    events: list[bytes] = []
    buffer = b""
    async with httpx.AsyncClient(timeout=60) as h:
        async with h.stream("GET", f"{base}/sse", headers={"accept": "text/event-stream"}) as stream:
            chunks = stream.aiter_raw()

            async def next_event() -> bytes:
                nonlocal buffer
                while True:
                    m = re.search(rb"\r\n\r\n|\n\n|\r\r", buffer)
                    if m:
                        event, buffer = buffer[: m.end()], buffer[m.end() :]
                        if event.startswith(b":"):  # a keep-alive comment
                            continue
                        events.append(event)
                        return event
                    buffer += await chunks.__anext__()

            endpoint = (await next_event()).split(b"data: ", 1)[1].strip().decode()
            post = lambda m: h.post(f"{base}{endpoint}", json=m)  # noqa: E731
            init = {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
            }
            assert (await post(init)).status_code == 202
            await next_event()
            assert (await post({"jsonrpc": "2.0", "method": "notifications/initialized"})).status_code == 202
            for i, (name, args) in enumerate(calls, start=1):
                call = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": args}}
                assert (await post(call)).status_code == 202
                await next_event()
    return events


def test_legacy_stream_bytes_outside_results_are_unchanged(legacy_server, legacy_envoy):
    calls = [("list_users", {"count": 12}), ("describe_project", {})]
    direct = anyio.run(raw_legacy_session, legacy_server.base, calls)
    via = anyio.run(raw_legacy_session, legacy_envoy.url("legacy", ""), calls)
    assert len(direct) == len(via) == 4
    session = lambda e: re.sub(rb"session_id=[0-9a-f]+", b"session_id=S", e)  # noqa: E731
    # endpoint, initialize result, the prose describe_project result (no
    # default transform changes text): as sent.
    assert session(via[0]) == session(direct[0])
    assert via[1] == direct[1]
    assert via[3] == direct[3]
    # The table: the same event with new data.
    d_event, v_event = direct[2], via[2]
    assert v_event != d_event
    d_lines, v_lines = d_event.splitlines(keepends=True), v_event.splitlines(keepends=True)
    assert [l[:6] for l in v_lines] == [l[:6] for l in d_lines]
    d_msg = json.loads(d_event.split(b"data: ", 1)[1])
    v_msg = json.loads(v_event.split(b"data: ", 1)[1])
    v_text = v_msg["result"]["content"][0]["text"]
    same_json(toon_decode(split_marker(v_text)), json.loads(d_msg["result"]["content"][0]["text"]))
    v_msg["result"]["content"][0]["text"] = d_msg["result"]["content"][0]["text"]
    assert v_msg == d_msg


@pytest.mark.parametrize("routes", ["1s timeout", "example"])
def test_legacy_get_stream_outlives_the_route_only_with_timeout_0s(legacy_server, work_dir, routes):
    """Pins why examples/envoy-sse.yaml sets `timeout: 0s`: with a route
    timeout, Envoy cuts the long-lived GET stream once it passes, and the
    session's next call never gets its answer."""

    def tweak(config: dict[str, Any]) -> None:
        if routes == "example":
            sse_routes(config)
        else:
            set_routes(config, [{"match": {"prefix": "/"}, "route": {"cluster": "mcp_upstream", "timeout": "1s"}}])

    e = harness.start_envoy(
        [Listener("timeouts", {}, allow_on_headers_stop_iteration=False)],
        legacy_server.port,
        work_dir,
        name=f"envoy-timeouts-{routes.replace(' ', '-')}",
        tweak=tweak,
    )
    outcome: list[str] = []

    async def session() -> None:
        async with Client(sse_client(e.url("timeouts", "/sse")), mode="legacy", cache=None) as client:
            outcome.append(text_of(await client.call_tool("list_users", {}))[:13])
            # Past the 1 s route timeout (no duration is asserted).
            await anyio.sleep(2.5)
            with anyio.fail_after(20):
                outcome.append(text_of(await client.call_tool("list_users", {}))[:13])

    try:
        try:
            anyio.run(session)
        except Exception as err:  # the cut stream surfaces as a closed connection
            outcome.append(f"failed: {type(err).__name__}")
    finally:
        e.stop()

    assert outcome[0] == "[mcp-toon/v1]"
    if routes == "example":
        assert outcome == ["[mcp-toon/v1]", "[mcp-toon/v1]"]
    else:
        assert len(outcome) == 2 and outcome[1].startswith("failed"), outcome


# --- bounded memory on long streams ----------------------------------------------------


def test_long_stream_memory_does_not_grow_with_the_number_of_events(sse_server, work_dir):
    """progress_flood sends `count` progress events, then a table. The
    plugin's VM memory (its wasm linear memory, which only ever grows) and
    the most bytes one stream held are read from the plugin's gauges after
    a warm-up and runs of N, 10N and 10N events: neither may grow with the
    number of events."""
    e = harness.start_envoy(
        [Listener("flood", {}, allow_on_headers_stop_iteration=False)],
        sse_server.port,
        work_dir,
        name="envoy-flood",
        tweak=sse_routes,
    )

    def flood(count: int) -> tuple[int, float, float]:
        seen = [0]

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen[0] += 1

        async def run() -> Any:
            # The server cuts every write in 40-byte pieces: most callbacks
            # end inside an event, which the plugin must hold.
            async with httpx2.AsyncClient(headers={"x-demo-split": "40"}, timeout=120) as http:
                transport = streamable_http_client(e.url("flood"), http_client=http)
                async with Client(transport, cache=None) as client:
                    return await client.call_tool("progress_flood", {"count": count}, progress_callback=on_progress)

        result = anyio.run(run)
        assert text_of(result).startswith(MARKER)
        stats = e.prometheus()
        return seen[0], stats["mcp_toon_vm_memory_bytes"], stats["mcp_toon_held_bytes_max"]

    async def direct_table() -> str:
        async with Client(f"{sse_server.base}/mcp", cache=None) as client:
            return text_of(await client.call_tool("progress_flood", {"count": 1}))

    # The largest event of the stream: the result, its text escaped in JSON.
    largest_event = len(json.dumps(anyio.run(direct_table)).encode()) + 512

    try:
        n = 1000
        # Warm-up as long as the longest run: the allocator settles on the
        # working set of the largest reads Envoy may coalesce (under load
        # many 40-byte writes arrive as one read), so what grows afterwards
        # grows with the number of events. A leak grows here and again below.
        _, memory_warm, _ = flood(10 * n)
        seen_n, memory_n, held_n = flood(n)
        seen_10n, memory_10n, held_10n = flood(10 * n)
        seen_again, memory_again, _ = flood(10 * n)
        encoded = e.prometheus()["mcp_toon_encoded"]
    finally:
        e.stop()

    assert (seen_n, seen_10n, seen_again) == (n, 10 * n, 10 * n)
    assert encoded == 4
    # 21,000 events after the warm-up; two 64 KiB pages of slack (the
    # allocator may settle once more when Envoy coalesces the reads of a
    # loaded machine differently) are under 7 bytes an event: a leak of a
    # few bytes an event grows past them.
    assert memory_again - memory_warm <= 2 * 65536, (memory_warm, memory_n, memory_10n, memory_again)
    # What a stream held between callbacks: at most one incomplete event
    # (how much of one depends on where Envoy's reads cut the stream).
    assert 0 < held_n <= held_10n <= largest_event, (held_n, held_10n, largest_event)
    print(f"memory {memory_warm:.0f} -> {memory_n:.0f} -> {memory_10n:.0f} -> {memory_again:.0f} bytes; held at most {held_n:.0f} -> {held_10n:.0f} bytes")
