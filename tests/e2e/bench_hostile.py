"""How long the hostile results of test_hostile.py take through the real
Envoy with mcp-toon, against Envoy alone: a benchmark, run by `make bench`
(`pytest tests/e2e/bench_hostile.py -s`), not by `make test` — pytest
collects this file only when it is named on the command line.

For each case and configuration it prints the median time to the last byte
without the plugin, with it, and with it for an ordinary input of the same
size and kind (what a linear stage costs: a page, a blob, a table), and
whether the plugin stayed within the rule the linear-time promise sets:
twice Envoy's own time plus twice the ordinary input's. The second part
times a small request on the same worker while one hostile response is in
flight. Figures depend on the machine and its load; they are printed, never
asserted.
"""

from __future__ import annotations

import statistics
import threading

import pytest

from test_hostile import BY_NAME, CONFIGS, HOSTILE, envoy, send, upstream  # noqa: F401 (fixtures)

RUNS = 5


def verdict(t: float, limit: float) -> str:
    return "within" if t <= limit else "OVER"


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
    print(
        f"\n{name} [{listener}]: {len(case.body):,} bytes; Envoy alone {t_bare * 1e3:.1f} ms, "
        f"with mcp-toon {t_plugin * 1e3:.1f} ms; an ordinary {case.like or '-'} of that size "
        f"{t_like * 1e3:.1f} ms; rule {limit * 1e3:.1f} ms: {verdict(t_plugin, limit)}"
    )


@pytest.mark.parametrize("listener", list(CONFIGS))
@pytest.mark.parametrize("name", ["b64_lines", "html_rt", "html_div_title", "toon_group_rows"])
def test_time_of_a_second_client(envoy, listener, name):
    case = BY_NAME[name]
    small = BY_NAME["small"]
    t_small_alone = statistics.median(send(envoy, listener, small)[0] for _ in range(RUNS))
    t_bare = statistics.median(send(envoy, "bare", case)[0] for _ in range(RUNS))
    t_like = statistics.median(send(envoy, listener, BY_NAME[case.like])[0] for _ in range(RUNS)) if case.like else 0.0
    big: list[float] = []
    thread = threading.Thread(target=lambda: big.append(send(envoy, listener, case)[0]))
    thread.start()
    # Once the big response is on its way (the upstream answers at once).
    threading.Event().wait(min(t_bare / 2, 0.05))
    t_small, _ = send(envoy, listener, small)
    thread.join(timeout=120)
    limit = t_small_alone + 2 * t_bare + 2 * t_like
    print(
        f"\n{name} [{listener}]: a small request took {t_small * 1e3:.1f} ms beside it "
        f"({t_small_alone * 1e3:.1f} ms alone), the big one {big[0] * 1e3 if big else float('nan'):.1f} ms; "
        f"rule {limit * 1e3:.1f} ms: {verdict(t_small, limit)}"
    )
