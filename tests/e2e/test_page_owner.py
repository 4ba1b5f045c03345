"""Pages only for their owner, page calls never upstream, re-issue through
the chain, secrets kept out of sight (issue 37), through the real Envoy with
the plugin where docs/envoy.md "Where it goes in the filter chain" puts it: after
the authentication and authorization filters.

Between Envoy and the demo server sits a recorder (recorder.py) that keeps
every request the server receives: a page call must never be among them.

- RBAC requiring `authorization` before the plugin: a page call without
  credentials is refused by RBAC (403); one with another caller's
  credentials gets a tool error (`page_foreign`) from the store and by
  calling the tool again, and nothing is re-issued for it;
- the owner's page call calls the tool again with its own credentials; the
  server sees that call and no page call (the review saw the page call
  arrive with an empty body);
- a re-issued answer over `paging.max_result_bytes` is refused;
- `paging.reissue_cluster` sends the re-issued call back through the
  listener: RBAC runs on it (a rule that forbids the tool there makes the
  page a tool error, where the direct re-issue skips it); the plugin lets
  the marked call pass and the server never sees the mark; a forged mark
  is removed and counted;
- jwt_authn before the plugin, the owner taken from its dynamic metadata
  (`paging.owner.from: metadata`): a new token of the same subject gets the
  page, another subject's does not;
- `paging.key` and `marker_key` from the VM's environment: absent from
  `/config_dump`, in use;
- a page call's id past `max_id_bytes` is answered 400 and copied nowhere.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

import harness
from harness import Listener
from recorder import Recorder

KEY = "owner-e2e-key-0123456789abcdef0123456789"
NEW_KEY = "owner-e2e-new-key-0123456789abcdef012345"
PAGE_TOOL = "mcp_toon_page"
# One authority on every listener: a handle is bound to it (the demo
# server allows only local host names).
HOST = "localhost:8080"
ALICE = {"authorization": "Bearer alice", "host": HOST}
MALLORY = {"authorization": "Bearer mallory", "host": HOST}
ANONYMOUS = {"host": HOST}
PAGED = {"budget": {"tokens": 20_000}, "paging": {"enabled": True, "reissue": "always"}}
CLEAN_OFF = {"html_to_markdown": False, "strip_base64": False, "collapse_whitespace": False}
HANDLE = re.compile(r'\{"handle":"([A-Za-z0-9_-]+)"\}')
ROWS = {"count": 8000}


def config(**paging: Any) -> dict[str, Any]:
    return {"hold_headers": True, "clean": CLEAN_OFF, "tools": {"export_rows": PAGED},
            "paging": {"key": KEY, **paging}}


def rbac(forbid_tool: str | None = None) -> dict[str, Any]:
    """Envoy's RBAC filter: callers must send `authorization`; with
    `forbid_tool`, a call naming that tool in `Mcp-Name` is refused too."""
    permission: dict[str, Any] = {"any": True}
    if forbid_tool:
        permission = {"not_rule": {"header": {"name": "mcp-name", "string_match": {"exact": forbid_tool}}}}
    return {"name": "envoy.filters.http.rbac", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC",
        "rules": {"action": "ALLOW", "policies": {"callers": {
            "permissions": [permission],
            "principals": [{"header": {"name": "authorization", "present_match": True}}]}}}}}


def before_the_plugin(filters_by_listener: dict[str, list[dict[str, Any]]]):
    """A `tweak` that lists these filters before the plugin in each
    listener: the chain README recommends."""

    def tweak(cfg: dict[str, Any]) -> None:
        for lst in cfg["static_resources"]["listeners"]:
            extra = filters_by_listener.get(lst["name"])
            if not extra:
                continue
            chain = lst["filter_chains"][0]["filters"][0]["typed_config"]["http_filters"]
            at = next(i for i, f in enumerate(chain) if f["name"] == "envoy.filters.http.wasm")
            chain[at:at] = extra

    return tweak


def metric(envoy: harness.Envoy, name: str) -> float:
    for line in envoy.admin("/stats").splitlines():
        if line.startswith(f"wasmcustom.{name}:"):
            return float(line.split(":", 1)[1])
    return 0.0


def call(envoy: harness.Envoy, listener: str, tool: str, args: dict[str, Any], headers: dict[str, str],
         request_id: int | str = 1):
    body = harness.jsonrpc("tools/call", {"name": tool, "arguments": args}, id=request_id)
    return harness.post(envoy.url(listener), body, headers=headers, timeout=120)


def cut(envoy: harness.Envoy, listener: str, headers: dict[str, str] = ALICE) -> str:
    r = call(envoy, listener, "export_rows", ROWS, headers)
    assert r.status_code == 200, r.text[:500]
    notice = r.json()["result"]["content"][-1]["text"]
    m = HANDLE.search(notice)
    assert m, notice[:500]
    return m.group(1)


def page(envoy: harness.Envoy, listener: str, handle: str, headers: dict[str, str]):
    return call(envoy, listener, PAGE_TOOL, {"handle": handle}, headers, request_id=2)


def page_calls_seen(rec: Recorder) -> list[Any]:
    """Requests that reached the server and were (or could have been) page
    calls: naming the page tool anywhere, or a tools/call with an empty body."""
    return [s for s in rec.snapshot()
            if PAGE_TOOL.encode() in s.body or s.headers.get("mcp-name") == PAGE_TOOL or not s.body]


def settle(rec: Recorder) -> None:
    """A request Envoy would send late (the review's page call went on
    while the tool was called again) arrives within this."""
    time.sleep(0.5)


# --- one Envoy, several chains --------------------------------------------------


@pytest.fixture(scope="module")
def recorder(demo):
    rec = Recorder(demo.port)
    try:
        yield rec
    finally:
        rec.stop()


@pytest.fixture(scope="module")
def gateway(recorder, work_dir: Path):
    listeners = {
        # Pages from the store.
        "rbac": Listener("rbac", config()),
        # Every page by calling the tool again (no store).
        "reissue": Listener("reissue", config(store_bytes=0)),
        # The same, holding at most 100 kB of a re-issued answer.
        "tight": Listener("tight", config(store_bytes=0, max_result_bytes=100_000)),
        # A new key first, the old one still opening handles.
        "rotated": Listener("rotated", {**config(store_bytes=0), "paging": {
            "key": [NEW_KEY, KEY], "store_bytes": 0}}),
    }
    # RBAC forbids export_rows here: a page call is allowed, the tool call
    # it re-issues is not — if RBAC sees it.
    for name in ("loop-deny", "direct-deny", "loop-ok"):
        listeners[name] = Listener(name, {})
    clusters = {n: f"loop_{n.replace('-', '_')}" for n in ("loop-deny", "loop-ok")}
    listeners["loop-deny"].plugin_config = config(store_bytes=0, reissue_cluster=clusters["loop-deny"])
    listeners["direct-deny"].plugin_config = config(store_bytes=0)
    listeners["loop-ok"].plugin_config = config(store_bytes=0, reissue_cluster=clusters["loop-ok"])
    chains = {n: [rbac()] for n in listeners}
    chains["loop-deny"] = [rbac("export_rows")]
    chains["direct-deny"] = [rbac("export_rows")]
    access_log = work_dir / "owner-access.log"
    e = harness.start_envoy(
        list(listeners.values()), recorder.port, work_dir, name="envoy-owner", access_log_path=access_log,
        extra_clusters=[harness.static_cluster(c, listeners[n].port) for n, c in clusters.items()],
        tweak=before_the_plugin(chains),
    )
    e.access_log = access_log
    try:
        yield e
    finally:
        e.stop()


def test_rbac_refuses_a_page_call_without_credentials_and_the_plugin_another_callers(gateway, recorder):
    # The chain: RBAC before the plugin refuses what has no credentials.
    assert call(gateway, "rbac", "list_users", {}, ANONYMOUS).status_code == 403
    h = cut(gateway, "rbac")
    recorder.clear()
    assert page(gateway, "rbac", h, ANONYMOUS).status_code == 403, "no headers at all: RBAC's 403"
    before = metric(gateway, "mcp_toon_passthrough_page_foreign")
    r = page(gateway, "rbac", h, MALLORY)
    assert r.status_code == 200
    result = r.json()["result"]
    assert result["isError"] is True, result
    assert "belongs to another caller" in result["content"][0]["text"]
    assert metric(gateway, "mcp_toon_passthrough_page_foreign") == before + 1
    own = page(gateway, "rbac", h, ALICE).json()["result"]
    assert "isError" not in own and len(own["content"]) == 2, str(own)[:300]
    settle(recorder)
    assert recorder.snapshot() == [], "no page call, nor anything else, reached the server"


def test_the_tool_is_called_again_only_for_the_owner_with_her_credentials(gateway, recorder):
    h = cut(gateway, "reissue")
    recorder.clear()
    for who in (MALLORY, {"authorization": "Bearer alice-not", "host": HOST}):
        result = page(gateway, "reissue", h, who).json()["result"]
        assert result["isError"] is True and "another caller" in result["content"][0]["text"], result
    settle(recorder)
    assert recorder.snapshot() == [], "nothing is re-issued for another caller"
    before = metric(gateway, "mcp_toon_reissued")
    own = page(gateway, "reissue", h, ALICE).json()["result"]
    assert "isError" not in own, str(own)[:300]
    assert metric(gateway, "mcp_toon_reissued") == before + 1
    settle(recorder)
    seen = recorder.snapshot()
    assert page_calls_seen(recorder) == [], [(s.headers.get("mcp-name"), s.body[:120]) for s in seen]
    (reissued,) = seen
    assert reissued.headers["authorization"] == "Bearer alice"
    assert reissued.headers.get("mcp-name") == "export_rows"
    assert json.loads(reissued.body)["params"]["arguments"] == ROWS


def test_a_handle_hides_its_call_and_survives_a_key_rotation(gateway, recorder):
    h = cut(gateway, "reissue")
    raw = base64.urlsafe_b64decode(h + "=" * (-len(h) % 4))
    for clear in (b"export_rows", b"count", b"8000"):
        assert clear not in raw, "the call is sealed"
    # A gateway whose first key is new still opens a handle of the old one,
    # and the handles it hands out are sealed with the new key.
    own = page(gateway, "rotated", h, ALICE).json()["result"]
    assert "isError" not in own, str(own)[:300]
    following = HANDLE.search(own["content"][-1]["text"]).group(1)
    assert page(gateway, "reissue", following, ALICE).json()["result"]["isError"] is True, "the old key alone cannot"
    assert "isError" not in page(gateway, "rotated", following, ALICE).json()["result"]


def test_a_reissued_answer_over_max_result_bytes_is_refused(gateway, recorder):
    h = cut(gateway, "reissue")
    before = metric(gateway, "mcp_toon_passthrough_page_reissue_too_large")
    result = page(gateway, "tight", h, ALICE).json()["result"]
    assert result["isError"] is True, str(result)[:300]
    assert "paging.max_result_bytes" in result["content"][0]["text"]
    assert metric(gateway, "mcp_toon_passthrough_page_reissue_too_large") == before + 1


def test_a_reissue_through_the_listener_runs_rbac_and_a_direct_one_skips_it(gateway, recorder):
    h = cut(gateway, "reissue")
    # Straight to the cluster (no reissue_cluster): RBAC never sees the
    # re-issued export_rows call — README says so.
    direct = page(gateway, "direct-deny", h, ALICE).json()["result"]
    assert "isError" not in direct, str(direct)[:300]
    # Back through the listener: RBAC refuses the re-issued call.
    recorder.clear()
    denied = page(gateway, "loop-deny", h, ALICE).json()["result"]
    assert denied["isError"] is True and "calling the tool again failed" in denied["content"][0]["text"], denied
    settle(recorder)
    assert recorder.snapshot() == [], "RBAC stopped it before the server"
    # Where RBAC allows it: served; the server saw the call, unmarked.
    before = metric(gateway, "mcp_toon_passthrough_reentrant")
    ok = page(gateway, "loop-ok", h, ALICE).json()["result"]
    assert "isError" not in ok, str(ok)[:300]
    assert metric(gateway, "mcp_toon_passthrough_reentrant") == before + 1
    settle(recorder)
    (seen,) = recorder.snapshot()
    assert "x-mcp-toon-reissue" not in seen.headers
    assert seen.headers["authorization"] == "Bearer alice"
    assert page_calls_seen(recorder) == []


def test_a_forged_reissue_mark_is_removed_and_counted(gateway, recorder):
    recorder.clear()
    before = metric(gateway, "mcp_toon_passthrough_reissue_mark_invalid")
    forged = {**ALICE, "x-mcp-toon-reissue": "1.4102444800.AAAAAAAAAAAAAAAAAAAAAA"}
    r = call(gateway, "rbac", "list_users", {}, forged)
    assert r.json()["result"]["content"][0]["text"].startswith(harness.MARKER), "treated as any call"
    assert metric(gateway, "mcp_toon_passthrough_reissue_mark_invalid") == before + 1
    (seen,) = recorder.snapshot()
    assert "x-mcp-toon-reissue" not in seen.headers


def test_a_page_calls_long_id_is_refused_and_copied_nowhere(gateway, recorder):
    h = cut(gateway, "rbac")
    long_id = "i" * 600_000
    recorder.clear()
    r = call(gateway, "rbac", PAGE_TOOL, {"handle": h}, ALICE, request_id=long_id)
    assert r.status_code == 400, r.text[:300]
    body = r.json()
    assert body["id"] is None and body["error"]["code"] == -32600
    assert long_id[:1000] not in r.text
    settle(recorder)
    assert recorder.snapshot() == []
    time.sleep(0.3)  # the access log reaches its file every 0.1 s
    assert long_id[:1000] not in gateway.access_log.read_text()
    assert long_id[:1000] not in gateway.proc.log()


# --- jwt_authn: the owner from dynamic metadata ---------------------------------

JWT_SECRET = b"jwt-e2e-secret-0123456789abcdef0123456789"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(sub: str, iat: int) -> str:
    """An HS256 token (RFC 7519) jwt_authn checks against the local JWKS."""
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "e2e"}).encode())
    claims = b64url(json.dumps({"iss": "mcp-toon-e2e", "sub": sub, "iat": iat, "exp": iat + 3600}).encode())
    signature = hmac.new(JWT_SECRET, f"{header}.{claims}".encode(), hashlib.sha256).digest()
    return f"{header}.{claims}.{b64url(signature)}"


JWT_AUTHN = {"name": "envoy.filters.http.jwt_authn", "typed_config": {
    "@type": "type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication",
    "providers": {"e2e": {
        "issuer": "mcp-toon-e2e",
        "local_jwks": {"inline_string": json.dumps({"keys": [
            {"kty": "oct", "alg": "HS256", "kid": "e2e", "k": b64url(JWT_SECRET)}]})},
        # The plugin reads the payload here; the token itself is not
        # forwarded (nor seen by the plugin).
        "payload_in_metadata": "jwt_payload",
        "forward": False,
    }},
    "rules": [{"match": {"prefix": "/"}, "requires": {"provider_name": "e2e"}}],
}}
OWNER_SUB = {"from": "metadata", "path": ["envoy.filters.http.jwt_authn", "jwt_payload", "sub"]}


def test_jwt_authn_before_the_plugin_and_the_owner_from_its_metadata(recorder, work_dir):
    now = int(time.time())
    lst = Listener("jwt", config(owner=OWNER_SUB))
    e = harness.start_envoy([lst], recorder.port, work_dir, name="envoy-jwt",
                            tweak=before_the_plugin({"jwt": [JWT_AUTHN]}))
    try:
        bearer = lambda token: {"authorization": f"Bearer {token}", "host": HOST}  # noqa: E731
        assert call(e, "jwt", "list_users", {}, ANONYMOUS).status_code == 401
        h = cut(e, "jwt", bearer(jwt("alice", now)))
        # A fresh token of the same subject: the same owner.
        own = page(e, "jwt", h, bearer(jwt("alice", now + 1))).json()["result"]
        assert "isError" not in own, str(own)[:300]
        other = page(e, "jwt", h, bearer(jwt("mallory", now))).json()["result"]
        assert other["isError"] is True and "another caller" in other["content"][0]["text"]
        assert metric(e, "mcp_toon_passthrough_page_foreign") == 1
    finally:
        e.stop()


# --- secrets from the VM's environment --------------------------------------------


def test_secrets_from_the_environment_are_used_and_absent_from_config_dump(recorder, work_dir):
    paging_key = "env-paging-key-" + "k" * 40
    marker_key = "env-marker-key-0123456789"
    cfg = config(store_bytes=0, key={"env": "MCP_TOON_PAGING_KEY"})
    cfg["marker_key"] = {"env": "MCP_TOON_MARKER_KEY"}
    lst = Listener("env", cfg)

    def env_vars(c: dict[str, Any]) -> None:
        before_the_plugin({"env": [rbac()]})(c)
        hcm = c["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
        wasm = next(f for f in hcm["http_filters"] if f["name"] == "envoy.filters.http.wasm")
        # Names only: the values stay in Envoy's own environment.
        wasm["typed_config"]["config"]["vm_config"]["environment_variables"] = {
            "host_env_keys": ["MCP_TOON_PAGING_KEY", "MCP_TOON_MARKER_KEY"]}

    e = harness.start_envoy([lst], recorder.port, work_dir, name="envoy-env", tweak=env_vars,
                            env={"MCP_TOON_PAGING_KEY": paging_key, "MCP_TOON_MARKER_KEY": marker_key})
    try:
        dump = e.admin("/config_dump")
        assert "MCP_TOON_PAGING_KEY" in dump
        assert paging_key not in dump and marker_key not in dump
        # The paging key seals handles: a page rebuilt by calling the tool
        # again opens Alice's handle.
        h = cut(e, "env")
        own = page(e, "env", h, ALICE).json()["result"]
        assert "isError" not in own, str(own)[:300]
        # The marker key tags blocks (docs/security.md "What the marker proves").
        text = call(e, "env", "list_users", {}, ALICE).json()["result"]["content"][0]["text"]
        head, nl, rest = text.partition("\n")
        unsigned, _, tag = head.rpartition(" tag=")
        mac = hmac.new(marker_key.encode(), (unsigned + nl + rest).encode(), hashlib.sha256).digest()[:16]
        assert tag == b64url(mac), head
        log = e.proc.log()
        assert paging_key not in log and marker_key not in log
    finally:
        e.stop()
