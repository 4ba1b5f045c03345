"""Memory stays bounded over many streams on one VM: every exchange, cut,
with trailers, reset mid-body and with a callout in flight, thousands of
times. Wasm memory only grows (no page is ever given back), so a leak shows
as growth between two late checkpoints; the first rounds warm the
allocator up."""

from __future__ import annotations

import json

from host import Vm, play
from traffic import EXCHANGES, TIMEOUT_REPLY, TRIM, script


def _mix():
    for ex in EXCHANGES:
        n = len(ex.response)
        yield ex, script(ex, response_cuts=(n // 3, 2 * n // 3))
        yield ex, script(ex, response_cuts=(n // 2,), trailers=True)
        events = script(ex, response_cuts=(n // 2,))
        first = next(i for i, e in enumerate(events) if e[0] == "response_body")
        yield ex, events[: first + 1] + [("reset",)]
        if ex.reply is not None:
            yield ex, [e for e in script(ex) if e[0] != "reply"] + [("reset",)]
            yield ex, [e for e in script(ex) if e[0] != "reply"] + [("log",), ("reply", TIMEOUT_REPLY)]


def test_memory_does_not_grow_with_the_number_of_streams(plugin):
    # One configuration that lets every exchange of the mix rewrite: trim
    # on (for the trim exchanges' intent), everything else at defaults.
    vm = Vm(plugin.engine, plugin.module, json.dumps(TRIM).encode())
    assert vm.start()
    mix = list(_mix())
    checkpoints = []
    for rounds in range(1, 121):
        for ex, events in mix:
            outcome = play(vm, events, settle=TIMEOUT_REPLY)
            assert outcome.trap is None, outcome.trap
        if rounds in (40, 80, 120):
            checkpoints.append(vm.memory_bytes())
    streams = 120 * len(mix)
    assert len(vm.streams) == 0, f"{len(vm.streams)} contexts never deleted"
    assert checkpoints[2] == checkpoints[1], (
        f"memory grew from {checkpoints[1]} to {checkpoints[2]} bytes between stream "
        f"{80 * len(mix)} and {streams}: checkpoints {checkpoints}"
    )
