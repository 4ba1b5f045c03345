"""Real MCP servers this project did not write, through the real Envoy with
mcp-toon at its default configuration (`{}`), called with the official
TypeScript client (2025-11-25) and the official Python client (mcp 2.3,
which offers 2026-07-28 and falls back to the handshake).

Servers: npm `@modelcontextprotocol/server-filesystem` and `server-memory`,
PyPI `mcp-server-git` and `mcp-server-time`, each a stdio server bridged to
Streamable HTTP by npm `supergateway`, on fixtures made here
(tests/e2e/workspace.py). Every result through the plugin is compared with
the same call made directly to the server: each text item is byte-identical,
or compact JSON with the identical tokens, or the marker and TOON that the
reference TypeScript decoder turns into the identical value (`peers.outcome`);
everything else in the message is equal. Then an agent's workflow: read code,
edit it with a block copied from what it read, read it back; read a diff and
apply it with `git apply`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

import peers
import workspace
from peers import wire_message

SERVERS = ["filesystem", "git", "memory", "time"]
LOSSY_TRANSFORMS = ("html_to_markdown", "strip_base64", "collapse_whitespace", "remove_nulls", "max_text_bytes")


@pytest.fixture(scope="module")
def servers(work_dir: Path, request: pytest.FixtureRequest):
    absent = peers.missing()
    assert not absent, f"missing {', '.join(map(str, absent))}: run scripts/bootstrap.sh"
    # Module-scoped and imported by other modules (test_traefik_peers): each
    # module that uses it gets a workspace of its own in the session's dir.
    s = workspace.start_servers(work_dir / f"real-{request.module.__name__}")
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def real_envoy(servers: workspace.Servers, work_dir: Path):
    """One listener per server at the default configuration, and one in
    front of the file server with whitespace collapsing turned on (the old
    default), to show what it breaks."""
    listeners: dict[str, tuple[int, dict[str, Any] | None]] = {n: (b.port, {}) for n, b in servers.bridged.items()}
    listeners["filesystem_collapsed"] = (servers.bridged["filesystem"].port, {"clean": {"collapse_whitespace": True}})
    e = peers.start_envoy_for(listeners, work_dir, "envoy-real")
    try:
        yield e
    finally:
        e.stop()


def texts(run: dict[str, Any]) -> list[str]:
    """The first text item of each call's result, as the client parsed it."""
    out = []
    for call in run["calls"]:
        assert "result" in call, call
        out.append(next(c["text"] for c in call["result"]["content"] if c["type"] == "text"))
    return out


def wire(call: dict[str, Any], server: str) -> dict[str, Any]:
    body = call["body"]
    if server == "time":
        body = workspace.mask_instants(body)
    return wire_message(call.get("contentType"), body)


# --- every result ------------------------------------------------------------------------


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("client", list(peers.CLIENTS))
def test_every_result_is_identical_or_lossless(servers, real_envoy, client, server):
    calls = servers.plans()[server]
    run = peers.CLIENTS[client]
    direct = run(servers.bridged[server].url, calls)
    before = real_envoy.prometheus()
    via = run(real_envoy.url(server), calls)
    after = real_envoy.prometheus()
    assert via["server"] == direct["server"] and via["protocolVersion"] == direct["protocolVersion"]

    outcomes: list[tuple[str, list[str]]] = []
    for call, d, v in zip(calls, direct["calls"], via["calls"], strict=True):
        assert "body" in d and "body" in v, (call, d, v)
        outcomes.append((call["name"], peers.compare(wire(d, server), wire(v, server))))
        # The client read what crossed the wire.
        if server != "time" and "result" in v:
            assert v["result"]["content"] == wire_message(v.get("contentType"), v["body"])["result"]["content"]
    moved = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    assert not [k for k in moved if k.removeprefix("mcp_toon_clean_") in LOSSY_TRANSFORMS], moved

    found = {o for _, item in outcomes for o in item}
    by_call = [(name, item[0] if item else "no text") for name, item in outcomes]
    if server == "filesystem":
        reads = dict(zip([c["arguments"].get("path", "").rsplit("/", 1)[-1] for c in calls], (o for _, o in by_call)))
        # Code, markup, a certificate, a log, Markdown: byte for byte.
        for name in ("pricing.py", "build.mk", "index.html", "server.pem", "app.log", "notes.md"):
            assert reads[name] == "identical", (name, outcomes)
        # JSON files: compact, or TOON for the table; the value is the file's.
        assert reads["settings.json"] == "compact" and reads["inventory.json"] == "toon", outcomes
        # `", "` and `": "` separators: compaction saves about 9 %, under
        # toon.min_savings_pct, and is taken (lossless, so any saving).
        assert reads["flags.json"] == "compact", outcomes
        assert by_call[-1] == ("read_media_file", "no text")  # an image item, unchanged
    elif server == "git":
        assert found == {"identical"}, outcomes
    elif server == "memory":
        assert dict(by_call)["create_relations"] == "toon", outcomes
        # The plan left the graph as it found it.
        graphs = [t for c, t in zip(calls, texts(direct)) if c["name"] == "read_graph"]
        assert graphs[0] == graphs[-1] != graphs[1]
    elif server == "time":
        assert found == {"compact"}, outcomes


# --- an agent's workflow ---------------------------------------------------------------------


def one_text(client: str, url: str, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    (call,) = peers.CLIENTS[client](url, [{"name": name, "arguments": arguments}])["calls"]
    assert "result" in call, call
    result = call["result"]
    return next(c["text"] for c in result["content"] if c["type"] == "text"), bool(result.get("isError"))


@pytest.mark.parametrize("client", list(peers.CLIENTS))
def test_agent_edits_code_with_a_block_it_read_through_the_proxy(servers, real_envoy, client):
    path = servers.files["pricing.py"]
    original = path.read_text()
    url = real_envoy.url("filesystem")
    try:
        read, _ = one_text(client, url, "read_text_file", {"path": str(path)})
        # The agent copies the constructor and the start of `net`: indented,
        # with aligned `=` columns and a double space in the signature.
        lines = read.splitlines(keepends=True)
        start = next(i for i, line in enumerate(lines) if "def __init__" in line)
        old = "".join(lines[start : start + 6])
        assert "self.sku      = sku" in old and "base: Decimal,  discount" in old
        new = old.replace("self.sku      = sku", "self.sku      = sku.upper()")
        diff, failed = one_text(client, url, "edit_file", {"path": str(path), "edits": [{"oldText": old, "newText": new}]})
        assert not failed, diff
        back, _ = one_text(client, url, "read_text_file", {"path": str(path)})
        assert back == original.replace(old, new) == path.read_text()

        # The same edit made directly to the server: the same diff.
        path.write_text(original)
        direct_diff, failed = one_text(client, servers.bridged["filesystem"].url, "edit_file", {"path": str(path), "edits": [{"oldText": old, "newText": new}]})
        assert not failed and direct_diff == diff
    finally:
        path.write_text(original)


def test_collapsed_whitespace_breaks_the_same_edit(servers, real_envoy):
    """Why collapse_whitespace is off by default: the block the agent copies
    from a collapsed read is not in the file, and the server refuses the
    edit (issue 11)."""
    path = servers.files["pricing.py"]
    original = path.read_text()
    url = real_envoy.url("filesystem_collapsed")
    read, _ = one_text("python", url, "read_text_file", {"path": str(path)})
    assert read != original
    lines = read.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if "def __init__" in line)
    old = "".join(lines[start : start + 6])
    answer, failed = one_text("python", url, "edit_file", {"path": str(path), "edits": [{"oldText": old, "newText": old + "# x\n"}]})
    assert failed and "Could not find exact match" in answer, answer
    assert path.read_text() == original


@pytest.mark.parametrize("client", list(peers.CLIENTS))
def test_agent_applies_the_diff_it_read_through_the_proxy(servers, real_envoy, client, tmp_path):
    repo, url = servers.repo, real_envoy.url("git")
    shown, _ = one_text(client, url, "git_diff_unstaged", {"repo_path": str(repo)})
    header = "Unstaged changes:\n"
    assert shown.startswith(header + "diff --git ")
    # The server drops the diff's last newline; a patch file ends with one.
    patch = tmp_path / "change.patch"
    patch.write_text(shown.removeprefix(header) + "\n")

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True, timeout=60, env=workspace.GIT_ENV | {"PATH": "/usr/bin:/bin"})
    workspace.git(clone, "apply", "--check", str(patch))
    workspace.git(clone, "apply", str(patch))
    for name in ("shapes.py", "util.go"):
        assert (clone / name).read_bytes() == (repo / name).read_bytes(), name

    # The server's own tools, through the proxy, in one session: stage the
    # change, read the staged diff (the same hunks), unstage it again.
    r = str(repo)
    steps = [
        {"name": "git_add", "arguments": {"repo_path": r, "files": ["shapes.py", "util.go"]}},
        {"name": "git_diff_staged", "arguments": {"repo_path": r}},
        {"name": "git_reset", "arguments": {"repo_path": r}},
    ]
    try:
        added, staged, reset = peers.CLIENTS[client](url, steps)["calls"]
        left_staged = workspace.git(repo, "diff", "--cached", "--stat")
    finally:
        workspace.git(repo, "reset", "-q")  # whatever happened, for the next test
    for call in (added, staged, reset):
        assert "result" in call and not call["result"].get("isError"), call
    assert texts({"calls": [staged]})[0] == "Staged changes:\n" + shown.removeprefix(header)
    assert left_staged == ""
