"""A changed plugin configuration while traffic flows (docs/envoy.md "Changing
the configuration while it runs"). The listener comes from a watched file
(dynamic resources with a path config source): writing a new file makes
Envoy build the listener again, with the plugin's new configuration, and
drain the old one. Throughout, clients call tools as fast as they can, each
call on a new connection.

What must hold: every response is complete and is what one of the two
configurations makes of the server's answer; streams started after Envoy
took the new configuration use it; a configuration the plugin refuses
leaves the one before serving.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import harness
from harness import MARKER, Listener, call_tool, same_json, split_marker, toon_decode

ENCODE = {"hold_headers": True}
OFF = {"hold_headers": True, "toon": {"mode": "off"}, "clean": {"compact_json": False}}
BAD = {"toon": {"mode": "sometimes"}}
CLIENTS = 4


class Reloadable:
    """Envoy whose one listener lives in a watched LDS file."""

    def __init__(self, demo_port: int, work_dir: Path):
        self.dir = work_dir / "lds"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.lds = self.dir / "listeners.json"
        self.spec = Listener("reload", ENCODE)
        self.admin_port = harness.free_port()
        bootstrap = harness.render_envoy([self.spec], demo_port, self.admin_port)
        self.template = bootstrap["static_resources"].pop("listeners")[0]
        bootstrap["node"] = {"id": "mcp-toon-e2e", "cluster": "mcp-toon-e2e"}
        bootstrap["dynamic_resources"] = {
            "lds_config": {
                "resource_api_version": "V3",
                "path_config_source": {"path": str(self.lds), "watched_directory": {"path": str(self.dir)}},
            }
        }
        self.write(ENCODE)
        path = work_dir / "envoy-reload.json"
        path.write_text(json.dumps(bootstrap, indent=1))
        self.proc = harness.Proc(
            "envoy-reload",
            [str(harness.ENVOY), "-c", str(path), "--concurrency", "2", "--disable-hot-restart", "--drain-time-s", "2",
             "--component-log-level", "wasm:info"],
            work_dir / "envoy-reload.log",
        )
        try:
            harness.wait_for_port(self.admin_port, self.proc, timeout=60)
            harness.wait_for_port(self.spec.port, self.proc, timeout=60)
        except Exception:
            self.proc.stop()
            raise
        self.url = f"http://127.0.0.1:{self.spec.port}/mcp"

    def write(self, config: dict[str, Any]) -> None:
        """Replaces the LDS file in one rename, as Envoy's watch expects."""
        listener = json.loads(json.dumps(self.template))
        wasm = next(f for f in listener["filter_chains"][0]["filters"][0]["typed_config"]["http_filters"] if f["name"] == "envoy.filters.http.wasm")
        wasm["typed_config"]["config"]["configuration"]["value"] = json.dumps(config)
        listener["@type"] = "type.googleapis.com/envoy.config.listener.v3.Listener"
        tmp = self.dir / ".listeners.json.tmp"
        tmp.write_text(json.dumps({"resources": [listener]}))
        os.replace(tmp, self.lds)

    def stat(self, name: str) -> int:
        for line in harness.Envoy(self.proc, self.admin_port, {}, self.lds).admin("/stats").splitlines():
            key, _, value = line.partition(": ")
            if key == name:
                return int(value)
        return 0

    def update(self, config: dict[str, Any], outcome: str) -> None:
        """Writes `config` and waits until Envoy counts the update under
        `listener_manager.lds.update_<outcome>`."""
        name = f"listener_manager.lds.update_{outcome}"
        before = self.stat(name)
        self.write(config)
        deadline = time.monotonic() + 30
        while self.stat(name) == before:
            assert time.monotonic() < deadline, f"{name} did not move:\n{self.proc.log()[-3000:]}"
            time.sleep(0.05)


@pytest.fixture
def reloadable(demo, work_dir):
    envoy = Reloadable(demo.port, work_dir)
    try:
        yield envoy
    finally:
        envoy.proc.stop()


def encoded_or_not(body: bytes, direct: bytes) -> str:
    """"encoded" or "off" for a body one of the configurations made of the
    server's `direct` answer; fails for anything else."""
    if body == direct:
        return "off"
    got, want = json.loads(body), json.loads(direct)
    text = got["result"]["content"][0]["text"]
    assert text.startswith(MARKER), body[:300]
    same_json(toon_decode(split_marker(text)), json.loads(want["result"]["content"][0]["text"]))
    got["result"]["content"][0]["text"] = want["result"]["content"][0]["text"]
    assert got == want
    return "encoded"


def test_a_new_configuration_applies_to_new_streams_while_traffic_flows(demo, reloadable):
    direct = call_tool(demo.url, "list_users").content
    assert encoded_or_not(call_tool(reloadable.url, "list_users").content, direct) == "encoded"

    results: list[tuple[int, bytes]] = []
    errors: list[str] = []
    stop = threading.Event()

    def client() -> None:
        while not stop.is_set():
            try:
                r = call_tool(reloadable.url, "list_users", timeout=20)
                results.append((r.status_code, r.content))
            except Exception as e:  # a stream cut short shows up here
                errors.append(repr(e))

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.5)
        reloadable.update(OFF, "success")
        # Streams that start now use the new configuration.
        assert call_tool(reloadable.url, "list_users").content == direct
        time.sleep(0.5)
        # A configuration the plugin refuses: Envoy keeps the listener it has.
        reloadable.update(BAD, "rejected")
        assert call_tool(reloadable.url, "list_users").content == direct
        time.sleep(0.5)
        reloadable.update(ENCODE, "success")
        assert encoded_or_not(call_tool(reloadable.url, "list_users").content, direct) == "encoded"
        time.sleep(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
    assert not errors, errors[:5]
    assert all(status == 200 for status, _ in results)
    seen = {encoded_or_not(body, direct) for body in {body for _, body in results}}
    assert seen == {"encoded", "off"}, seen
    assert len(results) > 20
    log = reloadable.proc.log()
    assert "mcp-toon configuration: toon.mode: " in log
