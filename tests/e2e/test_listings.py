"""Tool listings that fit (`listings`, docs/listings.md, issue 41) through
the real Envoy (V8), on real MCP servers this project did not write (npm
`@modelcontextprotocol/server-filesystem` and `server-memory`, PyPI
`mcp-server-git` and `mcp-server-time`, bridged to Streamable HTTP by
supergateway: MCP 2025-11-25) and on the demo server (FastMCP, mcp 2.x: MCP
2026-07-28), with the official TypeScript client (listing_client.mjs) and
the official Python client, as an agent would use them:

- compact: the listing names every tool the server has, plus
  `mcp_toon_describe`, and is smaller; the describe tool gives back each
  tool's definition exactly as the server sent it; every call of the
  server's plan, made by name, answers as it does without the listing
  change (`peers.compare`: identical, compact JSON or TOON);
- disclose: the listing is the hot tools and the three added ones; a search
  finds a tool the listing left out, and `mcp_toon_call_tool` runs it: the
  server sees the real call, and its result meets every stage (TOON where
  it pays).

With `LISTINGS_CAPTURE=<file>` the listings as sent and as each mode left
them are written there (BENCHMARKS.md "Tool listings through Envoy" counts
their tokens).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import harness
import peers
import workspace
from harness import MARKER

SERVERS = ["filesystem", "git", "memory", "time"]
ADDED = ["mcp_toon_search_tools", "mcp_toon_call_tool", "mcp_toon_describe"]
HOT = {
    "filesystem": ["read_text_file", "list_directory", "edit_file"],
    "git": ["git_status", "git_diff_unstaged", "git_commit"],
    "memory": ["read_graph", "search_nodes", "open_nodes"],
    "time": ["get_current_time"],
    "demo": ["get_config"],
}
CAPTURED: dict[str, dict[str, Any]] = {}


def compact_config() -> dict[str, Any]:
    return {"hold_headers": True, "listings": {"mode": "compact"}}


def disclose_config(hot: list[str]) -> dict[str, Any]:
    return {"hold_headers": True, "listings": {"mode": "disclose", "hot": hot}}


@pytest.fixture(scope="module")
def servers(work_dir: Path):
    absent = peers.missing()
    assert not absent, f"missing {', '.join(map(str, absent))}: run scripts/bootstrap.sh"
    s = workspace.start_servers(work_dir / "real-listings")
    try:
        yield s
    finally:
        s.stop()


def allow(config: dict[str, Any]) -> None:
    # listings.mode needs hold_headers, which needs Envoy to hold request
    # headers while the body is read.
    for lst in config["static_resources"]["listeners"]:
        hcm = lst["filter_chains"][0]["filters"][0]["typed_config"]
        for f in hcm["http_filters"]:
            if f["name"] == "envoy.filters.http.wasm":
                f["typed_config"]["config"]["allow_on_headers_stop_iteration"] = True


@pytest.fixture(scope="module")
def listings_envoy(servers: workspace.Servers, demo, work_dir: Path):
    """Per server: a listener compacting its listings and one disclosing
    them; the same for the demo server."""
    listeners: dict[str, tuple[int, dict[str, Any] | None]] = {}
    ports = {n: b.port for n, b in servers.bridged.items()} | {"demo": demo.port}
    for name, port in ports.items():
        listeners[f"{name}_compact"] = (port, compact_config())
        listeners[f"{name}_disclose"] = (port, disclose_config(HOT[name]))

    e = peers.start_envoy_for(listeners, work_dir, "envoy-listings", tweak=allow)
    try:
        yield e
    finally:
        e.stop()
        out = os.environ.get("LISTINGS_CAPTURE")
        if out and CAPTURED:
            Path(out).write_text(json.dumps(CAPTURED, indent=1))


# --- the clients ---------------------------------------------------------------------------


def ts_steps(url: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    r = subprocess.run(
        [str(peers.NODE), str(peers.E2E / "listing_client.mjs")],
        input=json.dumps({"url": url, "steps": steps}).encode(),
        capture_output=True,
        cwd=peers.E2E,
        timeout=180,
    )
    if r.returncode != 0:
        raise AssertionError(f"listing_client.mjs failed ({r.returncode}): {r.stderr.decode()[-3000:]}")
    return json.loads(r.stdout)


def py_steps(url: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    return anyio.run(_py_steps, url, steps)


async def _py_steps(url: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    seen: list[tuple[str | None, bytes]] = []

    async def record(response: httpx2.Response) -> None:
        try:
            method = json.loads(response.request.content).get("method")
        except (ValueError, AttributeError):
            return
        if response.request.method == "POST" and method in ("tools/call", "tools/list"):
            await response.aread()
            seen.append((response.headers.get("content-type"), response.content))

    out: dict[str, Any] = {"steps": []}
    async with httpx2.AsyncClient(timeout=120, event_hooks={"response": [record]}) as http:
        async with Client(streamable_http_client(url, http_client=http), cache=None) as client:
            out["protocolVersion"] = client.protocol_version
            for step in steps:
                seen.clear()
                entry: dict[str, Any] = {}
                try:
                    if step.get("list"):
                        listed = await client.list_tools()
                        entry["tools"] = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
                    else:
                        entry["name"] = step["name"]
                        result = await client.call_tool(step["name"], step.get("arguments") or {})
                        entry["result"] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
                except Exception as err:  # a JSON-RPC error is an answer too
                    entry["error"] = str(err)
                if seen:
                    content_type, body = seen[-1]
                    entry["contentType"], entry["body"] = content_type, body.decode()
                out["steps"].append(entry)
    return out


CLIENTS = {"typescript": ts_steps, "python": py_steps}
LIST = {"list": True}


def wire(step: dict[str, Any], server: str = "") -> dict[str, Any]:
    assert "body" in step, step
    body = step["body"]
    if server == "time":
        body = workspace.mask_instants(body)
    return peers.wire_message(step.get("contentType"), body)


def listed(step: dict[str, Any]) -> list[dict[str, Any]]:
    """The tools of a listing as they crossed the wire; the client read the
    same names (the SDK accepted the listing)."""
    assert "error" not in step, step
    tools = wire(step)["result"]["tools"]
    assert [t["name"] for t in step["tools"]] == [t["name"] for t in tools]
    return tools


def compare(direct: dict[str, Any], via: dict[str, Any]) -> list[str]:
    """`peers.compare` of one call made in sessions whose requests are
    numbered differently (the via session made more calls before it)."""
    assert "id" in via and "id" in direct
    return peers.compare(direct, {**via, "id": direct["id"]})


def text(step: dict[str, Any]) -> str:
    assert "result" in step, step
    return next(c["text"] for c in step["result"]["content"] if c["type"] == "text")


def props(tool: dict[str, Any]) -> list[str]:
    return list(tool.get("inputSchema", {}).get("properties", {}))


HINTS = ("readOnlyHint", "idempotentHint", "destructiveHint", "openWorldHint")


def meaning(tool: dict[str, Any]) -> tuple[Any, ...]:
    """What a tool's annotations tell a client that applies the defaults of
    MCP 2025-06-18 ToolAnnotations (destructiveHint and idempotentHint count
    only when the tool is not read-only), and what a client that reads an
    absent hint as false takes for safe: a compact listing may drop a hint
    only where the first stays and the second is at most more careful."""
    a = tool.get("annotations") or {}
    read_only = a.get("readOnlyHint", False)
    spec = (
        read_only,
        None if read_only else a.get("idempotentHint", False),
        None if read_only else a.get("destructiveHint", True),
        a.get("openWorldHint", True),
    )
    # Taken for safe by a client that reads an absent hint as false: not
    # destructive, closed world, read-only.
    naive = (bool(a.get("readOnlyHint")), bool(a.get("destructiveHint")), bool(a.get("openWorldHint")))
    others = {k: v for k, v in a.items() if k not in HINTS}
    return spec, naive, others


# --- compact -------------------------------------------------------------------------------


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("client", list(CLIENTS))
def test_compact_listing_keeps_every_tool_callable_and_describe_gives_it_back(servers, listings_envoy, client, server):
    plan = servers.plans()[server]
    run = CLIENTS[client]
    direct = run(servers.bridged[server].url, [LIST, *plan])
    listing = listed(direct["steps"][0])
    names = [t["name"] for t in listing]
    before = listings_envoy.prometheus()
    describes = [{"name": "mcp_toon_describe", "arguments": {"name": n}} for n in names]
    via = run(listings_envoy.url(f"{server}_compact"), [LIST, *describes, *plan])
    after = listings_envoy.prometheus()

    compacted = listed(via["steps"][0])
    assert [t["name"] for t in compacted] == names + ["mcp_toon_describe"]
    for d, v in zip(listing, compacted):
        # Never a name, an argument's name, what is required, what an
        # annotation tells a client; a hint true by default stays as sent.
        assert props(v) == props(d) and v["inputSchema"].get("required") == d["inputSchema"].get("required")
        assert meaning(v) == meaning(d), (d.get("annotations"), v.get("annotations"))
        for hint in ("destructiveHint", "openWorldHint"):
            sent_hint = (d.get("annotations") or {}).get(hint)
            if sent_hint is True or hint == "openWorldHint":
                assert (v.get("annotations") or {}).get(hint) == sent_hint, (hint, d, v)
        for arg, schema in d["inputSchema"].get("properties", {}).items():
            kept = v["inputSchema"]["properties"][arg]
            assert kept.get("type") == schema.get("type") and kept.get("enum") == schema.get("enum"), (arg, schema, kept)
    sent = json.dumps(wire(direct["steps"][0])["result"], separators=(",", ":"))
    got = json.dumps(wire(via["steps"][0])["result"], separators=(",", ":"))
    assert len(got) < len(sent), (server, len(sent), len(got))
    CAPTURED.setdefault(server, {})["sent"] = wire(direct["steps"][0])["result"]
    CAPTURED[server]["compact"] = wire(via["steps"][0])["result"]

    # Each tool's definition, exactly as the server sent it.
    for tool, step in zip(listing, via["steps"][1 : 1 + len(names)]):
        assert not step["result"].get("isError"), step
        assert json.loads(text(step)) == tool

    # Every call of the plan, by name, as without the listing change.
    for call, d, v in zip(plan, direct["steps"][1:], via["steps"][1 + len(names) :], strict=True):
        compare(wire(d, server), wire(v, server))
    moved = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    assert moved.get("mcp_toon_compacted", 0) >= 1 and moved.get("mcp_toon_answered", 0) == len(names), moved


def test_a_2026_listing_is_compacted_and_described(demo, listings_envoy):
    """MCP 2026-07-28 (the demo server with the Python client: stateless,
    `resultType` on results, `Mcp-Method` / `Mcp-Name` headers)."""
    direct = py_steps(demo.url, [LIST])
    assert direct["protocolVersion"] == harness.PROTOCOL_VERSION
    listing = listed(direct["steps"][0])
    names = [t["name"] for t in listing]
    via = py_steps(listings_envoy.url("demo_compact"), [LIST, *({"name": "mcp_toon_describe", "arguments": {"name": n}} for n in names), {"name": "list_users", "arguments": {"count": 30}}])
    assert [t["name"] for t in listed(via["steps"][0])] == names + ["mcp_toon_describe"]
    for tool, step in zip(listing, via["steps"][1:]):
        assert wire(step)["result"].get("resultType") == "complete", step
        assert json.loads(text(step)) == tool
    assert text(via["steps"][-1]).startswith(MARKER + "\n")


# --- disclose ------------------------------------------------------------------------------


@pytest.mark.parametrize("client", list(CLIENTS))
def test_an_agent_lists_searches_and_calls_through_a_disclosed_listing(servers, listings_envoy, client):
    run = CLIENTS[client]
    plan = servers.plans()["memory"]
    direct = run(servers.bridged["memory"].url, [LIST, *plan])
    names = [t["name"] for t in listed(direct["steps"][0])]
    assert "create_relations" not in HOT["memory"]
    before = listings_envoy.prometheus()
    search = {"name": "mcp_toon_search_tools", "arguments": {"query": "create relations between entities", "limit": 3}}
    via = run(
        listings_envoy.url("memory_disclose"),
        [LIST, search, *({"name": "mcp_toon_call_tool", "arguments": {"name": c["name"], "arguments": c["arguments"]}} for c in plan)],
    )
    after = listings_envoy.prometheus()

    disclosed = listed(via["steps"][0])
    assert [t["name"] for t in disclosed] == HOT["memory"] + ADDED
    full = {t["name"]: t for t in listed(direct["steps"][0])}
    for tool in disclosed[:3]:
        assert tool == full[tool["name"]], "a hot tool is listed in full"
    assert f"{len(names) - 3} other tools" in disclosed[3]["description"]
    CAPTURED.setdefault("memory", {})["disclose"] = wire(via["steps"][0])["result"]

    found = json.loads(text(via["steps"][1]))
    assert found[0]["name"] == "create_relations" and len(found) <= 3, found
    # The call tool runs each tool of the plan: the server sees the real
    # call, and the result meets every stage.
    outcomes = {}
    for call, d, v in zip(plan, direct["steps"][1:], via["steps"][2:], strict=True):
        outcomes[call["name"]] = compare(wire(d), wire(v))
    assert outcomes["create_relations"] == ["toon"], outcomes
    moved = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    assert moved.get("mcp_toon_disclosed", 0) >= 1 and moved.get("mcp_toon_rewritten", 0) == len(plan), moved


@pytest.mark.parametrize("server", ["filesystem", "git", "time"])
def test_every_disclosed_tool_is_found_and_called(servers, listings_envoy, server):
    """Each tool the disclosed listing leaves out is found by searching its
    own name, and the plan's calls through the call tool answer as direct
    calls do (the TypeScript client)."""
    plan = servers.plans()[server]
    direct = ts_steps(servers.bridged[server].url, [LIST, *plan])
    names = [t["name"] for t in listed(direct["steps"][0])]
    hidden = [n for n in names if n not in HOT[server]]
    searches = [{"name": "mcp_toon_search_tools", "arguments": {"query": n.replace("_", " "), "limit": 1}} for n in hidden]
    calls = [{"name": "mcp_toon_call_tool", "arguments": {"name": c["name"], "arguments": c["arguments"]}} for c in plan]
    via = ts_steps(listings_envoy.url(f"{server}_disclose"), [LIST, *searches, *calls])
    disclosed = listed(via["steps"][0])
    assert [t["name"] for t in disclosed] == [n for n in HOT[server] if n in names] + ADDED
    CAPTURED.setdefault(server, {})["disclose"] = wire(via["steps"][0])["result"]
    for name, step in zip(hidden, via["steps"][1 : 1 + len(hidden)]):
        assert json.loads(text(step))[0]["name"] == name
    for d, v in zip(direct["steps"][1:], via["steps"][1 + len(hidden) :], strict=True):
        compare(wire(d, server), wire(v, server))


def test_a_2026_agent_calls_through_the_call_tool(demo, listings_envoy):
    """The 2026-07-28 request names its tool in `Mcp-Name`: the rewritten
    call's header names the real tool, or the server would refuse it."""
    url = listings_envoy.url("demo_disclose")
    via = py_steps(
        url,
        [
            LIST,
            {"name": "mcp_toon_search_tools", "arguments": {"query": "list users"}},
            {"name": "mcp_toon_call_tool", "arguments": {"name": "list_users", "arguments": {"count": 30}}},
            {"name": "mcp_toon_call_tool", "arguments": {"name": "no_such_tool"}},
        ],
    )
    assert [t["name"] for t in listed(via["steps"][0])] == HOT["demo"] + ADDED
    assert json.loads(text(via["steps"][1]))[0]["name"] == "list_users"
    users = text(via["steps"][2])
    assert users.startswith(MARKER + "\n"), users[:300]
    assert wire(via["steps"][2])["result"].get("resultType") == "complete"
    refused = via["steps"][3]["result"]
    assert refused["isError"] is True and "no tool named" in refused["content"][0]["text"]


def test_describe_without_a_kept_listing_tells_the_agent_to_list_again(servers, listings_envoy):
    """A fresh gateway (another listener's VM holds nothing of this one's)
    asked before any listing: a tool error, not a call to the server."""
    (step,) = ts_steps(listings_envoy.url("time_compact"), [{"name": "mcp_toon_describe", "arguments": {"name": "nothing_here"}}])["steps"]
    result = step["result"]
    assert result["isError"] is True
    # Either the list is missing (first test to run) or the name is unknown.
    message = result["content"][0]["text"]
    assert "list the tools again" in message or "no tool named" in message, message


# --- a list that changes ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def changing_envoy(work_dir: Path):
    """The demo server in its stateful SSE mode (its `add_tool` adds a tool
    and sends `notifications/tools/list_changed`: on the client's GET stream
    under 2025-11-25, on its `subscriptions/listen` stream under
    2026-07-28), behind a listener compacting its listings."""
    proc, port = harness.start_demo_server(work_dir, args=("--transport", "sse"))
    try:
        e = peers.start_envoy_for({"changing": (port, compact_config())}, work_dir, "envoy-listings-changing", tweak=allow)
        try:
            yield e
        finally:
            e.stop()
    finally:
        proc.stop()


def describe(name: str) -> dict[str, Any]:
    return {"name": "mcp_toon_describe", "arguments": {"name": name}}


def list_again(result: dict[str, Any]) -> bool:
    return result.get("isError") is True and "list the tools again" in result["content"][0]["text"]


def test_a_list_changed_on_the_get_stream_ends_the_kept_list(changing_envoy):
    """MCP 2025-11-25, the official TypeScript client: the server's
    `notifications/tools/list_changed` reaches the client on its GET stream
    through the plugin, which forgets the kept list then. Describe tells
    the agent to list again (the list it kept lacks the new tool); the next
    listing keeps the new list, and the new tool is described."""
    steps = [LIST, describe("list_users"), {"name": "add_tool", "arguments": {"name": "fresh_ts"}}, {"listChanged": 1}]
    steps += [describe("list_users"), LIST, describe("fresh_ts")]
    run = ts_steps(changing_envoy.url("changing"), steps)
    first, kept, added, heard, forgotten, relisted, fresh = run["steps"]
    assert run["protocolVersion"] == "2025-11-25", run["protocolVersion"]
    assert "fresh_ts" not in [t["name"] for t in listed(first)] and "mcp_toon_describe" in [t["name"] for t in listed(first)]
    assert json.loads(text(kept))["name"] == "list_users", kept
    assert added["result"]["content"][0]["text"] == "added fresh_ts", added
    assert heard["listChanged"] >= 1, "the notification crossed the gateway"
    assert list_again(forgotten["result"]), forgotten
    assert "fresh_ts" in [t["name"] for t in listed(relisted)]
    assert json.loads(text(fresh))["name"] == "fresh_ts", fresh


def test_a_list_changed_on_a_2026_listen_stream_ends_the_kept_list(changing_envoy):
    """MCP 2026-07-28, the official Python client's `listen` (SEP-2575):
    the change event crosses the plugin on the `subscriptions/listen`
    stream, which is read where lists are kept, and ends the kept list."""

    async def flow() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with httpx2.AsyncClient(timeout=60) as http:
            async with Client(streamable_http_client(changing_envoy.url("changing"), http_client=http), cache=None) as client:
                out["version"] = client.protocol_version
                out["first"] = [t.name for t in (await client.list_tools()).tools]
                out["kept"] = (await client.call_tool("mcp_toon_describe", {"name": "list_users"})).model_dump(mode="json", exclude_none=True)
                async with client.listen(tools_list_changed=True) as sub:
                    out["added"] = (await client.call_tool("add_tool", {"name": "fresh_py"})).model_dump(mode="json", exclude_none=True)
                    with anyio.fail_after(10):
                        out["event"] = type(await anext(sub)).__name__
                    out["forgotten"] = (await client.call_tool("mcp_toon_describe", {"name": "list_users"})).model_dump(
                        mode="json", by_alias=True, exclude_none=True
                    )
                out["relisted"] = [t.name for t in (await client.list_tools()).tools]
                fresh = await client.call_tool("mcp_toon_describe", {"name": "fresh_py"})
                out["fresh"] = fresh.model_dump(mode="json", by_alias=True, exclude_none=True)
        return out

    out = anyio.run(flow)
    assert out["version"] == harness.PROTOCOL_VERSION, out["version"]
    assert "fresh_py" not in out["first"] and "mcp_toon_describe" in out["first"]
    assert not out["kept"].get("isError"), out["kept"]
    assert out["event"] == "ToolsListChanged", out
    assert list_again(out["forgotten"]), out["forgotten"]
    assert "fresh_py" in out["relisted"]
    assert json.loads(out["fresh"]["content"][0]["text"])["name"] == "fresh_py", out["fresh"]
