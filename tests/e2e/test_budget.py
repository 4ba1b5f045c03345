"""Budgets and pages through the real Envoy (V8), with the official clients:
the Python SDK (`mcp` 2.x, MCP 2026-07-28, no sessions) and the TypeScript
SDK (`@modelcontextprotocol/sdk` 1.x, MCP 2025-11-25, sessions), against the
demo server (examples/demo_server.py).

- a 3 MB table under a 20,000-token budget arrives as a first page within
  budget (o200k_base, counted by `mcp-toon measure`) plus a handle; the page
  tool returns every remaining row once, in order; the pages decode (the
  TypeScript TOON reference decoder) and concatenate to the original value;
- forged and foreign handles are refused with a tool error;
- a result that carries `structuredContent` is not cut (its two forms must
  not disagree, issue 13): it passes whole, counted
  `budget_structured_content`;
- a 2.3 MB table of Polish, Icelandic and Vietnamese customers (names,
  emails, cities: what the token estimator once under-counted by 4-5 %,
  issue 39) under a 20,000-token budget: every page within budget in
  o200k_base tokens, and the pages concatenate to the original;
- the decision record in the access log shows the cut (`stage: budget`,
  `outcome: cut`) and each page call (`stage: page`);
- the page store's byte, page and time limits hold under concurrent load on
  a two-worker Envoy;
- pages work across two plugin Envoys behind a round-robin Envoy: a page the
  serving gateway does not hold is rebuilt by calling the (read-only) tool
  again, and a result that changed in between is reported, not mixed.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

import artifacts
import harness
import loadgen
import peers
from harness import Listener, free_port, same_json, split_marker, toon_decode

ROOT = harness.ROOT
CLI = artifacts.CLI
E2E = ROOT / "tests" / "e2e"
KEY = "e2e-key-0123456789abcdef0123456789abcdef"
BUDGET = 20_000
PAGE_TOOL = "mcp_toon_page"
CLEAN_OFF = {"html_to_markdown": False, "strip_base64": False, "collapse_whitespace": False}
PAGED = {"budget": {"tokens": BUDGET}, "paging": {"enabled": True}}
# The smallest budget: the demo's `station_readings` (structured output)
# is far over it.
STRUCTURED_BUDGET = 200
CONFIG = {
    "hold_headers": True,
    "clean": CLEAN_OFF,
    "tools": {
        "export_logs": PAGED,
        "export_rows": PAGED,
        "live_feed": PAGED,
        "station_readings": {"budget": {"tokens": STRUCTURED_BUDGET}, "paging": {"enabled": True}},
    },
    "paging": {"key": KEY},
}
HANDLE = re.compile(r'\{"handle":"([A-Za-z0-9_-]+)"\}')


def handle_of(notice: str) -> str | None:
    m = HANDLE.search(notice)
    return m.group(1) if m else None


def rows_of(text: str) -> list[Any]:
    """A page's value: TOON behind the marker (reference decoder) or JSON."""
    if text.startswith("[mcp-toon/v1]"):
        return toon_decode(split_marker(text))
    return json.loads(text)


def texts(result: Any) -> list[str]:
    return [c.text for c in result.content if c.type == "text"]


def o200k_tokens(page_texts: list[list[str]], work: Path) -> list[int]:
    """o200k_base tokens of each page's text items, by the project's CLI
    (`mcp-toon measure`: a page that is already a TOON block passes the
    pipeline unchanged, so `tokens_before` is what the agent reads)."""
    if not CLI.exists():
        subprocess.run(["cargo", "build", "--release", "-p", "mcp-toon-cli", "--bin", "mcp-toon"], cwd=ROOT, check=True)
    d = work / f"pages-{time.monotonic_ns()}"
    d.mkdir(parents=True)
    for i, items in enumerate(page_texts):
        body = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": t} for t in items]}}
        (d / f"page-{i:04d}.json").write_text(json.dumps(body))
    out = subprocess.run([str(CLI), "measure", "--format", "json", str(d)], capture_output=True, check=True, timeout=300)
    report = json.loads(out.stdout)
    by_name = {Path(p["payload"]).name: sum(r["tokens_before"] for r in p["rows"]) for p in report["payloads"]}
    return [by_name[f"page-{i:04d}.json"] for i in range(len(page_texts))]


def py_pages(url: str, tool: str, args: dict[str, Any], list_first: int = 0) -> list[list[str]]:
    """The Python client calls `tool`, then the page tool with each handle."""

    async def main() -> list[list[str]]:
        out = []
        async with Client(url, cache=None) as client:
            for _ in range(list_first):
                await client.list_tools()
            result = await client.call_tool(tool, args)
            out.append(texts(result))
            while (h := handle_of(out[-1][-1])) is not None:
                result = await client.call_tool(PAGE_TOOL, {"handle": h})
                out.append(texts(result))
                if result.is_error:
                    break
        return out

    return anyio.run(main)


def ts_pages(url: str, tool: str, args: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any], str | None]:
    """The TypeScript client does the same; returns pages, its listing and
    its session id."""
    out = subprocess.run(
        [str(peers.NODE), str(E2E / "page_client.mjs"), url, tool, json.dumps(args), PAGE_TOOL],
        capture_output=True, text=True, timeout=600, cwd=E2E,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return lines[1:-1], lines[0], lines[-1]["sessionId"]


def upstream_requests(envoy: harness.Envoy, cluster: str = "mcp_upstream") -> float:
    for line in envoy.admin("/stats").splitlines():
        if line.startswith(f"cluster.{cluster}.upstream_rq_total:"):
            return float(line.split(":", 1)[1])
    return 0.0


def metric(envoy: harness.Envoy, name: str) -> float:
    for line in envoy.admin("/stats").splitlines():
        if line.startswith(f"wasmcustom.{name}:"):
            return float(line.split(":", 1)[1])
    return 0.0


@pytest.fixture(scope="module")
def single(demo, work_dir: Path):
    access_log = work_dir / "budget-access.log"
    e = harness.start_envoy([Listener("paged", CONFIG, True), Listener("plain", {"clean": CLEAN_OFF}, True)],
                            demo.port, work_dir, name="envoy-budget", access_log_path=access_log)
    e.access_log = access_log
    try:
        yield e
    finally:
        e.stop()


def record_of(envoy: harness.Envoy, listener: str, request_id: int) -> list[dict[str, Any]]:
    """The decisions of the request with this JSON-RPC id, from the access
    log's decision record (filter state `wasm.mcp_toon`), once its line is
    there (Envoy flushes the file every 0.1 s here)."""
    deadline = time.monotonic() + 10
    while True:
        for line in envoy.access_log.read_text().splitlines():
            if line.startswith(f"[{listener}] ") and f'"id":"{request_id}"' in line:
                return json.loads(line.split(" mcp_toon=", 1)[1])["decisions"]
        assert time.monotonic() < deadline, envoy.access_log.read_text()[-3000:]
        time.sleep(0.1)


def call_with_id(url: str, tool: str, args: dict[str, Any], request_id: int) -> dict[str, Any]:
    body = harness.jsonrpc("tools/call", {"name": tool, "arguments": args}, id=request_id)
    return harness.post(url, body, timeout=120).json()["result"]


def direct_text(url: str, tool: str, args: dict[str, Any]) -> str:
    r = harness.call_tool(url, tool, args, timeout=120)
    return r.json()["result"]["content"][0]["text"]


def test_a_3mb_table_pages_within_budget_and_back_to_the_original(demo, single, work_dir):
    original = json.loads(direct_text(demo.url, "export_logs", {"megabytes": 3}))
    assert len(json.dumps(original)) > 3_000_000
    pages = py_pages(single.url("paged"), "export_logs", {"megabytes": 3})
    first = pages[0]
    assert len(first) == 2 and first[1].startswith("[mcp-toon] Result cut to fit 20000 tokens.")
    assert handle_of(first[1]), first[1]
    assert all(len(p) == 2 for p in pages), [p[-1][:200] for p in pages if len(p) != 2]
    assert pages[-1][1].endswith("This is the last page."), pages[-1][1]
    tokens = o200k_tokens(pages, work_dir)
    assert max(tokens) <= BUDGET, tokens
    assert tokens[0] > BUDGET * 0.7, "the estimator over-counts only slightly"
    rows: list[Any] = []
    for n, page in enumerate(pages, start=1):
        value = rows_of(page[0])
        assert isinstance(value, list) and value, n
        header = page[0].split("\n", 2)[1]
        assert header.startswith(f"[{len(value)}]{{"), header  # the table's [N] is true
        if n > 1:
            assert page[1].startswith(f"[mcp-toon] Page {n} of {len(pages)}: rows {len(rows) + 1}-"), page[1]
        rows.extend(value)
    assert [r["seq"] for r in rows] == list(range(1, len(original) + 1)), "every row once, in order"
    same_json(rows, original)
    assert metric(single, "mcp_toon_cut") >= 1
    assert metric(single, "mcp_toon_paged") >= len(pages) - 1


def international_rows(rows: int) -> list[dict[str, Any]]:
    """Customers of bench/international.py (names as natives write them)."""
    out = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), str(ROOT / "bench" / "international.py"), "--rows", str(rows), "--langs", "pl,is,vi"],
        capture_output=True, check=True, timeout=120,
    )
    return json.loads(out.stdout)


def test_an_international_table_pages_within_budget_in_real_tokens(work_dir):
    table = international_rows(11_500)
    text = json.dumps(table, ensure_ascii=False, separators=(",", ":"))
    assert len(text.encode()) > 2_300_000
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}}).encode()
    d = work_dir / "intl"
    upstream, port = loadgen.start_canned_upstream([loadgen.Canned("intl", body)], d, name="envoy-canned-intl")
    config = {"hold_headers": True, "tools": {"export": PAGED}}
    envoy = harness.start_envoy([Listener("intl", config, True)], port, d, name="envoy-budget-intl")
    try:
        url = envoy.url("intl", "/load/intl")
        first = harness.call_tool(url, "export", timeout=120).json()["result"]
        pages = [[c["text"] for c in first["content"]]]
        while (h := handle_of(pages[-1][-1])) is not None:
            r = harness.call_tool(url, PAGE_TOOL, {"handle": h}, timeout=60).json()["result"]
            assert not r.get("isError"), r
            pages.append([c["text"] for c in r["content"]])
    finally:
        envoy.stop()
        upstream.stop()
    assert len(pages) > 20 and pages[-1][1].endswith("This is the last page."), len(pages)
    tokens = o200k_tokens(pages, work_dir)
    assert max(tokens) <= BUDGET, [t for t in tokens if t > BUDGET]
    assert min(tokens[:-1]) > BUDGET * 0.8, "pages are not much smaller than the budget"
    rows: list[Any] = []
    for page in pages:
        rows.extend(rows_of(page[0]))
    same_json(rows, table)


def test_page_calls_never_reach_the_server_and_answer_as_the_client_accepts(demo, single):
    r = harness.call_tool(single.url("paged"), "export_rows", {"count": 8000})
    # Held headers: the cut result says so, with its exact length.
    assert "cut=1" in r.headers["x-mcp-toon"].split(" "), r.headers["x-mcp-toon"]
    assert int(r.headers["content-length"]) == len(r.content)
    notice = r.json()["result"]["content"][-1]["text"]
    h = handle_of(notice)
    before = upstream_requests(single)
    sse = harness.call_tool(single.url("paged"), PAGE_TOOL, {"handle": h}, headers={"accept": "text/event-stream"})
    assert sse.headers["content-type"] == "text/event-stream"
    assert sse.headers["x-mcp-toon"] == "paged=1"
    event = sse.content.decode()
    assert event.startswith("event: message\ndata: ") and event.endswith("\n\n")
    message = json.loads(event.split("data: ", 1)[1])
    assert message["id"] == 1 and "isError" not in message["result"]
    js = harness.call_tool(single.url("paged"), PAGE_TOOL, {"handle": h})
    assert js.headers["content-type"] == "application/json"
    assert js.json()["result"] == message["result"], "a page call is idempotent"
    # Neither page call reached the server.
    assert upstream_requests(single) == before


def test_the_page_tool_is_listed_only_where_paging_is_on(single):
    paged = harness.post(single.url("paged"), harness.jsonrpc("tools/list")).json()["result"]["tools"]
    plain = harness.post(single.url("plain"), harness.jsonrpc("tools/list")).json()["result"]["tools"]
    names = [t["name"] for t in paged]
    assert names[-1] == PAGE_TOOL and names.count(PAGE_TOOL) == 1
    assert PAGE_TOOL not in [t["name"] for t in plain]
    assert paged[:-1] == plain, "the rest of the listing is the server's"
    tool = paged[-1]
    assert tool["inputSchema"]["required"] == ["handle"]
    assert tool["annotations"]["readOnlyHint"] is True


def test_forged_and_foreign_handles_are_refused(demo, single, work_dir):
    r = harness.call_tool(single.url("paged"), "export_rows", {"count": 8000})
    h = handle_of(r.json()["result"]["content"][-1]["text"])
    flipped = h[:20] + ("A" if h[20] != "A" else "B") + h[21:]
    # A signature that does not verify, bytes that are no handle, a handle
    # with bytes appended: each counted under its reason, once.
    for bad, reason in [(flipped, "page_forged"), ("bm90IGEgaGFuZGxl", "page_forged"), (h + "AA", "page_forged")]:
        before = metric(single, f"mcp_toon_passthrough_{reason}")
        out = harness.call_tool(single.url("paged"), PAGE_TOOL, {"handle": bad}).json()["result"]
        assert out["isError"] is True, bad
        assert "Call the original tool again with narrower arguments" in out["content"][0]["text"]
        assert metric(single, f"mcp_toon_passthrough_{reason}") == before + 1, (bad, reason)
    # Foreign: a handle cut in one MCP session, used from another (2025-11-25
    # sessions, the demo server's stateful SSE mode).
    sse_proc, sse_port = harness.start_demo_server(work_dir, args=("--transport", "sse"))
    e = harness.start_envoy([Listener("paged", CONFIG, True)], sse_port, work_dir, name="envoy-budget-sse")
    try:
        url = e.url("paged")

        def session() -> str:
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}}}
            with httpx.Client(timeout=30) as c:
                resp = c.post(url, json=init, headers={"accept": "application/json, text/event-stream"})
                sid = resp.headers["mcp-session-id"]
                c.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                       headers={"accept": "application/json, text/event-stream", "mcp-session-id": sid,
                                "mcp-protocol-version": "2025-11-25"})
            return sid

        def call(sid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
            body = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": name, "arguments": args}}
            with httpx.Client(timeout=60) as c:
                resp = c.post(url, json=body, headers={"accept": "application/json, text/event-stream",
                                                       "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"})
            text = resp.text
            data = text.split("data: ")[-1] if text.startswith(("event:", "data:", ":")) else text
            return json.loads(data.strip())["result"]

        a, b = session(), session()
        first = call(a, "export_rows", {"count": 8000})
        h = handle_of(first["content"][-1]["text"])
        foreign = call(b, PAGE_TOOL, {"handle": h})
        assert foreign["isError"] is True
        assert "belongs to another caller, session or server" in foreign["content"][0]["text"]
        own = call(a, PAGE_TOOL, {"handle": h})
        assert "isError" not in own, own
        assert metric(e, "mcp_toon_passthrough_page_foreign") == 1
    finally:
        e.stop()
        sse_proc.stop()


def test_a_result_with_structured_content_passes_whole(demo, single, work_dir):
    """Cutting `content` alone would leave it contradicting
    `structuredContent` (MCP 2025-06-18 "Structured Content"), and cutting
    that would break the tool's output schema: over its budget, such a
    result passes whole — as the same listener without a budget sends it —
    counted under its own reason, and the page tool has nothing to page."""
    args = {"hours": 100}
    direct = harness.call_tool(demo.url, "station_readings", args).json()["result"]
    assert direct["structuredContent"]["readings"], direct
    unbudgeted = harness.call_tool(single.url("plain"), "station_readings", args).json()["result"]
    [tokens] = o200k_tokens([[unbudgeted["content"][0]["text"]]], work_dir)
    assert tokens > 5 * STRUCTURED_BUDGET, "far over the budget"
    before = metric(single, "mcp_toon_passthrough_budget_structured_content")
    cut_before = metric(single, "mcp_toon_cut")
    request_id = 81_000_001
    out = call_with_id(single.url("paged"), "station_readings", args, request_id)
    assert out == unbudgeted, "whole, as without a budget"
    assert out["structuredContent"] == direct["structuredContent"]
    assert not any(c["text"].startswith("[mcp-toon] ") for c in out["content"] if c["type"] == "text")
    assert metric(single, "mcp_toon_passthrough_budget_structured_content") == before + 1
    assert metric(single, "mcp_toon_cut") == cut_before
    budget = [d for d in record_of(single, "paged", request_id) if d["stage"] == "budget"]
    assert budget == [{
        "stage": "budget", "outcome": "passthrough", "reason": "budget_structured_content",
        "id": str(request_id), "tool": "station_readings",
        "bytes_before": len(out["content"][0]["text"].encode()),
        "bytes_after": len(out["content"][0]["text"].encode()), "lossless": True,
    }], budget


def test_the_decision_record_shows_the_cut_and_each_page_call(single):
    """The access log's decision record (filter state `wasm.mcp_toon`): the
    cut result says `stage: budget`, `outcome: cut`, lossy, with the bytes
    of the block before and of what the agent reads after (first page and
    notice); each page call says `stage: page` — served from the store, or
    refused with its reason."""
    url = single.url("paged")
    unbudgeted = harness.call_tool(single.url("plain"), "export_rows", {"count": 8000}, timeout=120).json()["result"]
    first = call_with_id(url, "export_rows", {"count": 8000}, 82_000_001)
    page_text, notice = first["content"][0]["text"], first["content"][1]["text"]
    budget = [d for d in record_of(single, "paged", 82_000_001) if d["stage"] == "budget"]
    assert budget == [{
        "stage": "budget", "outcome": "cut", "id": "82000001", "tool": "export_rows", "block": 0,
        "bytes_before": len(unbudgeted["content"][0]["text"].encode()),
        "bytes_after": len(page_text.encode()) + len(notice.encode()),
        "lossless": False,
    }], budget

    second = call_with_id(url, PAGE_TOOL, {"handle": handle_of(notice)}, 82_000_002)
    assert "isError" not in second
    [page] = record_of(single, "paged", 82_000_002)
    assert page == {
        "stage": "page", "outcome": "paged", "id": "82000002", "tool": "export_rows",
        "bytes_before": 0, "bytes_after": len(second["content"][0]["text"].encode()), "lossless": False,
    }, page

    refused = call_with_id(url, PAGE_TOOL, {"handle": "bm90IGEgaGFuZGxl"}, 82_000_003)
    assert refused["isError"] is True
    [page] = record_of(single, "paged", 82_000_003)
    assert (page["stage"], page["outcome"], page["reason"]) == ("page", "passthrough", "page_forged"), page


def test_store_limits_and_ttl_hold_under_concurrent_load(demo, work_dir):
    """Twelve agents at once on a two-worker Envoy, each cutting a result
    and reading all its pages, with a store too small for all of them.

    What the store's limits guarantee: a cut reserves its pages' slots at
    once (compare-and-swap on the index) and evicts the oldest pages, so
    after the last cut the store still holds the newest results whole, as
    many as fit its bytes and pages together — their agents read every
    page (no cut comes after to evict them, and they are read well within
    the time to live). Every other agent is served too, or refused as
    `unknown here` or `expired`, never sent another result's page. The
    store never holds more than its limits, and it evicted: the results
    together need more than it holds."""
    store_bytes, store_pages, ttl = 1_500_000, 64, 10
    # The twelve agents are one owner (no session, no credentials: their
    # pages share one binding), so that owner's quota is the whole store;
    # what quotas do between owners, tests/e2e/test_memory.py.
    paging = {"store_bytes": store_bytes, "store_pages": store_pages, "ttl_s": ttl,
              "owner_bytes": store_bytes, "owner_pages": store_pages}
    cfg = {**CONFIG, "paging": paging,
           "tools": {"export_rows": {"budget": {"tokens": 6000}, "paging": {"enabled": True}}}}
    e = harness.start_envoy([Listener("paged", cfg, True)], demo.port, work_dir, name="envoy-budget-load", concurrency=2)
    expected = {n: json.loads(direct_text(demo.url, "export_rows", {"count": n})) for n in (3000, 4000)}
    # What one result of each size keeps in the store (its pages after the
    # first, and their bytes as the store counts them), one at a time into
    # the empty store.
    kept: dict[int, tuple[float, float]] = {}
    for n in (3000, 4000):
        pages, held = metric(e, "mcp_toon_page_store_pages"), metric(e, "mcp_toon_page_store_bytes")
        harness.call_tool(e.url("paged"), "export_rows", {"count": n}, timeout=120)
        kept[n] = (metric(e, "mcp_toon_page_store_pages") - pages, metric(e, "mcp_toon_page_store_bytes") - held)
    assert metric(e, "mcp_toon_page_evicted") == 0, "each result alone fits"
    agents_n = [3000 if k % 2 else 4000 for k in range(12)]
    need_pages = sum(kept[n][0] for n in agents_n)
    need_bytes = sum(kept[n][1] for n in agents_n)
    assert need_pages > store_pages or need_bytes > store_bytes, (kept, "the load must overflow the store")
    # The newest results held whole after the last cut, at the least: as
    # many of the larger kind as fit.
    pages4, bytes4 = kept[4000]
    guaranteed = int(min(store_pages // pages4, store_bytes // bytes4))
    assert guaranteed >= 1, kept
    served, refused, wrong = [], [], []
    peaks = {"bytes": 0.0, "pages": 0.0}
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            peaks["bytes"] = max(peaks["bytes"], metric(e, "mcp_toon_page_store_bytes"))
            peaks["pages"] = max(peaks["pages"], metric(e, "mcp_toon_page_store_pages"))
            time.sleep(0.05)

    errors: list[str] = []

    def agent(k: int) -> None:
        try:
            run_agent(k)
        except Exception as exc:  # surfaced by the assertion below
            errors.append(repr(exc)[:500])

    def keys(text: str) -> list[tuple[str, str]]:
        # This table's cells hold no commas or quotes: each row line is
        # `  id,sku,...` (TOON v4 §9.3), read without a decoder to keep up.
        return [tuple(line.strip().split(",")[:2]) for line in text.split("\n")[2:]]

    def run_agent(k: int) -> None:
        n = agents_n[k]
        r = harness.call_tool(e.url("paged"), "export_rows", {"count": n}, timeout=120).json()["result"]["content"]
        rows = keys(r[0]["text"])
        notice = r[-1]["text"]
        while (h := handle_of(notice)) is not None:
            out = harness.call_tool(e.url("paged"), PAGE_TOOL, {"handle": h}, timeout=60).json()["result"]
            if out.get("isError"):
                refused.append(out["content"][0]["text"])
                return
            rows.extend(keys(out["content"][0]["text"]))
            notice = out["content"][1]["text"]
        want = [(str(r["id"]), r["sku"]) for r in expected[n]]
        (served if rows == want else wrong).append(k)

    try:
        watcher = threading.Thread(target=watch)
        watcher.start()
        agents = [threading.Thread(target=agent, args=(k,)) for k in range(12)]
        for t in agents:
            t.start()
        for t in agents:
            t.join(timeout=300)
        stop.set()
        watcher.join()
        assert not errors, errors
        assert not wrong, "a page of another result was served"
        assert len(served) + len(refused) == len(agents_n), (served, refused)
        assert len(served) >= guaranteed, (len(served), guaranteed, kept, refused[:1])
        assert all("unknown here" in t or "expired" in t for t in refused), refused
        assert metric(e, "mcp_toon_page_evicted") > 0, "the store was full: the oldest pages went"
        assert peaks["bytes"] <= store_bytes and peaks["pages"] <= store_pages, peaks
        # A handle kept past its time to live is refused, and the timer
        # empties the store.
        r = harness.call_tool(e.url("paged"), "export_rows", {"count": 3000}).json()["result"]["content"]
        h = handle_of(r[-1]["text"])
        time.sleep(ttl + 2.5)
        out = harness.call_tool(e.url("paged"), PAGE_TOOL, {"handle": h}).json()["result"]
        # Refused: as expired, or as unknown once the timer emptied its slot.
        text = out["content"][0]["text"]
        assert out["isError"] is True and ("expired" in text or "unknown here" in text), out
        deadline = time.monotonic() + 10
        while metric(e, "mcp_toon_page_store_pages") > 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert metric(e, "mcp_toon_page_store_pages") == 0
        assert metric(e, "mcp_toon_page_store_bytes") == 0
        assert metric(e, "mcp_toon_page_expired") > 0
    finally:
        stop.set()
        e.stop()


# --- two gateways behind a round-robin Envoy ----------------------------------


def front_config(admin: int, listeners: dict[str, tuple[int, list[int]]]) -> dict[str, Any]:
    """A plain Envoy (no plugin): each listener spreads requests over its
    gateways round-robin."""
    out_listeners, clusters = [], []
    for name, (port, upstreams) in listeners.items():
        clusters.append({
            "name": f"gw_{name}", "type": "STATIC", "connect_timeout": "2s", "lb_policy": "ROUND_ROBIN",
            "load_assignment": {"cluster_name": f"gw_{name}", "endpoints": [{"lb_endpoints": [
                {"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": p}}}} for p in upstreams]}]},
        })
        out_listeners.append({
            "name": name,
            "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
            "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                "stat_prefix": name,
                "route_config": {"virtual_hosts": [{"name": "all", "domains": ["*"], "routes": [
                    {"match": {"prefix": "/"}, "route": {"cluster": f"gw_{name}", "timeout": "0s"}}]}]},
                "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}],
            }}]}],
        })
    return {"admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": admin}}},
            "static_resources": {"listeners": out_listeners, "clusters": clusters}}


@pytest.fixture(scope="module")
def two_gateways(demo, work_dir: Path):
    """Gateways A and B (the same configuration and key), each with a
    listener in front of the JSON demo server (stateless) and one in front
    of the SSE demo server (sessions); a round-robin Envoy in front of both."""
    sse_proc, sse_port = harness.start_demo_server(work_dir, args=("--transport", "sse"))

    def to_sse(config: dict[str, Any]) -> None:
        for lst in config["static_resources"]["listeners"]:
            if lst["name"] == "sse":
                hcm = lst["filter_chains"][0]["filters"][0]["typed_config"]
                hcm["route_config"]["virtual_hosts"][0]["routes"][0]["route"]["cluster"] = "mcp_sse"

    gateways = []
    front = None
    try:
        for name in ("gw-a", "gw-b"):
            gateways.append(harness.start_envoy(
                [Listener("json", CONFIG, True), Listener("sse", CONFIG, True)], demo.port, work_dir, name=name,
                extra_clusters=[harness.static_cluster("mcp_sse", sse_port)], tweak=to_sse))
        admin = free_port()
        ports = {"json": free_port(), "sse": free_port()}
        cfg = front_config(admin, {
            "json": (ports["json"], [g.listeners["json"].port for g in gateways]),
            "sse": (ports["sse"], [g.listeners["sse"].port for g in gateways]),
        })
        path = work_dir / "front.json"
        path.write_text(json.dumps(cfg))
        proc = harness.Proc("front", [str(harness.ENVOY), "-c", str(path), "--concurrency", "1",
                                      "--disable-hot-restart"], work_dir / "front.log")
        front = harness.Envoy(proc, admin, {n: Listener(n, {}, False, port=p) for n, p in ports.items()}, path)
        harness.wait_for_port(admin, proc, timeout=60)
        for p in ports.values():
            harness.wait_for_port(p, proc, timeout=60)
        yield front, gateways
    finally:
        if front is not None:
            front.stop()
        for g in gateways:
            g.stop()
        sse_proc.stop()


def check_rows(pages: list[list[str]], expected: list[Any]) -> None:
    rows: list[Any] = []
    for page in pages:
        assert len(page) == 2, page[-1][:300]
        rows.extend(rows_of(page[0]))
    assert [r["id"] for r in rows] == [r["id"] for r in expected], "every row once, in order"
    same_json(rows, expected)


def test_pages_across_two_gateways_for_a_2026_client(demo, two_gateways):
    front, (a, b) = two_gateways
    expected = json.loads(direct_text(demo.url, "export_rows", {"count": 30000}))
    # Both gateways see the listing (round-robin), so whichever cuts the
    # result knows the tool is read-only and says so in the signed handle.
    pages = py_pages(front.url("json"), "export_rows", {"count": 30000}, list_first=2)
    assert len(pages) > 8
    check_rows(pages, expected)
    served = {g: (metric(g, "mcp_toon_paged"), metric(g, "mcp_toon_reissued")) for g in (a, b)}
    # Page calls alternate between the gateways: the one that cut the
    # result serves from its store, the other calls the tool again.
    assert sum(p for p, _ in served.values()) >= 3 and sum(r for _, r in served.values()) >= 3, served


def test_pages_across_two_gateways_for_a_2025_client(demo, two_gateways):
    front, (a, b) = two_gateways
    expected = json.loads(direct_text(demo.url, "export_rows", {"count": 20000}))
    before = sum(metric(g, "mcp_toon_reissued") for g in (a, b))
    pages, listing, session = ts_pages(front.url("sse"), "export_rows", {"count": 20000})
    assert session, "MCP 2025-11-25 with a session"
    assert PAGE_TOOL in listing["tools"]
    assert not any(p["isError"] for p in pages), [p["texts"][0][:300] for p in pages if p["isError"]]
    check_rows([p["texts"] for p in pages], expected)
    assert sum(metric(g, "mcp_toon_reissued") for g in (a, b)) > before


def test_a_result_that_changed_is_reported_not_mixed(two_gateways):
    front, gateways = two_gateways
    pages = py_pages(front.url("json"), "live_feed", {"count": 3000}, list_first=2)
    first_call = rows_of(pages[0][0])[0]["call"]
    refused = [p for p in pages if "changed since its first page" in p[0]]
    assert refused, [p[-1][:200] for p in pages]
    for p in pages:
        if p[0].startswith("[mcp-toon/v1]") or p[0].startswith("["):
            if "changed since" not in p[0]:
                assert {r["call"] for r in rows_of(p[0])} == {first_call}, "no page mixes two results"
    assert sum(metric(g, "mcp_toon_passthrough_page_changed") for g in gateways) >= 1
