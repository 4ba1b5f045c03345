"""The trim stage end to end: the official MCP client calls the demo tools
through Envoy (V8) and mcp-toon, whose `llm` cluster is a local
OpenAI-compatible stand-in (tests/e2e/llm_stub.py) that records what it got
and answers from the intent. The MCP server (tests/e2e/trim_server.py: the
demo server's tools) records what reached it."""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
import urllib.request
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
import httpx
import pytest
from mcp import Client

import harness
import llm_stub
from harness import MARKER, Listener, Proc, same_json, split_marker, toon_decode

LLM_STUB = harness.ROOT / "tests" / "e2e" / "llm_stub.py"
TRIM_SERVER = harness.ROOT / "tests" / "e2e" / "trim_server.py"

SECRET = "s3cret-" + secrets.token_hex(12)
INTENT_DESCRIPTION = (
    "Optional. In one sentence, what you need from this tool's result (for example: the ids and prices of items "
    "under 10 EUR). A gateway uses it to return only the relevant part of a large result; leave it out to get the "
    "full result."
)

# The cleaned list_users result is about 5.8 kB; list_products with 5 rows
# about 0.3 kB.
TRIM = {
    "enabled": True,
    "cluster": "llm",
    "authority": "llm.example:8443",
    "path": "/v1/chat/completions",
    "model": "gpt-test-mini",
    "client_id": "mcp-toon-e2e",
    "client_secret": SECRET,
    "threshold_bytes": 2000,
    "timeout_ms": 10000,
}

LISTENERS = {
    "trim": TRIM,
    # No model, no credentials, another path and authority.
    "bare": {
        **TRIM,
        "model": "",
        "client_id": "",
        "client_secret": "",
        "authority": "gateway.local",
        "path": "/gw/v1/chat/completions",
    },
    "fast": {**TRIM, "timeout_ms": 300},
    # A cluster whose only host is a port nothing listens on.
    "refused": {**TRIM, "cluster": "llm_closed"},
    # A cluster Envoy does not have.
    "nocluster": {**TRIM, "cluster": "no_such_cluster"},
    "quiet": {**TRIM, "advertise_intent": False},
    # All text blocks of a result in one call.
    "all": {**TRIM, "blocks": "all"},
    # With hold_headers (EXTRA).
    "held": TRIM,
    # Trim off for one tool (EXTRA): its calls keep the argument.
    "partial": TRIM,
}
# Plugin settings besides `trim`, per listener.
EXTRA = {"held": {"hold_headers": True}, "partial": {"tools": {"list_products": {"trim": {"enabled": False}}}}}


# --- processes ---------------------------------------------------------------------


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


class Server:
    """A process serving HTTP on 127.0.0.1:port, stopped by pid."""

    def __init__(self, name: str, argv: list[str], work_dir: Path):
        self.port = harness.free_port()
        self.proc = Proc(name, [*argv, "--port", str(self.port)], work_dir / f"{name}-{self.port}.log")
        try:
            harness.wait_for_port(self.port, self.proc)
        except Exception:
            self.proc.stop()
            raise
        self.base = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.stop()


class LlmStub(Server):
    def requests(self) -> list[dict[str, Any]]:
        return get_json(self.base + "/_requests")

    def reset(self) -> None:
        urllib.request.urlopen(urllib.request.Request(self.base + "/_reset", data=b"", method="POST"), timeout=10).read()


class McpServer(Server):
    url = property(lambda self: self.base + "/mcp")

    def requests(self) -> list[dict[str, Any]]:
        """The JSON-RPC messages that reached the server."""
        return [json.loads(b) for b in get_json(self.base + "/_requests")]


@pytest.fixture(scope="module")
def llm(work_dir: Path):
    stub = LlmStub("llm-stub", [str(harness.PYTHON), str(LLM_STUB)], work_dir)
    try:
        yield stub
    finally:
        stub.stop()


@pytest.fixture
def stub(llm: LlmStub) -> LlmStub:
    llm.reset()
    return llm


@pytest.fixture(scope="module")
def upstream(work_dir: Path):
    server = McpServer("trim-server", [str(harness.PYTHON), str(TRIM_SERVER)], work_dir)
    try:
        yield server
    finally:
        server.stop()


def llm_clusters(llm: LlmStub) -> list[dict[str, Any]]:
    return [harness.static_cluster("llm", llm.port), harness.static_cluster("llm_closed", harness.free_port())]


@pytest.fixture(scope="module")
def envoy(upstream: McpServer, llm: LlmStub, work_dir: Path):
    listeners = [Listener(name, {"trim": cfg, **EXTRA.get(name, {})}) for name, cfg in LISTENERS.items()]
    access_log = work_dir / "trim-access.log"
    e = harness.start_envoy(
        listeners, upstream.port, work_dir, name="envoy-trim", access_log_path=access_log, extra_clusters=llm_clusters(llm)
    )
    e.access_log = access_log
    try:
        yield e
    finally:
        e.stop()


# --- helpers -------------------------------------------------------------------------


def with_client(url: str, fn: Callable[[Client], Awaitable[Any]], mode: str = "auto") -> Any:
    async def main() -> Any:
        async with Client(url, mode=mode, cache=None) as client:
            return await fn(client)

    return anyio.run(main)


def call(url: str, tool: str, args: dict[str, Any] | None = None, mode: str = "auto", **kw: Any) -> str:
    """The one text block of a tool result, as the official client got it."""
    result = with_client(url, lambda c: c.call_tool(tool, args or {}, **kw), mode)
    assert not result.is_error and len(result.content) == 1 and result.content[0].type == "text", result
    return result.content[0].text


def compact(text: str) -> str:
    """What clean's compact_json makes of the demo server's pretty JSON."""
    return json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if k.startswith("mcp_toon_") and v != before.get(k, 0.0)}


def trim_counts(d: dict[str, float]) -> dict[str, float]:
    return {k: v for k, v in d.items() if k == "mcp_toon_trimmed" or k.startswith("mcp_toon_passthrough_trim_")}


def header(record: dict[str, Any], name: str) -> list[str]:
    return [v for k, v in record["headers"] if k == name]


def user_message(record: dict[str, Any]) -> str:
    body = json.loads(record["body"])
    [user] = [m["content"] for m in body["messages"] if m["role"] == "user"]
    return user


def asked(record: dict[str, Any]) -> tuple[str, list[str], bool, str]:
    """(intent, output parts, as an array, boundary) of a callout."""
    return llm_stub.parse_user(user_message(record))


def note(intent: str) -> str:
    """The first line of a block trimmed to `intent` (its intent quoted as a
    JSON string; crates/core/src/stage/trim.rs `header`)."""
    return f"[mcp-toon: trimmed to the intent {json.dumps(intent, ensure_ascii=False)}; call again without expected_info for the whole result]"


def trimmed(text: str, intent: str) -> Any:
    """The value of a block trimmed to `intent`: TOON with the note at the end
    of the marker line, or the note line and the JSON extraction."""
    head, _, rest = text.partition("\n")
    if head == f"{MARKER} {note(intent)}":
        return toon_decode(rest)
    assert head == note(intent), text[:300]
    return json.loads(rest)


@pytest.fixture(scope="module")
def users(upstream: McpServer) -> list[dict[str, Any]]:
    """list_users as the server sends it (40 rows, pretty JSON)."""
    return json.loads(call(upstream.url, "list_users"))


# --- trimming --------------------------------------------------------------------------


def test_trims_to_the_intent_and_toon_encodes_the_table(envoy, upstream, stub, users):
    direct = call(upstream.url, "list_users")
    intent = "the admins (role=admin)"
    before = envoy.prometheus()
    text = call(envoy.url("trim"), "list_users", {"expected_info": intent})
    after = envoy.prometheus()

    admins = [u for u in users if u["role"] == "admin"]
    assert 4 <= len(admins) < len(users)
    # The extraction is a table of 4+ rows: TOON-encoded after trimming,
    # the note on the marker line.
    assert text.startswith(f"{MARKER} {note(intent)}\n")
    same_json(trimmed(text, intent), admins)
    assert len(text.encode()) < len(compact(direct).encode())

    # The stand-in got the intent (a JSON string) and the cleaned (compact)
    # text between the call's boundary lines, once.
    [record] = stub.requests()
    assert asked(record)[:3] == (intent, [compact(direct)], False)
    assert f"): {json.dumps(intent)}\n" in user_message(record)
    d = delta(before, after)
    assert trim_counts(d) == {"mcp_toon_trimmed": 1}
    assert d["mcp_toon_encoded"] == 1


def test_held_headers_carry_the_trimmed_length_and_summary(envoy, stub, users):
    r = harness.call_tool(envoy.url("held"), "list_users", {"expected_info": "role=owner"})
    assert int(r.headers["content-length"]) == len(r.content)
    assert "trimmed=1" in r.headers["x-mcp-toon"] and "encoded=1" in r.headers["x-mcp-toon"]
    text = r.json()["result"]["content"][0]["text"]
    same_json(trimmed(text, "role=owner"), [u for u in users if u["role"] == "owner"])
    assert len(stub.requests()) == 1


def value_of(text: str, intent: str) -> Any:
    """A block's JSON value: trimmed to `intent`, TOON-encoded, or JSON."""
    if text.startswith("[mcp-toon: ") or text.startswith(f"{MARKER} [mcp-toon: "):
        return trimmed(text, intent)
    return toon_decode(split_marker(text)) if text.startswith(MARKER + "\n") else json.loads(text)


def test_blocks_all_trims_every_text_block_in_one_call(envoy, upstream, stub):
    intent = "admins and paid orders: role=admin status=paid"
    direct = with_client(upstream.url, lambda c: c.call_tool("users_and_orders", {}))
    all_ = with_client(envoy.url("all"), lambda c: c.call_tool("users_and_orders", {"expected_info": intent}))
    first = with_client(envoy.url("trim"), lambda c: c.call_tool("users_and_orders", {"expected_info": intent}))
    people, page = (json.loads(c.text) for c in direct.content)
    admins = [u for u in people if u["role"] == "admin"]
    paid = {**page, "items": [o for o in page["items"] if o["status"] == "paid"]}
    assert 0 < len(paid["items"]) < len(page["items"])

    same_json(value_of(all_.content[0].text, intent), admins)
    same_json(value_of(all_.content[1].text, intent), paid)
    # blocks "first": only content[0].
    same_json(value_of(first.content[0].text, intent), admins)
    same_json(value_of(first.content[1].text, intent), page)
    [one_call, first_call] = stub.requests()
    # Each part between its own lines of a boundary drawn for the call: a
    # part cannot close itself or open the next.
    _, parts, as_array, boundary = asked(one_call)
    assert as_array and len(parts) == 2
    assert f"<<<{boundary} part 2>>>" in user_message(one_call)
    _, parts, as_array, other = asked(first_call)
    assert not as_array and len(parts) == 1 and other != boundary


def test_intent_in_meta_trims_too(envoy, stub, users):
    text = call(envoy.url("trim"), "list_users", meta={"expected_info": "role=viewer fields=id,name,email"})
    viewers = [{"id": u["id"], "name": u["name"], "email": u["email"]} for u in users if u["role"] == "viewer"]
    same_json(trimmed(text, "role=viewer fields=id,name,email"), viewers)
    assert len(stub.requests()) == 1


def test_server_never_sees_the_intent_argument(envoy, upstream, stub):
    intent = "role=owner " + secrets.token_hex(6)
    call(envoy.url("trim"), "list_users", {"count": 40, "expected_info": intent})
    calls = [m for m in upstream.requests() if m.get("method") == "tools/call"]
    assert calls, "the server recorded no tools/call"
    # Taken out of the arguments (an intent in `_meta`, where servers ignore
    # unknown keys, stays).
    assert all("expected_info" not in m["params"].get("arguments", {}) for m in calls)
    assert not any(intent in json.dumps(m) for m in calls)
    # The other arguments arrive as sent.
    assert calls[-1]["params"]["name"] == "list_users"
    assert calls[-1]["params"]["arguments"] == {"count": 40}
    # The intent did reach the LLM endpoint.
    assert intent in user_message(stub.requests()[0])


def test_the_argument_stays_where_it_is_not_the_plugins(envoy, upstream, stub):
    # The listing shows `directory` declaring expected_info itself: the
    # plugin learns it (per server, in shared data) and leaves its calls'
    # argument alone; likewise for a tool whose trim is off.
    with_client(envoy.url("trim"), lambda c: c.list_tools())
    label = "saved-" + secrets.token_hex(4)
    call(envoy.url("trim"), "directory", {"expected_info": label})
    intent = "sku=SKU-0002 " + secrets.token_hex(4)
    text = call(envoy.url("partial"), "list_products", {"count": 40, "expected_info": intent})
    calls = [m for m in upstream.requests() if m.get("method") == "tools/call"]
    assert calls[-2]["params"]["name"] == "directory"
    assert calls[-2]["params"]["arguments"] == {"expected_info": label}
    assert calls[-1]["params"]["arguments"] == {"count": 40, "expected_info": intent}
    # Trim is off for list_products there: no callout, no note.
    assert not any(intent in user_message(r) for r in stub.requests())
    assert not text.startswith("[mcp-toon: ")


def test_tools_list_advertises_the_optional_intent_argument(envoy, upstream):
    direct = with_client(upstream.url, lambda c: c.list_tools())
    via = with_client(envoy.url("trim"), lambda c: c.list_tools())
    original = {t.name: t for t in direct.tools}
    assert [t.name for t in via.tools] == list(original)
    for tool in via.tools:
        if tool.name == "directory":
            # Declares the argument itself: its listing entry is left alone.
            assert tool.input_schema == original[tool.name].input_schema
            continue
        schema = dict(tool.input_schema)
        props = dict(schema.pop("properties"))
        assert props.pop("expected_info") == {"type": "string", "description": INTENT_DESCRIPTION}, tool.name
        want = dict(original[tool.name].input_schema)
        assert props == want.pop("properties", {}), tool.name
        assert schema == want, tool.name
        # Optional: never required.
        assert "expected_info" not in schema.get("required", [])
        assert tool.description == original[tool.name].description


def test_listing_is_byte_identical_with_advertise_intent_off(envoy, upstream):
    message = harness.jsonrpc("tools/list")
    direct = harness.post(upstream.url, message)
    quiet = harness.post(envoy.url("quiet"), message)
    advertised = harness.post(envoy.url("trim"), message)
    assert quiet.content == direct.content
    assert advertised.content != direct.content and b'"expected_info"' in advertised.content


# --- the callout as configured ----------------------------------------------------------


def test_headers_and_model_are_sent_as_configured(envoy, stub):
    call(envoy.url("trim"), "list_users", {"expected_info": "role=admin"})
    [record] = stub.requests()
    assert record["method"] == "POST"
    assert record["path"] == "/v1/chat/completions"
    assert header(record, "host") == ["llm.example:8443"]
    assert header(record, "content-type") == ["application/json"]
    assert header(record, "client_id") == ["mcp-toon-e2e"]
    assert header(record, "client_secret") == [SECRET]
    assert header(record, "authorization") == []
    body = json.loads(record["body"])
    assert body["model"] == "gpt-test-mini"
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "character for character" in body["messages"][0]["content"]


def test_no_model_and_no_credentials_when_not_configured(envoy, stub, users):
    text = call(envoy.url("bare"), "list_users", {"expected_info": "role=editor"})
    same_json(trimmed(text, "role=editor"), [u for u in users if u["role"] == "editor"])
    [record] = stub.requests()
    assert record["path"] == "/gw/v1/chat/completions"
    assert header(record, "host") == ["gateway.local"]
    assert header(record, "client_id") == [] and header(record, "client_secret") == []
    assert "model" not in json.loads(record["body"])


# --- fail-open -----------------------------------------------------------------------------

FAILURES = [
    ("trim", "[stub:status=500] role=admin", "trim_status", True),
    ("trim", "[stub:status=503] role=admin", "trim_status", True),
    ("trim", "[stub:garbage] role=admin", "trim_malformed", True),
    ("trim", "[stub:empty] role=admin", "trim_malformed", True),
    ("trim", "[stub:larger] role=admin", "trim_larger", True),
    # A model steered by text in the tool output: values the block does not
    # have, or an answer dressed as the plugin's own output.
    ("trim", "[stub:inject] role=admin", "trim_not_from_input", True),
    ("trim", "[stub:marker] role=admin", "trim_marker", True),
    # A reply body past trim.max_reply_bytes (1 MiB): not read.
    ("trim", "[stub:huge] role=admin", "trim_reply_too_large", True),
    # Past trim.max_intent_bytes (512): never sent.
    ("trim", "role=admin " + "x" * 502, "trim_intent_too_long", False),
    ("fast", "[stub:slow=3] role=admin", "trim_timeout", True),
    ("refused", "role=admin", "trim_unavailable", False),
    ("nocluster", "role=admin", "trim_unavailable", False),
]


@pytest.mark.parametrize("listener,intent,reason,reached", FAILURES, ids=[f"{f[2]}-{f[1][:18]}" for f in FAILURES])
def test_failures_leave_the_cleaned_result_and_count_the_reason(envoy, stub, users, listener, intent, reason, reached):
    url = envoy.url(listener)
    # The same call without an intent: what clean and TOON alone make of it.
    cleaned = call(url, "list_users")
    before = envoy.prometheus()
    text = call(url, "list_users", {"expected_info": intent})
    after = envoy.prometheus()

    assert text == cleaned
    same_json(toon_decode(split_marker(text)), users)
    assert trim_counts(delta(before, after)) == {f"mcp_toon_passthrough_{reason}": 1}
    assert len(stub.requests()) == (1 if reached else 0)


def test_a_result_with_structured_content_is_not_trimmed(envoy, upstream, stub):
    # `content` trimmed would contradict `structuredContent` (MCP 2025-06-18
    # "Structured Content"), and trimming that would break the outputSchema.
    args = {"hours": 40}
    direct = call(upstream.url, "station_readings", args)
    assert len(direct) > TRIM["threshold_bytes"]
    before = envoy.prometheus()
    text = call(envoy.url("trim"), "station_readings", {**args, "expected_info": "station=ST-1"})
    after = envoy.prometheus()
    assert not text.startswith("[mcp-toon: ")
    assert trim_counts(delta(before, after)) == {"mcp_toon_passthrough_trim_structured_content": 1}
    assert stub.requests() == []


def test_an_intent_of_max_intent_bytes_is_sent(envoy, stub, users):
    intent = "role=admin " + "x" * 501  # 512 bytes: trim.max_intent_bytes
    before = envoy.prometheus()
    text = call(envoy.url("trim"), "list_users", {"expected_info": intent})
    after = envoy.prometheus()
    same_json(trimmed(text, intent), [u for u in users if u["role"] == "admin"])
    assert trim_counts(delta(before, after)) == {"mcp_toon_trimmed": 1}
    assert [asked(r)[0] for r in stub.requests()] == [intent]


def test_no_intent_and_small_results_are_counted_and_not_sent(envoy, upstream, stub):
    before = envoy.prometheus()
    call(envoy.url("trim"), "list_users")
    small = call(envoy.url("trim"), "list_products", {"count": 5, "expected_info": "sku=SKU-0002"})
    after = envoy.prometheus()
    assert small == call(upstream.url, "list_products", {"count": 5})
    assert trim_counts(delta(before, after)) == {
        "mcp_toon_passthrough_trim_no_intent": 1,
        "mcp_toon_passthrough_trim_below_threshold": 1,
    }
    assert stub.requests() == []


# --- concurrency ---------------------------------------------------------------------------


def test_concurrent_calls_each_get_their_own_answer(envoy, stub, users):
    n = 32

    async def calls(client: Client) -> list[str]:
        out: list[str] = [""] * n

        async def one(i: int) -> None:
            result = await client.call_tool("list_users", {"expected_info": f"the user with id={i + 1}"})
            out[i] = result.content[0].text

        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(one, i)
        return out

    before = envoy.prometheus()
    texts = with_client(envoy.url("trim"), calls)
    after = envoy.prometheus()
    for i, text in enumerate(texts):
        # One row: no table for TOON, the extraction as the model wrote it.
        assert trimmed(text, f"the user with id={i + 1}") == [users[i]], (i, text[:200])
    assert trim_counts(delta(before, after)) == {"mcp_toon_trimmed": n}
    intents = sorted(asked(r)[0] for r in stub.requests())
    assert intents == sorted(f"the user with id={i + 1}" for i in range(n))
    # A boundary drawn for each call.
    assert len({asked(r)[3] for r in stub.requests()}) == n


# --- SSE -------------------------------------------------------------------------------------


def test_sse_tool_results_are_trimmed(llm, work_dir, users):
    llm.reset()
    sse = McpServer("trim-server-sse", [str(harness.PYTHON), str(TRIM_SERVER), "--sse"], work_dir)
    try:
        envoy = harness.start_envoy(
            [Listener("sse", {"trim": TRIM})], sse.port, work_dir, name="envoy-trim-sse", extra_clusters=llm_clusters(llm)
        )
        try:
            # The 2025-06-18 protocol: the SDK answers a POST with an event
            # stream (2026-07-28 stateless requests get JSON).
            raw = harness.post(
                envoy.url("sse"),
                {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                 "params": {"name": "list_users", "arguments": {"expected_info": "role=admin"}}},
                headers={"mcp-protocol-version": "2025-06-18"},
            )
            text = call(envoy.url("sse"), "list_users", {"expected_info": "role=owner"}, mode="legacy")
            counts = trim_counts(envoy.prometheus())
            log = envoy.proc.log()
        finally:
            envoy.stop()
        upstream_calls = [m for m in sse.requests() if m.get("method") == "tools/call"]
    finally:
        sse.stop()

    assert raw.headers["content-type"].startswith("text/event-stream")
    [data] = [l.removeprefix("data: ") for l in raw.text.splitlines() if l.startswith("data: ")]
    admins = [u for u in users if u["role"] == "admin"]
    same_json(trimmed(json.loads(data)["result"]["content"][0]["text"], "role=admin"), admins)
    same_json(trimmed(text, "role=owner"), [u for u in users if u["role"] == "owner"])
    assert counts["mcp_toon_trimmed"] == 2
    assert len(llm.requests()) == 2
    assert all("expected_info" not in json.dumps(m) for m in upstream_calls)
    assert SECRET not in log


@contextlib.contextmanager
def raw_sse_envoy(work_dir: Path, llm: LlmStub, name: str, body: bytes, hold: float = 0, pace: float = 0):
    """Envoy with trim on, in front of a raw upstream that answers
    `POST /mcp/<name>` with the event stream `body` (chunked, 4 KiB chunks,
    `pace` seconds apart), then keeps the stream open `hold` seconds
    (tests/e2e/raw_server.py)."""
    spec = work_dir / f"{name}.json"
    spec.write_text(json.dumps({name: {
        "status": 200, "headers": [["content-type", "text/event-stream"]],
        "body_b64": base64.b64encode(body).decode(), "framing": "chunked", "hold": hold, "pace": pace,
    }}))
    port = harness.free_port()
    server = Proc(f"{name}-server", [str(harness.PYTHON), str(Path(__file__).parent / "raw_server.py"), str(port), str(spec)], work_dir / f"{name}-server.log")
    try:
        harness.wait_for_port(port, server)
        envoy = harness.start_envoy(
            [Listener("sse", {"trim": TRIM})], port, work_dir, name=f"envoy-{name}", extra_clusters=llm_clusters(llm)
        )
        try:
            yield envoy
        finally:
            envoy.stop()
    finally:
        server.stop()


def sse_call(intent: str) -> bytes:
    return json.dumps(harness.jsonrpc("tools/call", {"name": "fetch", "arguments": {"expected_info": intent}}, id=5)).encode()


SSE_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def test_a_trimmed_event_goes_out_when_the_reply_arrives(llm, work_dir):
    """The server sends a tool result event and then nothing for a while,
    as a long-lived stream does: the trimmed event must reach the client
    when the LLM's reply arrives, not with the server's next byte."""
    llm.reset()
    rows = [{"id": i, "role": "admin" if i % 4 == 0 else "dev", "name": f"user-{i}"} for i in range(120)]
    message = {"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": json.dumps(rows, indent=2)}]}}
    event = f"event: message\ndata: {json.dumps(message)}\n\n".encode()
    hold = 20  # seconds the server then keeps the stream open, silent
    with raw_sse_envoy(work_dir, llm, "held", event, hold) as envoy:
        got = b""
        # A read timeout well below the hold: if the event waited for the
        # stream's end, the read fails.
        with httpx.Client(timeout=httpx.Timeout(30, read=hold / 2)) as client:
            with client.stream("POST", envoy.url("sse", "/mcp/held"), content=sse_call("role=admin"), headers=SSE_HEADERS) as r:
                for chunk in r.iter_raw():
                    got += chunk
                    if got.endswith(b"\n\n"):
                        break
        counts = trim_counts(envoy.prometheus())
    [data] = [l.removeprefix(b"data: ") for l in got.splitlines() if l.startswith(b"data: ")]
    text = json.loads(data)["result"]["content"][0]["text"]
    same_json(trimmed(text, "role=admin"), [r for r in rows if r["role"] == "admin"])
    assert counts["mcp_toon_trimmed"] == 1
    assert len(llm.requests()) == 1


def test_past_max_queued_bytes_the_event_goes_on_untrimmed(llm, work_dir):
    """While the callout runs (a slow model), the server writes more than
    trim.max_queued_bytes (512 KiB) of further events, 4 KiB at a time: the
    plugin stops holding them, and the result event goes on as it was, then
    the rest. What it held goes into Envoy's buffer of the paused response
    at once, so the default keeps it below Envoy's limit (1 MiB): the
    response is never reset for it."""
    llm.reset()
    lines = "\n".join(f"2026-12-01T10:{i % 60:02d}:00Z worker-{i % 7} handled request {i}" for i in range(400))
    message = {"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": lines}]}}
    note_event = 'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%s"}}\n\n'
    rest = "".join(note_event % ("n" * 80) for _ in range((1 << 20) // 150 + 200)).encode()
    assert len(rest) > 1 << 20
    body = f"event: message\ndata: {json.dumps(message)}\n\n".encode() + rest
    with raw_sse_envoy(work_dir, llm, "queued", body, pace=0.001) as envoy:
        before = envoy.prometheus()
        r = httpx.post(envoy.url("sse", "/mcp/queued"), content=sse_call("[stub:slow=5] worker-3"), headers=SSE_HEADERS, timeout=30)
        after = envoy.prometheus()
    # Text the clean stage leaves alone: everything arrives as sent.
    assert r.content == body
    assert trim_counts(delta(before, after)) == {"mcp_toon_passthrough_trim_queue_full": 1}


# --- the secret --------------------------------------------------------------------------------


def test_secret_never_reaches_logs_or_stats(envoy, stub):
    # Every path of the callout ran in this module; one more for certain.
    call(envoy.url("trim"), "list_users", {"expected_info": "role=admin"})
    call(envoy.url("trim"), "list_users", {"expected_info": "[stub:status=500]"})
    assert header(stub.requests()[0], "client_secret") == [SECRET]
    log = envoy.proc.log()
    # The log is Envoy's at info with wasm at debug: it holds the plugin's
    # decision records.
    assert "mcp-toon: " in log and '"stage":"trim"' in log
    assert SECRET not in log
    for path in ("/stats", "/stats/prometheus", "/stats?format=json"):
        assert SECRET not in envoy.admin(path), path
    access = envoy.access_log.read_text()
    assert '"outcome":"trimmed"' in access
    assert SECRET not in access
