"""Agent queries within their budget, through the real Envoy (issue 37).

With `project.queries` on, an agent sends a JMESPath expression in a tool
argument. Issue 37 reproduced on the built module: `to_array(@)|to_string(@)`
repeated 24 times (623 bytes) on a ~4 KB JSON result doubles a string at
each step; at 20 steps the VM's allocation of 524 MB failed and it trapped
(`unreachable`), stalling every stream of the worker. Two more inputs
trapped the crate's own interpreter: a slice step near 2^31 and `sort` of
numbers beyond f64.

A raw upstream (raw_server.py) answers with a ~4 KB and a ~1 MB table whose
strings hold quotes and backslashes (what `to_string` escapes again), with
`max_body_bytes` raised to 4 MiB so that the plugin reads the large one.
One Envoy, one worker (`--concurrency 1`). For each hostile query: the
response arrives with the block as the other stages leave it (the same
call without a query) and the note saying why; the reason is counted; the
VM did not fail (Envoy's `wasm.mcp_toon.vm_reload_*` counters stand still)
and the plugin still answers the next query. Then, while the hostile query's
result is on its way through the worker (an event on a stream the upstream
holds open), a second client's request is answered before that stream ends.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import harness
from harness import Listener

MB = 1 << 20
BIG = 4 * MB
CONFIG = {"max_body_bytes": BIG, "max_event_bytes": BIG, "project": {"queries": True}}
REQUEST_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": harness.PROTOCOL_VERSION,
}
DOUBLING = "|".join(["to_array(@)|to_string(@)"] * 24)
# How long the upstream holds a stream open after its event: the clock of
# the second-client test (see there).
HOLD_S = 1.0


def rows(n: int) -> str:
    """A table of about `n` bytes whose names hold quotes and backslashes."""
    out, size, i = [], 2, 0
    while size < n:
        row = {"id": i, "name": f'user "{i}" \\ x', "email": f"u{i}@example.com", "active": i % 2 == 0}
        out.append(row)
        size += len(json.dumps(row, separators=(",", ":"))) + 1
        i += 1
    return json.dumps(out, separators=(",", ":"))


def result(text: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}}, separators=(",", ":")).encode()


def event(text: str) -> bytes:
    return b"event: message\ndata: " + result(text) + b"\n\n"


TEXTS = {
    "small": rows(2048),
    "json4k": rows(4096),
    "json1m": rows(MB),
    # The crate's sort panicked on 1e400 among other numbers.
    "numbers": "[" + ",".join(["2", "1e400", "1", "-1e400", "0", "1e400"] + [str(i) for i in range(3, 60)]) + "]",
}
GATED = "json1m_gated"


def spec(body: bytes, content_type: str = "application/json", **wire: Any) -> dict[str, Any]:
    return {"status": 200, "headers": [["content-type", content_type]], "body_b64": base64.b64encode(body).decode(), "framing": "length", **wire}


# (case, query argument, reason in the note)
HOSTILE = [
    ("json4k", DOUBLING, "query_too_complex"),
    ("json1m", DOUBLING, "query_too_complex"),
    # Past the static bound only at run time: eight copies of the rows
    # sorted, twenty-four flattened.
    ("json1m", "sort_by([@,@,@,@,@,@,@,@][], &name)", "query_budget"),
    ("json1m", "length([" + ",".join(["@"] * 24) + "][] | [?id > `10`])", "query_budget"),
    # One step of the doubling: counted before it is written, larger than
    # the block.
    ("json1m", "to_array(@)|to_string(@)", "query_larger"),
    # Arguments that are no string.
    ("json4k", 42, "query_invalid"),
    ("json4k", {"expression": "[0]"}, "query_invalid"),
    ("json4k", None, "query_invalid"),
]


@pytest.fixture(scope="module")
def upstream(work_dir: Path):
    cases = {name: spec(result(text)) for name, text in TEXTS.items()}
    cases[GATED] = spec(event(TEXTS["json1m"]), "text/event-stream", framing="chunked", chunk=64 * 1024, gate=True, hold=HOLD_S)
    path = work_dir / "query-budget-cases.json"
    path.write_text(json.dumps(cases))
    port = harness.free_port()
    proc = harness.Proc("query-budget-server", [str(harness.PYTHON), str(Path(__file__).parent / "raw_server.py"), str(port), str(path)], work_dir / "query-budget-server.log")
    try:
        harness.wait_for_port(port, proc)
        yield port
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def envoy(upstream: int, work_dir: Path):
    e = harness.start_envoy([Listener("queries", CONFIG)], upstream, work_dir, name="envoy-query-budget", concurrency=1)
    try:
        yield e
    finally:
        e.stop()


def call(envoy: harness.Envoy, case: str, query: Any = ..., timeout: float = 60) -> tuple[float, str]:
    """A tools/call answered by `case`, with `query` as its `jmespath`
    argument (none when left out): seconds until the whole response, and
    the text block."""
    arguments = {} if query is ... else {"jmespath": query}
    body = json.dumps(harness.jsonrpc("tools/call", {"name": "fetch", "arguments": arguments}, id=1)).encode()
    with httpx.Client(timeout=timeout) as client:
        start = time.monotonic()
        r = client.post(envoy.url("queries", f"/mcp/{case}"), content=body, headers=REQUEST_HEADERS)
        took = time.monotonic() - start
    assert r.status_code == 200, r.status_code
    text = r.text
    if r.headers["content-type"].startswith("text/event-stream"):
        text = next(line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: "))
    return took, json.loads(text)["result"]["content"][0]["text"]


def vm_failures(envoy: harness.Envoy) -> dict[str, int]:
    """Envoy's counts of the plugin's VM reloads (the listeners' FAIL_RELOAD
    makes a new VM after a trap) and of the V8 VMs it created."""
    out = {}
    for line in envoy.admin("/stats").splitlines():
        name, _, value = line.partition(": ")
        if name.startswith("wasm.mcp_toon.vm_reload") or name == "wasm.envoy.wasm.runtime.v8.created":
            out[name] = int(value)
    assert {"wasm.mcp_toon.vm_reload", "wasm.envoy.wasm.runtime.v8.created"} <= out.keys(), out
    return out


def moved(envoy: harness.Envoy, before: dict[str, float]) -> dict[str, int]:
    after = envoy.prometheus()
    return {k.removeprefix("mcp_toon_"): int(v - before.get(k, 0.0)) for k, v in after.items()
            if k.startswith("mcp_toon_passthrough_query") or k == "mcp_toon_queried"
            if v != before.get(k, 0.0)}


def still_answers(envoy: harness.Envoy) -> None:
    """The plugin, not a fresh VM or none, answers the next query."""
    before = envoy.prometheus()
    _, text = call(envoy, "small", "[0].id")
    assert text == "0"
    assert moved(envoy, before) == {"queried": 1}


@pytest.mark.parametrize("case,query,reason", HOSTILE, ids=[f"{c}-{r}-{str(q)[:24]}" for c, q, r in HOSTILE])
def test_a_hostile_query_gets_the_full_result_and_the_note(envoy, case, query, reason):
    _, plain = call(envoy, case)
    failures = vm_failures(envoy)
    before = envoy.prometheus()
    took, text = call(envoy, case, query)
    body, _, note = text.rpartition("\n")
    assert note.startswith(f"[mcp-toon: query not applied ({reason}): ") and note.endswith("; this is the full result]"), note
    if reason == "query_invalid":
        kind = {int: "a number", dict: "an object", type(None): "null"}[type(query)]
        assert f"must be a string holding a JMESPath expression, not {kind}" in note, note
    # Everything before the note is what the plugin sends without a query.
    assert body == plain
    assert moved(envoy, before) == {f"passthrough_{reason}": 1}
    assert vm_failures(envoy) == failures
    print(f"{case} {reason} {str(query)[:40]!r}: {took:.3f} s")
    still_answers(envoy)


def test_inputs_that_trapped_the_crates_interpreter_are_answered(envoy):
    """A slice step near 2^31 made the crate index out of bounds, and its
    order of numbers beyond f64 made Rust's sort panic: both trapped the
    VM. Now they answer, as JSON and the JavaScript reference read them."""
    failures = vm_failures(envoy)
    _, text = call(envoy, "json4k", "[1::2147483647].id")
    assert text == "[1]"
    _, text = call(envoy, "numbers", "sort(@)[:3]")
    assert json.loads(text) == [float("-inf"), 0, 1] or text == "[-1e+400,0,1]", text
    assert vm_failures(envoy) == failures
    still_answers(envoy)


def gate(upstream: int, action: str) -> None:
    r = httpx.post(f"http://127.0.0.1:{upstream}/{action}/{GATED}", timeout=60)
    assert r.status_code in (200, 404), r.status_code  # 404: the hold already ended it


@pytest.mark.parametrize("query", [DOUBLING, "sort_by([@,@,@,@,@,@,@,@][], &name)"], ids=["doubling", "sort-copies"])
def test_a_second_client_is_answered_while_a_hostile_query_runs(envoy, upstream, query):
    """One worker. The upstream sends the ~1 MB result as one event on a
    stream it holds open, and ends the stream when the test says so or
    HOLD_S (1 s) after the event. Once the event is on its way, a second
    client sends a small request. A worker the query stalls for longer
    than the hold serves nothing else until then, and finds the stream's
    end already waiting: the hostile response completes first. A worker it
    does not stall answers the small request while the stream is held, and
    only then does the test end the stream. So the small response must
    complete first — an order, with the hold as its clock (as in
    test_hostile.py)."""
    failures = vm_failures(envoy)
    before = envoy.prometheus()
    order: list[str] = []
    got: list[str] = []
    started = threading.Event()
    failed: list[BaseException] = []

    def hostile() -> None:
        try:
            body = json.dumps(harness.jsonrpc("tools/call", {"name": "fetch", "arguments": {"jmespath": query}}, id=1)).encode()
            with httpx.Client(timeout=120) as client:
                with client.stream("POST", envoy.url("queries", f"/mcp/{GATED}"), content=body, headers=REQUEST_HEADERS) as r:
                    assert r.status_code == 200
                    started.set()
                    got.append(b"".join(r.iter_raw()).decode())
            order.append("hostile")
        except BaseException as exc:  # re-raised below
            failed.append(exc)
            started.set()

    thread = threading.Thread(target=hostile)
    thread.start()
    try:
        assert started.wait(60) and not failed, failed
        gate(upstream, "_gate")
        _, small = call(envoy, "small")
        order.append("small")
    finally:
        gate(upstream, "_release")
        thread.join(timeout=120)
    assert not failed, failed
    assert order == ["small", "hostile"], order
    assert small == call(envoy, "small")[1]
    [data] = [line.removeprefix("data: ") for line in got[0].splitlines() if line.startswith("data: ")]
    note = json.loads(data)["result"]["content"][0]["text"].rpartition("\n")[2]
    assert note.startswith("[mcp-toon: query not applied (query_"), note
    assert moved(envoy, before).keys() == {"passthrough_query_too_complex" if query == DOUBLING else "passthrough_query_budget"}
    assert vm_failures(envoy) == failures
    still_answers(envoy)
