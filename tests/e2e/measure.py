"""o200k_base token counts from the project's own measuring CLI
(`mcp-toon measure --format json`, built by `make cli`): the demo and the
real-server benchmark count tokens with the same code that measures captured
payloads (tiktoken-rs, which embeds the table; nothing is downloaded)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import artifacts
import harness

# MCP_TOON_CLI points elsewhere.
CLI = Path(
    os.environ.get("MCP_TOON_CLI")
    or artifacts.CLI
)


def cli_name() -> str:
    return str(CLI.relative_to(harness.ROOT)) if CLI.is_relative_to(harness.ROOT) else str(CLI)


def tokens(groups: dict[str, list[str]], work: Path) -> dict[str, int]:
    """The o200k_base tokens of each group of text items, from one run of
    `mcp-toon measure --format json` over a folder of them (each group
    wrapped as a CallToolResult, so the CLI sees exactly those blocks; the
    count is of the text as given, before the CLI's own pipeline run)."""
    if not CLI.exists():
        raise SystemExit(f"{CLI} is missing: run `make cli`")
    folder = work / "measure"
    folder.mkdir(parents=True, exist_ok=True)
    names: dict[str, str] = {}
    for i, (key, texts) in enumerate(groups.items()):
        path = folder / f"{i:04d}.json"
        path.write_text(json.dumps({"content": [{"type": "text", "text": t} for t in texts]}))
        names[str(path)] = key
    run = subprocess.run([str(CLI), "measure", "--format", "json", str(folder)], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise SystemExit(f"mcp-toon measure failed ({run.returncode}): {run.stderr[-2000:]}")
    return {names[p["payload"]]: p["totals"]["tokens_before"] for p in json.loads(run.stdout)["payloads"]}
