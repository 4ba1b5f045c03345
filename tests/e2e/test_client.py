"""The official MCP client (PyPI `mcp`) calling the demo server through Envoy
(V8) and mcp-toon: what an agent actually receives."""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable

import anyio
import pytest
from mcp import Client

import harness
from harness import MARKER, same_json, split_marker, toon_decode


def with_client(url: str, fn: Callable[[Client], Awaitable[Any]], mode: str = "auto") -> Any:
    """Runs `fn` with an official client connected to `url` (no response
    cache, so every call crosses the wire)."""

    async def main() -> Any:
        async with Client(url, mode=mode, cache=None) as client:
            return await fn(client)

    return anyio.run(main)


def text_of(result: Any) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text", result.content
    return result.content[0].text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("listener", ["held", "plain"])
@pytest.mark.parametrize(
    "tool,args",
    [("list_users", {}), ("search_orders", {"page": 2}), ("station_readings", {"hours": 8})],
)
def test_tabular_result_arrives_as_marker_and_toon(demo, envoy, listener, mode, tool, args):
    direct = with_client(demo.url, lambda c: c.call_tool(tool, args), mode)
    via = with_client(envoy.url(listener), lambda c: c.call_tool(tool, args), mode)

    original = json.loads(text_of(direct))
    text = text_of(via)
    assert text.startswith(MARKER + "\n"), text[:200]
    assert len(text.encode()) < len(text_of(direct).encode())
    # The reference TypeScript decoder, not the crate the plugin uses.
    same_json(toon_decode(split_marker(text)), original)
    # Everything else about the result is the server's.
    assert via.is_error is False
    assert via.structured_content == direct.structured_content


def test_structured_content_and_output_schema_validation_survive(demo, envoy):
    async def calls(client: Client) -> dict[str, Any]:
        weather = await client.call_tool("weather_report", {"city": "Osaka"})
        readings = await client.call_tool("station_readings", {"hours": 12})
        # call_tool validated structuredContent against the outputSchema;
        # validate again explicitly so a silent skip cannot hide a failure.
        for name, result in (("weather_report", weather), ("station_readings", readings)):
            await client.session.validate_tool_result(name, result)
        tools = await client.list_tools()
        return {"weather": weather, "readings": readings, "tools": tools}

    direct = with_client(demo.url, calls)
    via = with_client(envoy.url("held"), calls)

    schemas = {t.name: t.output_schema for t in via["tools"].tools}
    assert schemas["weather_report"] and schemas["station_readings"]
    # A small non-tabular structured result: untouched.
    assert via["weather"].structured_content == direct["weather"].structured_content
    assert text_of(via["weather"]) == text_of(direct["weather"])
    # A tabular one: its text block is encoded, its structuredContent is not.
    assert text_of(via["readings"]).startswith(MARKER)
    assert via["readings"].structured_content == direct["readings"].structured_content
    same_json(toon_decode(split_marker(text_of(via["readings"]))), via["readings"].structured_content)


def test_is_error_result_reaches_the_client_unchanged(demo, envoy):
    direct = with_client(demo.url, lambda c: c.call_tool("failing_lookup", {}))
    via = with_client(envoy.url("held"), lambda c: c.call_tool("failing_lookup", {}))
    assert direct.is_error and via.is_error
    # Its text is a 30-row table that would be encoded were it not an error.
    assert len(json.loads(text_of(direct))) == 30
    assert text_of(via) == text_of(direct)


def test_non_tabular_results_reach_the_client_unchanged(demo, envoy):
    for tool in ("get_config", "describe_project"):
        direct = with_client(demo.url, lambda c: c.call_tool(tool, {}))
        via = with_client(envoy.url("held"), lambda c: c.call_tool(tool, {}))
        assert text_of(via) == text_of(direct), tool


def test_annotate_tools_adds_the_hint_to_listed_descriptions(demo, envoy):
    direct = with_client(demo.url, lambda c: c.list_tools())
    tuned = with_client(envoy.url("tuned"), lambda c: c.list_tools())
    held = with_client(envoy.url("held"), lambda c: c.list_tools())

    hint = " Results of this tool may arrive as TOON"
    before = {t.name: t for t in direct.tools}
    assert [t.name for t in tuned.tools] == list(before)
    for tool in tuned.tools:
        original = before[tool.name]
        if tool.name == "list_products":  # toon.mode off for this tool: no hint
            assert tool.description == original.description
        else:
            assert tool.description.startswith(original.description + hint), tool.description
            assert "[mcp-toon/v1]" in tool.description
        assert tool.input_schema == original.input_schema
        assert tool.output_schema == original.output_schema
    # annotate_tools is off by default: the listing is the server's.
    assert [t.description for t in held.tools] == [t.description for t in direct.tools]


def test_per_tool_mode_off_leaves_that_tool_alone(demo, envoy):
    direct = harness.call_tool(demo.url, "list_products")
    off = harness.call_tool(envoy.url("tuned"), "list_products")
    on = harness.call_tool(envoy.url("held"), "list_products")
    assert off.content == direct.content
    # The same tool is encoded where no override applies.
    assert MARKER in on.json()["result"]["content"][0]["text"]
    # And the override touches that tool only.
    other = harness.call_tool(envoy.url("tuned"), "list_users").json()
    assert other["result"]["content"][0]["text"].startswith(MARKER)
