"""Fixtures for the end-to-end suite: one demo MCP server and one Envoy with
several listeners (each its own mcp-toon configuration) shared by the
session; tests that need their own Envoy start and stop it themselves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import harness
from harness import Listener

# Plugin configurations of the shared Envoy, one listener each.
CLEAN_OFF = {"html_to_markdown": False, "strip_base64": False, "collapse_whitespace": False, "compact_json": False}

LISTENERS = {
    # allow_on_headers_stop_iteration + hold_headers: exact content-length
    # and an x-mcp-toon header on buffered JSON responses.
    "held": (dict(hold_headers=True), True),
    # Neither: the body of a response the plugin may rewrite goes chunked.
    "plain": ({}, False),
    # Overrides: annotate tools/list, keep accept-encoding, one tool off.
    "tuned": (
        {
            "hold_headers": True,
            "annotate_tools": True,
            "strip_accept_encoding": False,
            "tools": {"list_products": {"toon": {"mode": "off"}}},
        },
        True,
    ),
    # servers[]: matched on the route name, cluster name and :authority that
    # the plugin reads from Envoy (xds.route_name, xds.cluster_name).
    "servers": (
        {
            "hold_headers": True,
            "servers": [
                {"match": {"cluster": "some_other_cluster"}, "toon": {"mode": "off"}},
                {"match": {"authority": "localhost:{port}"}, "toon": {"mode": "off"}},
                {
                    "match": {"route": "mcp", "cluster": "mcp_upstream"},
                    "toon": {"min_rows": 2},
                    "tools": {"list_users": {"toon": {"mode": "off"}}},
                },
            ],
        },
        True,
    ),
    # hold_headers without allow_on_headers_stop_iteration: a configuration
    # mistake, kept here to pin down what Envoy does with it.
    "mismatch": ({"hold_headers": True}, False),
}


def pytest_configure(config: pytest.Config) -> None:
    missing = [p for p in (harness.ENVOY, harness.PYTHON, harness.WASM) if not p.exists()]
    if missing:
        raise pytest.UsageError(f"missing {', '.join(map(str, missing))}: run `make build` (and scripts/bootstrap.sh) first")


@pytest.fixture(scope="session")
def work_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e2e")


@pytest.fixture(scope="session")
def demo(work_dir: Path):
    """The demo MCP server (examples/demo_server.py)."""
    proc, port = harness.start_demo_server(work_dir)
    try:
        yield DemoServer(proc, port)
    finally:
        proc.stop()


class DemoServer:
    def __init__(self, proc: harness.Proc, port: int):
        self.proc = proc
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="session")
def envoy(demo: DemoServer, work_dir: Path):
    """One Envoy (V8), one listener per entry of LISTENERS, in front of the
    demo server, with a file access log printing the decision record."""
    listeners = []
    for name, (cfg, allow) in LISTENERS.items():
        # These listeners pin the spine's TOON behaviour (byte-identical
        # passthrough of what TOON leaves alone): the lossy clean
        # transforms are off unless a listener turns them on.
        cfg = {"clean": CLEAN_OFF, **cfg}
        listener = Listener(name, cfg, allow)
        # "{port}" in a configuration stands for the listener's own port.
        listener.plugin_config = json.loads(json.dumps(cfg).replace("{port}", str(listener.port)))
        listeners.append(listener)
    access_log = work_dir / "access.log"
    e = harness.start_envoy(listeners, demo.port, work_dir, name="envoy-shared", access_log_path=access_log)
    e.access_log = access_log
    try:
        yield e
    finally:
        e.stop()
