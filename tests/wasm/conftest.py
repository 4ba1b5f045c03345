"""Fixtures of the built-module tier: the compiled module, fresh VMs, and
the reference forms of each exchange (from fault-free runs of the same
module)."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import Callable, Optional

import pytest
import wasmtime

sys.path.insert(0, str(Path(__file__).parent))

from host import Outcome, Reply, Side, Vm, play, without_plugin  # noqa: E402
from oracle import Units, problems  # noqa: E402
from traffic import EXCHANGES, TIMEOUT_REPLY, Exchange, script  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# run.sh sets MCP_TOON_WASM from cargo metadata (CARGO_TARGET_DIR respected).
WASM = Path(os.environ.get("MCP_TOON_WASM") or ROOT / "target/wasm32-wasip1/release/mcp_toon.wasm")


@pytest.fixture(scope="session")
def engine() -> wasmtime.Engine:
    return wasmtime.Engine()


@pytest.fixture(scope="session")
def module(engine: wasmtime.Engine) -> wasmtime.Module:
    if not WASM.exists():
        pytest.fail(f"{WASM} is missing: run `make build` (or tests/wasm/run.sh)")
    return wasmtime.Module.from_file(engine, str(WASM))


class Plugin:
    """Starts VMs of the module and runs exchanges through them."""

    def __init__(self, engine: wasmtime.Engine, module: wasmtime.Module) -> None:
        self.engine = engine
        self.module = module
        self._references: dict[str, tuple[Units, Units]] = {}

    def vm(self, ex: Exchange, **options) -> Vm:
        options.setdefault("allow_on_headers_stop_iteration", ex.allow_on_headers_stop_iteration)
        vm = Vm(self.engine, self.module, ex.configuration, **options)
        try:
            started = vm.start()
        except Exception:
            if vm.trap is None:
                raise
            started = True  # the trap is reported by the run
        assert started, f"the plugin refused the configuration {ex.config}: {vm.logs}"
        return vm

    def run(self, ex: Exchange, events: list[tuple], *, vm: Optional[Vm] = None, reentrant_resume: bool = False,
            **options) -> Outcome:
        vm = vm if vm is not None else self.vm(ex, **options)
        if vm.trap is not None:  # trapped while starting
            return Outcome(Side(), Side(), vm.trap, vm.calls, [], vm.logs, vm.unexpected, None)  # type: ignore[arg-type]
        return play(vm, events, reentrant_resume=reentrant_resume, settle=TIMEOUT_REPLY)

    def reference(self, ex: Exchange) -> tuple[Units, Units]:
        """The forms each unit of `ex` takes in fault-free runs: the unit
        alone through a fresh VM, once with the exchange's LLM reply and
        once with the callout failing (fail-open)."""
        if ex.name not in self._references:
            replies: list[Optional[Reply]] = [ex.reply, Reply(None)] if ex.reply is not None else [None]
            response_forms: list[set[bytes]] = []
            request_forms: set[bytes] = set()
            for unit in ex.units:
                forms: set[bytes] = set()
                for reply in replies:
                    alone = dataclasses.replace(ex, units=[unit])
                    outcome = self.run(alone, script(alone, reply=reply))
                    assert outcome.trap is None and outcome.client.state == "complete", (
                        f"{ex.name}: the fault-free run of a unit failed: {outcome.trap} {outcome.client.state}"
                    )
                    forms.add(bytes(outcome.client.body))
                    request_forms.add(bytes(outcome.server.body))
                response_forms.append(forms)
            self._references[ex.name] = (
                Units.unchanged(ex.units).with_forms(response_forms),
                Units.unchanged([ex.request]).with_forms([request_forms]),
            )
        return self._references[ex.name]

    def check(self, ex: Exchange, events: list[tuple], outcome: Outcome, *, originals_only: bool = False,
              held: bool = False) -> list[str]:
        response, request = self.reference(ex)
        if originals_only:
            response, request = Units.unchanged(list(ex.units)), Units.unchanged([ex.request])
        # A script that sends other bytes than the exchange (an empty body
        # before trailers, data after the end of stream) gets no rewritten
        # forms: what it sends must arrive unchanged.
        client, server = without_plugin(events)
        if client.state == "complete" and bytes(client.body) != ex.response:
            response = Units.unchanged([bytes(client.body)])
        if server.state == "complete" and bytes(server.body) != ex.request:
            request = Units.unchanged([bytes(server.body)])
        return problems(outcome, events, response, request, held)


@pytest.fixture(scope="session")
def plugin(engine: wasmtime.Engine, module: wasmtime.Module) -> Plugin:
    return Plugin(engine, module)


class Failures:
    """Collects the failing runs of one parametrised family, so a test
    reports every failing case (how many, which, what the client got)
    rather than stopping at the first."""

    def __init__(self, family: str) -> None:
        self.family = family
        self.runs = 0
        self.failed: list[tuple[str, list[str]]] = []
        self.groups: dict[str, list[int]] = {}  # group -> [runs, failed]

    def add(self, label: str, found: list[str], group: Optional[str] = None) -> None:
        self.runs += 1
        if group is not None:
            counts = self.groups.setdefault(group, [0, 0])
            counts[0] += 1
            counts[1] += bool(found)
        if found:
            self.failed.append((label, found))

    def assert_none(self, show: int = 12) -> None:
        if not self.failed:
            return
        kinds: dict[str, int] = {}
        for _, found in self.failed:
            for p in found:
                kind = p.split(":")[0]
                kinds[kind] = kinds.get(kind, 0) + 1
        lines = [f"{self.family}: {len(self.failed)} of {self.runs} runs failed"]
        lines += [f"  {g}: {f} of {n} failed" for g, (n, f) in sorted(self.groups.items()) if f]
        lines += [f"  {n} × {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])]
        for label, found in self.failed[:show]:
            lines.append(f"- {label}: " + " | ".join(found))
        if len(self.failed) > show:
            lines.append(f"  … and {len(self.failed) - show} more")
        pytest.fail("\n".join(lines), pytrace=False)


@pytest.fixture
def failures(request) -> Callable[[str], Failures]:
    return lambda family: Failures(f"{request.node.name} {family}".strip())


def pytest_terminal_summary(terminalreporter):
    import host

    terminalreporter.write_line(f"wasm tier: {host.played} streams played through {WASM}")


def pytest_make_parametrize_id(config, val, argname):
    if isinstance(val, Exchange):
        return val.name
    return None


def exchanges(*names: str) -> list[Exchange]:
    return [e for e in EXCHANGES if not names or e.name in names]
