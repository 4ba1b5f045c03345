"""Upstreams that misbehave — trailers, bodies cut short, resets — through
the real Envoy, each compared with the same Envoy without the plugin
(listener `bare`). The promise (DESIGN.md): whatever the upstream does, the
client receives at least what it would have received without the plugin.

The upstream is tests/e2e/misbehaving_server.py (HTTP/1.1, or HTTP/2 for
paths under `/h2/`); the client is tests/e2e/rawclient.py, which reports
the body bytes, the trailers and whether the message ended properly.
Trailers cross HTTP/1.1 only where both sides enable them, as here.
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import harness
import rawclient
from harness import MARKER, Listener, split_marker, toon_decode

HERE = Path(__file__).parent
LLM_STUB = HERE / "llm_stub.py"

ROWS = [{"id": i, "name": f"user {i}", "role": "admin", "active": True} for i in range(40)]
TABLE = json.dumps(ROWS, indent=2)
TRAILERS = [["x-digest", "demo"]]
# What the plugin does to the table at defaults: compact JSON, then TOON.
ENCODED = {"cleaned": 1, "clean_compact_json": 1, "encoded": 1}


def result(text: str, id: int = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}], "isError": False}}).encode()


GOOD = result(TABLE)
PROGRESS = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}'
SSE = b"data: " + PROGRESS + b"\n\nevent: message\ndata: " + GOOD + b"\n\n"
SSE_PARTIAL = SSE + b"data: " + PROGRESS[:30]


def case(body: bytes, content_type: str = "application/json", **extra: Any) -> dict[str, Any]:
    return {"content_type": content_type, "body_b64": base64.b64encode(body).decode(), "chunk": 4096, **extra}


CASES = {
    "json_trailers": case(GOOD, framing="chunked", trailers=TRAILERS),
    "json_trailers_announced": case(GOOD, framing="chunked", trailers=TRAILERS, announce=True),
    # HTTP/2 only: a length and trailers (HTTP/1.1 trailers need chunked).
    "json_length_trailers": case(GOOD, framing="length", trailers=TRAILERS),
    # Not one JSON value when the trailers come.
    "json_unfinished_trailers": case(GOOD[: len(GOOD) // 2], framing="chunked", trailers=TRAILERS),
    "json_cut": case(GOOD, framing="length", cut=len(GOOD) // 2),
    "json_cut_chunked": case(GOOD, framing="chunked", cut=len(GOOD) // 2),
    "sse_trailers": case(SSE, "text/event-stream", framing="chunked", trailers=TRAILERS),
    "sse_partial_trailers": case(SSE_PARTIAL, "text/event-stream", framing="chunked", trailers=TRAILERS),
    "sse_cut": case(SSE_PARTIAL, "text/event-stream", framing="chunked", cut=len(SSE_PARTIAL)),
    # The result waits for a slow trim callout while the rest of the stream
    # and its trailers arrive.
    "sse_trim_trailers": case(SSE + b"data: " + PROGRESS + b"\n\n", "text/event-stream", framing="chunked", trailers=TRAILERS, chunk=len(SSE)),
    "echo": {"content_type": "application/json", "echo": True, "framing": "chunked"},
    # The result, then nothing until the test releases the rest.
    "sse_idle": case(SSE, "text/event-stream", framing="chunked", release=True, tail_b64=base64.b64encode(b"data: " + PROGRESS + b"\n\n").decode()),
}

TRIM = {"enabled": True, "cluster": "llm", "threshold_bytes": 200, "timeout_ms": 5000}
LISTENERS = [
    Listener("bare", {}),
    Listener("held", {"hold_headers": True}),
    Listener("plain", {}, allow_on_headers_stop_iteration=False),
    Listener("trim", {"trim": TRIM}, allow_on_headers_stop_iteration=False),
    # Paging on: request headers wait until the body says it is no page call.
    Listener("paged", {"hold_headers": True, "paging": {"enabled": True}}),
]
VIA = ["held", "plain"]
PROTOCOLS = ["h1", "h2"]
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def trimmed_rows(text: str, intent: str) -> Any:
    """The rows of a block trimmed to `intent`: its first line names the
    intent (crates/core/src/stage/trim.rs), the JSON extraction follows."""
    note, _, rest = text.partition("\n")
    assert note == (
        f"[mcp-toon: trimmed to the intent {json.dumps(intent, ensure_ascii=False)}; "
        "call again without expected_info for the whole result]"
    ), note
    return json.loads(rest)


def call(intent: str | None = None) -> bytes:
    arguments: dict[str, Any] = {"limit": 40}
    if intent is not None:
        arguments["expected_info"] = intent
    return json.dumps(harness.jsonrpc("tools/call", {"name": "rows", "arguments": arguments})).encode()


# --- fixtures -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def upstream(work_dir: Path):
    spec = work_dir / "misbehaving-cases.json"
    spec.write_text(json.dumps(CASES))
    port = harness.free_port()
    proc = harness.Proc("misbehaving-server", [str(harness.PYTHON), str(HERE / "misbehaving_server.py"), str(port), str(spec)], work_dir / "misbehaving-server.log")
    try:
        harness.wait_for_port(port, proc)
        yield port
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def llm(work_dir: Path):
    port = harness.free_port()
    proc = harness.Proc("llm-stub", [str(harness.PYTHON), str(LLM_STUB), "--port", str(port)], work_dir / f"llm-stub-{port}.log")
    try:
        harness.wait_for_port(port, proc)
        yield port
    finally:
        proc.stop()


def with_trailers_and_h2(upstream_port: int):
    """Trailers on both HTTP/1.1 sides, an HTTP/2 cluster for `/h2/`, and
    no plugin on the `bare` listener."""

    def tweak(config: dict[str, Any]) -> None:
        clusters = config["static_resources"]["clusters"]
        h1 = clusters[0]
        h1["typed_extension_protocol_options"] = {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                "explicit_http_config": {"http_protocol_options": {"enable_trailers": True}},
            }
        }
        h2 = json.loads(json.dumps(h1))
        h2["name"] = h2["load_assignment"]["cluster_name"] = "h2_upstream"
        h2["typed_extension_protocol_options"]["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]["explicit_http_config"] = {
            "http2_protocol_options": {}
        }
        clusters.append(h2)
        for listener in config["static_resources"]["listeners"]:
            hcm = listener["filter_chains"][0]["filters"][0]["typed_config"]
            hcm["http_protocol_options"] = {"enable_trailers": True}
            routes = hcm["route_config"]["virtual_hosts"][0]["routes"]
            routes.insert(0, {"name": "h2", "match": {"prefix": "/h2/"}, "route": {"cluster": "h2_upstream", "timeout": "60s"}})
            if listener["name"] == "bare":
                hcm["http_filters"] = [f for f in hcm["http_filters"] if f["name"] != "envoy.filters.http.wasm"]

    return tweak


@pytest.fixture(scope="module")
def envoy(upstream: int, llm: int, work_dir: Path):
    e = harness.start_envoy(
        LISTENERS,
        upstream,
        work_dir,
        name="envoy-upstream",
        extra_clusters=[harness.static_cluster("llm", llm)],
        tweak=with_trailers_and_h2(upstream),
    )
    try:
        yield e
    finally:
        e.stop()


# --- helpers ------------------------------------------------------------------------


def fetch(envoy: harness.Envoy, listener: str, name: str, proto: str, body: bytes | None = None, **kw: Any) -> rawclient.Reply:
    """POSTs to case `name`, over HTTP/2 on both sides of Envoy for `h2`."""
    path = f"/h2/mcp/{name}" if proto == "h2" else f"/mcp/{name}"
    return rawclient.post(envoy.listeners[listener].port, path, call() if body is None else body, HEADERS, http2=proto == "h2", **kw)


def counters(envoy: harness.Envoy) -> dict[str, float]:
    return {k: v for k, v in envoy.prometheus().items() if k.startswith("mcp_toon_") and "bytes" not in k}


def moved(envoy: harness.Envoy, before: dict[str, float], expected: dict[str, int]) -> dict[str, int]:
    """The counters that moved since `before` (prefix stripped), once they
    equal `expected` or after 10 s: a stream is counted when Envoy logs it."""
    deadline = time.monotonic() + 10
    while True:
        now = counters(envoy)
        delta = {k.removeprefix("mcp_toon_").removeprefix("passthrough_"): int(v - before.get(k, 0)) for k, v in now.items() if v != before.get(k, 0)}
        if delta == expected or time.monotonic() > deadline:
            return delta


def same_result(via: bytes, bare: bytes) -> None:
    """The same JSON-RPC message; a text block may be TOON-encoded."""
    a, b = json.loads(via), json.loads(bare)
    text = a["result"]["content"][0]["text"]
    if text.startswith(MARKER):
        harness.same_json(toon_decode(split_marker(text)), json.loads(b["result"]["content"][0]["text"]))
        a["result"]["content"][0]["text"] = b["result"]["content"][0]["text"]
    assert a == b


def events(body: bytes) -> list[bytes]:
    """The complete events of an SSE body (a partial last one dropped)."""
    *done, _partial = body.split(b"\n\n")
    return done


# --- trailers -----------------------------------------------------------------------


# HTTP/1.1 carries trailers only in a chunked body; HTTP/2 also after a
# content-length (so held headers apply).
TRAILER_CASES = [
    (name, listener, proto)
    for name, protos in [("json_trailers", PROTOCOLS), ("json_trailers_announced", ["h1"]), ("json_length_trailers", ["h2"])]
    for listener in VIA
    for proto in protos
]


@pytest.mark.parametrize("name,listener,proto", TRAILER_CASES)
def test_json_result_ending_with_trailers_arrives_whole_and_rewritten(envoy, name, listener, proto):
    """The body ends at its JSON value's closing bracket, in a body callback
    that can still write: the trailers find nothing held. With a length over
    HTTP/2 the headers are held and get the exact new length."""
    bare = fetch(envoy, "bare", name, proto)
    assert bare.complete and bare.trailers == [("x-digest", "demo")] and bare.body == GOOD
    before = counters(envoy)
    via = fetch(envoy, listener, name, proto)
    assert (via.status, via.complete, via.trailers) == (bare.status, True, bare.trailers)
    assert json.loads(via.body)["result"]["content"][0]["text"].startswith(MARKER)
    same_result(via.body, bare.body)
    assert moved(envoy, before, ENCODED) == ENCODED
    if listener == "held" and name == "json_length_trailers":
        assert via.headers["content-length"] == str(len(via.body))
        assert "encoded=1" in via.headers["x-mcp-toon"].split()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_trailers_after_an_unfinished_json_value_are_counted(envoy, proto):
    """The one case the platform leaves: trailers end a body that is not one
    finished JSON value (malformed, useless to the client either way), and
    Envoy gives the trailers callback no buffer for what the plugin took out.
    The loss is counted; the trailers and the status still arrive."""
    name = "json_unfinished_trailers"
    bare = fetch(envoy, "bare", name, proto)
    assert bare.complete and bare.body == GOOD[: len(GOOD) // 2]
    before = counters(envoy)
    via = fetch(envoy, "plain", name, proto)
    assert (via.status, via.complete, via.trailers) == (200, True, bare.trailers)
    assert via.body == b""
    expected = {"malformed_response": 1, "lost_at_trailers": 1}
    assert moved(envoy, before, expected) == expected


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_sse_ending_with_trailers_keeps_every_event(envoy, proto):
    bare = fetch(envoy, "bare", "sse_trailers", proto)
    assert bare.complete and bare.body == SSE
    via = fetch(envoy, "plain", "sse_trailers", proto)
    assert (via.complete, via.trailers) == (True, bare.trailers)
    got, want = events(via.body + b"\n\n"), events(bare.body + b"\n\n")
    assert got[0] == want[0], "the progress notification is untouched"
    assert got[1].startswith(b"event: message\ndata: ")
    same_result(got[1].removeprefix(b"event: message\ndata: "), want[1].removeprefix(b"event: message\ndata: "))


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_sse_ending_mid_event_with_trailers_keeps_the_complete_events(envoy, proto):
    """An event cut by the trailers is never dispatched (WHATWG HTML
    §9.2.6); every complete event arrives, the cut one is counted."""
    bare = fetch(envoy, "bare", "sse_partial_trailers", proto)
    assert bare.body == SSE_PARTIAL
    before = counters(envoy)
    via = fetch(envoy, "plain", "sse_partial_trailers", proto)
    assert (via.complete, via.trailers) == (True, bare.trailers)
    assert len(events(via.body)) == len(events(bare.body)) == 2
    assert via.body.endswith(b"\n\n")
    expected = {**ENCODED, "stream_truncated": 1, "lost_at_trailers": 1}
    assert moved(envoy, before, expected) == expected


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_sse_events_queued_behind_a_trim_callout_arrive_before_the_trailers(envoy, proto):
    """The result waits for a slow trim reply; the next event and the
    trailers arrive meanwhile. The stream stays paused, the trailers wait,
    and the reply sends everything, in order."""
    body = call("id=3 [stub:slow=0.5]")
    bare = fetch(envoy, "bare", "sse_trim_trailers", proto, body=body)
    via = fetch(envoy, "trim", "sse_trim_trailers", proto, body=body)
    assert (via.complete, via.trailers) == (True, bare.trailers)
    got = events(via.body)
    assert len(got) == 3
    assert got[0] == got[2] == b"data: " + PROGRESS
    trimmed = json.loads(got[1].removeprefix(b"event: message\ndata: "))
    assert trimmed_rows(trimmed["result"]["content"][0]["text"], "id=3 [stub:slow=0.5]") == [ROWS[3]]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_request_ending_with_trailers_reaches_the_server_without_the_intent(envoy, proto):
    """Trim strips the intent argument, so the plugin holds the request body
    back; with trailers there is no last body callback, and the body is
    rewritten where its JSON value ends."""
    body = call("ids only")
    trailers = [("x-request-digest", "abc")]
    bare = fetch(envoy, "bare", "echo", proto, body=body, trailers=trailers)
    got_bare = json.loads(json.loads(bare.body)["result"]["content"][0]["text"])
    assert base64.b64decode(got_bare["body_b64"]) == body
    assert got_bare["trailers"] == [["x-request-digest", "abc"]]
    via = fetch(envoy, "trim", "echo", proto, body=body, trailers=trailers)
    assert via.complete
    got = json.loads(json.loads(via.body)["result"]["content"][0]["text"])
    reached = json.loads(base64.b64decode(got["body_b64"]))
    expected = json.loads(body)
    del expected["params"]["arguments"]["expected_info"]
    assert reached == expected
    assert got["trailers"] == [["x-request-digest", "abc"]]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_request_with_trailers_behind_held_request_headers(envoy, proto):
    """With paging on, the request headers wait for the body (a page call is
    answered without the server); a request that ends with trailers reaches
    the server whole, headers, body and trailers, as through Envoy alone."""
    body = call("ids only")
    trailers = [("x-request-digest", "abc")]
    via = fetch(envoy, "paged", "echo", proto, body=body, trailers=trailers)
    assert via.complete
    got = json.loads(json.loads(via.body)["result"]["content"][0]["text"])
    assert base64.b64decode(got["body_b64"]) == body
    assert got["trailers"] == [["x-request-digest", "abc"]]


def test_a_trimmed_sse_result_goes_out_when_the_reply_comes(envoy, upstream):
    """Issue 13: the trim reply must not wait for the next upstream byte,
    which on a long-lived stream may never come. The upstream sends the
    result and then nothing until the client has read the trimmed result;
    a plugin that waited for more upstream bytes would leave this client
    reading until its timeout."""
    body = call("id=3 [stub:slow=0.2]")
    url = f"http://127.0.0.1:{envoy.listeners['trim'].port}/mcp/sse_idle"
    with httpx.Client(timeout=15) as client, client.stream("POST", url, content=body, headers=HEADERS) as r:
        chunks = r.iter_raw()
        got = b""
        for chunk in chunks:
            got += chunk
            if len(events(got)) == 2:
                break
        progress, message = events(got)
        assert progress == b"data: " + PROGRESS
        trimmed = json.loads(message.removeprefix(b"event: message\ndata: "))
        assert trimmed_rows(trimmed["result"]["content"][0]["text"], "id=3 [stub:slow=0.2]") == [ROWS[3]]
        httpx.post(f"http://127.0.0.1:{upstream}/_release/sse_idle", timeout=10)
        rest = b"".join(chunks)
    assert got + rest == b"".join(e + b"\n\n" for e in [progress, message, b"data: " + PROGRESS])


# --- bodies cut short -----------------------------------------------------------------


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_sse_cut_short_delivers_every_complete_event(envoy, proto):
    """The upstream goes away mid-event. Without the plugin the client gets
    the complete events and the partial one, then a reset; with it, the
    same complete events (the result rewritten), then the reset: what the
    plugin held was the unfinished event, which no SSE client dispatches."""
    bare = fetch(envoy, "bare", "sse_cut", proto)
    assert not bare.complete and bare.body == SSE_PARTIAL
    before = counters(envoy)
    via = fetch(envoy, "plain", "sse_cut", proto)
    assert not via.complete
    assert len(events(via.body)) == len(events(bare.body)) == 2
    expected = {**ENCODED, "lost_at_reset": 1}
    assert moved(envoy, before, expected) == expected


@pytest.mark.parametrize(
    "name,listener,proto",
    [(n, l, p) for l in VIA for n, p in [("json_cut", "h1"), ("json_cut", "h2"), ("json_cut_chunked", "h1")]],
)
def test_json_cut_short_fails_as_it_does_without_the_plugin(envoy, name, listener, proto):
    """What the platform leaves: Envoy resets the client's stream when the
    upstream goes away mid-body, without a last body callback, and drops
    what a body filter holds. Without the plugin the client gets half a
    JSON value and the reset; with it, the reset (or, for held headers, the
    error Envoy answers in their place). Either way no client can use the
    response; the loss is counted and the VM keeps serving."""
    bare = fetch(envoy, "bare", name, proto)
    assert not bare.complete and bare.body == GOOD[: len(GOOD) // 2]
    before = counters(envoy)
    via = fetch(envoy, listener, name, proto)
    assert not via.complete or via.status >= 500
    assert moved(envoy, before, {"lost_at_reset": 1}) == {"lost_at_reset": 1}
    after = fetch(envoy, listener, "json_trailers", proto)
    assert after.complete and after.trailers == [("x-digest", "demo")]
