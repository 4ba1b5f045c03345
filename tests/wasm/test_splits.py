"""Bodies split at every offset: inside JSON tokens, inside UTF-8
characters, inside CRLF and blank lines of an event stream. Streams of one
exchange share a VM, as streams of one Envoy worker do."""

from __future__ import annotations

import pytest

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
def test_response_split_in_two_at_every_offset(plugin, failures, ex):
    cases = ((f"cut at {at}", script(ex, response_cuts=(at,))) for at in range(1, len(ex.response)))
    _each(plugin, ex, "response cut in two", cases, failures)


@pytest.mark.parametrize("ex", EXCHANGES)
def test_response_in_one_byte_chunks(plugin, failures, ex):
    cases = [("1-byte chunks", script(ex, response_cuts=tuple(range(1, len(ex.response)))))]
    _each(plugin, ex, "response in 1-byte chunks", cases, failures)


@pytest.mark.parametrize("ex", EXCHANGES)
def test_response_split_in_three(plugin, failures, ex):
    n = len(ex.response)
    cases = (
        (f"cuts at {a},{b}", script(ex, response_cuts=(a, b)))
        for a in range(1, n, 37)
        for b in range(a + 1, n, 53)
    )
    _each(plugin, ex, "response cut in three", cases, failures)


@pytest.mark.parametrize("ex", EXCHANGES)
def test_request_split_in_two_at_every_offset(plugin, failures, ex):
    cases = ((f"request cut at {at}", script(ex, request_cuts=(at,))) for at in range(1, len(ex.request)))
    _each(plugin, ex, "request cut in two", cases, failures)
