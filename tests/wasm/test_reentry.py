"""Calls back into the plugin from inside a host call it made. Envoy
defers its own re-entrant work (continue_stream, local replies and callout
replies run after the VM call returns [envoy continueStream,
onHttpCallSuccess: "We are in a reentrant call, so defer."]), but other
hosts and older Envoys do not: they log or destroy a stream synchronously
inside a host call, or resume a paused stream — and deliver the callbacks
that follow — inside proxy_continue_stream (proxy-wasm-rust-sdk issues #43,
#70, #255: `already borrowed: BorrowMutError` in the SDK's dispatcher, which
traps the VM). For every call the plugin makes from a stream callback, the
host re-enters with proxy_on_log, and with proxy_on_done (a synchronous
reset: the stream ends there, proxy_on_delete follows once the outer
callback returned)."""

from __future__ import annotations

import pytest

from conftest import exchanges
from host import Reentry, Vm, play
from traffic import EXCHANGES, TIMEOUT_REPLY, script


def _events(ex):
    n = len(ex.response)
    return script(ex, response_cuts=(n // 2,))


@pytest.mark.parametrize("export", ["proxy_on_log", "proxy_on_done"])
@pytest.mark.parametrize("ex", EXCHANGES)
def test_reentry_from_every_host_call(plugin, failures, ex, export):
    events = _events(ex)
    trace = play(plugin.vm(ex), events, settle=TIMEOUT_REPLY).calls
    f = failures(f"{export} inside a host call")
    for call in trace:
        if call.callback in ("on_configure", "_initialize", "on_vm_start", "on_context_create", "on_log", "on_done",
                             "on_delete"):
            continue
        vm = Vm(plugin.engine, plugin.module, ex.configuration, reentries=(Reentry(call.index, export),),
                allow_on_headers_stop_iteration=ex.allow_on_headers_stop_iteration)
        assert vm.start()
        outcome = play(vm, events, settle=TIMEOUT_REPLY)
        # proxy_on_done from inside a call is the host resetting the stream
        # right there: judge it against the same host resetting the stream
        # at that event without the plugin, not against a stream that ended.
        baseline = events if export == "proxy_on_log" else events[: call.event] + [("reset",)]
        # A reset while the callout's reply is being handled cuts a response
        # the plugin legitimately held for it (oracle: held_for_callout).
        held = export == "proxy_on_done" and call.callback == "on_http_call_response"
        f.add(f"{export} inside call #{call.index} {call.name} [{call.callback}]",
              plugin.check(ex, baseline, outcome, held=held), group=call.callback)
    f.assert_none()


@pytest.mark.parametrize("ex", exchanges("json-trim", "sse-trim"))
def test_resume_inside_continue_stream(plugin, failures, ex):
    """A host that resumes the paused response inside proxy_continue_stream,
    running the callbacks that follow before the call returns."""
    f = failures("synchronous resume")
    n = len(ex.response)
    for after in range(3):
        events = script(ex, response_cuts=(n // 3, 2 * n // 3), reply_after=after)
        outcome = plugin.run(ex, events, reentrant_resume=True)
        f.add(f"reply after chunk {after}", plugin.check(ex, events, outcome))
    f.assert_none()
