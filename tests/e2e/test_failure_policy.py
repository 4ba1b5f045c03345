"""What the shipped Envoy configuration does after the VM fails (issue 13
item 6): responses keep flowing and the plugin comes back.

A trap in the VM (a panic, an out-of-memory) fails it; Envoy's wasm filter
then applies its `failure_policy`. FAIL_CLOSED would answer every later
request with 503 until the configuration changes, FAIL_OPEN would pass them
without the plugin for good; the examples use FAIL_RELOAD with a short
reload backoff: the next request gets a fresh VM. Envoy 1.40 answers a
request that arrives within the backoff after the last load of a failed VM
with 503, so the backoff is short (0.1 s, `reload_config`).

The VM is failed on purpose by a module built with the test-only cargo
feature `fault-injection` (src/adapter/fault.rs: a request carrying
`x-mcp-toon-fault: trap` traps in its headers callback), into its own target
directory; the release module must carry none of it. Envoy runs the suite's
own configuration (envoy/envoy.yaml), failure policy unchanged.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

import artifacts
import harness
from harness import Listener, split_marker, toon_decode

FAULT_TARGET = artifacts.TARGET / "fault-injection"
FAULT_WASM = FAULT_TARGET / "wasm32-wasip1" / "release" / "mcp_toon.wasm"
TRAP = {"x-mcp-toon-fault": "trap"}
# The header the fault module looks for (src/adapter/fault.rs TRAP_HEADER).
TRAP_HEADER = b"x-mcp-toon-fault"

EXAMPLES = [
    harness.ROOT / "envoy" / "envoy.yaml",
    harness.ROOT / "examples" / "envoy-sse.yaml",
    harness.ROOT / "examples" / "envoy-trim.yaml",
    harness.ROOT / "examples" / "envoy-two-servers.yaml",
]


def wasm_filters(node: Any):
    """Every wasm filter's `config` in an Envoy configuration."""
    if isinstance(node, dict):
        if node.get("name") == "envoy.filters.http.wasm":
            yield node["typed_config"]["config"]
        for v in node.values():
            yield from wasm_filters(v)
    elif isinstance(node, list):
        for v in node:
            yield from wasm_filters(v)


@pytest.fixture(scope="module")
def fault_wasm() -> Path:
    """The module with the fault hook, built like `make build` otherwise."""
    subprocess.run(
        [
            os.environ.get("CARGO", "cargo"),
            "build",
            "--target",
            "wasm32-wasip1",
            "--release",
            "--features",
            "fault-injection",
            "--target-dir",
            str(FAULT_TARGET),
        ],
        cwd=harness.ROOT,
        check=True,
        capture_output=True,
    )
    return FAULT_WASM


@pytest.fixture(scope="module")
def envoy(fault_wasm: Path, demo, work_dir: Path):
    e = harness.start_envoy([Listener("p", {})], demo.port, work_dir, name="envoy-fault", wasm=fault_wasm)
    try:
        yield e
    finally:
        e.stop()


def wasm_stats(envoy: harness.Envoy) -> dict[str, int]:
    out = {}
    for line in envoy.admin("/stats").splitlines():
        name, _, value = line.partition(": ")
        if name.startswith("wasm.mcp_toon.vm_reload"):
            out[name.removeprefix("wasm.mcp_toon.")] = int(value)
    return out


def encoded_users(envoy: harness.Envoy, headers: dict[str, str] | None = None) -> Any:
    """`list_users` through the plugin: 200 and TOON (the VM is alive)."""
    r = harness.call_tool(envoy.url("p"), "list_users", {"count": 10}, headers=headers, timeout=10)
    assert r.status_code == 200, r.status_code
    return toon_decode(split_marker(r.json()["result"]["content"][0]["text"]))


def test_examples_use_fail_reload_with_a_short_backoff():
    for path in EXAMPLES:
        configs = list(wasm_filters(yaml.safe_load(path.read_text())))
        assert configs, path
        for cfg in configs:
            assert cfg["failure_policy"] == "FAIL_RELOAD", path
            assert cfg["reload_config"]["backoff"]["base_interval"] == "0.1s", path


def test_the_release_module_has_no_fault_hook(fault_wasm: Path):
    assert TRAP_HEADER in fault_wasm.read_bytes()
    assert TRAP_HEADER not in harness.WASM.read_bytes()


def test_responses_keep_flowing_after_a_vm_failure(envoy):
    users = encoded_users(envoy)
    # The loads so far are more than a backoff ago.
    time.sleep(0.2)
    before = wasm_stats(envoy)

    # The request whose callback trapped: Envoy fails that stream (503,
    # `wasm_fail_stream`), whatever the policy.
    trapped = harness.call_tool(envoy.url("p"), "list_users", {"count": 10}, headers=TRAP, timeout=10)
    assert trapped.status_code == 503

    # The next request gets a new VM: answered, and by the plugin.
    assert encoded_users(envoy) == users
    after = wasm_stats(envoy)
    assert after["vm_reload_success"] == before["vm_reload_success"] + 1
    assert after["vm_reload_failure"] == before["vm_reload_failure"]

    # It keeps working, and recovers from the next failure too.
    for _ in range(3):
        assert encoded_users(envoy) == users
    time.sleep(0.2)
    assert harness.call_tool(envoy.url("p"), "list_users", {"count": 10}, headers=TRAP, timeout=10).status_code == 503
    assert encoded_users(envoy) == users
    assert wasm_stats(envoy)["vm_reload_success"] == before["vm_reload_success"] + 2
    assert envoy.proc.alive()
