"""Page-call latency from the store and by calling the tool again
(docs/budgets-and-pages.md): the demo server's export_rows (30,000 rows) cut to
20,000-token pages behind one Envoy, 15 calls of one page each way.

Run after `make build`: .venv/bin/python scripts/page_latency.py
"""

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))
import harness  # noqa: E402
import httpx  # noqa: E402

work = Path(tempfile.mkdtemp(prefix="page-latency-"))
demo, port = harness.start_demo_server(work)
KEY = "e2e-key-0123456789abcdef0123456789abcdef"
tools = {"export_rows": {"budget": {"tokens": 20000}, "paging": {"enabled": True, "reissue": "always"}}}
store = {"hold_headers": True, "tools": tools, "paging": {"key": KEY}}
stateless = {"hold_headers": True, "tools": tools, "paging": {"key": KEY, "store_bytes": 0}}
env = harness.start_envoy([harness.Listener("store", store, True), harness.Listener("stateless", stateless, True)], port, work, name="envoy-lat")
try:
    for name in ("store", "stateless"):
        url = env.url(name)
        r = harness.call_tool(url, "export_rows", {"count": 30000}, timeout=120).json()["result"]["content"]
        h = r[-1]["text"].split('{"handle":"')[1].split('"')[0]
        times = []
        body = json.dumps(harness.jsonrpc("tools/call", {"name": "mcp_toon_page", "arguments": {"handle": h}}))
        with httpx.Client(timeout=60) as c:
            for _ in range(15):
                t = time.perf_counter()
                resp = c.post(url, content=body, headers={"content-type": "application/json", "accept": "application/json, text/event-stream"})
                times.append((time.perf_counter() - t) * 1000)
                assert "isError" not in resp.json()["result"], resp.text[:300]
        print(name, "handle chars", len(h), "page call ms p50 %.1f min %.1f max %.1f" % (statistics.median(times), min(times), max(times)), "page bytes", len(resp.content))
finally:
    env.stop(); demo.stop()
