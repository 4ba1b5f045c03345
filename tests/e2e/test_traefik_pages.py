"""Budgets with pages through Traefik: what the instance pool means for them.

http-wasm-host-go runs each request on an instance of the module taken from
a pool (a Go `sync.Pool` per router): concurrent requests run on as many
instances, sequential ones on whichever the pool hands out, and each
instance keeps its own page store. A page is served by the instance that
cut its result; on any other the page tool answers with its error (no HTTP
calls on this host, so a page cannot be rebuilt by calling the tool again).
These tests state which happens, and count how often: one figure line per
run (`traefik_pages {json}`), quoted in docs/traefik.md."""

from __future__ import annotations

import concurrent.futures
import json
from typing import Any

import pytest

import harness
from test_budget import KEY, PAGE_TOOL, handle_of, rows_of

CONFIG = {
    "hold_headers": True,
    "clean": {"html_to_markdown": False, "strip_base64": False, "collapse_whitespace": False},
    "tools": {"export_rows": {"budget": {"tokens": 2000}, "paging": {"enabled": True}}},
    "paging": {"key": KEY},
}
ROWS = 600


@pytest.fixture(scope="module")
def paged(demo, work_dir):
    t = harness.start_traefik({"paged": CONFIG}, demo.port, work_dir, name="traefik-pages")
    try:
        yield t
    finally:
        t.stop()


def texts(body: dict[str, Any]) -> list[str]:
    return [c["text"] for c in body["result"]["content"] if c.get("type") == "text"]


def page_through(url: str) -> dict[str, Any]:
    """Cuts one result, then asks for each of its pages once; what came
    back for each."""
    first = harness.call_tool(url, "export_rows", {"count": ROWS}, timeout=60).json()
    pages = [texts(first)]
    served = missed = 0
    rows: list[Any] = list(rows_of(pages[0][0]))
    errors: list[str] = []
    while (h := handle_of(pages[-1][-1])) is not None:
        body = harness.call_tool(url, PAGE_TOOL, {"handle": h}, timeout=60).json()
        result = body["result"]
        if result.get("isError"):
            missed += 1
            errors.append(texts(body)[0])
            break
        served += 1
        pages.append(texts(body))
        rows.extend(rows_of(pages[-1][0]))
    return {"served": served, "missed": missed, "errors": errors, "rows": rows, "complete": missed == 0}


def test_pages_are_served_by_the_instance_that_cut_the_result_or_refused(demo, paged):
    """Every answer is the right page or the page tool's error, never
    another result's page; a complete run reassembles the server's rows."""
    original = json.loads(harness.call_tool(demo.url, "export_rows", {"count": ROWS}).json()["result"]["content"][0]["text"])
    runs = [page_through(paged.url("paged")) for _ in range(12)]
    served = sum(r["served"] for r in runs)
    missed = sum(r["missed"] for r in runs)
    complete = [r for r in runs if r["complete"]]
    print("traefik_pages " + json.dumps({"clients": 1, "runs": len(runs), "complete": len(complete), "pages_served": served, "pages_missed": missed}))
    assert served > 0, [r["errors"] for r in runs]
    for r in complete:
        harness.same_json(r["rows"], original)
    for r in runs:
        for e in r["errors"]:
            assert "page" in e.lower(), e


def test_concurrent_clients_page_on_the_instances_the_pool_hands_out(paged):
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        runs = list(pool.map(lambda _: page_through(paged.url("paged")), range(16)))
    served = sum(r["served"] for r in runs)
    missed = sum(r["missed"] for r in runs)
    print("traefik_pages " + json.dumps({"clients": 8, "runs": len(runs), "complete": sum(r["complete"] for r in runs), "pages_served": served, "pages_missed": missed}))
    assert served + missed > 0
    # Whatever the pool did, every page that came back fits its place.
    for r in runs:
        assert [row["id"] for row in r["rows"]] == list(range(1, len(r["rows"]) + 1))
