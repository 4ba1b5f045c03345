"""Callbacks in orders Envoy does not produce on demand, but other hosts,
other Envoy versions or timing can: the body before the headers, the
access log (proxy_on_log) early, a second end of stream, the response
before the request has ended, a callout reply at every point — before,
between and after the body chunks, after the stream ended, after the
access log — and callouts that fail or time out."""

from __future__ import annotations

import pytest

from conftest import exchanges
from host import Reply
from traffic import EXCHANGES, TIMEOUT_REPLY, TRAILERS, script


def _each(plugin, ex, label, cases, failures):
    f = failures(label)
    vm = plugin.vm(ex)
    for name, events in cases:
        if vm.trap is not None:
            vm = plugin.vm(ex)
        outcome = plugin.run(ex, events, vm=vm)
        f.add(name, plugin.check(ex, events, outcome))
    f.assert_none()


def _thirds(ex):
    n = len(ex.response)
    return (n // 3, 2 * n // 3)


@pytest.mark.parametrize("ex", EXCHANGES)
def test_response_body_before_the_response_headers(plugin, failures, ex):
    events = script(ex, response_cuts=_thirds(ex))
    at = next(i for i, e in enumerate(events) if e[0] == "response_headers")
    headers = events.pop(at)
    cases = [(f"headers after body chunk {k}", events[: at + k] + [headers] + events[at + k:]) for k in (1, 2)]
    _each(plugin, ex, "body before headers", cases, failures)


@pytest.mark.parametrize("ex", EXCHANGES)
def test_access_log_at_every_point(plugin, failures, ex):
    events = script(ex, response_cuts=_thirds(ex))
    cases = [(f"on_log after event {i} ({events[i][0]})", events[: i + 1] + [("log",)] + events[i + 1:])
             for i in range(len(events))]
    _each(plugin, ex, "early proxy_on_log", cases, failures)


@pytest.mark.parametrize("ex", EXCHANGES)
def test_a_second_end_of_stream(plugin, failures, ex):
    base = script(ex, response_cuts=_thirds(ex))
    last = max(i for i, e in enumerate(base) if e[0] == "response_body")
    cases = [
        ("empty body with end_of_stream again", base[: last + 1] + [("response_body", b"", True)] + base[last + 1:]),
        ("trailers after end_of_stream", base[: last + 1] + [("response_trailers", list(TRAILERS))] + base[last + 1:]),
        ("request end_of_stream twice", base[:2] + [("request_body", b"", True)] + base[2:]),
    ]
    _each(plugin, ex, "double end of stream", cases, failures)


@pytest.mark.parametrize("ex", EXCHANGES)
def test_response_before_the_request_ends(plugin, failures, ex):
    cases = []
    for at in range(1, len(ex.request), 7):
        events = script(ex, request_cuts=(at,))
        second = events.pop(2)  # the request's last chunk
        cases.append((f"request cut at {at}, its end after the response", events + [second]))
        cases.append((f"request cut at {at}, its end mid-response",
                      events[:4] + [second] + events[4:]))
    _each(plugin, ex, "response before request end", cases, failures)


@pytest.mark.parametrize("ex", exchanges("json-trim", "sse-trim"))
def test_callout_reply_at_every_point(plugin, failures, ex):
    cuts = tuple(range(97, len(ex.response), 97))
    cases = []
    for reply_name, reply in (("reply", ex.reply), ("timeout", TIMEOUT_REPLY), ("reset callout", Reply(None)),
                              ("500", Reply(500, b"oops")), ("garbage", Reply(200, b"{\"choices\": 7")),
                              ("empty", Reply(200, b""))):
        for after in range(len(cuts) + 2):
            cases.append((f"{reply_name} after chunk {after}", script(ex, response_cuts=cuts, reply=reply, reply_after=after)))
            cases.append((f"{reply_name} after chunk {after}, trailers",
                          script(ex, response_cuts=cuts, reply=reply, reply_after=after, trailers=True)))
    _each(plugin, ex, "callout reply at every point", cases, failures)


@pytest.mark.parametrize("ex", exchanges("json-trim", "sse-trim"))
def test_callout_reply_after_the_stream_ended(plugin, failures, ex):
    events = [e for e in script(ex) if e[0] != "reply"]
    cases = [
        ("reply after the access log", events + [("log",), ("reply", ex.reply)]),
        ("reply after the request and response ended, log, then reply", events + [("log",), ("reply", TIMEOUT_REPLY)]),
    ]
    _each(plugin, ex, "reply after the end", cases, failures)


@pytest.mark.parametrize("ex", EXCHANGES)
def test_headers_only_response(plugin, failures, ex):
    events = script(ex)
    at = next(i for i, e in enumerate(events) if e[0] == "response_headers")
    events = events[:at] + [("response_headers", [(":status", "204")], True)]
    _each(plugin, ex, "headers-only response", [("204 with end_of_stream", events)], failures)
