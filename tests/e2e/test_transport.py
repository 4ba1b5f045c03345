"""HTTP-level behaviour through Envoy: response framing with and without held
headers, large bodies under Envoy's default buffer limits, compressed
bodies, accept-encoding, large requests. Raw bodies are compared byte for
byte with what the server sends directly."""

from __future__ import annotations

import gzip
import hashlib
import json
import re

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import harness
from harness import MARKER, call_tool, same_json, split_marker, toon_decode

BOTH = pytest.mark.parametrize("listener", ["held", "plain"])


def first_text(response) -> str:
    return response.json()["result"]["content"][0]["text"]


def test_held_headers_give_an_exact_length_and_a_summary(demo, envoy):
    direct = call_tool(demo.url, "list_users")
    via = call_tool(envoy.url("held"), "list_users")
    assert via.status_code == 200
    assert via.headers["content-length"] == str(len(via.content))
    assert "transfer-encoding" not in via.headers
    summary = re.fullmatch(r"encoded=1 bytes=(\d+)->(\d+)", via.headers["x-mcp-toon"])
    assert summary, via.headers["x-mcp-toon"]
    assert int(summary[1]) == len(first_text(direct).encode())
    assert int(summary[2]) == len(first_text(via).encode())
    # Only that string changed: the rest of the message is the server's.
    before, after = direct.json(), via.json()
    after["result"]["content"][0]["text"] = before["result"]["content"][0]["text"]
    assert after == before


def test_without_held_headers_the_rewritten_body_goes_chunked(demo, envoy):
    held = call_tool(envoy.url("held"), "list_users")
    plain = call_tool(envoy.url("plain"), "list_users")
    assert "content-length" not in plain.headers
    assert plain.headers["transfer-encoding"] == "chunked"
    assert "x-mcp-toon" not in plain.headers
    assert plain.content == held.content
    assert first_text(plain).startswith(MARKER)


def test_held_passthrough_keeps_the_server_length_and_reports(demo, envoy):
    direct = call_tool(demo.url, "describe_project")
    via = call_tool(envoy.url("held"), "describe_project")
    assert via.content == direct.content
    assert via.headers["content-length"] == direct.headers["content-length"]
    assert via.headers["x-mcp-toon"] == "encoded=0 passthrough=not_json:1"


@BOTH
def test_upstream_without_content_length_is_still_rewritten(demo, envoy, listener):
    chunked = {"x-demo-chunked": "1000"}
    direct = call_tool(demo.url, "list_users", headers=chunked)
    assert "content-length" not in direct.headers
    via = call_tool(envoy.url(listener), "list_users", headers=chunked)
    assert via.status_code == 200 and "content-length" not in via.headers
    same_json(toon_decode(split_marker(first_text(via))), json.loads(first_text(direct)))


@BOTH
@pytest.mark.parametrize("chunk", [None, "65536"])
def test_3mb_result_arrives_complete_with_default_buffer_limits(demo, envoy, listener, chunk):
    """Envoy's default per_connection_buffer_limit_bytes is 1 MiB; a plugin
    that let Envoy buffer the body would get the stream reset here. The
    3 MB table is within max_response_bytes (16 MiB): it is read and
    encoded, and goes out in the body callback that completed it."""
    headers = {"x-demo-chunked": chunk} if chunk else {}
    before = envoy.prometheus()
    direct = call_tool(demo.url, "export_logs", {"megabytes": 3}, headers=headers)
    assert len(direct.content) > 3_000_000
    via = call_tool(envoy.url(listener), "export_logs", {"megabytes": 3}, headers=headers, timeout=120)
    assert via.status_code == 200
    text = first_text(via)
    assert text.startswith(MARKER)
    same_json(toon_decode(split_marker(text)), json.loads(first_text(direct)))
    assert len(via.content) < len(direct.content)
    # Headers are never held for a body longer than max_body_bytes.
    assert "x-mcp-toon" not in via.headers
    after = envoy.prometheus()
    assert after["mcp_toon_encoded"] == before["mcp_toon_encoded"] + 1
    assert after["mcp_toon_passthrough_response_too_large"] == before["mcp_toon_passthrough_response_too_large"]


def test_3mb_result_through_the_official_client(demo, envoy):
    async def call(url: str) -> str:
        async with Client(url, cache=None) as client:
            result = await client.call_tool("export_logs", {"megabytes": 3})
            return result.content[0].text

    via, direct = anyio.run(call, envoy.url("held")), anyio.run(call, demo.url)
    assert via.startswith(MARKER)
    same_json(toon_decode(split_marker(via)), json.loads(direct))


@BOTH
def test_result_just_under_max_body_bytes_is_buffered_whole_and_encoded(demo, envoy, listener):
    direct = call_tool(demo.url, "export_logs", {"megabytes": 0.85})
    assert 900_000 < len(direct.content) <= 1_048_576
    via = call_tool(envoy.url(listener), "export_logs", {"megabytes": 0.85})
    text = first_text(via)
    assert text.startswith(MARKER)
    same_json(toon_decode(split_marker(text)), json.loads(first_text(direct)))


@BOTH
def test_gzip_compressed_result_passes_intact(demo, envoy, listener):
    force = {"x-demo-force-gzip": "1"}
    direct = call_tool(demo.url, "list_users", headers=force)
    assert direct.headers["content-encoding"] == "gzip"
    via = call_tool(envoy.url(listener), "list_users", headers=force)
    assert via.status_code == 200
    assert via.headers["content-encoding"] == "gzip"
    assert via.content == direct.content
    # The compressed body is the server's JSON, not TOON.
    message = json.loads(gzip.decompress(via.content))
    assert json.loads(message["result"]["content"][0]["text"])[0]["id"] == 1


def test_gzip_compressed_result_through_the_official_client(demo, envoy):
    async def call(url: str) -> str:
        async with httpx2.AsyncClient(headers={"x-demo-force-gzip": "1"}, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http), cache=None) as client:
                result = await client.call_tool("list_users", {})
                return result.content[0].text

    via = anyio.run(call, envoy.url("held"))
    assert not via.startswith(MARKER)
    assert via == anyio.run(call, demo.url)


def test_accept_encoding_is_stripped_unless_configured_off(demo, envoy):
    negotiate = {"x-demo-gzip-if-accepted": "1", "accept-encoding": "gzip"}
    direct = call_tool(demo.url, "list_users", headers=negotiate)
    assert direct.headers["content-encoding"] == "gzip"
    # Default: the plugin removes accept-encoding, the server answers plain
    # JSON, and the result is encoded.
    stripped = call_tool(envoy.url("held"), "list_users", headers=negotiate)
    assert "content-encoding" not in stripped.headers
    assert first_text(stripped).startswith(MARKER)
    # strip_accept_encoding false: the server compresses, the body passes.
    kept = call_tool(envoy.url("tuned"), "list_users", headers=negotiate)
    assert kept.headers["content-encoding"] == "gzip"
    assert kept.content == direct.content


def test_large_request_reaches_the_server_intact(demo, envoy):
    text = "".join(f"{i:07d}," for i in range(250_000))  # 2 MB, past max_body_bytes
    before = envoy.prometheus()
    via = call_tool(envoy.url("held"), "echo_digest", {"text": text})
    after = envoy.prometheus()
    assert via.status_code == 200
    echo = json.loads(first_text(via))
    assert echo == {"length": len(text), "sha256": hashlib.sha256(text.encode()).hexdigest()}
    assert after["mcp_toon_passthrough_request_too_large"] - before["mcp_toon_passthrough_request_too_large"] == 1


def test_other_traffic_is_untouched(demo, envoy):
    """Requests that are not JSON-RPC POSTs pass through as they are."""
    requests = [
        ("GET", "/nothing-here", {}, None),
        ("GET", "/mcp", {"accept": "application/json"}, None),  # 406 with a JSON-RPC error
        ("DELETE", "/mcp", {}, None),
        ("POST", "/mcp", {"content-type": "text/plain", "accept": "application/json, text/event-stream"}, b"hello"),
    ]
    for method, path, headers, body in requests:
        direct = httpx2.request(method, f"http://127.0.0.1:{demo.port}{path}", headers=headers, content=body, timeout=10)
        for listener in ("held", "plain"):
            via = httpx2.request(method, envoy.url(listener, path), headers=headers, content=body, timeout=10)
            assert via.status_code == direct.status_code, (method, path)
            assert via.content == direct.content, (method, path)
            assert "x-mcp-toon" not in via.headers


def test_server_responses_are_deterministic(demo):
    """The byte-for-byte comparisons above assume the server answers the
    same request with the same bytes."""
    for tool in ("list_users", "get_config", "failing_lookup"):
        assert call_tool(demo.url, tool).content == call_tool(demo.url, tool).content
    assert harness.post(demo.url, harness.jsonrpc("tools/list")).content == harness.post(demo.url, harness.jsonrpc("tools/list")).content


def test_server_entries_match_route_cluster_and_authority(demo, envoy):
    url = envoy.url("servers")
    # route "mcp" + cluster "mcp_upstream": that entry's per-tool override.
    assert call_tool(url, "list_users").headers["x-mcp-toon"] == "encoded=0 passthrough=mode_off:1"
    assert first_text(call_tool(url, "search_orders")).startswith(MARKER)
    # An :authority match comes first and turns everything off: its
    # streams pass at their request headers, unread (no summary header),
    # counted `policy_off`.
    before = envoy.prometheus().get("mcp_toon_passthrough_policy_off", 0)
    quiet = call_tool(url.replace("127.0.0.1", "localhost"), "search_orders")
    assert "x-mcp-toon" not in quiet.headers
    assert quiet.content == call_tool(demo.url, "search_orders").content
    assert envoy.prometheus()["mcp_toon_passthrough_policy_off"] == before + 1


def test_hold_headers_without_envoy_support_stalls_the_stream(demo, envoy):
    """Why hold_headers is a setting: without allow_on_headers_stop_iteration,
    Envoy turns the paused headers callback into StopAllIterationAndWatermark
    and never calls the body callback, so the response never completes. A
    plugin cannot read that Envoy setting; the operator states it."""
    with pytest.raises(httpx.ReadTimeout):
        call_tool(envoy.url("mismatch"), "list_users", timeout=2.0)
    # The same configuration is fine for responses it does not buffer.
    assert call_tool(envoy.url("mismatch"), "list_users", headers={"x-demo-force-gzip": "1"}).status_code == 200
