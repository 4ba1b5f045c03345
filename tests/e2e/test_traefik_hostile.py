"""Hostile results through Traefik: the bodies of tests/e2e/test_hostile.py
(megabyte inputs that make parsers quadratic, nesting, escapes, event
streams that never close their JSON) arrive through Traefik exactly as
through Envoy with the same configuration, and another client is served
while one runs."""

from __future__ import annotations

import json
import threading

import httpx
import pytest

import harness
import test_hostile as th
from test_hostile import upstream  # noqa: F401 (the raw server fixture)


@pytest.fixture(scope="module")
def pair(upstream, work_dir):  # noqa: F811
    e = harness.start_envoy([harness.Listener(name, cfg) for name, cfg in th.CONFIGS.items()], upstream, work_dir, name="envoy-traefik-hostile")
    t = harness.start_traefik(dict(th.CONFIGS), upstream, work_dir, name="traefik-hostile")
    try:
        yield e, t
    finally:
        t.stop()
        e.stop()


def send(url: str, case: th.Case) -> bytes:
    body = json.dumps(case.request if case.request is not None else th.CALL, separators=(",", ":")).encode()
    with httpx.Client(timeout=300) as client:
        with client.stream("POST", url, content=body, headers=th.REQUEST_HEADERS) as r:
            assert r.status_code == 200
            return b"".join(r.iter_raw())


@pytest.mark.parametrize("config", list(th.CONFIGS))
@pytest.mark.parametrize("name", [c.name for c in th.HOSTILE])
def test_a_hostile_result_arrives_as_through_envoy(pair, config, name):
    e, t = pair
    case = th.BY_NAME[name]
    path = f"/mcp/{case.name}"
    assert send(t.url(config, path), case) == send(e.url(config, path), case)


def test_another_client_is_served_while_a_hostile_result_runs(pair):
    """Each request runs on its own instance of the module: a 1 MB
    group-rows table (TOON's costliest) in flight, a small call is answered
    and right."""
    _, t = pair
    case = th.BY_NAME["toon_group_rows"]
    done: dict[str, bytes] = {}
    worker = threading.Thread(target=lambda: done.update(body=send(t.url("default", f"/mcp/{case.name}"), case)))
    worker.start()
    small = th.BY_NAME["small"]
    assert send(t.url("default", f"/mcp/{small.name}"), small) == small.body
    worker.join(300)
    assert done["body"]
