"""What counts as a correct delivery, whatever the host did.

The promise (DESIGN "Never less than Envoy alone", "Fail open, lose
nothing"): the client receives at least what the same host without the
plugin delivers (`host.without_plugin`), unchanged and in order, except
where the plugin rewrote a unit it had whole. Concretely, for each peer:

- the body is the original units in order, each one either byte-identical
  or in one of the forms a fault-free run of the plugin gives it (its
  `forms`) — never duplicated, cut, reordered or mixed;
- if the stream ended (end of stream or trailers), the peer's stream ends
  too (not reset, not left paused), with the same trailers, and a
  `content-length` the peer receives matches the body;
- if the stream was reset, every unit the peer had received *whole* without
  the plugin arrives (original or rewritten); of the unit the reset cut,
  any bytes that arrive are its leading bytes. A cut unit has no value to
  the peer either way — a JSON parser rejects a truncated document, and an
  SSE parser never dispatches an unfinished event (WHATWG HTML §9.2.6) —
  and no plugin can write after the host destroyed the stream, so this is
  the most a rewriting plugin can promise on a reset. One exception: while
  a trim callout is in flight the plugin holds the response (docs/trim.md:
  the response waits for the callout),
  and Envoy lets a body callback release all of its buffer or none of it,
  so a reset then may cut the delivery at any unit boundary — but what
  arrives must still be whole units in order, then leading bytes;
- the headers are the original ones, less those the plugin may drop
  (`content-length`, and `accept-encoding` on requests) and plus its
  `x-mcp-toon` summary.

Every check returns a list of problems in words, with the bytes involved,
so a failing test says what the client got and what it should have got.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from host import Outcome, Side, without_plugin

RESPONSE_HEADERS_THE_PLUGIN_MAY_CHANGE = {"content-length", "x-mcp-toon"}
REQUEST_HEADERS_THE_PLUGIN_MAY_CHANGE = {"content-length", "accept-encoding"}


@dataclass(frozen=True)
class Units:
    """A body as units, each with the forms it may arrive in (the original
    first)."""

    originals: tuple[bytes, ...]
    forms: tuple[frozenset[bytes], ...]

    @staticmethod
    def unchanged(originals: list[bytes]) -> "Units":
        return Units(tuple(originals), tuple(frozenset([o]) for o in originals))

    def with_forms(self, extra: list[set[bytes]]) -> "Units":
        return Units(self.originals, tuple(frozenset(f | {o}) for f, o in zip(extra, self.originals)))


def _matches(body: bytes, forms: tuple[frozenset[bytes], ...], tail: Optional[frozenset[bytes]]) -> bool:
    """Whether `body` is one form of each unit in order, followed (when
    `tail` is given) by a prefix of one of the `tail` byte strings."""

    @lru_cache(maxsize=None)
    def go(i: int, pos: int) -> bool:
        if i == len(forms):
            rest = body[pos:]
            return rest == b"" if tail is None else any(t.startswith(rest) for t in tail)
        return any(body.startswith(f, pos) and go(i + 1, pos + len(f)) for f in forms[i])

    return go(0, 0)


def _show(data: bytes, limit: int = 60) -> str:
    if len(data) <= limit:
        return repr(data)
    return repr(data[: limit // 2]) + "…" + repr(data[-limit // 2 :])


def _first_difference(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def _cut_after(units: Units, j: int, delivered: bytes) -> frozenset[bytes]:
    """What may follow j whole units: leading bytes of unit j as the host
    delivered them, or of one of its rewritten forms (an event that ends
    in a lone CR is complete before its LF arrives, WHATWG HTML §9.2.6)."""
    rest = delivered[sum(len(o) for o in units.originals[:j]):]
    return frozenset({rest} | (set(units.forms[j]) if j < len(units.forms) else set()))


def _body_problem(who: str, body: bytes, units: Units, baseline: Side, reset: bool, held_for_callout: bool) -> Optional[str]:
    if reset:
        whole, k = 0, 0
        for original in units.originals:
            if whole + len(original) > len(baseline.body):
                break
            whole += len(original)
            k += 1
        delivered = bytes(baseline.body)
        first = 0 if held_for_callout else k
        if any(_matches(body, units.forms[:j], _cut_after(units, j, delivered)) for j in range(first, k + 1)):
            return None
        if held_for_callout:
            expected = f"whole units of the first {k} in order (a callout was in flight), then leading bytes"
        else:
            expected = f"{k} whole unit(s) ({whole} bytes, original or rewritten), then up to {len(delivered) - whole} leading bytes"
    else:
        if _matches(body, units.forms, None):
            return None
        expected = f"all {len(units.originals)} unit(s), original or rewritten ({len(b''.join(units.originals))} bytes original)"
    original = b"".join(units.originals)
    at = _first_difference(body, original)
    return (
        f"{who} body: got {len(body)} bytes, expected {expected}; "
        f"differs from the original at byte {at}: got {_show(body[at:at + 60])}, original {_show(original[at:at + 60])}"
    )


def _headers_problem(who: str, got: Side, baseline: Side, may_change: set[str]) -> Optional[str]:
    if baseline.headers is None:
        return None
    if got.headers is None:
        return f"{who} never received the headers"
    keep = lambda hs: sorted((k, v) for k, v in hs if k not in may_change)  # noqa: E731
    if keep(got.headers) != keep(baseline.headers):
        return f"{who} headers changed: got {keep(got.headers)}, sent {keep(baseline.headers)}"
    return None


def side_problems(who: str, got: Side, baseline: Side, units: Units, may_change: set[str],
                  held_for_callout: bool = False) -> list[str]:
    problems = []
    if got.local_reply is not None:
        problems.append(f"{who} got a local reply {got.local_reply} instead of the stream")
        return problems
    # A reset after the stream ended without the plugin (the client went
    # away) can only cut what the plugin still legitimately held.
    late_reset = baseline.state == "complete" and got.state == "reset" and held_for_callout
    if baseline.state == "complete" and got.state != "complete" and not late_reset:
        what = "stalled (paused, never ended)" if got.state == "open" else "was reset"
        problems.append(f"{who} stream {what}, though it ended normally without the plugin")
    if baseline.state == "reset" and got.state == "complete":
        problems.append(f"{who} stream completed though it was reset")
    reset = baseline.state == "reset" or late_reset
    body = _body_problem(who, bytes(got.body), units, baseline, reset, held_for_callout)
    if body:
        problems.append(body)
    if baseline.state == "complete" or got.headers is not None:
        headers = _headers_problem(who, got, baseline, may_change)
        if headers:
            problems.append(headers)
    if baseline.trailers is not None and baseline.state == "complete" and not late_reset and got.trailers != baseline.trailers:
        problems.append(f"{who} trailers: got {got.trailers}, sent {baseline.trailers}")
    length = got.header("content-length")
    if length is not None and got.state == "complete" and int(length) != len(got.body):
        problems.append(f"{who} content-length {length} but the body has {len(got.body)} bytes")
    return problems


def problems(
    outcome: Outcome,
    script: list[tuple],
    response: Units,
    request: Units,
    held: bool = False,
) -> list[str]:
    """Everything wrong with one run, or []. `held`: the response was
    legitimately held when the stream ended early (see the module doc)."""
    if outcome.trap is not None:
        return [f"VM trapped: {outcome.trap}"]
    client, server = without_plugin(script)
    held = held or any(c.canceled for c in outcome.callouts)
    return side_problems(
        "client", outcome.client, client, response, RESPONSE_HEADERS_THE_PLUGIN_MAY_CHANGE, held
    ) + side_problems("server", outcome.server, server, request, REQUEST_HEADERS_THE_PLUGIN_MAY_CHANGE)
