"""Writes bench/estimator/real/: the text items of real MCP servers' tool
results, the real-server part of the token estimator's calibration corpus
(crates/core/src/stage/budget/estimate.rs; tests/estimator.rs holds it to the same
bound as the rest, and reports it on its own).

The servers are the real-server tier's (npm `@modelcontextprotocol/
server-filesystem` and `server-memory`, PyPI `mcp-server-git` and
`mcp-server-time`, each bridged to Streamable HTTP by supergateway), on the
tier's own fixtures (tests/e2e/workspace.py: a project folder, a git
repository with indented changes, a knowledge graph), called with the
official TypeScript client and the tier's call plans. No proxy: each text
item is written exactly as the client received it, one file per item.

Licence: everything the servers return here is made from fixtures this
project writes itself (workspace.py) plus the servers' own short framing
("Successfully wrote…", tree and listing layout); no third-party content is
copied. bench/estimator/real/SOURCE says the same beside the data.

Reproducible: the fixtures are fixed (seeded, fixed commit dates), and the
servers run in a fixed folder (/tmp/mcp-toon-estimator-real), because file
paths appear in the file server's answers and the repository's own path
would differ between checkouts. Only `get_current_time` depends on the clock
(the date and time in its answer). Rerun after changing the fixtures or the
servers' versions (scripts/bootstrap.sh installs them); the files are
committed.

Run from the repository root: .venv/bin/python bench/make_estimator_real.py
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "estimator" / "real"
WORK = Path("/tmp/mcp-toon-estimator-real")
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

import peers  # noqa: E402
import workspace  # noqa: E402


def extension(text: str) -> str:
    """`.json` for a text that is one JSON value, `.txt` otherwise."""
    try:
        json.loads(text)
    except ValueError:
        return "txt"
    return "json"


def capture() -> list[tuple[str, str, dict[str, Any], str]]:
    """(server, tool, arguments, text) of every text item, in plan order."""
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    items = []
    servers = workspace.start_servers(WORK)
    try:
        for server, calls in servers.plans().items():
            run = peers.ts_calls(servers.bridged[server].url, calls)
            for call, got in zip(calls, run["calls"], strict=True):
                if "result" not in got:
                    raise SystemExit(f"{server} {call['name']}: no result: {got}")
                for content in got["result"].get("content", []):
                    if content.get("type") == "text":
                        items.append((server, call["name"], call["arguments"], content["text"]))
    finally:
        servers.stop()
        shutil.rmtree(WORK, ignore_errors=True)
    return items


def short(arguments: dict[str, Any]) -> str:
    text = json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= 90 else text[:87] + "..."


def main() -> None:
    missing = peers.missing()
    if missing:
        raise SystemExit(f"missing {', '.join(map(str, missing))}: run scripts/bootstrap.sh")
    items = capture()
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    versions = json.loads((ROOT / "tests/e2e/package.json").read_text())["dependencies"]
    pins = [l for l in (ROOT / "scripts/requirements-servers.txt").read_text().splitlines() if l and not l.startswith("#")]
    rows = []
    for n, (server, tool, arguments, text) in enumerate(items):
        name = f"{server}-{n:02d}-{tool}.{extension(text)}"
        (OUT / name).write_text(text, encoding="utf-8")
        rows.append(f"{name}\t{short(arguments)}")
        print(f"{name}: {len(text.encode())} bytes")
    (OUT / "SOURCE").write_text(
        f"""Text items of real MCP servers' tool results, one file per item, as the
official TypeScript client (@modelcontextprotocol/sdk {versions["@modelcontextprotocol/sdk"]}) received them,
written by bench/make_estimator_real.py (rerun it to regenerate them).

Servers (not written by this project): @modelcontextprotocol/server-filesystem
{versions["@modelcontextprotocol/server-filesystem"]} and @modelcontextprotocol/server-memory {versions["@modelcontextprotocol/server-memory"]} (npm),
{", ".join(pins)} (PyPI), bridged by supergateway {versions["supergateway"]}.

Licence: the data is made from fixtures this project creates itself
(tests/e2e/workspace.py: its code, HTML, PEM certificate, JSON, log, git
repository and knowledge graph) and the servers' own framing of them; no
third-party content is copied, so it is under the project's licence
(Apache-2.0). File paths in it are those of the fixed work folder
{WORK}. get_current_time answers with the clock at capture.

file\targuments
""" + "\n".join(rows) + "\n",
        encoding="utf-8",
    )
    print(f"{len(items)} text items written to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
