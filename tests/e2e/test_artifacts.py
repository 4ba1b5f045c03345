"""The build layout honours CARGO_TARGET_DIR (issue 38): the tests and
scripts ask one place, artifacts.py, where the build put the module and the
CLI, and it answers as cargo and the Makefile do — with the variable unset,
absolute (a shared cache outside the checkout) or relative."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import artifacts
import harness

ROOT = artifacts.ROOT


def where(env_value: str | None) -> dict[str, Path]:
    """artifacts' answers in a fresh interpreter with CARGO_TARGET_DIR so."""
    env = {k: v for k, v in os.environ.items() if k != "CARGO_TARGET_DIR"}
    if env_value is not None:
        env["CARGO_TARGET_DIR"] = env_value
    code = "import artifacts as a; print(a.TARGET); print(a.WASM); print(a.CLI); print(a.TRAEFIK); print(a.COMPONENT)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "tests" / "e2e", env=env, capture_output=True, text=True, check=True)
    target, wasm, cli, traefik, component = (Path(line) for line in out.stdout.splitlines())
    return {"target": target, "wasm": wasm, "cli": cli, "traefik": traefik, "component": component}


def make_names(env_value: str | None, goal: str = "build") -> str:
    """The module `make build` (or `make traefik`) checks the size of, as
    make prints it (-n)."""
    env = {k: v for k, v in os.environ.items() if k != "CARGO_TARGET_DIR"}
    if env_value is not None:
        env["CARGO_TARGET_DIR"] = env_value
    out = subprocess.run(["make", "-n", goal], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    m = re.search(r"stat -c %s (\S+)\)", out.stdout)
    assert m, out.stdout
    return m[1]


@pytest.mark.parametrize("value", [None, "/tmp/mcp-toon-shared-cache", "build-cache"])
def test_tests_and_make_name_the_same_module(value):
    got = where(value)
    expected = {None: ROOT / "target", "/tmp/mcp-toon-shared-cache": Path("/tmp/mcp-toon-shared-cache")}.get(value, ROOT / "build-cache")
    assert got["target"] == expected
    assert got["wasm"] == expected / "wasm32-wasip1" / "release" / "mcp_toon.wasm"
    assert got["cli"] == expected / "release" / "mcp-toon"
    # Each host its own crate, its own module (issue 38).
    assert got["traefik"] == expected / "wasm32-wasip1" / "release" / "mcp_toon_traefik.wasm"
    assert got["component"] == expected / "wasm32-wasip2" / "release" / "mcp_toon_component.wasm"
    # make runs at the root: its relative name is the same file.
    assert (ROOT / make_names(value)).resolve() == got["wasm"].resolve()
    assert (ROOT / make_names(value, "traefik")).resolve() == got["traefik"].resolve()


def test_messages_show_a_path_outside_the_checkout_whole():
    assert artifacts.shown(ROOT / "target" / "x.wasm") == "target/x.wasm"
    assert artifacts.shown(Path("/tmp/elsewhere/x.wasm")) == "/tmp/elsewhere/x.wasm"


def test_a_config_names_the_built_module_once():
    """The repository's configs name the module relative to the checkout;
    a copy for a build elsewhere names it where it is, and a path already
    absolute, whose folder ends in `target`, is left as it is (it was
    rewritten into a path inside itself)."""
    built = Path("/tmp/shared-target/wasm32-wasip1/release/mcp_toon.wasm")
    repo = "filename: target/wasm32-wasip1/release/mcp_toon.wasm\n"
    assert harness.built_module_named(repo, built) == f"filename: {built}\n"
    rendered = json.dumps({"filename": str(built)})
    assert harness.built_module_named(rendered, Path("/elsewhere/mcp_toon.wasm")) == rendered
    assert harness.built_module_named('"filename": "target/wasm32-wasip1/release/mcp_toon.wasm"', built) == f'"filename": "{built}"'

