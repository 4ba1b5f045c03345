"""Every host call failing in turn. A fault-free run records each `env`
call the plugin makes; then, for each of those calls and each non-Ok
status the ABI lets that import return [spec v0.2.1, "Returned Status"],
a fresh VM runs the same stream with exactly that call failing. Then each
import fails always, and from the first call of the stream on. Whatever
fails: the VM does not trap, and the client and the server get what the
oracle allows (original or rewritten units, complete, nothing lost or
doubled). A host that refuses every body write delivers the original bytes.

Two rules about starting: a plugin that cannot read its configuration
refuses it (on_configure false — running on defaults would, say, TOON-encode
a tool its operator set to `off`); any other failure while starting must
not stop the plugin (metrics are observability, not a reason to fail)."""

from __future__ import annotations

import pytest

from host import STATUSES, Fault, Vm, play
from traffic import EXCHANGES, TIMEOUT_REPLY, script


def _events(ex):
    n = len(ex.response)
    return script(ex, response_cuts=(n // 3, 2 * n // 3), request_cuts=(len(ex.request) // 2,))


def _run(plugin, ex, events, faults):
    """A fresh VM with `faults`; returns (outcome or None if the plugin
    refused to start, problems)."""
    vm = Vm(plugin.engine, plugin.module, ex.configuration, faults=faults,
            allow_on_headers_stop_iteration=ex.allow_on_headers_stop_iteration)
    try:
        started = vm.start()
    except Exception:
        if vm.trap is None:
            raise
        return None, [f"VM trapped while starting: {vm.trap}"]
    config_read = [c for c in vm.calls if c.name == "proxy_get_buffer_bytes" and c.callback == "on_configure"]
    unreadable = any(c.status != 0 for c in config_read)
    if unreadable:
        return None, ([] if not started else ["accepted a configuration it could not read (on_configure true)"])
    if not started:
        failed = sorted({c.name for c in vm.calls if c.status != 0})
        return None, [f"refused to start because {', '.join(failed)} failed"]
    outcome = play(vm, events, settle=TIMEOUT_REPLY)
    return outcome, None


def _check(plugin, ex, events, outcome, faults, originals_only=False):
    # A host that cannot resume a paused response leaves it to Envoy's
    # stream idle timeout, which resets it: nothing else can resume it, so
    # then the client is owed whole units in order, as after any reset of a
    # held response — not the complete response.
    held = False
    if any(f.name == "proxy_continue_stream" for f in faults) and outcome.client.state == "open":
        outcome.client.state = "reset"
        held = True
    return plugin.check(ex, events, outcome, originals_only=originals_only, held=held)


def _clean_trace(plugin, ex, events):
    vm = plugin.vm(ex)
    outcome = play(vm, events, settle=TIMEOUT_REPLY)
    assert outcome.trap is None
    return outcome.calls


def _label(call, status):
    return f"call #{call.index} {call.name} [{call.callback}: {call.detail}] -> {status.name}"


@pytest.mark.parametrize("ex", EXCHANGES)
def test_each_call_failing_in_turn(plugin, failures, ex):
    events = _events(ex)
    f = failures("one call fails")
    for call in _clean_trace(plugin, ex, events):
        for status in STATUSES.get(call.name, ()):
            faults = (Fault(call.name, status, call.nth),)
            outcome, found = _run(plugin, ex, events, faults)
            if found is None:
                found = _check(plugin, ex, events, outcome, faults)
            f.add(_label(call, status), found, group=call.name)
    f.assert_none()


@pytest.mark.parametrize("ex", EXCHANGES)
def test_each_import_failing_from_the_first_stream_call_on(plugin, failures, ex):
    events = _events(ex)
    trace = _clean_trace(plugin, ex, events)
    f = failures("an import fails for the rest of the stream")
    for name in sorted({c.name for c in trace if c.callback != "on_configure"} & set(STATUSES)):
        first = next(c for c in trace if c.name == name and c.callback != "on_configure")
        for status in STATUSES[name]:
            faults = (Fault(name, status, first.nth, onward=True),)
            outcome, found = _run(plugin, ex, events, faults)
            if found is None:
                found = _check(plugin, ex, events, outcome, faults, name == "proxy_set_buffer_bytes")
            f.add(f"{name} -> {status.name} from call #{first.index} on", found, group=name)
    f.assert_none()


@pytest.mark.parametrize("ex", EXCHANGES)
def test_each_import_failing_always(plugin, failures, ex):
    events = _events(ex)
    trace = _clean_trace(plugin, ex, events)
    f = failures("an import always fails")
    for name in sorted({c.name for c in trace} & set(STATUSES)):
        for status in STATUSES[name]:
            faults = (Fault(name, status),)
            outcome, found = _run(plugin, ex, events, faults)
            if found is None:
                found = _check(plugin, ex, events, outcome, faults, name == "proxy_set_buffer_bytes")
            f.add(f"{name} -> {status.name} always", found, group=name)
    f.assert_none()


@pytest.mark.parametrize("ex", EXCHANGES)
def test_a_host_that_refuses_every_write_delivers_the_original_bytes(plugin, failures, ex):
    """Body writes and header writes all refused (BadArgument, as Envoy
    answers a write to a buffer or map it no longer holds)."""
    f = failures("every write refused")
    for cuts in ((), (len(ex.response) // 2,), tuple(range(101, len(ex.response), 101))):
        events = script(ex, response_cuts=cuts, request_cuts=(len(ex.request) // 2,))
        faults = tuple(Fault(n, STATUSES[n][0]) for n in
                       ("proxy_set_buffer_bytes", "proxy_replace_header_map_value", "proxy_remove_header_map_value"))
        outcome, found = _run(plugin, ex, events, faults)
        if found is None:
            found = _check(plugin, ex, events, outcome, faults, originals_only=True)
        f.add(f"response in {len(cuts) + 1} chunk(s)", found)
    f.assert_none()
