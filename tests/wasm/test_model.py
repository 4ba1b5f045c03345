"""The host model itself: it links every import the module declares, the
plugin calls none it does not model, fault-free runs rewrite what they
should, and the oracle accepts exactly those runs. If these fail, the other
tests of the tier mean nothing."""

from __future__ import annotations

import json

import pytest

from conftest import exchanges
from host import STATUSES, Status, Vm, deserialize_pairs, serialize_pairs, without_plugin
from oracle import Units, _matches
from traffic import EXCHANGES, script


def test_every_import_the_module_declares_is_linked(module):
    env = {i.name for i in module.imports if i.module == "env"}
    modelled = {name for name in env if hasattr(Vm, "_" + name)}
    # The ABI is the plugin's own (src/adapter/abi.rs): it declares only
    # what it calls, and the host models every one of them.
    assert env == modelled
    assert set(STATUSES) - {"proxy_send_local_response"} <= modelled
    others = {i.module for i in module.imports} - {"env"}
    assert others == {"wasi_snapshot_preview1"}


@pytest.mark.parametrize("ex", EXCHANGES)
def test_a_fault_free_run_delivers_what_the_plugin_promises(plugin, ex):
    events = script(ex)
    outcome = plugin.run(ex, events)
    assert outcome.trap is None
    assert outcome.unexpected == [], "the plugin called imports the host does not model"
    assert plugin.check(ex, events, outcome) == []
    client, _ = without_plugin(events)
    if ex.rewrites:
        assert bytes(outcome.client.body) != bytes(client.body), "nothing was rewritten: the tier would test nothing"
        assert len(outcome.client.body) < len(client.body)
    else:
        assert bytes(outcome.client.body) == bytes(client.body)


@pytest.mark.parametrize("ex", exchanges("json-trim", "sse-trim"))
def test_trim_exchanges_call_out_once_and_strip_the_intent(plugin, ex):
    outcome = plugin.run(ex, script(ex))
    assert [c.cluster for c in outcome.callouts] == ["llm"]
    sent = json.loads(bytes(outcome.server.body))
    assert "expected_info" not in sent["params"]["arguments"]


def test_held_headers_carry_the_exact_length(plugin):
    ex = next(e for e in EXCHANGES if e.name == "json-held-headers")
    outcome = plugin.run(ex, script(ex))
    assert outcome.client.header("content-length") == str(len(outcome.client.body))
    assert outcome.client.header("x-mcp-toon")


def test_the_oracle_rejects_loss_duplication_and_mixing():
    units = Units.unchanged([b"aa", b"bb"]).with_forms([{b"A"}, set()])
    assert _matches(b"aabb", units.forms, None) and _matches(b"Abb", units.forms, None)
    for wrong in (b"aab", b"aabbbb", b"bbaa", b"aAbb", b"", b"AAbb"):
        assert not _matches(wrong, units.forms, None), wrong
    # After a reset: whole units, then a prefix of the cut one.
    assert _matches(b"Ab", units.forms[:1], frozenset([b"bb"])) and not _matches(b"Ax", units.forms[:1], frozenset([b"bb"]))


def test_map_encoding_round_trips():
    pairs = [(":status", "200"), ("x-empty", "")]
    assert deserialize_pairs(serialize_pairs(pairs)) == pairs


def test_statuses_are_the_abi_values():
    assert [int(s) for s in (Status.OK, Status.NOT_FOUND, Status.BAD_ARGUMENT, Status.INVALID_MEMORY_ACCESS,
                             Status.CAS_MISMATCH, Status.INTERNAL_FAILURE, Status.UNIMPLEMENTED)] == [0, 1, 2, 6, 8, 10, 12]
