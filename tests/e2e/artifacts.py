"""Where the build put what the tests and scripts run: one answer, asked of
cargo itself. `cargo metadata` reports the target directory as cargo will
use it — CARGO_TARGET_DIR (absolute, or relative to where cargo runs, here
the checkout's root, as the Makefile runs it) or `build.target-dir` of a
Cargo config — so a user who keeps one shared build cache outside the
checkout (issue 38) runs the same tests and scripts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _target_dir() -> Path:
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    try:
        out = subprocess.run(
            [cargo, "metadata", "--format-version", "1", "--no-deps", "--offline"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        return Path(json.loads(out.stdout)["target_directory"])
    except (OSError, subprocess.SubprocessError, ValueError, KeyError):
        # No cargo to ask (a machine that only runs built artefacts): the
        # variable as cargo reads it, relative to the root where make runs.
        env = os.environ.get("CARGO_TARGET_DIR")
        return (ROOT / env).resolve() if env else ROOT / "target"


TARGET = _target_dir()
# `make build`: the proxy-wasm plugin Envoy loads.
WASM = TARGET / "wasm32-wasip1" / "release" / "mcp_toon.wasm"
# `make cli`: the native measuring tool.
CLI = TARGET / "release" / "mcp-toon"
# `make component`: the WIT component (crates/component).
COMPONENT = TARGET / "wasm32-wasip2" / "release" / "mcp_toon_component.wasm"
# `make traefik`: the http-wasm module (crates/traefik), which it then
# copies into build/traefik/ (harness.TRAEFIK_PLUGIN).
TRAEFIK = TARGET / "wasm32-wasip1" / "release" / "mcp_toon_traefik.wasm"


def shown(path: Path) -> str:
    """A path as a message shows it: relative to the checkout where it is in
    it, whole where the target directory is elsewhere."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)
