"""Configuration at load: a bad plugin configuration makes Envoy refuse the
plugin, with the field named in its log; every Envoy configuration in the
repository passes `envoy --mode validate`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

import harness
from harness import Listener

BAD = [
    ({"toon": {"mode": "sometimes"}}, "toon.mode", "`off`, `adaptive`, `always`"),
    ({"toon": {"min_savings_pct": 95}}, "toon.min_savings_pct", "95"),
    ({"tools": {"list_users": {"toon": {"header": "box"}}}}, "tools.list_users.toon.header", "box"),
    ({"servers": [{"match": {}}]}, "servers[0].match", "route"),
    ({"hold_headers": "yes"}, "hold_headers", "boolean"),
    ({"max_body_bytes": 10}, "max_body_bytes", "10"),
    ({"toon": {"colour": "blue"}}, "toon.colour", "expected one of `mode`"),
    # The project stage: path syntax (parsed at load), the query argument
    # and its limit, and fields a layer may not set.
    ({"project": {"keep": ["items[].**"]}}, "project.keep[0]", "must not end with `**`"),
    ({"project": {"drop": ["node_id", "a..b"]}}, "project.drop[1]", "expected a key at byte 2"),
    ({"project": {"keep": ['"unterminated']}}, "project.keep[0]", "unterminated quoted key"),
    ({"project": {"keep": [f"k{i}" for i in range(33)]}}, "project.keep", "has 33 paths; allowed: at most 32"),
    ({"servers": [{"match": {"cluster": "c"}, "project": {"drop": ["[]."]}}]}, "servers[0].project.drop[0]", "expected a key at byte 3"),
    ({"project": {"query_argument": "jmes path"}}, "project.query_argument", "1-64 characters of letters, digits"),
    ({"project": {"query_argument": "expected_info"}}, "project.query_argument", "must differ from trim.intent_argument"),
    ({"project": {"max_query_bytes": 5000}}, "project.max_query_bytes", "16..=4096"),
    ({"project": {"queries": "yes"}}, "project.queries", "expected a boolean"),
    ({"tools": {"t": {"project": {"query_argument": "q"}}}}, "tools.t.project.query_argument", "expected one of `keep`, `drop`, `queries`"),
    # Budgets and pages: a budget's unit and range, paging that needs held
    # headers, the page tool's name, a key too short (never quoted).
    ({"budget": {"tokens": 10, "bytes": 5000}}, "budget", "one of"),
    ({"tools": {"t": {"budget": {"tokens": 10}}}}, "tools.t.budget.tokens", "200..=10000000"),
    ({"paging": {"enabled": True}}, "paging.enabled", "hold_headers"),
    ({"paging": {"tool_name": "next page"}}, "paging.tool_name", "letters"),
    ({"paging": {"ttl_s": 0}}, "paging.ttl_s", "1..=86400"),
    ({"paging": {"key": "hunter2-secret"}}, "paging.key", "at least 32 printable characters"),
    # Every secret field, in any JSON type, is refused without its value
    # (issue 37: a number here was echoed in Envoy's log).
    ({"paging": {"key": 1234567890123}}, "paging.key", "must be a string"),
    ({"marker_key": {"hunter2": 1234567890123}}, "marker_key", "must be a string"),
    ({"trim": {"client_id": "id", "client_secret": [1234567890123]}}, "trim.client_secret", "must be a string"),
    ({"paging": {"key": {"env": "MCP_TOON_UNSET_HUNTER2"}}}, "paging.key", "is not set in the VM"),
]


@pytest.mark.parametrize("index", range(len(BAD)), ids=[f"{b[1]}-{i}" for i, b in enumerate(BAD)])
def test_bad_configuration_is_refused_with_the_field_named(demo, work_dir, index):
    config, field, detail = BAD[index]
    name = f"envoy-bad-{index}"
    envoy = harness.start_envoy([Listener("bad", config)], demo.port, work_dir, name=name, wait=False)
    try:
        code = envoy.proc.wait_exit(timeout=60)
        log = envoy.proc.log()
    finally:
        envoy.stop()
    assert code != 0, log[-2000:]
    lines = [l for l in log.splitlines() if "mcp-toon configuration:" in l]
    assert lines, log[-3000:]
    message = lines[0].split("mcp-toon configuration: ", 1)[1]
    assert message.startswith(f"{field}: "), message
    assert detail in message, message
    assert "Unable to create Wasm plugin mcp_toon" in log
    # A secret in the configuration is never echoed.
    assert "hunter2" not in log
    assert "1234567890123" not in log
    assert not harness.port_open(envoy.listeners["bad"].port)


def test_good_configuration_is_accepted(demo, work_dir):
    config = {
        "toon": {"mode": "adaptive", "min_savings_pct": 30, "header": "fence", "verify": True},
        "max_body_bytes": 2048,
        "max_response_bytes": 2048,
        "servers": [{"match": {"cluster": "mcp_upstream"}, "toon": {"min_rows": 2}, "tools": {"x": {"toon": {"mode": "off"}}}}],
        "tools": {"y": {"toon": {"mode": "always"}}},
    }
    envoy = harness.start_envoy([Listener("good", config)], demo.port, work_dir, name="envoy-good")
    try:
        assert "mcp-toon: configuration accepted" in envoy.proc.log()
        # max_response_bytes 2048: a 9 kB result passes, counted.
        r = harness.call_tool(envoy.url("good"), "list_users")
        assert r.headers.get("x-mcp-toon") is None
        assert r.content == harness.call_tool(f"http://127.0.0.1:{demo.port}/mcp", "list_users").content
        assert envoy.prometheus()["mcp_toon_passthrough_response_too_large"] == 1
    finally:
        envoy.stop()


def repo_envoy_configs() -> list[Path]:
    paths = []
    for folder in ("envoy", "examples"):
        for path in sorted((harness.ROOT / folder).rglob("*.y*ml")):
            doc = yaml.safe_load(path.read_text())
            if isinstance(doc, dict) and "static_resources" in doc:
                paths.append(path)
    return paths


def test_repository_has_envoy_configs():
    assert harness.ROOT / "envoy" / "envoy.yaml" in repo_envoy_configs()


# What examples read from Envoy's environment (`host_env_keys`).
EXAMPLE_ENV = {"MCP_TOON_PAGING_KEY": "validate-only-key-0123456789abcdef0123456789"}


@pytest.mark.parametrize("path", repo_envoy_configs(), ids=lambda p: str(p.relative_to(harness.ROOT)))
def test_envoy_config_in_repository_validates(path):
    r = harness.validate_envoy_config(path, env=EXAMPLE_ENV)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    out = r.stdout + r.stderr
    assert "OK" in out
    # validate mode loads the plugin, so its configuration was checked too.
    assert "mcp-toon: configuration accepted" in out


def readme_recipes() -> list[str]:
    """The JSON blocks of the "Recipes" section of docs/stages.md."""
    readme = (harness.ROOT / "docs" / "stages.md").read_text()
    start = readme.index("## Recipes")
    end = readme.find("\n## ", start + 1)
    section = readme[start : end if end >= 0 else len(readme)]
    return re.findall(r"```json\n(.*?)```", section, re.S)


def test_readme_recipes_are_accepted(work_dir):
    recipes = readme_recipes()
    assert len(recipes) >= 4
    template = yaml.safe_load((harness.ROOT / "envoy" / "envoy.yaml").read_text())
    wasm = template["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]["http_filters"][0]
    for i, recipe in enumerate(recipes):
        wasm["typed_config"]["config"]["configuration"]["value"] = json.dumps(json.loads(recipe))
        path = work_dir / f"recipe-{i}.json"
        path.write_text(json.dumps(template))
        r = harness.validate_envoy_config(path)
        assert r.returncode == 0 and "mcp-toon: configuration accepted" in r.stdout + r.stderr, (recipe, (r.stdout + r.stderr)[-2000:])


def test_validate_mode_catches_a_bad_plugin_configuration(work_dir):
    config = yaml.safe_load((harness.ROOT / "envoy" / "envoy.yaml").read_text())
    wasm = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]["http_filters"][0]
    wasm["typed_config"]["config"]["configuration"]["value"] = json.dumps({"annotate_tools": 1})
    path = work_dir / "invalid.json"
    path.write_text(json.dumps(config))
    r = harness.validate_envoy_config(path)
    assert r.returncode != 0
    assert "mcp-toon configuration: annotate_tools: " in r.stdout + r.stderr


def test_two_servers_example_behaves_as_documented(demo, work_dir):
    """examples/envoy-two-servers.yaml, run with free ports and both clusters
    pointed at the demo server: each server entry applies to its own cluster,
    with the headers not held (chunked bodies)."""
    text = (harness.ROOT / "examples" / "envoy-two-servers.yaml").read_text()
    listen, admin = harness.free_port(), harness.free_port()
    wasm = str(harness.WASM)
    for old, new in (("port_value: 8941", f"port_value: {demo.port}"), ("port_value: 8942", f"port_value: {demo.port}"),
                     ("port_value: 10001", f"port_value: {listen}"), ("port_value: 9902", f"port_value: {admin}"),
                     ("filename: target/wasm32-wasip1/release/mcp_toon.wasm", f"filename: {wasm}")):
        assert old in text, old
        text = text.replace(old, new)
    path = work_dir / "two-servers.yaml"
    path.write_text(text)
    proc = harness.Proc("envoy-two-servers", [str(harness.ENVOY), "-c", str(path), "--concurrency", "1",
                                              "--disable-hot-restart"], work_dir / "envoy-two-servers.log")
    try:
        harness.wait_for_port(listen, proc, timeout=60)
        crm = harness.call_tool(f"http://127.0.0.1:{listen}/crm/mcp", "list_users")
        search = harness.call_tool(f"http://127.0.0.1:{listen}/search/mcp", "list_users")
        direct = harness.call_tool(demo.url, "list_users")
    finally:
        proc.stop()
    assert crm.json()["result"]["content"][0]["text"].startswith(harness.MARKER)
    assert crm.headers.get("transfer-encoding") == "chunked" and "x-mcp-toon" not in crm.headers
    assert search.content == direct.content
