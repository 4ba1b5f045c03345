"""Trimming, measured: the demo MCP server behind Envoy with mcp-toon's trim
stage on, its `llm` cluster pointing at the deterministic OpenAI-compatible
stand-in of the tests (tests/e2e/llm_stub.py, which keeps the rows an intent
names as `key=value`). Each call goes directly to the server, through Envoy
without an intent (clean + TOON), and through Envoy with one (clean + trim +
TOON); the table shows the bytes of each response body and the plugin's
`x-mcp-toon` summary.

Run after `make build`:  .venv/bin/python examples/trim_demo.py

The stand-in is not a model: the figures show what the plugin does with an
extraction (size guard, TOON after trimming), not how well a model extracts.
Everything binds 127.0.0.1 on free ports and is stopped by pid on exit.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
import harness  # noqa: E402

CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("list_users", {}, "names and emails of the admins: role=admin fields=id,name,email"),
    ("list_users", {}, "the user with id=17"),
    ("search_orders", {"page": 1}, "orders that were refunded: status=refunded"),
]

CONFIG = {
    "hold_headers": True,
    "trim": {"enabled": True, "cluster": "llm", "threshold_bytes": 2000, "timeout_ms": 10000},
}


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="mcp-toon-trim-demo-"))
    stub_port = harness.free_port()
    stub = harness.Proc(
        "llm-stub", [str(harness.PYTHON), str(ROOT / "tests" / "e2e" / "llm_stub.py"), "--port", str(stub_port)],
        work / "llm-stub.log",
    )
    server = envoy = None
    try:
        harness.wait_for_port(stub_port, stub)
        server, server_port = harness.start_demo_server(work)
        envoy = harness.start_envoy(
            [harness.Listener("mcp", CONFIG)], server_port, work,
            extra_clusters=[harness.static_cluster("llm", stub_port)],
        )
        direct_url, via_url = f"http://127.0.0.1:{server_port}/mcp", envoy.url("mcp")
        print(f"{'tool':<14} {'intent':<64} {'direct':>7} {'no intent':>10} {'trimmed':>8}  x-mcp-toon (with intent)")
        for tool, args, intent in CALLS:
            direct = harness.call_tool(direct_url, tool, args)
            plain = harness.call_tool(via_url, tool, args)
            trimmed = harness.call_tool(via_url, tool, {**args, "expected_info": intent})
            print(
                f"{tool:<14} {intent:<64} {len(direct.content):>7,} {len(plain.content):>10,} "
                f"{len(trimmed.content):>8,}  {trimmed.headers.get('x-mcp-toon')}"
            )
        print("response body bytes; Envoy", harness.envoy_version(), "(V8)")
    finally:
        for proc in (envoy, server, stub):
            if proc is not None:
                proc.stop()


if __name__ == "__main__":
    main()
