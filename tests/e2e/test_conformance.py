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
each path through Envoy. A failure names whether the same check passed
through Envoy alone in that round.

One race is the 0.1.16 reference server's, and is retried: its tools that
ask the client for something (`test_sampling`, `test_elicitation`, the two
elicitation SEP tools) send that request with `server.request`, which goes
out on the session's standalone GET stream. When the client has not opened
that stream yet, the SDK stores the request for a replay that a first GET
never asks for; the tool waits, and the client's call times out after 60 s
(`MCP error -32001: Request timed out`). Any hop that delays the GET widens
the window — Envoy without the plugin too, as
`test_a_delayed_get_stream_loses_the_0_1_16_servers_requests` shows with a
fault-injected delay. The 0.2.0-alpha.11 server sends them on the tool
call's own stream (`sendRequest`) and has no such race. The 0.1.16 server
runs with conformance/standalone-trace.mjs, which logs each such request and
whether the GET stream was open. A 0.1.16 failure of one of those scenarios
that is that timeout, in a run where the server logged a request sent while
the stream was not open, is run again on the same path (up to RETRIES
times) and must then pass; every other failure counts. (Seen on every path
through Envoy, with the plugin and without, never directly: 3 in 20 rounds
through Envoy alone, 0 in 20 with the plugin, in one run on a loaded
machine.)
"""

from __future__ import annotations

import json
import re
import subprocess
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import harness
import peers

VERSIONS = ["0.1.16", "0.2.0-alpha.11"]
ROUNDS = 3
RETRIES = 3
# 0.1.16 scenarios whose tool sends a request on the standalone GET stream.
GET_STREAM_RACE = {"tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults", "elicitation-sep1330-enums"}
RACE_ERROR = "Request timed out"
CONFORMANCE = peers.E2E / "conformance"
LOOPBACK = CONFORMANCE / "loopback.mjs"
TRACE = CONFORMANCE / "standalone-trace.mjs"
PATHS: dict[str, dict[str, Any] | None] = {
    "bare": None,
    "defaults": {},
    "annotated": {"annotate_tools": True, "trim": {"enabled": True, "cluster": "llm", "timeout_ms": 2000}},
}
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d+Z$")


def suite(version: str) -> Path:
    return peers.NODE_MODULES / f"mcp-conformance-{version}" / "dist" / "index.js"


class ReferenceServer:
    def __init__(self, proc: harness.Proc, port: int):
        self.proc, self.port = proc, port
        self.url = f"http://127.0.0.1:{port}/mcp"

    def lost_requests(self) -> int:
        """Requests to the client it sent while the GET stream was not open
        (standalone-trace.mjs)."""
        return len(re.findall(r"\[standalone-trace\] \S+ session=\S+ get-stream=not-open", self.proc.log()))


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
            trace = ["--import", str(TRACE)] if version == "0.1.16" else []
            proc = harness.Proc(
                f"everything-server-{version}",
                [str(peers.NODE), "--import", "tsx", "--import", str(LOOPBACK), *trace, "everything-server.ts"],
                work_dir / f"everything-server-{version}.log",
                env={"PORT": str(port)},
                cwd=CONFORMANCE / version,
            )
            started[version] = (proc, port)
            harness.wait_for_port(port, proc, timeout=120)
        yield {version: ReferenceServer(proc, port) for version, (proc, port) in started.items()}
    finally:
        for proc, _ in started.values():
            proc.stop()


@pytest.fixture(scope="module")
def conformance_envoy(reference_servers: dict[str, "ReferenceServer"], work_dir: Path):
    listeners = {
        f"{path}-{version}": (server.port, config)
        for version, server in reference_servers.items()
        for path, config in PATHS.items()
    }
    unreachable_llm = harness.static_cluster("llm", harness.free_port())
    e = peers.start_envoy_for(listeners, work_dir, "envoy-conformance", extra_clusters=[unreachable_llm])
    try:
        yield e
    finally:
        e.stop()


def run_suite(version: str, url: str, out: Path, scenario: str | None = None) -> dict[tuple[str, str, int], dict[str, Any]]:
    """One run of the suite (or of one scenario): every check, keyed
    (scenario, check name, occurrence), with its status."""
    out.mkdir(parents=True)
    which = ["--scenario", scenario] if scenario else ["--suite", "all"]
    r = subprocess.run(
        [str(peers.NODE), str(suite(version)), "server", "--url", url, *which, "-o", str(out)],
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


def raced(version: str, scenario: str, failing: list[dict[str, Any]]) -> bool:
    """The failure is the 0.1.16 reference server's GET-stream race: every
    check that ran and failed timed out (a scenario cut short by the timeout
    does not run its other checks: they are missing, and under load the
    suite may give up on the scenario before its first check, so all of
    them can be missing; the caller also requires the server's trace to
    show a request lost on the unopened stream)."""
    ran = [c for c in failing if c["status"] != "MISSING"]
    return (
        version == "0.1.16"
        and scenario in GET_STREAM_RACE
        and all(RACE_ERROR in c.get("errorMessage", "") for c in ran)
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_every_check_passing_directly_passes_through_the_plugin(reference_servers, conformance_envoy, work_dir, version):
    server = reference_servers[version]
    url = server.url
    before = conformance_envoy.prometheus()
    problems: list[str] = []
    retried: list[str] = []
    for rnd in range(1, ROUNDS + 1):
        base = work_dir / "conformance" / version / f"round-{rnd}"
        direct = run_suite(version, url, base / "direct")
        ok = passed(direct)
        # The 2026-07-28 scenarios are in the suite, and pass directly.
        if version == "0.2.0-alpha.11":
            assert {"server-stateless", "caching", "input-required-result-multi-round"} <= scenarios_passing(direct)
        results, lost_requests = {}, {}
        for path in PATHS:
            lost_before = server.lost_requests()
            results[path] = run_suite(version, conformance_envoy.url(f"{path}-{version}"), base / path)
            lost_requests[path] = server.lost_requests() - lost_before
        bare_ok = passed(results["bare"])
        for path, checks in results.items():
            # Checks that passed directly and did not here, and failures
            # here in a scenario that passed directly.
            bad = (ok - passed(checks)) | {
                k for k, c in checks.items() if c["status"] == "FAILURE" and k[0] in scenarios_passing(direct)
            }
            lost: dict[str, list[tuple[str, str, int]]] = {}
            for key in sorted(bad):
                lost.setdefault(key[0], []).append(key)
            for scenario, keys in lost.items():
                failing = [checks.get(k, {"status": "MISSING", "errorMessage": "not run"}) for k in keys]
                if raced(version, scenario, failing) and lost_requests[path] > 0:
                    again = [
                        run_suite(version, conformance_envoy.url(f"{path}-{version}"), base / f"{path}-retry-{scenario}-{i}", scenario)
                        for i in range(1, RETRIES + 1)
                    ]
                    # A retry counts when the scenario fails nowhere and
                    # every check of it that passed directly passes again. A
                    # check the suite writes only on failure (the timeout's
                    # `...General`) has no passing form to wait for.
                    wanted = {k for k in ok if k[0] == scenario}
                    if any(wanted <= passed(a) and scenario in scenarios_passing(a) for a in again):
                        retried.append(f"round {rnd}, {path}: {scenario}")
                        continue
                for key, check in zip(keys, failing):
                    alone = "it failed through Envoy alone too" if key not in bare_ok else "it passed through Envoy alone"
                    problems.append(
                        f"round {rnd}, {path}: {key[0]} / {key[1]}: {check['status']} ({check.get('errorMessage', '')}); {alone}"
                    )
    assert not problems, "\n".join(problems)
    if retried:
        warnings.warn(f"0.1.16 GET-stream race, passed when run again: {retried}")
    # The plugin saw the suite's traffic: listings annotated (the annotated
    # path), tool calls without an intent (trim on there), tool results.
    moved = {k: v - before.get(k, 0) for k, v in conformance_envoy.prometheus().items() if k.startswith("mcp_toon_")}
    assert moved["mcp_toon_annotated"] > 0 and moved["mcp_toon_passthrough_trim_no_intent"] > 0, moved
    assert moved["mcp_toon_passthrough_below_min_bytes"] > 0 and moved["mcp_toon_passthrough_is_error"] > 0, moved


def test_a_delayed_get_stream_loses_the_0_1_16_servers_requests(reference_servers, work_dir):
    """The race retried above, made certain and without the plugin: Envoy
    alone, with only the client's GET requests delayed by 1 s (Envoy's fault
    filter). The sampling request the 0.1.16 server sends while the GET
    stream is not open yet never reaches the client, and the call times out;
    a call that needs no server request passes."""
    delay_get = {
        "name": "envoy.filters.http.fault",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault",
            "delay": {"fixed_delay": "1s", "percentage": {"numerator": 100}},
            "headers": [{"name": ":method", "string_match": {"exact": "GET"}}],
        },
    }

    def add_delay(config: dict[str, Any]) -> None:
        for lst in config["static_resources"]["listeners"]:
            lst["filter_chains"][0]["filters"][0]["typed_config"]["http_filters"].insert(0, delay_get)

    server = reference_servers["0.1.16"]
    e = peers.start_envoy_for({"delayed": (server.port, None)}, work_dir, "envoy-delayed-get", tweak=add_delay)
    try:
        base = work_dir / "conformance" / "delayed-get"
        simple = run_suite("0.1.16", e.url("delayed"), base / "simple", "tools-call-simple-text")
        assert all(c["status"] == "SUCCESS" for c in simple.values()), simple
        lost_before = server.lost_requests()
        sampling = run_suite("0.1.16", e.url("delayed"), base / "sampling", "tools-call-sampling")
        lost = server.lost_requests() - lost_before
    finally:
        e.stop()
    (check,) = sampling.values()
    assert check["status"] == "FAILURE" and RACE_ERROR in check["errorMessage"], check
    # The server sent its sampling request before the GET stream opened.
    assert lost == 1, server.proc.log()[-2000:]
