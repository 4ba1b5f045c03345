"""Streams that end with trailers instead of an end-of-stream body
callback (HTTP/2, or HTTP/1.1 with `enable_trailers` on both sides), at
every point: after each cut of the body, right after the headers, and
before or after a trim callout's reply. Envoy exposes a writable body in
the trailers callback only when the body callbacks buffered [envoy
Context::getBuffer: the encoding buffer while `buffering_response_body_`,
else `response_body_buffer_`, which is null once a body callback returned
Continue], so a plugin that took bytes out of Envoy's buffer cannot write
them back there."""

from __future__ import annotations

import pytest

from conftest import exchanges
from traffic import EXCHANGES, TRAILERS, script


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
def test_response_ending_with_trailers_whole_body(plugin, failures, ex):
    _each(plugin, ex, "one chunk, then trailers", [("one chunk", script(ex, trailers=True))], failures)


@pytest.mark.parametrize("ex", EXCHANGES)
def test_response_ending_with_trailers_cut_at_every_offset(plugin, failures, ex):
    cases = ((f"cut at {at}", script(ex, response_cuts=(at,), trailers=True)) for at in range(1, len(ex.response)))
    _each(plugin, ex, "cut in two, then trailers", cases, failures)


@pytest.mark.parametrize("ex", EXCHANGES)
def test_response_ending_with_trailers_without_content_length(plugin, failures, ex):
    _each(plugin, ex, "chunked, then trailers",
          [("no content-length", script(ex, trailers=True, response_length=False))], failures)


@pytest.mark.parametrize("ex", EXCHANGES)
def test_trailers_right_after_the_headers(plugin, failures, ex):
    events = script(ex, response_length=False)
    events = [e for e in events if e[0] != "response_body"]
    at = next(i for i, e in enumerate(events) if e[0] == "response_headers")
    events.insert(at + 1, ("response_trailers", list(TRAILERS)))
    _each(plugin, ex, "headers, trailers, no body", [("no body", events)], failures)


@pytest.mark.parametrize("ex", exchanges("json-trim", "sse-trim"))
def test_trailers_before_and_after_the_callout_reply(plugin, failures, ex):
    n = len(ex.response)
    cases = []
    for at in range(1, n, 61):
        cases.append((f"cut at {at}, trailers, then reply", script(ex, response_cuts=(at,), trailers=True)))
        cases.append((f"cut at {at}, reply, then trailers", script(ex, response_cuts=(at,), trailers=True, reply_after=1)))
        cases.append((f"cut at {at}, reply mid-body, trailers", script(ex, response_cuts=(at,), trailers=True, reply_after=0)))
    _each(plugin, ex, "trailers around the callout", cases, failures)


@pytest.mark.parametrize("ex", EXCHANGES)
def test_request_ending_with_trailers_cut_at_every_offset(plugin, failures, ex):
    cases = [("request in one chunk, then trailers", script(ex, request_trailers=True))]
    cases += [(f"request cut at {at}, then trailers", script(ex, request_cuts=(at,), request_trailers=True))
              for at in range(1, len(ex.request))]
    _each(plugin, ex, "request ending with trailers", cases, failures)
