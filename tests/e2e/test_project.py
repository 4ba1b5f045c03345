"""The project stage end to end, on a real MCP server this project did not
write: the knowledge-graph server `@modelcontextprotocol/server-memory`
(npm), bridged from stdio to Streamable HTTP by `supergateway` (npm,
`--stateful`), behind Envoy (V8) and mcp-toon, called with the official MCP
Python client. Both, and the Node 22 they run on, are the real-server
tier's peers (tests/e2e/peers.py); scripts/bootstrap.sh installs them.

The server's stdin goes through `tee`, so the test reads exactly what
reached the server. Expected projections come from outside the plugin: the
operator rules' meaning written out in Python, and agent queries evaluated
by the JMESPath reference implementation in JavaScript (npm `jmespath`).
Tokens are counted by the project's CLI (`mcp-toon measure`, o200k_base),
and a rule or a query is measured against the same call through the
`defaults` listener — the plugin without projection, whose compact JSON
and TOON already cut the server's pretty text — so what a test credits to
projection is what projection alone cut.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
import pytest
from mcp import Client

import artifacts
import harness
import peers
from harness import MARKER, Listener, same_json, split_marker, toon_decode

# The reference JMESPath implementation, in its own package directory.
PROJECTION = harness.ROOT / "tests" / "projection"
JMESPATH_EVAL = PROJECTION / "jmespath_eval.mjs"
CLI = artifacts.CLI

QUERY_DESCRIPTION = (
    "Optional. A JMESPath expression (jmespath.org) applied to this tool's JSON result before you receive it, so you "
    "get only what you need, e.g. `items[?state=='open'].{id: id, title: title}` or `entities[*].name`. Objects in the "
    "answer list their keys in sorted order. If the expression is invalid, selects nothing or the result is not JSON, "
    "you get the full result with a note on its last line. Leave it out to get the full result."
)

LISTENERS = {
    # Operator rules: read_graph without the observations, search_nodes
    # reduced to the entities' names and types.
    "rules": {
        "hold_headers": True,
        "tools": {
            "read_graph": {"project": {"drop": ["entities[].observations"]}},
            "search_nodes": {"project": {"keep": ["entities[].name", "entities[].entityType"]}},
        },
    },
    # Agent queries on every tool.
    "queries": {"hold_headers": True, "project": {"queries": True}},
    # Both: the operator's rule applies first, the query to what is left.
    "both": {"project": {"queries": True, "drop": ["**.observations"]}},
    # Defaults: nothing about projection changes anything.
    "defaults": {},
    # The query argument under another name.
    "renamed": {"project": {"queries": True, "query_argument": "select"}},
}


# --- the graph ------------------------------------------------------------------------


def graph() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A deterministic knowledge graph: people, projects and companies."""
    companies = ["Analytical Engines Ltd", "Difference Works", "Jacquard Looms", "Babbage & Co"]
    projects = [f"Project {name}" for name in ("Loom", "Mill", "Store", "Card", "Barrel", "Crank", "Gear", "Lever")]
    people = [f"{first} {last}" for first in ("Ada", "Charles", "Mary", "Luigi", "Herman", "Grace")
              for last in ("Lovelace", "Babbage", "Somerville", "Menabrea", "Hollerith")]
    entities = []
    for i, name in enumerate(people):
        entities.append({"name": name, "entityType": "person", "observations": [
            f"{name} joined in {1830 + i}",
            f"writes notes on the {projects[i % len(projects)]} design, {i + 2} pages a week",
            f"prefers {['punched cards', 'gears', 'tables', 'letters'][i % 4]} for communication",
        ]})
    for i, name in enumerate(projects):
        entities.append({"name": name, "entityType": "project", "observations": [
            f"started in {1840 + i}", f"budget of {1000 * (i + 1)} pounds", "status: " + ["active", "paused"][i % 2],
        ]})
    for name in companies:
        entities.append({"name": name, "entityType": "company", "observations": [f"{name} is based in London"]})
    relations = []
    for i, name in enumerate(people):
        relations.append({"from": name, "to": companies[i % len(companies)], "relationType": "works_at"})
        relations.append({"from": name, "to": projects[i % len(projects)], "relationType": "contributes_to"})
        relations.append({"from": name, "to": people[(i + 7) % len(people)], "relationType": "knows"})
    return entities, relations


# --- processes ------------------------------------------------------------------------


class Memory:
    """server-memory behind supergateway; its stdin recorded by `tee`."""

    def __init__(self, work_dir: Path):
        self.stdin_log = work_dir / f"memory-stdin-{harness.free_port()}.log"
        graph = self.stdin_log.with_suffix(".jsonl")
        # supergateway runs the command through a shell: `tee` writes every
        # message it passes to the server.
        server = ["sh", "-c", f"tee -a {shlex.quote(str(self.stdin_log))} | {shlex.join(peers.MEMORY)}"]
        self.bridged = peers.start_bridged("memory-project", server, work_dir, env={"MEMORY_FILE_PATH": str(graph)})
        self.port = self.bridged.port
        self.url = self.bridged.url

    def received(self) -> list[dict[str, Any]]:
        """Every JSON-RPC message that reached the server's stdin."""
        return [json.loads(line) for line in self.stdin_log.read_text().splitlines() if line.strip()]

    def stop(self) -> None:
        self.bridged.stop()


@pytest.fixture(scope="module")
def memory(work_dir: Path):
    absent = [p for p in (peers.NODE, peers.SUPERGATEWAY, Path(peers.MEMORY[1]), PROJECTION / "node_modules" / "jmespath")
              if not p.exists()]
    if absent:
        raise AssertionError(f"missing (run scripts/bootstrap.sh): {absent}")
    server = Memory(work_dir)
    try:
        entities, relations = graph()
        with_client(server.url, lambda c: c.call_tool("create_entities", {"entities": entities}))
        with_client(server.url, lambda c: c.call_tool("create_relations", {"relations": relations}))
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def envoy(memory: Memory, work_dir: Path):
    listeners = [Listener(name, cfg) for name, cfg in LISTENERS.items()]
    access_log = work_dir / "project-access.log"
    e = harness.start_envoy(listeners, memory.port, work_dir, name="envoy-project", access_log_path=access_log)
    e.access_log = access_log
    try:
        yield e
    finally:
        e.stop()


@pytest.fixture(scope="module")
def cli() -> Path:
    """The measuring CLI, built as the README says."""
    subprocess.run(["cargo", "build", "--release", "-p", "mcp-toon-cli", "--bin", "mcp-toon"], cwd=harness.ROOT,
                   check=True, capture_output=True)
    return CLI


# --- helpers --------------------------------------------------------------------------


def with_client(url: str, fn: Callable[[Client], Awaitable[Any]], mode: str = "auto") -> Any:
    """`mode`: "auto" speaks 2026-07-28 (stateless, JSON responses from
    supergateway); "legacy" a 2025-11-25 session (event-stream responses)."""

    async def main() -> Any:
        async with Client(url, mode=mode, cache=None) as client:
            return await fn(client)

    return anyio.run(main)


def call(url: str, tool: str, args: dict[str, Any] | None = None, mode: str = "auto") -> str:
    """The one text block of a tool result, as the official client got it."""
    result = with_client(url, lambda c: c.call_tool(tool, args or {}), mode)
    assert not result.is_error and len(result.content) == 1 and result.content[0].type == "text", result
    return result.content[0].text


def value_of(text: str) -> Any:
    """A block's JSON value, through the reference TOON decoder if encoded."""
    return toon_decode(split_marker(text)) if text.startswith(MARKER + "\n") else json.loads(text)


def jmespath(expression: str, data: Any) -> Any:
    """The reference implementation's answer, keys sorted as the plugin's
    engine writes objects."""
    r = subprocess.run([str(peers.NODE), str(JMESPATH_EVAL)], input=json.dumps({"expression": expression, "data": data}).encode(),
                       capture_output=True, cwd=PROJECTION, timeout=60, check=True)
    return sort_keys(json.loads(r.stdout))


def sort_keys(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: sort_keys(v[k]) for k in sorted(v)}
    if isinstance(v, list):
        return [sort_keys(x) for x in v]
    return v


def tokens(cli: Path, text: str, work_dir: Path) -> int:
    """o200k_base tokens of a text, counted by `mcp-toon measure` with every
    stage off (so `tokens_before` is the text as given)."""
    path = work_dir / "count.txt"
    path.write_text(text)
    off = work_dir / "all-off.json"
    off.write_text(json.dumps({"toon": {"mode": "off"}, "clean": {"compact_json": False}}))
    out = subprocess.run([str(cli), "measure", "--format", "json", "--config", str(off), str(path)],
                         capture_output=True, check=True)
    return json.loads(out.stdout)["totals"]["tokens_before"]


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if k.startswith("mcp_toon_") and v != before.get(k, 0.0)}


def tool_calls(memory: Memory) -> list[dict[str, Any]]:
    return [m for m in memory.received() if m.get("method") == "tools/call"]


# --- operator rules ---------------------------------------------------------------------


def cut_by_projection(cli: Path, work_dir: Path, envoy, via: str, tool: str, args: dict[str, Any]) -> tuple[int, int]:
    """Tokens of the projected text and of the same call through the
    `defaults` listener (compaction and TOON, no projection)."""
    plain = call(envoy.url("defaults"), tool, args)
    return tokens(cli, via, work_dir), tokens(cli, plain, work_dir)


def test_operator_drop_rule_cuts_tokens_and_keeps_the_rest_exactly(envoy, memory, cli, work_dir):
    direct = call(memory.url, "read_graph")
    before = envoy.prometheus()
    via = call(envoy.url("rules"), "read_graph")
    after = envoy.prometheus()

    server = json.loads(direct)
    want = {**server, "entities": [{k: v for k, v in e.items() if k != "observations"} for e in server["entities"]]}
    same_json(value_of(via), want)
    projected, plain = cut_by_projection(cli, work_dir, envoy, via, "read_graph", {})
    assert projected < plain * 0.7, (projected, plain)
    assert delta(before, after).get("mcp_toon_projected") == 1


def test_operator_keep_rule_leaves_a_table_that_toon_encodes(envoy, memory, cli, work_dir):
    direct = call(memory.url, "search_nodes", {"query": "person"})
    via = call(envoy.url("rules"), "search_nodes", {"query": "person"})
    server = json.loads(direct)
    assert len(server["entities"]) >= 30
    want = {"entities": [{"name": e["name"], "entityType": e["entityType"]} for e in server["entities"]]}
    # The entities table with two columns is TOON-encoded after projection.
    assert via.startswith(MARKER + "\n"), via[:200]
    same_json(toon_decode(split_marker(via)), want)
    projected, plain = cut_by_projection(cli, work_dir, envoy, via, "search_nodes", {"query": "person"})
    assert projected < plain / 2, (projected, plain)


def test_the_server_answers_the_same_whatever_the_rules(envoy, memory):
    """Rules act on the response only: the request reaches the server as
    the client sent it."""
    call(envoy.url("rules"), "search_nodes", {"query": "Babbage"})
    [last] = tool_calls(memory)[-1:]
    assert last["params"] == {"name": "search_nodes", "arguments": {"query": "Babbage"}}


# --- agent queries -----------------------------------------------------------------------


def test_tools_list_advertises_the_query_argument(envoy, memory):
    direct = with_client(memory.url, lambda c: c.list_tools())
    via = with_client(envoy.url("queries"), lambda c: c.list_tools())
    original = {t.name: t for t in direct.tools}
    assert [t.name for t in via.tools] == list(original)
    for tool in via.tools:
        schema = dict(tool.input_schema)
        props = dict(schema.pop("properties"))
        assert props.pop("jmespath") == {"type": "string", "description": QUERY_DESCRIPTION}, tool.name
        want = dict(original[tool.name].input_schema)
        assert props == want.pop("properties", {}), tool.name
        assert schema == want, tool.name
        assert "jmespath" not in schema.get("required", [])
    # Off by default: the listing is the server's.
    plain = with_client(envoy.url("defaults"), lambda c: c.list_tools())
    assert [t.input_schema for t in plain.tools] == [t.input_schema for t in direct.tools]


QUERIES = [
    ("read_graph", {}, "entities[?entityType=='person'].{name: name, first: observations[0]}"),
    ("read_graph", {}, "relations[?relationType=='works_at'].[from, to]"),
    ("search_nodes", {"query": "Project"}, "entities[*].name"),
    ("read_graph", {}, "{people: length(entities[?entityType=='person']), companies: entities[?entityType=='company'].name}"),
]


@pytest.mark.parametrize("tool,args,expression", QUERIES, ids=[q[2][:40] for q in QUERIES])
def test_agent_query_cuts_tokens_and_equals_the_reference(envoy, memory, cli, work_dir, tool, args, expression):
    direct = call(memory.url, tool, args)
    before = envoy.prometheus()
    via = call(envoy.url("queries"), tool, {**args, "jmespath": expression})
    after = envoy.prometheus()

    same_json(value_of(via), jmespath(expression, json.loads(direct)))
    projected, plain = cut_by_projection(cli, work_dir, envoy, via, tool, args)
    assert projected < plain / 2, (projected, plain)
    assert delta(before, after).get("mcp_toon_queried") == 1
    # The server got the call without the query argument.
    last = tool_calls(memory)[-1]
    assert last["params"] == {"name": tool, "arguments": args}


def test_the_official_client_in_a_2025_session_gets_the_projection_over_sse(envoy, memory):
    expression = "entities[?entityType=='project'].{name: name, started: observations[0]}"
    direct = call(memory.url, "read_graph", mode="legacy")
    via = call(envoy.url("queries"), "read_graph", {"jmespath": expression}, mode="legacy")
    same_json(value_of(via), jmespath(expression, json.loads(direct)))
    assert tool_calls(memory)[-1]["params"] == {"name": "read_graph", "arguments": {}}


def test_query_result_tables_are_toon_encoded(envoy, memory):
    expression = "entities[?entityType=='person'].{name: name, notes: length(observations)}"
    via = call(envoy.url("queries"), "read_graph", {"jmespath": expression})
    assert via.startswith(MARKER + "\n"), via[:200]
    same_json(toon_decode(split_marker(via)), jmespath(expression, json.loads(call(memory.url, "read_graph"))))


def test_server_never_sees_the_query_argument(envoy, memory):
    marker = "entities[?name=='Ada Lovelace'].observations | [0] || `\"never-on-the-server\"`"
    seen = len(memory.received())
    call(envoy.url("queries"), "read_graph", {"jmespath": marker})
    call(envoy.url("both"), "search_nodes", {"query": "Ada", "jmespath": marker})
    received = memory.received()[seen:]
    calls = [m for m in received if m.get("method") == "tools/call"]
    assert [c["params"] for c in calls] == [
        {"name": "read_graph", "arguments": {}},
        {"name": "search_nodes", "arguments": {"query": "Ada"}},
    ]
    assert "never-on-the-server" not in json.dumps(received) and "jmespath" not in json.dumps(received)


def test_the_query_argument_takes_the_configured_name(envoy, memory):
    """`project.query_argument`: advertised, read and taken out under that
    name; a `jmespath` argument is then the tool's own and reaches the
    server."""
    via = with_client(envoy.url("renamed"), lambda c: c.list_tools())
    for tool in via.tools:
        props = tool.input_schema["properties"]
        assert props["select"] == {"type": "string", "description": QUERY_DESCRIPTION}, tool.name
        assert "jmespath" not in props, tool.name
    expression = "entities[?entityType=='company'].name"
    projected = call(envoy.url("renamed"), "read_graph", {"select": expression})
    same_json(value_of(projected), jmespath(expression, json.loads(call(memory.url, "read_graph"))))
    assert tool_calls(memory)[-1]["params"] == {"name": "read_graph", "arguments": {}}
    call(envoy.url("renamed"), "search_nodes", {"query": "Ada", "jmespath": "entities[*].name"})
    assert tool_calls(memory)[-1]["params"] == {"name": "search_nodes", "arguments": {"query": "Ada", "jmespath": "entities[*].name"}}


FAILURES = [
    ("entities[?", "query_invalid"),
    ("entities[?entityType=='dragon']", "query_empty"),
    ("length(entities[0].name.x)", "query_error"),
    ("[@,@] | [@,@] | [@,@] | [@,@]", "query_too_complex"),
]


@pytest.mark.parametrize("expression,reason", FAILURES, ids=[f[1] for f in FAILURES])
def test_a_query_that_cannot_apply_returns_the_full_result_with_a_note(envoy, memory, expression, reason):
    direct = call(memory.url, "read_graph")
    plain = call(envoy.url("defaults"), "read_graph")
    before = envoy.prometheus()
    via = call(envoy.url("queries"), "read_graph", {"jmespath": expression})
    after = envoy.prometheus()
    body, _, note = via.rpartition("\n")
    assert note.startswith(f"[mcp-toon: query not applied ({reason}): ") and note.endswith("; this is the full result]"), note
    # Everything before the note is what the plugin sends without a query.
    assert body == plain
    same_json(value_of(body), json.loads(direct))
    assert delta(before, after).get(f"mcp_toon_passthrough_{reason}") == 1


def test_operator_rules_apply_before_the_query(envoy, memory):
    expression = "entities[?entityType=='project'].{name: name, obs: observations}"
    via = call(envoy.url("both"), "read_graph", {"jmespath": expression})
    server = json.loads(call(memory.url, "read_graph"))
    # `observations` is dropped by the operator first: the agent cannot
    # query it back.
    same_json(value_of(via), jmespath(expression, {**server, "entities": [
        {k: v for k, v in e.items() if k != "observations"} for e in server["entities"]]}))


def test_defaults_change_nothing_and_pass_the_argument_on(envoy, memory):
    direct = call(memory.url, "search_nodes", {"query": "Grace"})
    via = call(envoy.url("defaults"), "search_nodes", {"query": "Grace", "jmespath": "entities[*].name"})
    # Not advertised, not read, not removed: the server decides what to do
    # with an argument it does not know (server-memory ignores it). The
    # answer is the server's whole value (TOON-encoded at the defaults
    # since tables below the root are, issue 39).
    same_json(value_of(via), json.loads(direct))
    assert tool_calls(memory)[-1]["params"]["arguments"] == {"query": "Grace", "jmespath": "entities[*].name"}


# --- transports, record, header ---------------------------------------------------------


def initialize(url: str) -> dict[str, str]:
    """A 2025-11-25 session with supergateway (--stateful): it answers each
    POST of the session with an event stream. Returns the headers for the
    requests that follow."""
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}
    r = harness.post(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "0"}}},
        headers=headers)
    assert r.status_code == 200, r.text
    headers["mcp-session-id"] = r.headers["mcp-session-id"]
    harness.post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


def test_event_stream_responses_are_projected_and_recorded(envoy, memory):
    url = envoy.url("queries")
    headers = initialize(url)
    expression = "entities[?entityType=='company'].name"
    r = harness.post(url, {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                           "params": {"name": "read_graph", "arguments": {"jmespath": expression}}}, headers=headers)
    assert r.headers["content-type"].startswith("text/event-stream"), r.headers
    [data] = [line.removeprefix("data: ") for line in r.text.splitlines() if line.startswith("data: ")]
    text = json.loads(data)["result"]["content"][0]["text"]
    same_json(json.loads(text), jmespath(expression, json.loads(call(memory.url, "read_graph"))))
    # The decision record reaches the access log: lossy, stage project.
    project: list[dict[str, Any]] = []
    for _ in range(100):
        lines = [line for line in envoy.access_log.read_text().splitlines() if line.startswith("[queries] ")]
        records = [json.loads(line.split(" mcp_toon=", 1)[1]) for line in lines if '"outcome":"queried"' in line]
        project = [d for rec in records for d in rec["decisions"] if d["stage"] == "project"]
        if project:
            break
        time.sleep(0.1)
    assert project and all(d["lossless"] is False and d["bytes_after"] < d["bytes_before"] for d in project)


@pytest.fixture(scope="module")
def demo_envoy(work_dir: Path):
    """The demo server (FastMCP, JSON responses) behind its own Envoy."""
    proc, port = harness.start_demo_server(work_dir)
    try:
        e = harness.start_envoy([Listener("queries", LISTENERS["queries"])], port, work_dir, name="envoy-project-json")
        try:
            yield e, f"http://127.0.0.1:{port}/mcp"
        finally:
            e.stop()
    finally:
        proc.stop()


def test_json_responses_are_projected_with_an_exact_length_and_header(demo_envoy):
    e, direct_url = demo_envoy
    expression = "[?role=='admin'].{id: id, email: email}"
    r = harness.call_tool(e.url("queries"), "list_users", {"jmespath": expression})
    assert r.headers["content-type"].startswith("application/json")
    assert int(r.headers["content-length"]) == len(r.content)
    assert "queried=1" in r.headers["x-mcp-toon"], r.headers["x-mcp-toon"]
    direct = harness.call_tool(direct_url, "list_users").json()["result"]["content"][0]["text"]
    text = r.json()["result"]["content"][0]["text"]
    same_json(value_of(text), jmespath(expression, json.loads(direct)))
