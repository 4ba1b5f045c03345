"""The clean stage end to end: the demo server's clean tools (an HTML page, a
JSON document with base64, a pretty-printed table with nulls, an image item)
called with the official MCP client through Envoy (V8) and mcp-toon, each
listener with its own clean configuration.

The lossy transforms (HTML → Markdown, base64, whitespace, nulls) are opt-in:
the `defaults` listener pins that they stay off, the others turn them on the
way an operator would for web-fetch tools, then override them per tool and
per server.

Envoy here is this module's own: the shared one (conftest.py) turns compact
JSON off too, to pin the TOON spine's byte-identical passthroughs.
"""

from __future__ import annotations

import base64
import json
import re
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import harness
from harness import MARKER, Listener, same_json, split_marker, toon_decode

NOTICE = re.compile(r"\n\[mcp-toon: cut (\d+) of (\d+) bytes\]\Z")
CAP = 512

# The lossy transforms an operator turns on for tools that fetch web pages
# and attachments (they are off by default).
LOSSY = {"html_to_markdown": True, "strip_base64": True, "collapse_whitespace": True}

LISTENERS = {
    # Defaults: only compact_json (lossless) on.
    "defaults": {"hold_headers": True},
    "lossy": {"hold_headers": True, "clean": LOSSY},
    "nulls": {"hold_headers": True, "clean": {**LOSSY, "remove_nulls": True}},
    # Per-tool overrides of the lossy transforms.
    "tools": {
        "hold_headers": True,
        "clean": LOSSY,
        "tools": {
            "get_attachment": {
                "clean": {"html_to_markdown": False, "strip_base64": False, "collapse_whitespace": False, "compact_json": False}
            },
            "fetch_docs_page": {"clean": {"html_to_markdown": False}},
            "inventory_report": {"toon": {"mode": "off"}},
        },
    },
    # Per-server overrides (the route's cluster), and a tool entry inside one.
    "servers": {
        "hold_headers": True,
        "clean": LOSSY,
        "servers": [
            {"match": {"cluster": "some_other_cluster"}, "clean": {"remove_nulls": True, "strip_base64": False}},
            {
                "match": {"cluster": "mcp_upstream"},
                "clean": {"strip_base64": False},
                "tools": {"inventory_report": {"clean": {"remove_nulls": True}}},
            },
        ],
    },
    "cap": {"hold_headers": True, "clean": {**LOSSY, "max_text_bytes": CAP}},
}


@pytest.fixture(scope="module")
def clean_envoy(demo, work_dir: Path):
    access_log = work_dir / "clean-access.log"
    listeners = [Listener(name, cfg) for name, cfg in LISTENERS.items()]
    e = harness.start_envoy(listeners, demo.port, work_dir, name="envoy-clean", access_log_path=access_log)
    e.access_log = access_log
    try:
        yield e
    finally:
        e.stop()


class Call:
    """One tools/call through the official client, with the response body as
    it crossed the wire."""

    def __init__(self, result: Any, body: bytes):
        self.result = result
        self.body = body

    @property
    def text(self) -> str:
        texts = [c.text for c in self.result.content if c.type == "text"]
        assert len(texts) == 1, self.result.content
        return texts[0]


def call(url: str, tool: str, args: dict[str, Any] | None = None) -> Call:
    bodies: list[bytes] = []

    async def record(response: httpx2.Response) -> None:
        if response.request.headers.get("mcp-method") == "tools/call":
            await response.aread()
            bodies.append(response.content)

    async def main() -> Any:
        async with httpx2.AsyncClient(timeout=60, event_hooks={"response": [record]}) as http:
            async with Client(streamable_http_client(url, http_client=http), cache=None) as client:
                return await client.call_tool(tool, args or {})

    result = anyio.run(main)
    assert len(bodies) == 1
    return Call(result, bodies[0])


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    # Gauges (peaks, what the VM holds now) are not what a call moved.
    gauges = ("mcp_toon_held_bytes_max", "mcp_toon_vm_memory_bytes", "mcp_toon_vm_held_bytes", "mcp_toon_vm_held_bytes_max")
    return {
        k: v - before.get(k, 0.0)
        for k, v in after.items()
        if k.startswith("mcp_toon_") and k not in gauges and v != before.get(k, 0.0)
    }


def counted(envoy: harness.Envoy, url: str, tool: str) -> tuple[Call, dict[str, float]]:
    """A call and the counters it moved (the client's own discovery
    requests move only not_tools_call, left out here)."""
    before = envoy.prometheus()
    c = call(url, tool)
    moved = delta(before, envoy.prometheus())
    moved.pop("mcp_toon_passthrough_not_tools_call", None)
    return c, moved


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


# --- the defaults: no content changes -------------------------------------------------


def test_defaults_change_no_character_of_content(demo, clean_envoy):
    """What an agent may copy back into an edit keeps every byte: the HTML
    page, the base64 blob and the `data:` URI, the whitespace. Only JSON
    layout changes (compact JSON, the identical value)."""
    page = call(demo.url, "fetch_docs_page")
    via, moved = counted(clean_envoy, clean_envoy.url("defaults"), "fetch_docs_page")
    assert via.body == page.body
    assert not any(k.startswith("mcp_toon_clean") for k in moved), moved

    attachment = call(demo.url, "get_attachment")
    via, moved = counted(clean_envoy, clean_envoy.url("defaults"), "get_attachment")
    assert via.text == compact(json.loads(attachment.text)) != attachment.text
    same_json(json.loads(via.text), json.loads(attachment.text))
    assert [k for k in moved if k.startswith("mcp_toon_clean_")] == ["mcp_toon_clean_compact_json"]


# --- HTML → Markdown ------------------------------------------------------------


def test_html_page_arrives_as_markdown(demo, clean_envoy):
    direct = call(demo.url, "fetch_docs_page")
    via, moved = counted(clean_envoy, clean_envoy.url("lossy"), "fetch_docs_page")
    html, md = direct.text, via.text
    assert html.startswith("<!DOCTYPE html>")

    # The reading survives: headings, prose, the parameter table, the links.
    assert re.search(r"^# Stock levels$", md, re.M), md
    assert re.search(r"^## Parameters$", md, re.M), md
    assert "Returns the quantity on hand for one SKU" in md
    assert re.search(r"^\|.*Name.*\|.*In.*\|.*Type.*\|.*Description.*\|$", md, re.M), md
    assert re.search(r"^\|.*include_reserved.*\|.*query.*\|.*boolean.*\|", md, re.M), md
    assert "[Warehouses](/api/warehouses/)" in md
    # Markup, scripts and styles are gone.
    for gone in ("<table", "<nav", "<script", "<style", "<meta", "</", "gtag(", "font-family", "border-collapse"):
        assert gone not in md, gone
    assert len(md.encode()) < len(html.encode()) // 2

    assert moved["mcp_toon_clean_html_to_markdown"] == 1
    assert moved["mcp_toon_cleaned"] == moved.get("mcp_toon_clean_html_to_markdown", 0) + moved.get(
        "mcp_toon_clean_collapse_whitespace", 0
    )
    assert moved["mcp_toon_passthrough_not_json"] == 1  # TOON looked at the Markdown
    assert moved["mcp_toon_bytes_before"] == len(html.encode())
    assert moved["mcp_toon_bytes_after"] == len(md.encode())


def test_html_to_markdown_off_for_one_tool_keeps_the_html(demo, clean_envoy):
    direct = call(demo.url, "fetch_docs_page")
    converted = call(clean_envoy.url("lossy"), "fetch_docs_page")
    via, moved = counted(clean_envoy, clean_envoy.url("tools"), "fetch_docs_page")
    assert "mcp_toon_clean_html_to_markdown" not in moved
    # Still the page's HTML, only whitespace collapsed (still on).
    for kept in ("<!DOCTYPE html>", "<table class=\"params\">", "<script>", "<style>", "gtag('js', new Date());"):
        assert kept in via.text, kept
    # The other transforms still run: the page's blank-line runs and
    # trailing spaces are gone, every word is where it was.
    assert via.text.split() == direct.text.split()
    assert "\n\n\n" in direct.text and "\n\n\n" not in via.text
    assert len(converted.text) < len(via.text) < len(direct.text)
    assert moved["mcp_toon_clean_collapse_whitespace"] == 1
    assert moved["mcp_toon_passthrough_not_json"] == 1


# --- base64 --------------------------------------------------------------------


def test_base64_blob_and_data_uri_are_stripped_with_their_sizes(demo, clean_envoy):
    direct = call(demo.url, "get_attachment")
    via, moved = counted(clean_envoy, clean_envoy.url("lossy"), "get_attachment")
    original = json.loads(direct.text)
    blob = base64.b64decode(original["content_base64"])
    thumb = base64.b64decode(original["thumbnail"].split(",", 1)[1])

    cleaned = json.loads(via.text)
    assert cleaned["content_base64"] == f"<stripped: {len(blob)} bytes>" == "<stripped: 3000 bytes>"
    assert cleaned["thumbnail"] == f"<stripped: {len(thumb)} bytes>" == "<stripped: 600 bytes>"
    # Everything else is the server's: the digest (hex), ids, the URL with
    # its signature; key order too, and the text is compact.
    rest = {k: v for k, v in original.items() if k not in ("content_base64", "thumbnail")}
    same_json({k: v for k, v in cleaned.items() if k in rest}, rest)
    assert list(cleaned) == list(original)
    assert via.text == compact(cleaned)

    assert moved["mcp_toon_clean_strip_base64"] == 1
    assert moved["mcp_toon_clean_compact_json"] == 1
    assert moved["mcp_toon_cleaned"] == 2
    # What is left is shorter than toon.min_bytes.
    assert len(via.text.encode()) < 500
    assert moved["mcp_toon_passthrough_below_min_bytes"] == 1


def test_clean_off_for_one_tool_is_byte_identical(demo, clean_envoy):
    direct = call(demo.url, "get_attachment")
    via, moved = counted(clean_envoy, clean_envoy.url("tools"), "get_attachment")
    assert via.body == direct.body
    assert not any(k.startswith("mcp_toon_clean") for k in moved), moved
    assert moved == {"mcp_toon_passthrough_not_tabular": 1}


def test_server_override_keeps_base64(demo, clean_envoy):
    direct = call(demo.url, "get_attachment")
    via, moved = counted(clean_envoy, clean_envoy.url("servers"), "get_attachment")
    # strip_base64 off for the matching server, the other transforms on:
    # none finds anything to change, and the lossless compaction (taken
    # whenever it is smaller) leaves every string as the server sent it.
    assert via.text == compact(json.loads(direct.text))
    same_json(json.loads(via.text), json.loads(direct.text))
    assert moved == {
        "mcp_toon_cleaned": 1,
        "mcp_toon_clean_compact_json": 1,
        "mcp_toon_bytes_before": len(direct.text.encode()),
        "mcp_toon_bytes_after": len(via.text.encode()),
        "mcp_toon_passthrough_not_tabular": 1,
    }


# --- nulls, compact JSON and TOON --------------------------------------------------


def test_table_with_nulls_keeps_them_by_default_and_toon_beats_compact_json(demo, clean_envoy):
    direct = call(demo.url, "inventory_report")
    via, moved = counted(clean_envoy, clean_envoy.url("defaults"), "inventory_report")
    original = json.loads(direct.text)
    assert any(v is None for row in original for v in row.values())

    toon = split_marker(via.text)
    # remove_nulls is off: the nulls are still there after decoding
    # (reference TypeScript decoder).
    same_json(toon_decode(toon), original)
    # compact JSON ran first; TOON had to beat the compact text by
    # toon.min_savings_pct (15 %), marker included.
    assert len(via.text.encode()) <= 0.85 * len(compact(original).encode())
    assert moved["mcp_toon_clean_compact_json"] == 1
    assert moved["mcp_toon_encoded"] == 1
    assert "mcp_toon_clean_remove_nulls" not in moved


def test_table_without_toon_arrives_as_compact_json(demo, clean_envoy):
    direct = call(demo.url, "inventory_report")
    via, moved = counted(clean_envoy, clean_envoy.url("tools"), "inventory_report")
    # Lossless: same value, key order and number spellings, no marker.
    assert via.text == compact(json.loads(direct.text))
    assert via.text.count("null") == direct.text.count("null")
    assert moved["mcp_toon_clean_compact_json"] == 1
    assert moved["mcp_toon_passthrough_mode_off"] == 1
    assert "mcp_toon_encoded" not in moved


@pytest.mark.parametrize("listener", ["nulls", "servers"])
def test_remove_nulls_on_drops_null_members(demo, clean_envoy, listener):
    direct = call(demo.url, "inventory_report")
    via, moved = counted(clean_envoy, clean_envoy.url(listener), "inventory_report")
    expected = without_nulls(json.loads(direct.text))
    assert "null" not in via.text
    # Rows now differ in their keys (the all-null `note` is gone from every
    # row, the others from some): not a table TOON takes, so the result is
    # the compact JSON of the null-free value.
    assert via.text == compact(expected)
    assert moved["mcp_toon_clean_remove_nulls"] == 1
    assert moved["mcp_toon_clean_compact_json"] == 1
    assert moved["mcp_toon_passthrough_not_tabular"] == 1


# --- image items ------------------------------------------------------------------


@pytest.mark.parametrize("listener", list(LISTENERS))
def test_image_item_is_untouched_and_the_text_beside_it_is_cleaned(demo, clean_envoy, listener):
    direct = call(demo.url, "render_chart")
    via, moved = counted(clean_envoy, clean_envoy.url(listener), "render_chart")
    (d_image,) = [c for c in direct.result.content if c.type == "image"]
    (v_image,) = [c for c in via.result.content if c.type == "image"]
    assert v_image.data == d_image.data and v_image.mime_type == d_image.mime_type == "image/png"
    png = base64.b64decode(v_image.data)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    # In the body, the image item's JSON is the server's, byte for byte.
    d_item = json.loads(direct.body)["result"]["content"][0]
    v_item = json.loads(via.body)["result"]["content"][0]
    assert d_item == v_item and d_item["type"] == "image"
    assert json.dumps(d_item["data"]) in via.body.decode()
    # The same image inline in the text item is stripped, with its size,
    # where strip_base64 is on.
    if listener in ("defaults", "servers"):  # off by default, and for this server
        assert via.text == direct.text
        assert "mcp_toon_clean_strip_base64" not in moved
    else:
        assert via.text == direct.text.replace(f"data:image/png;base64,{d_image.data}", f"<stripped: {len(png)} bytes>")
        assert moved["mcp_toon_clean_strip_base64"] == 1


# --- the cap ------------------------------------------------------------------------


def test_cap_cuts_plain_text_with_a_notice(demo, clean_envoy):
    full = call(clean_envoy.url("lossy"), "fetch_docs_page").text
    via, moved = counted(clean_envoy, clean_envoy.url("cap"), "fetch_docs_page")
    text = via.text
    assert len(full.encode()) > CAP
    assert len(text.encode()) <= CAP
    m = NOTICE.search(text)
    assert m, text[-200:]
    kept = text[: m.start()]
    assert full.startswith(kept)
    assert int(m[2]) == len(full.encode())
    assert int(m[1]) == len(full.encode()) - len(kept.encode())
    assert moved["mcp_toon_clean_max_text_bytes"] == 1
    assert moved["mcp_toon_clean_html_to_markdown"] == 1


def test_cap_keeps_the_marker_and_whole_toon_lines(demo, clean_envoy):
    full = call(clean_envoy.url("defaults"), "inventory_report").text
    via, moved = counted(clean_envoy, clean_envoy.url("cap"), "inventory_report")
    text = via.text
    assert text.startswith(MARKER + "\n")
    assert len(text.encode()) <= CAP < len(full.encode())
    m = NOTICE.search(text)
    assert m, text[-200:]
    kept = text[: m.start()]
    # Whole lines of the uncapped emission, header and first row included.
    full_lines = full.split("\n")
    kept_lines = kept.split("\n")
    assert kept_lines == full_lines[: len(kept_lines)]
    assert len(kept_lines) >= 3 and kept_lines[1].startswith("[24]{")
    assert int(m[2]) == len(full.encode())
    assert moved["mcp_toon_encoded"] == 1
    assert moved["mcp_toon_clean_max_text_bytes"] == 1


# --- the decision record ---------------------------------------------------------------


def test_decision_record_names_each_transform(demo, clean_envoy):
    r = harness.call_tool(clean_envoy.url("lossy"), "get_attachment")
    assert r.status_code == 200
    summary = r.headers["x-mcp-toon"]
    assert summary.startswith("cleaned=2 "), summary

    def records() -> list[dict[str, Any]]:
        out = []
        for line in clean_envoy.access_log.read_text().splitlines():
            if line.startswith("[lossy]") and '"tool":"get_attachment"' in line:
                out.append(json.loads(line[line.index("{"):]))
        return out

    deadline = time.monotonic() + 10
    while not records() and time.monotonic() < deadline:
        time.sleep(0.1)
    decisions = records()[-1]["decisions"]
    clean = [(d["transform"], d["lossless"]) for d in decisions if d["stage"] == "clean"]
    assert clean == [("strip_base64", False), ("compact_json", True)]
    chain = [d for d in decisions if d["stage"] == "clean"]
    assert chain[0]["bytes_after"] == chain[1]["bytes_before"]
    assert chain[1]["bytes_after"] == len(r.json()["result"]["content"][0]["text"].encode())
