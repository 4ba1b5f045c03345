"""The official MCP conformance suite through the plugin.

npm `@modelcontextprotocol/conformance` 0.1.16 (MCP 2025 revisions) and
0.2.0-alpha.11 (adds 2026-07-28: stateless requests, caching hints,
`Mcp-Method`/`Mcp-Name` header validation, input-required results), each
run as `conformance server --url URL --suite all` against its own reference
everything-server (tests/e2e/conformance/<version>/, copied from the suite's
repository at the same commit, see SOURCE), on Node 22:

- directly;
- through Envoy without the plugin (`bare`): what Envoy alone does;
- through Envoy with the plugin at its defaults (`defaults`);
- through Envoy with `annotate_tools` and trim on, so `tools/list` carries
  the decode hint and the advertised intent argument (`annotated`); the
  LLM cluster points at a port nothing listens on, and the suite declares
  no intent, so no callout is made.

Several rounds: in every round, every check that passes directly passes on
each path through Envoy. A check that fails through the plugin but passes
through Envoy alone is the plugin's; one that fails both is Envoy's (the
message says which).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import harness
import peers

VERSIONS = ["0.1.16", "0.2.0-alpha.11"]
ROUNDS = 3
CONFORMANCE = peers.E2E / "conformance"
LOOPBACK = CONFORMANCE / "loopback.mjs"
PATHS: dict[str, dict[str, Any] | None] = {
    "bare": None,
    "defaults": {},
    "annotated": {"annotate_tools": True, "trim": {"enabled": True, "cluster": "llm", "timeout_ms": 2000}},
}
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d+Z$")


def suite(version: str) -> Path:
    return peers.NODE_MODULES / f"mcp-conformance-{version}" / "dist" / "index.js"


@pytest.fixture(scope="module")
def reference_servers(work_dir: Path):
    """Each version's everything-server (TypeScript, run by tsx on Node 22)."""
    for version in VERSIONS:
        for need in (suite(version), CONFORMANCE / version / "node_modules" / "tsx"):
            assert need.exists(), f"missing {need}: run scripts/bootstrap.sh"
    started: dict[str, tuple[harness.Proc, int]] = {}
    try:
        for version in VERSIONS:
            port = harness.free_port()
            proc = harness.Proc(
                f"everything-server-{version}",
                [str(peers.NODE), "--import", "tsx", "--import", str(LOOPBACK), "everything-server.ts"],
                work_dir / f"everything-server-{version}.log",
                env={"PORT": str(port)},
                cwd=CONFORMANCE / version,
            )
            started[version] = (proc, port)
            harness.wait_for_port(port, proc, timeout=120)
        yield {version: port for version, (_, port) in started.items()}
    finally:
        for proc, _ in started.values():
            proc.stop()


@pytest.fixture(scope="module")
def conformance_envoy(reference_servers: dict[str, int], work_dir: Path):
    listeners = {
        f"{path}-{version}": (port, config)
        for version, port in reference_servers.items()
        for path, config in PATHS.items()
    }
    unreachable_llm = harness.static_cluster("llm", harness.free_port())
    e = peers.start_envoy_for(listeners, work_dir, "envoy-conformance", extra_clusters=[unreachable_llm])
    try:
        yield e
    finally:
        e.stop()


def run_suite(version: str, url: str, out: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    """One run of the suite: every check, keyed (scenario, check name,
    occurrence), with its status."""
    out.mkdir(parents=True)
    r = subprocess.run(
        [str(peers.NODE), str(suite(version)), "server", "--url", url, "--suite", "all", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    (out / "stdout.txt").write_text(r.stdout + r.stderr)
    checks: dict[tuple[str, str, int], dict[str, Any]] = {}
    for result in sorted(out.glob("server-*/checks.json")):
        m = RESULT_DIR.match(result.parent.name)
        assert m, result
        seen: Counter[str] = Counter()
        for check in json.loads(result.read_text()):
            name = check.get("name") or check["id"]
            checks[(m["scenario"], name, seen[name])] = check
            seen[name] += 1
    assert checks, f"no results from the suite ({r.returncode}):\n{(r.stdout + r.stderr)[-3000:]}"
    return checks


def passed(checks: dict[tuple[str, str, int], dict[str, Any]]) -> set[tuple[str, str, int]]:
    return {key for key, check in checks.items() if check["status"] == "SUCCESS"}


def scenarios_passing(checks: dict[tuple[str, str, int], dict[str, Any]]) -> set[str]:
    failing = {key[0] for key, check in checks.items() if check["status"] == "FAILURE"}
    return {key[0] for key in checks} - failing


@pytest.mark.parametrize("version", VERSIONS)
def test_every_check_passing_directly_passes_through_the_plugin(reference_servers, conformance_envoy, work_dir, version):
    url = f"http://127.0.0.1:{reference_servers[version]}/mcp"
    before = conformance_envoy.prometheus()
    problems: list[str] = []
    for rnd in range(1, ROUNDS + 1):
        base = work_dir / "conformance" / version / f"round-{rnd}"
        direct = run_suite(version, url, base / "direct")
        ok = passed(direct)
        # The 2026-07-28 scenarios are in the suite, and pass directly.
        if version == "0.2.0-alpha.11":
            assert {"server-stateless", "caching", "input-required-result-multi-round"} <= scenarios_passing(direct)
        results = {path: run_suite(version, conformance_envoy.url(f"{path}-{version}"), base / path) for path in PATHS}
        bare_ok = passed(results["bare"])
        for path, checks in results.items():
            for key in sorted(ok - passed(checks)):
                check = checks.get(key, {"status": "MISSING", "errorMessage": "not run"})
                blame = "Envoy (fails without the plugin too)" if key not in bare_ok else "the plugin"
                problems.append(
                    f"round {rnd}, {path}: {key[0]} / {key[1]}: {check['status']} "
                    f"({check.get('errorMessage', '')}) — {blame}"
                )
            lost = scenarios_passing(direct) - scenarios_passing(checks)
            if lost:
                problems.append(f"round {rnd}, {path}: scenarios passing directly but not here: {sorted(lost)}")
    assert not problems, "\n".join(problems)
    # The plugin saw the suite's traffic: listings annotated (the annotated
    # path), tool calls without an intent (trim on there), tool results.
    moved = {k: v - before.get(k, 0) for k, v in conformance_envoy.prometheus().items() if k.startswith("mcp_toon_")}
    assert moved["mcp_toon_annotated"] > 0 and moved["mcp_toon_passthrough_trim_no_intent"] > 0, moved
    assert moved["mcp_toon_passthrough_below_min_bytes"] > 0 and moved["mcp_toon_passthrough_is_error"] > 0, moved
