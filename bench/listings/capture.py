#!/usr/bin/env python3
"""Captures real MCP servers' `tools/list` results, every page, as the
servers sent them, into bench/listings/<name>.json.

Each stdio server is started, initialized (MCP 2025-11-25 handshake:
`initialize`, then `notifications/initialized`), and asked for `tools/list`
until a page has no `nextCursor` (MCP 2025-06-18 "Pagination"). A file holds
the JSON-RPC response of each page byte for byte as the server wrote its
line: one response, or a JSON array of them when the listing has several
pages. The conformance suite's reference server (MCP 2026-07-28, HTTP,
stateless) is asked over HTTP with the revision's per-request `_meta`.

Where the servers come from is in bench/listings/README.md; this script
takes the commands from the environment it is run in:

    python3 bench/listings/capture.py --scratch /tmp/listings-scratch

(`--scratch`: an npm folder holding the servers not in tests/e2e; the
e2e suite's node_modules and .venv-servers hold the rest). Nothing here
reaches beyond this machine: the servers list their tools without any
credential, and telemetry of those that have it is turned off.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "bench" / "listings"
E2E = ROOT / "tests" / "e2e"
NODE22 = E2E / "node_modules" / "node" / "bin" / "node"
SERVERS_BIN = ROOT / ".venv-servers" / "bin"


def stdio_servers(scratch: Path, work: Path) -> dict[str, dict]:
    nm = scratch / "node_modules"
    e2e = E2E / "node_modules"
    node = str(NODE22)
    return {
        "everything": {"argv": [node, str(nm / "@modelcontextprotocol/server-everything/dist/index.js"), "stdio"]},
        "filesystem": {"argv": [node, str(e2e / "@modelcontextprotocol/server-filesystem/dist/index.js"), str(work)]},
        "memory": {
            "argv": [node, str(e2e / "@modelcontextprotocol/server-memory/dist/index.js")],
            "env": {"MEMORY_FILE_PATH": str(work / "memory.jsonl")},
        },
        "git": {"argv": [str(SERVERS_BIN / "mcp-server-git"), "--repository", str(work)]},
        "time": {"argv": [str(SERVERS_BIN / "mcp-server-time"), "--local-timezone", "UTC"]},
        "github": {"argv": [node, str(nm / "@modelcontextprotocol/server-github/dist/index.js")]},
        "sequential-thinking": {"argv": [node, str(nm / "@modelcontextprotocol/server-sequential-thinking/dist/index.js")]},
        "playwright": {"argv": [node, str(nm / "@playwright/mcp/cli.js"), "--headless"]},
        "notion": {"argv": [node, str(nm / "@notionhq/notion-mcp-server/bin/cli.mjs")]},
        "chrome-devtools": {
            "argv": [node, str(nm / "chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js"), "--no-usage-statistics"],
            "env": {"CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS": "1"},
        },
        "desktop-commander": {
            "argv": [node, str(nm / "@wonderwhy-er/desktop-commander/dist/index.js")],
            "env": {"DESKTOP_COMMANDER_DISABLE_TELEMETRY": "1"},
        },
    }


class Stdio:
    """A stdio MCP server: newline-delimited JSON-RPC (MCP "Transports")."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path):
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **env, "HOME": str(cwd)},
            cwd=cwd,
        )

    def send(self, message: dict) -> None:
        assert self.proc.stdin
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def answer(self, id_: int, deadline: float) -> bytes:
        """The response line to request `id_`, as its bytes (notifications
        and the server's own requests before it are skipped)."""
        assert self.proc.stdout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("server closed its output")
            line = line.rstrip(b"\r\n")
            try:
                message = json.loads(line)
            except ValueError:
                continue  # a log line on stdout
            if isinstance(message, dict) and message.get("id") == id_ and "method" not in message:
                return line
        raise TimeoutError(f"no answer to request {id_}")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def capture_stdio(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[list[bytes], dict]:
    s = Stdio(argv, env, cwd)
    try:
        deadline = time.monotonic() + 120
        s.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "mcp-toon-capture", "version": "1"},
                },
            }
        )
        init = json.loads(s.answer(0, deadline))
        s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        pages: list[bytes] = []
        cursor = None
        while True:
            params = {} if cursor is None else {"cursor": cursor}
            id_ = len(pages) + 1
            s.send({"jsonrpc": "2.0", "id": id_, "method": "tools/list", "params": params})
            line = s.answer(id_, deadline)
            pages.append(line)
            cursor = json.loads(line).get("result", {}).get("nextCursor")
            if cursor is None or len(pages) >= 100:
                break
        return pages, init.get("result", {})
    finally:
        s.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def capture_reference_2026(cwd: Path) -> tuple[list[bytes], dict]:
    """The conformance suite's reference server, asked as a 2026-07-28
    client asks: no initialize, the revision in the header and in
    `params._meta` of every request."""
    port = free_port()
    loopback = E2E / "conformance" / "loopback.mjs"
    proc = subprocess.Popen(
        [str(NODE22), "--import", "tsx", "--import", str(loopback), "everything-server.ts"],
        cwd=cwd,
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "mcp-toon-capture", "version": "1"},
        }
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}).encode()
        while True:
            try:
                req = urllib.request.Request(
                    f"http://127.0.0.1:{port}/mcp",
                    data=body,
                    headers={
                        "content-type": "application/json",
                        "accept": "application/json, text/event-stream",
                        "mcp-protocol-version": "2026-07-28",
                    },
                )
                with urllib.request.urlopen(req, timeout=30) as r:
                    return [r.read()], {"serverInfo": {"name": "conformance everything-server", "version": cwd.name}}
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        proc.kill()
        proc.wait()


def write(name: str, pages: list[bytes]) -> Path:
    path = OUT / f"{name}.json"
    body = pages[0] if len(pages) == 1 else b"[" + b",".join(pages) + b"]"
    path.write_bytes(body + b"\n")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scratch", type=Path, required=True)
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run(["git", "init", "-q", str(work)], check=True)
        servers = stdio_servers(args.scratch, work)
        names = args.only or [*servers, "conformance-2026"]
        for name in names:
            try:
                if name == "conformance-2026":
                    pages, init = capture_reference_2026(E2E / "conformance" / "0.2.0-alpha.11")
                else:
                    s = servers[name]
                    pages, init = capture_stdio(s["argv"], s.get("env", {}), work)
            except Exception as e:  # one server failing leaves the others
                print(f"{name}: {e}", file=sys.stderr)
                continue
            path = write(name, pages)
            tools = sum(len(json.loads(p)["result"]["tools"]) for p in pages)
            info = init.get("serverInfo", {})
            print(f"{name}: {tools} tools, {len(pages)} page(s), {path.stat().st_size} bytes; server {info}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
