#!/usr/bin/env bash
# The built-module tier: builds the proxy-wasm plugin (the release module
# `make build` ships) and runs tests/wasm in a scripted proxy-wasm host on
# Wasmtime (PyPI `wasmtime`), from a project-local virtual environment
# shared with tests/component.
#
#   bash tests/wasm/run.sh                 # from anywhere
#   bash tests/wasm/run.sh -k faults -x    # pytest arguments pass through
#   MCP_TOON_WASM=/path/to/mcp_toon.wasm bash tests/wasm/run.sh   # another build
#
# Needs: rustup target wasm32-wasip1, python3 with venv, PyPI reachable the
# first time (tests/wasm/requirements.txt).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
venv="${VENV:-$root/target/component-venv}"

if [ -z "${MCP_TOON_WASM:-}" ]; then
    cargo build --quiet --target wasm32-wasip1 --release --features plugin
fi

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r tests/wasm/requirements.txt

if [ -z "${MCP_TOON_WASM:-}" ]; then
    target_dir="$(cargo metadata --format-version 1 --no-deps | "$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
    export MCP_TOON_WASM="$target_dir/wasm32-wasip1/release/mcp_toon.wasm"
fi
echo "wasm tier: $MCP_TOON_WASM ($(wc -c <"$MCP_TOON_WASM") bytes)"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/wasm "$@"
