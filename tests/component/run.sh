#!/usr/bin/env bash
# The component host test: builds the wasm32-wasip2 component and its native
# twin, then runs tests/component/test_component.py in Wasmtime (PyPI
# `wasmtime`) from a project-local virtual environment.
#
#   bash tests/component/run.sh            # from anywhere
#   VENV=/path/to/venv bash tests/component/run.sh
#
# Needs: rustup target wasm32-wasip2, python3 with venv, PyPI reachable the
# first time (tests/component/requirements.txt).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
venv="${VENV:-$root/target/component-venv}"

cargo build --quiet -p mcp-toon-component --target wasm32-wasip2 --release
cargo build --quiet -p mcp-toon-component --example component-native

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r tests/component/requirements.txt

target_dir="$(cargo metadata --format-version 1 --no-deps | "$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
export MCP_TOON_COMPONENT="$target_dir/wasm32-wasip2/release/mcp_toon_component.wasm"
export MCP_TOON_NATIVE="$target_dir/debug/examples/component-native"
echo "component: $MCP_TOON_COMPONENT ($(wc -c <"$MCP_TOON_COMPONENT") bytes)"
exec "$venv/bin/python" -m pytest -q tests/component "$@"
