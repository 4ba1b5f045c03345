"""What the plugin does for proxy-wasm hosts other than Envoy, seen from
Envoy: the properties APISIX needs before it hands over bodies
(`wasm_process_req_body`, `wasm_process_resp_body`) are never set on Envoy,
which runs body callbacks unasked — each would be a filter-state write
(readable in the access log) that Envoy pays for on every request. The
plugin tells Envoy by its `plugin_vm_id` property at configuration; where
the flags are set on a host that needs them is the built-module tier's
(tests/wasm/test_hosts.py, a host that refuses that read as APISIX does)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx

import harness
from harness import Listener

FORMAT = (
    "[props] %REQ(:METHOD)% %REQ(MCP-METHOD)% %RESPONSE_CODE% "
    "req=%FILTER_STATE(wasm.wasm_process_req_body:PLAIN)% "
    "resp=%FILTER_STATE(wasm.wasm_process_resp_body:PLAIN)% "
    # The decision record's first character: the same filter state is
    # written, and read in this log, where a stream is recorded.
    "rec=%FILTER_STATE(wasm.mcp_toon:PLAIN):1%\n"
)


def start(demo_port: int, work_dir: Path) -> tuple[harness.Proc, Listener, Path]:
    listener = Listener("props", {})
    admin = harness.free_port()
    config = harness.render_envoy([listener], demo_port, admin)
    hcm = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    log = work_dir / "props-access.log"
    hcm["access_log"] = [
        {
            "name": "envoy.access_loggers.file",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog",
                "path": str(log),
                "log_format": {"text_format_source": {"inline_string": FORMAT}},
            },
        }
    ]
    path = work_dir / "envoy-props.json"
    path.write_text(json.dumps(config))
    proc = harness.Proc(
        "envoy-props",
        [str(harness.ENVOY), "-c", str(path), "--concurrency", "1", "--disable-hot-restart", "--file-flush-interval-msec", "100"],
        work_dir / "envoy-props.log",
    )
    try:
        harness.wait_for_port(admin, proc, timeout=60)
        harness.wait_for_port(listener.port, proc, timeout=60)
    except Exception:
        proc.stop()
        raise
    return proc, listener, log


def test_apisix_body_properties_are_not_set_on_envoy(demo, work_dir):
    proc, listener, log = start(demo.port, work_dir)
    base = f"http://127.0.0.1:{listener.port}"
    try:
        direct = harness.call_tool(demo.url, "list_users")
        via = harness.call_tool(f"{base}/mcp", "list_users")  # request and response read
        # An MCP 2026-07-28 request names its method in Mcp-Method: a
        # listing the plugin leaves alone is decided at its headers, and
        # an earlier client's (no such header) has its request read.
        listing = harness.post(f"{base}/mcp", harness.jsonrpc("tools/list"))  # neither
        older = httpx.post(f"{base}/mcp", json=harness.jsonrpc("tools/list"), timeout=10,
                           headers={"accept": "application/json, text/event-stream"})  # request only
        other = httpx.get(f"{base}/nothing-here", timeout=10)  # neither
        deadline = time.monotonic() + 10
        lines: list[str] = []
        while len(lines) < 4 and time.monotonic() < deadline:
            lines = [l for l in log.read_text().splitlines() if l.startswith("[props]")] if log.exists() else []
            time.sleep(0.1)
    finally:
        proc.stop()
    # The stream still works as on any listener: encoded, never broken.
    assert via.status_code == 200 and listing.status_code == 200 and older.status_code == 200
    assert via.json()["result"]["content"][0]["text"].startswith(harness.MARKER)
    assert len(via.content) < len(direct.content)
    assert lines == [
        "[props] POST tools/call 200 req=- resp=- rec={",
        "[props] POST tools/list 200 req=- resp=- rec=-",
        "[props] POST - 200 req=- resp=- rec=-",  # the log line shows Mcp-Method
        f"[props] GET - {other.status_code} req=- resp=- rec=-",
    ], lines
