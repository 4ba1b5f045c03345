"""The stream destroyed mid-way — a client that goes away, an upstream that
resets or closes before its `content-length` — at every point: after each
event of the exchange, after each cut of the body, while a trim callout is
in flight. Envoy then calls the plugin only to end the context (access log,
proxy_on_done, proxy_on_delete [envoy Context::log, onDestroy]) and cancels
its callouts [envoy Context::~Context]; nothing can be written any more."""

from __future__ import annotations

import pytest

from conftest import exchanges
from traffic import EXCHANGES, script


def _each(plugin, ex, label, cases, failures):
    f = failures(label)
    vm = plugin.vm(ex)
    for name, events in cases:
        if vm.trap is not None:
            vm = plugin.vm(ex)
        outcome = plugin.run(ex, events, vm=vm)
        f.add(name, plugin.check(ex, events, outcome))
    f.assert_none()


@pytest.mark.parametrize("ex", EXCHANGES)
def test_reset_after_every_event(plugin, failures, ex):
    events = script(ex, response_cuts=(len(ex.response) // 3, 2 * len(ex.response) // 3))
    cases = [(f"reset after event {i} ({events[i][0]})", events[: i + 1] + [("reset",)]) for i in range(len(events))]
    _each(plugin, ex, "reset after each event", cases, failures)


@pytest.mark.parametrize("ex", EXCHANGES)
def test_reset_after_every_cut_of_the_response(plugin, failures, ex):
    cases = []
    for at in range(1, len(ex.response)):
        events = script(ex, response_cuts=(at,))
        first = next(i for i, e in enumerate(events) if e[0] == "response_body")
        cases.append((f"reset after the first {at} bytes", events[: first + 1] + [("reset",)]))
    _each(plugin, ex, "reset mid-body", cases, failures)


@pytest.mark.parametrize("ex", exchanges("json-trim", "sse-trim"))
def test_reset_while_the_callout_is_in_flight(plugin, failures, ex):
    cases = []
    for at in range(1, len(ex.response), 29):
        events = script(ex, response_cuts=(at,))
        events = [e for e in events if e[0] != "reply"]
        cases.append((f"cut at {at}, reset before the reply", events + [("reset",)]))
        cases.append((f"cut at {at}, trailers, reset before the reply",
                      script(ex, response_cuts=(at,), trailers=True)[:-1] + [("reset",)]))
    _each(plugin, ex, "reset with a callout in flight", cases, failures)


@pytest.mark.parametrize("ex", EXCHANGES)
def test_reset_of_the_request_mid_body(plugin, failures, ex):
    cases = []
    for at in range(1, len(ex.request)):
        events = script(ex, request_cuts=(at,))
        cases.append((f"reset after {at} request bytes", events[:2] + [("reset",)]))
    _each(plugin, ex, "request reset mid-body", cases, failures)
