"""The Traefik plugin as the release attaches it (scripts/oci.py, `make
oci`): a reproducible archive of the plugin directory that, unpacked under
a fresh `plugins-local/src/`, runs in Traefik as built."""

from __future__ import annotations

import sys
import tarfile

import harness
from harness import call_tool

sys.path.insert(0, str(harness.ROOT / "scripts"))
import oci  # noqa: E402


def test_the_release_archive_is_reproducible_and_runs_in_traefik(demo, work_dir, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    version = oci.crate_version()
    first = oci.traefik_archive(harness.TRAEFIK_PLUGIN, version, work_dir / "release-1")
    second = oci.traefik_archive(harness.TRAEFIK_PLUGIN, version, work_dir / "release-2")
    assert first.name == f"mcp-toon-traefik-{version}.tar.gz"
    assert first.read_bytes() == second.read_bytes()
    home = work_dir / "traefik-release"
    (home / "plugins-local" / "src").mkdir(parents=True)
    with tarfile.open(first) as tar:
        assert sorted(tar.getnames()) == ["mcp-toon/.traefik.yml", "mcp-toon/plugin.wasm"]
        tar.extractall(home / "plugins-local" / "src", filter="data")
    unpacked = home / "plugins-local" / "src" / "mcp-toon"
    assert (unpacked / "plugin.wasm").read_bytes() == (harness.TRAEFIK_PLUGIN / "plugin.wasm").read_bytes()
    t = harness.start_traefik({"r": {"hold_headers": True}}, demo.port, work_dir, name="traefik-release-run", plugin_dir=unpacked)
    try:
        direct = call_tool(demo.url, "list_users")
        via = call_tool(t.url("r"), "list_users")
        assert via.headers["x-mcp-toon"].startswith("cleaned=1 encoded=1")
        assert len(via.content) < len(direct.content) / 2
    finally:
        t.stop()
