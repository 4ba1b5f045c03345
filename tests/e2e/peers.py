"""Peers this project did not write, for the real-server tier, the
conformance rounds and `make bench`: Node 22 (npm `node`), published MCP
servers bridged from stdio to Streamable HTTP by supergateway, the official
TypeScript and Python MCP clients, an Envoy routing several listeners to
several upstreams, and the rule every tool result through the plugin's
default configuration must follow (`outcome`).

Everything binds 127.0.0.1 on free ports; every process is stopped by its pid.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import harness
from harness import MARKER, Listener, same_json, split_marker, toon_decode

E2E = Path(__file__).resolve().parent
NODE_MODULES = E2E / "node_modules"
# Node 22 from npm (`node@22`): the conformance suite needs Node >= 22, and
# the other Node peers run on the same binary.
NODE = NODE_MODULES / "node" / "bin" / "node"
SUPERGATEWAY = NODE_MODULES / "supergateway" / "dist" / "index.js"
MCP_CALLS = E2E / "mcp_calls.mjs"
# mcp-server-git and mcp-server-time live in their own virtual environment
# (scripts/requirements-servers.txt): their pins are theirs, not the tests'.
SERVERS_BIN = harness.ROOT / ".venv-servers" / "bin"

FILESYSTEM = [str(NODE), str(NODE_MODULES / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js")]
MEMORY = [str(NODE), str(NODE_MODULES / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js")]
GIT = [str(SERVERS_BIN / "mcp-server-git")]
TIME = [str(SERVERS_BIN / "mcp-server-time")]

REQUIRED = [NODE, SUPERGATEWAY, Path(FILESYSTEM[1]), Path(MEMORY[1]), Path(GIT[0]), Path(TIME[0])]


def missing() -> list[Path]:
    """What scripts/bootstrap.sh has not installed yet."""
    return [p for p in REQUIRED if not p.exists()]


# --- servers ------------------------------------------------------------------------


@dataclass
class Bridged:
    """A stdio MCP server behind supergateway (Streamable HTTP, stateful: one
    server process per MCP session)."""

    name: str
    proc: harness.Proc
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        self.proc.stop()


def start_bridged(name: str, argv: list[str], work_dir: Path, env: dict[str, str] | None = None) -> Bridged:
    port = harness.free_port()
    cmd = [
        str(NODE), str(SUPERGATEWAY),
        "--stdio", shlex.join(argv),
        "--outputTransport", "streamableHttp",
        "--port", str(port),
        "--stateful",
    ]  # fmt: skip
    proc = harness.Proc(f"supergateway-{name}", cmd, work_dir / f"supergateway-{name}-{port}.log", env=env)
    try:
        harness.wait_for_port(port, proc, timeout=60)
    except Exception:
        proc.stop()
        raise
    return Bridged(name, proc, port)


# --- Envoy in front of several servers ---------------------------------------------------


def start_envoy_for(
    listeners: dict[str, tuple[int, dict[str, Any] | None]],
    work_dir: Path,
    name: str,
    extra_clusters: list[dict[str, Any]] | None = None,
    access_log_path: Path | None = None,
    tweak: Callable[[dict[str, Any]], None] | None = None,
) -> harness.Envoy:
    """One Envoy (envoy/envoy.yaml rendered by the harness), one listener per
    entry `name: (upstream port, plugin configuration)`, each routed to its
    own upstream with no route timeout (a session's GET stream lives as long
    as the session). A configuration of None drops the wasm filter: the same
    Envoy without the plugin. `tweak` edits the rendered configuration last."""
    specs = [Listener(n, cfg if cfg is not None else {}, allow_on_headers_stop_iteration=False) for n, (_, cfg) in listeners.items()]
    clusters = [harness.static_cluster(f"upstream_{n}", port) for n, (port, _) in listeners.items()]

    def route_each(config: dict[str, Any]) -> None:
        for lst in config["static_resources"]["listeners"]:
            hcm = lst["filter_chains"][0]["filters"][0]["typed_config"]
            for vhost in hcm["route_config"]["virtual_hosts"]:
                for route in vhost["routes"]:
                    route["route"]["cluster"] = f"upstream_{lst['name']}"
                    route["route"]["timeout"] = "0s"
            if listeners[lst["name"]][1] is None:
                hcm["http_filters"] = [f for f in hcm["http_filters"] if f["name"] != "envoy.filters.http.wasm"]
        if tweak is not None:
            tweak(config)

    first_port = next(iter(listeners.values()))[0]
    return harness.start_envoy(
        specs,
        first_port,
        work_dir,
        name=name,
        access_log_path=access_log_path,
        extra_clusters=clusters + (extra_clusters or []),
        tweak=route_each,
    )


# --- the official clients ------------------------------------------------------------------


def ts_calls(url: str, calls: list[dict[str, Any]], timeout: float = 180) -> dict[str, Any]:
    """The calls in one session of the official TypeScript client (2025-11-25)."""
    r = subprocess.run(
        [str(NODE), str(MCP_CALLS)],
        input=json.dumps({"url": url, "calls": calls}).encode(),
        capture_output=True,
        cwd=E2E,
        timeout=timeout,
    )
    if r.returncode != 0:
        raise AssertionError(f"mcp_calls.mjs failed ({r.returncode}): {r.stderr.decode()[-3000:]}")
    return json.loads(r.stdout)


def py_calls(url: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    """The calls in one session of the official Python client (mcp 2.3: it
    offers 2026-07-28 and falls back to the initialize handshake)."""
    return anyio.run(_py_calls, url, calls)


async def _py_calls(url: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    seen: list[tuple[str | None, bytes]] = []

    async def record(response: httpx2.Response) -> None:
        try:
            method = json.loads(response.request.content).get("method")
        except (ValueError, AttributeError):
            return
        if response.request.method == "POST" and method == "tools/call":
            await response.aread()
            seen.append((response.headers.get("content-type"), response.content))

    out: dict[str, Any] = {"calls": []}
    async with httpx2.AsyncClient(timeout=120, event_hooks={"response": [record]}) as http:
        async with Client(streamable_http_client(url, http_client=http), cache=None) as client:
            info = client.server_info
            out["server"] = info.model_dump(exclude_none=True) if info else None
            out["protocolVersion"] = client.protocol_version
            for call in calls:
                seen.clear()
                entry: dict[str, Any] = {"name": call["name"]}
                try:
                    result = await client.call_tool(call["name"], call.get("arguments") or {})
                    entry["result"] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
                except Exception as err:  # a JSON-RPC error is an answer too
                    entry["error"] = str(err)
                if seen:
                    content_type, body = seen[-1]
                    entry["contentType"], entry["body"] = content_type, body.decode()
                out["calls"].append(entry)
    return out


CLIENTS: dict[str, Callable[[str, list[dict[str, Any]]], dict[str, Any]]] = {"typescript": ts_calls, "python": py_calls}


# --- what crossed the wire -------------------------------------------------------------------


def wire_message(content_type: str | None, body: str) -> dict[str, Any]:
    """The JSON-RPC response in a tools/call response body: the JSON body, or
    the event of an event stream that carries a result or an error."""
    if content_type and content_type.startswith("text/event-stream"):
        for event in re.split(r"\r\n\r\n|\n\n|\r\r", body):
            data = "\n".join(
                line[5:].removeprefix(" ") for line in re.split(r"\r\n|\n|\r", event) if line.startswith("data:")
            )
            if data:
                message = json.loads(data)
                if isinstance(message, dict) and ("result" in message or "error" in message):
                    return message
        raise AssertionError(f"no JSON-RPC response in the event stream: {body[:500]!r}")
    return json.loads(body)


# --- the rule ----------------------------------------------------------------------------------

_TOKEN = re.compile(r'[ \t\r\n]*("(?:[^"\\]|\\.)*"|-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null|[{}\[\]:,])', re.S)


def json_tokens(text: str) -> list[str] | None:
    """The JSON tokens of `text`, each with its exact spelling (strings with
    their escapes, numbers as written), or None when it is not one JSON text."""
    try:
        json.loads(text)
    except ValueError:
        return None
    tokens, pos = [], 0
    while True:
        m = _TOKEN.match(text, pos)
        if not m:
            break
        tokens.append(m.group(1))
        pos = m.end()
    return tokens if text[pos:].strip(" \t\r\n") == "" else None


def outcome(direct: str, via: str) -> str:
    """How the plugin's text `via` relates to the server's `direct`; fails
    unless it is one of what the default configuration may send:
    `identical` (byte for byte), `compact` (compact JSON: the same tokens, so
    the same value, key order, number spellings and string bytes, without
    the whitespace between them) or `toon` (the marker, then TOON the
    reference TypeScript decoder turns into the identical value)."""
    if via == direct:
        return "identical"
    if via.startswith(MARKER + "\n"):
        same_json(toon_decode(split_marker(via)), json.loads(direct))
        return "toon"
    before, after = json_tokens(direct), json_tokens(via)
    assert before is not None, f"non-JSON text changed:\n--- direct\n{direct[:2000]}\n--- via\n{via[:2000]}"
    assert after == before, f"JSON tokens changed:\n--- direct\n{direct[:2000]}\n--- via\n{via[:2000]}"
    assert via == "".join(after), f"not compact JSON: {via[:500]!r}"
    return "compact"


def compare(direct: dict[str, Any], via: dict[str, Any]) -> list[str]:
    """Compares one tools/call response (the JSON-RPC messages as they crossed
    the wire): everything but `result.content[].text` is equal, and each text
    follows `outcome`. Returns the outcome of each text item."""
    if "result" not in direct:
        assert via == direct, f"error responses differ: {direct} vs {via}"
        return ["error"]
    d_result, v_result = direct["result"], via["result"]
    d_items, v_items = d_result.get("content", []), v_result.get("content", [])
    assert len(d_items) == len(v_items)
    outcomes = []
    for d_item, v_item in zip(d_items, v_items):
        if d_item.get("type") == "text":
            outcomes.append(outcome(d_item["text"], v_item["text"]))
            d_item, v_item = {**d_item, "text": ""}, {**v_item, "text": ""}
        assert v_item == d_item, f"a content item other than its text changed: {d_item} vs {v_item}"
    rest = lambda r: {k: v for k, v in r.items() if k != "content"}  # noqa: E731
    assert rest(v_result) == rest(d_result), "the result beside content changed"
    assert {k: v for k, v in via.items() if k != "result"} == {k: v for k, v in direct.items() if k != "result"}
    return outcomes
