"""Through Traefik, what others wrote: the example configuration as it is,
the official SDK clients of both MCP revisions, the real-server tier's
servers, a server answering on event streams, and the official conformance
suite with and without the plugin. Where the Envoy suite has the same case,
the bytes through Traefik are the bytes through Envoy."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

import harness
import peers
import workspace
from conftest import CLEAN_OFF
from harness import MARKER, call_tool
from test_client import text_of, with_client
from test_conformance import RETRIES, VERSIONS, passed, raced, reference_servers, run_suite, scenarios_passing  # noqa: F401 (fixture)
from test_real_servers import SERVERS, servers, wire  # noqa: F401 (fixture)

EXAMPLES = harness.ROOT / "examples" / "traefik"


def test_the_example_configuration_runs_as_written(demo, work_dir):
    """examples/traefik/ with its ports changed: a tool result shrinks."""
    home = work_dir / "traefik-example"
    plugin = home / "plugins-local" / "src" / "mcp-toon"
    plugin.mkdir(parents=True)
    for f in (".traefik.yml", "plugin.wasm"):
        (plugin / f).write_bytes((harness.TRAEFIK_PLUGIN / f).read_bytes())
    port = harness.free_port()
    static = yaml.safe_load((EXAMPLES / "static.yml").read_text())
    static["entryPoints"]["web"]["address"] = f"127.0.0.1:{port}"
    static["providers"]["file"]["filename"] = str(home / "dynamic.yml")
    dynamic = (EXAMPLES / "dynamic.yml").read_text().replace("127.0.0.1:8931", f"127.0.0.1:{demo.port}")
    assert dynamic != (EXAMPLES / "dynamic.yml").read_text()
    (home / "static.yml").write_text(yaml.safe_dump(static))
    (home / "dynamic.yml").write_text(dynamic)
    proc = harness.Proc("traefik-example", [str(harness.TRAEFIK), f"--configFile={home / 'static.yml'}"], work_dir / "traefik-example.log", cwd=home)
    try:
        harness.wait_for_port(port, proc, timeout=60)
        url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(300):
            r = call_tool(url, "list_users")
            if r.status_code == 200:
                break
            time.sleep(0.1)
        direct = call_tool(demo.url, "list_users")
        assert r.status_code == 200 and len(r.content) < len(direct.content) / 2
        assert r.headers["x-mcp-toon"].startswith("cleaned=1 encoded=1")
        assert "mcp-toon: configuration accepted" in proc.log()
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def traefik(demo, work_dir):
    # The shared Envoy's `held` listener (conftest.py): lossy clean off.
    t = harness.start_traefik({"held": {"clean": CLEAN_OFF, "hold_headers": True}, "bare": None}, demo.port, work_dir, name="traefik-peers")
    try:
        yield t
    finally:
        t.stop()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("tool,args", [("list_users", {}), ("station_readings", {"hours": 8}), ("failing_lookup", {})])
def test_the_python_sdk_of_both_revisions_reads_what_envoy_gives(demo, envoy, traefik, mode, tool, args):
    """mcp 2.3's client: 2026-07-28 (`auto`) and 2025-11-25 (`legacy`)."""
    via_traefik = with_client(traefik.url("held"), lambda c: c.call_tool(tool, args), mode)
    via_envoy = with_client(envoy.url("held"), lambda c: c.call_tool(tool, args), mode)
    assert text_of(via_traefik) == text_of(via_envoy)
    assert via_traefik.structured_content == via_envoy.structured_content
    assert via_traefik.is_error == via_envoy.is_error


def test_the_typescript_sdk_reads_what_envoy_gives(demo, envoy, traefik):
    calls = [{"name": "list_users", "arguments": {}}, {"name": "get_config", "arguments": {}}, {"name": "describe_project", "arguments": {}}]
    via_traefik = peers.ts_calls(traefik.url("held"), calls)
    via_envoy = peers.ts_calls(envoy.url("held"), calls)
    assert [c["result"] for c in via_traefik["calls"]] == [c["result"] for c in via_envoy["calls"]]
    assert via_traefik["calls"][0]["result"]["content"][0]["text"].startswith(MARKER)


# --- event streams ---------------------------------------------------------------


@pytest.fixture(scope="module")
def sse_pair(work_dir):
    """The demo server answering on event streams, behind a Traefik and an
    Envoy with the same configuration."""
    proc, port = harness.start_demo_server(work_dir, args=("--transport", "sse"))
    cfg = {"hold_headers": True}
    e = peers.start_envoy_for({"sse": (port, cfg)}, work_dir, "envoy-traefik-sse")
    t = harness.start_traefik({"sse": cfg, "bare": None}, port, work_dir, name="traefik-sse")
    try:
        yield port, e, t
    finally:
        t.stop()
        e.stop()
        proc.stop()


SSE_CALLS = [("list_users", {}), ("get_config", {}), ("describe_project", {}), ("failing_lookup", {}), ("export_logs", {"megabytes": 0.5})]
REVISION = "2025-11-25"


def sse_session(url: str) -> list[bytes]:
    """A 2025-11-25 session by hand (initialize, initialized, the calls):
    each call's event stream as it crossed the wire."""
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": REVISION, "capabilities": {}, "clientInfo": {"name": "mcp-toon-e2e", "version": "1"}}}
    out = []
    with httpx.Client(timeout=60) as c:
        r = c.post(url, json=init, headers=base)
        assert r.status_code == 200, r.text
        h = {**base, "mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": REVISION}
        c.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h)
        for i, (tool, args) in enumerate(SSE_CALLS, start=1):
            call = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": args}}
            with c.stream("POST", url, json=call, headers=h) as r:
                assert r.headers["content-type"].startswith("text/event-stream"), r.headers
                out.append(b"".join(r.iter_raw()))
    return out


def test_event_stream_results_are_the_envoy_plugins(sse_pair):
    """A stateful server answering every POST with an event stream: each
    call's stream through Traefik is the stream through Envoy, byte for
    byte."""
    port, e, t = sse_pair
    via_envoy = sse_session(e.url("sse"))
    via_traefik = sse_session(t.url("sse"))
    for (tool, _), a, b in zip(SSE_CALLS, via_envoy, via_traefik, strict=True):
        assert b == a, tool
    assert MARKER.encode() in via_traefik[0]


# --- the real-server tier ------------------------------------------------------------


@pytest.fixture(scope="module")
def real_pair(servers, work_dir):  # noqa: F811 (the imported fixture)
    """One Traefik router and one Envoy listener per real server, defaults."""
    listeners = {n: (b.port, {}) for n, b in servers.bridged.items()}
    e = peers.start_envoy_for(listeners, work_dir, "envoy-traefik-real")
    routers = {n: {} for n in servers.bridged}
    first = next(iter(servers.bridged.values())).port
    t = harness.start_traefik(routers, first, work_dir, name="traefik-real", upstreams={n: b.port for n, b in servers.bridged.items()})
    try:
        yield e, t
    finally:
        t.stop()
        e.stop()


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("client", list(peers.CLIENTS))
def test_real_servers_results_are_the_envoy_plugins(servers, real_pair, client, server):  # noqa: F811
    e, t = real_pair
    calls = servers.plans()[server]
    run = peers.CLIENTS[client]
    via_envoy = run(e.url(server), calls)
    via_traefik = run(t.url(server), calls)
    assert via_traefik["protocolVersion"] == via_envoy["protocolVersion"]
    for call, a, b in zip(calls, via_envoy["calls"], via_traefik["calls"], strict=True):
        assert "body" in a and "body" in b, (call, a, b)
        assert wire(b, server) == wire(a, server), call["name"]


# --- the conformance suite -----------------------------------------------------------


# The reference servers' tools that, during their call, send the client a
# request on the call's own event stream (sampling, elicitation: the
# 0.2.0-alpha.11 server's `sendRequest`). Traefik releases a buffered
# stream only at its end, and the call ends only once the client answered:
# at the defaults these four scenarios time out through the plugin (measured:
# `MCP error -32001: Request timed out` after 60 s, nowhere else). The
# operator's remedy (docs/traefik.md): a policy that changes
# nothing for such tools, whose answers the plugin then does not buffer.
ASKS_THE_CLIENT = ["test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"]
CHANGES_NOTHING = {"toon": {"mode": "off"}, "clean": {"compact_json": False}}
PLUGIN = {"tools": {tool: CHANGES_NOTHING for tool in ASKS_THE_CLIENT}}


@pytest.fixture(scope="module")
def conformance_traefik(reference_servers, work_dir):  # noqa: F811
    routers: dict[str, Any] = {}
    upstreams: dict[str, int] = {}
    for version, server in reference_servers.items():
        for path, cfg in (("bare", None), ("defaults", PLUGIN)):
            routers[f"{path}-{version}"] = cfg
            upstreams[f"{path}-{version}"] = server.port
    first = next(iter(upstreams.values()))
    t = harness.start_traefik(routers, first, work_dir, name="traefik-conformance", upstreams=upstreams)
    try:
        yield t
    finally:
        t.stop()


@pytest.mark.parametrize("version", VERSIONS)
def test_no_conformance_check_fails_only_with_the_plugin(reference_servers, conformance_traefik, work_dir, version):  # noqa: F811
    """One round of the whole suite through Traefik alone and through
    Traefik with the plugin at its defaults (the tools that ask the client
    something mid-call left unbuffered, above): every check that passes
    through Traefik alone passes with the plugin."""
    base = work_dir / "conformance-traefik" / version
    server = reference_servers[version]
    bare = run_suite(version, conformance_traefik.url(f"bare-{version}"), base / "bare")
    lost_before = server.lost_requests()
    plugin = run_suite(version, conformance_traefik.url(f"defaults-{version}"), base / "defaults")
    lost_requests = server.lost_requests() - lost_before
    bad = (passed(bare) - passed(plugin)) | {
        k for k, c in plugin.items() if c["status"] == "FAILURE" and k[0] in scenarios_passing(bare)
    }
    print(f"traefik_conformance {json.dumps({'version': version, 'bare_passed': len(passed(bare)), 'plugin_passed': len(passed(plugin)), 'checks': len(bare)})}")
    problems: dict[str, list[Any]] = {}
    for scenario in sorted({k[0] for k in bad}):
        keys = sorted(k for k in bad if k[0] == scenario)
        failing = [plugin.get(k, {"status": "MISSING", "errorMessage": "not run"}) for k in keys]
        # The 0.1.16 reference server's GET-stream race (test_conformance:
        # a request sent before the client's GET stream opened is lost; it
        # hits Traefik alone too, measured in CI: tools-call-sampling timed
        # out through bare Traefik, tools-call-elicitation with the plugin,
        # in the same session). Counted only when the server's trace shows a
        # lost request, and then only if the scenario passes run again.
        if raced(version, scenario, failing) and lost_requests > 0:
            wanted = {k for k in passed(bare) if k[0] == scenario}
            again = (
                run_suite(version, conformance_traefik.url(f"defaults-{version}"), base / f"defaults-retry-{scenario}-{i}", scenario)
                for i in range(1, RETRIES + 1)
            )
            if any(wanted <= passed(a) and scenario in scenarios_passing(a) for a in again):
                continue
        problems[scenario] = failing
    assert not problems, problems
