"""How long the hostile results of test_hostile.py take through the real
Envoy with mcp-toon, against Envoy alone: a benchmark, run by `make bench`
(`pytest tests/e2e/bench_hostile.py -s`), not by `make test` — pytest
collects this file only when it is named on the command line.

For each case and configuration it measures the median time to the last
byte without the plugin, with it, and with it for an ordinary input of the
same size and kind (what a linear stage costs: a page, a blob, a table), and
whether the plugin stayed within the rule the linear-time promise sets:
twice Envoy's own time plus twice the ordinary input's. The second part
times a small request on the same worker while a hostile event is on its
way through it (the gated stream of test_hostile.py, released once the
small request is answered): it may wait for as long as the rule lets the
hostile result take, its own time alone plus twice Envoy's for the hostile
result plus twice an ordinary input's. Figures depend on the machine and its load;
they are recorded, never asserted.

Output, for scripts: one line per measurement, `bench_hostile {JSON}`, as
it is taken; at the end a Markdown table of all of them, and the same rows
as a JSON array in `$BENCH_HOSTILE_JSON` (default
`target/bench/hostile.json`).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

import artifacts
import harness
from test_hostile import BESIDE, BY_NAME, CONFIGS, GATED, HOSTILE, beside, envoy, send, upstream  # noqa: F401 (fixtures)

RUNS = 5
ROWS: list[dict[str, Any]] = []
OUT = Path(os.environ.get("BENCH_HOSTILE_JSON") or artifacts.TARGET / "bench" / "hostile.json")


def verdict(t: float, limit: float) -> str:
    return "within" if t <= limit else "OVER"


def record(row: dict[str, Any]) -> None:
    ROWS.append(row)
    print(f"\nbench_hostile {json.dumps(row, separators=(',', ':'))}")


def ms(t: float) -> float:
    return round(t * 1e3, 1)


@pytest.fixture(scope="module", autouse=True)
def table():
    yield
    if not ROWS:
        return
    cols = ["kind", "case", "listener", "bytes", "envoy_alone_ms", "plugin_ms", "like", "like_ms", "small_alone_ms", "small_beside_ms", "rule_ms", "verdict"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in ROWS:
        lines.append("| " + " | ".join("" if row.get(c) is None else str(row[c]) for c in cols) + " |")
    print("\n\nbench_hostile table\n" + "\n".join(lines))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(ROWS, indent=1) + "\n")
    print(f"\nbench_hostile rows written to {OUT}")


@pytest.mark.parametrize("listener", list(CONFIGS))
@pytest.mark.parametrize("name", [c.name for c in HOSTILE])
def test_time_through_the_plugin(envoy, listener, name):
    case = BY_NAME[name]
    bare, plugin, like = [], [], []
    for _ in range(RUNS):
        bare.append(send(envoy, "bare", case)[0])
        plugin.append(send(envoy, listener, case)[0])
        if case.like is not None:
            like.append(send(envoy, listener, BY_NAME[case.like])[0])
    t_bare, t_plugin = statistics.median(bare), statistics.median(plugin)
    t_like = statistics.median(like) if like else 0.0
    limit = 2 * t_bare + 2 * t_like
    record({
        "kind": "result", "case": name, "listener": listener, "bytes": len(case.body),
        "envoy_alone_ms": ms(t_bare), "plugin_ms": ms(t_plugin), "like": case.like, "like_ms": ms(t_like),
        "rule_ms": ms(limit), "verdict": verdict(t_plugin, limit),
    })


@pytest.mark.parametrize("listener", ["bare", *CONFIGS])
@pytest.mark.parametrize("name", BESIDE)
def test_time_of_a_second_client(envoy, upstream, listener, name):
    small = BY_NAME["small"]
    t_alone = statistics.median(send(envoy, listener, small)[0] for _ in range(RUNS))
    start = time.monotonic()
    t_beside = statistics.median(beside(envoy, upstream, listener, GATED[name])[3] for _ in range(RUNS))
    # The worker may be busy with the hostile result for as long as a
    # linear stage takes on it (the rule of test_time_through_the_plugin:
    # twice Envoy's own time plus twice an ordinary input's through the
    # plugin), never longer.
    case = BY_NAME[name]
    t_bare = statistics.median(send(envoy, "bare", case)[0] for _ in range(RUNS))
    t_like = statistics.median(send(envoy, listener, BY_NAME[case.like])[0] for _ in range(RUNS)) if case.like and listener != "bare" else 0.0
    limit = t_alone + 2 * t_bare + 2 * t_like
    record({
        "kind": "second_client", "case": name, "listener": listener, "bytes": len(GATED[name].body),
        "small_alone_ms": ms(t_alone), "small_beside_ms": ms(t_beside), "rule_ms": ms(limit),
        "verdict": verdict(t_beside, limit), "wall_s": round(time.monotonic() - start, 2),
    })
