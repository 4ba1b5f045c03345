"""The plugin as OCI images, end to end: `make oci` pushes both variants to a
real registry (Debian's docker-registry on loopback); a different client than
the one that pushed each variant pulls it back; the module inside is the one
built; Envoy runs the pulled modules (and fetches one straight from the
registry) and rewrites a tool result through each. The gateway manifests in
examples/ are checked against the crate version and the plugin's
configuration parser."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import oras.client
import pytest
import yaml

import harness
from harness import Listener, split_marker, same_json, toon_decode

ROOT = harness.ROOT
EXAMPLES = ROOT / "examples"
ISTIO = EXAMPLES / "istio" / "wasmplugin.yaml"
EG_DIR = EXAMPLES / "envoy-gateway"
GATEWAY_NOTES = EXAMPLES / "gateways.md"

# solo-io/wasm spec/spec.md and spec/spec-compat.md; see scripts/oci.py.
WASM_CONFIG = "application/vnd.module.wasm.config.v1+json"
WASM_LAYER = "application/vnd.module.wasm.content.layer.v1+wasm"
TAR_GZIP_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
REPO = "mcp-toon"


def crate_version() -> str:
    with open(ROOT / "Cargo.toml", "rb") as f:
        return tomllib.load(f)["package"]["version"]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} not found: scripts/bootstrap.sh installs it (Debian package)")
    return path


# --- the registry ---------------------------------------------------------------


@dataclass
class Registry:
    proc: harness.Proc
    port: int

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def blob_url(self, digest: str) -> str:
        return f"http://{self.host}/v2/{REPO}/blobs/{digest}"


@pytest.fixture(scope="module")
def registry(work_dir: Path):
    """Debian's docker-registry (CNCF Distribution 2.8), on a free loopback
    port, storing in a temporary directory; stopped by pid."""
    binary = tool("docker-registry")
    home = work_dir / "registry"
    (home / "data").mkdir(parents=True, exist_ok=True)
    port = harness.free_port()
    config = {
        "version": 0.1,
        "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(home / "data")}, "delete": {"enabled": True}},
        "http": {"addr": f"127.0.0.1:{port}", "secret": os.urandom(16).hex()},
    }
    (home / "config.yml").write_text(yaml.safe_dump(config))
    proc = harness.Proc("docker-registry", [binary, "serve", str(home / "config.yml")], home / "registry.log")
    try:
        harness.wait_for_port(port, proc)
        yield Registry(proc, port)
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def pushed(registry: Registry) -> dict[str, Any]:
    """`make oci REGISTRY=...`: both variants pushed, with the digests the
    pushing clients reported (build/oci/pushed.json)."""
    tool("umoci")
    tool("skopeo")
    r = subprocess.run(
        ["make", "--no-print-directory", "oci", f"REGISTRY={registry.host}/{REPO}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    result = json.loads((ROOT / "build" / "oci" / "pushed.json").read_text())
    result["stdout"] = r.stdout
    return result


@pytest.fixture(scope="module")
def module() -> bytes:
    return harness.WASM.read_bytes()


def test_make_oci_pushes_both_variants_tagged_with_the_crate_version(pushed, registry, module):
    version = crate_version()
    artifact, compat = pushed["variants"]["artifact"], pushed["variants"]["compat"]
    assert artifact["ref"] == f"{registry.host}/{REPO}:{version}"
    assert compat["ref"] == f"{registry.host}/{REPO}:{version}-compat"
    assert artifact["pushed_with"].startswith("oras-py")
    assert compat["pushed_with"].startswith("skopeo")
    assert pushed["wasm_sha256"] == sha256(module)
    for v in (artifact, compat):
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", v["digest"]), v
        assert f"{v['ref']}@{v['digest']}" in pushed["stdout"]


# --- pulled back by the other client ----------------------------------------------


@pytest.fixture(scope="module")
def artifact_pull(pushed, registry, work_dir: Path) -> dict[str, Any]:
    """The Wasm OCI artifact (pushed by oras), pulled by skopeo into an OCI
    layout."""
    ref = pushed["variants"]["artifact"]["ref"]
    layout = work_dir / "pulled-artifact"
    shutil.rmtree(layout, ignore_errors=True)
    skopeo = tool("skopeo")
    subprocess.run(
        [skopeo, "copy", "--quiet", "--src-tls-verify=false", f"docker://{ref}", f"oci:{layout}:pulled"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    raw = subprocess.run(
        [skopeo, "inspect", "--raw", "--tls-verify=false", f"docker://{ref}"],
        check=True,
        capture_output=True,
        timeout=60,
    ).stdout
    index = json.loads((layout / "index.json").read_text())
    (desc,) = index["manifests"]

    def blob(digest: str) -> bytes:
        data = (layout / "blobs" / "sha256" / digest.removeprefix("sha256:")).read_bytes()
        assert "sha256:" + sha256(data) == digest
        return data

    manifest_bytes = blob(desc["digest"])
    return {
        "digest": desc["digest"],
        "raw_digest": "sha256:" + sha256(raw),
        "manifest": json.loads(manifest_bytes),
        "blob": blob,
    }


@pytest.fixture(scope="module")
def compat_pull(pushed, registry) -> dict[str, Any]:
    """The compat image (pushed by skopeo), pulled by oras."""
    ref = pushed["variants"]["compat"]["ref"]
    client = oras.client.OrasClient(hostname=registry.host, insecure=True)
    container = client.get_container(ref)
    # The manifest as bytes, to digest them; get_manifest parses it.
    r = client.do_request(f"{client.prefix}://{container.manifest_url()}", "GET", headers={"Accept": OCI_MANIFEST})
    assert r.status_code == 200, r.text

    def blob(digest: str) -> bytes:
        got = client.get_blob(container, digest)
        assert got.status_code == 200, got.text
        assert "sha256:" + sha256(got.content) == digest
        return got.content

    return {
        "digest": "sha256:" + sha256(r.content),
        "header_digest": r.headers.get("Docker-Content-Digest"),
        "manifest": client.get_manifest(ref, allowed_media_type=[OCI_MANIFEST]),
        "blob": blob,
    }


def test_pulled_digests_match_what_the_pushing_clients_reported(pushed, artifact_pull, compat_pull):
    # oras pushed the artifact, skopeo pulled it.
    assert artifact_pull["digest"] == pushed["variants"]["artifact"]["digest"]
    assert artifact_pull["raw_digest"] == pushed["variants"]["artifact"]["digest"]
    # skopeo pushed the compat image, oras pulled it.
    assert compat_pull["digest"] == pushed["variants"]["compat"]["digest"]
    assert compat_pull["header_digest"] == pushed["variants"]["compat"]["digest"]


def test_artifact_has_the_media_types_istio_and_envoy_gateway_expect(artifact_pull, module):
    manifest = artifact_pull["manifest"]
    assert manifest["config"]["mediaType"] == WASM_CONFIG
    # Istio and Envoy Gateway (extractOCIArtifactImage) take exactly two
    # layers, one of them the raw module.
    layers = manifest["layers"]
    assert sorted(l["mediaType"] for l in layers) == sorted([WASM_CONFIG, WASM_LAYER])
    (wasm_layer,) = [l for l in layers if l["mediaType"] == WASM_LAYER]
    assert wasm_layer["digest"] == "sha256:" + sha256(module)
    assert wasm_layer["annotations"]["org.opencontainers.image.title"] == "plugin.wasm"
    assert artifact_pull["blob"](wasm_layer["digest"]) == module
    runtime = json.loads(artifact_pull["blob"](manifest["config"]["digest"]))
    assert runtime["type"] == "envoy_proxy"
    assert runtime["config"]["root_ids"] == ["mcp_toon"]
    assert "proxy_abi_version_0_2_1" in runtime["abiVersions"]
    assert manifest["annotations"]["org.opencontainers.image.version"] == crate_version()


def compat_plugin(compat_pull) -> bytes:
    (layer,) = compat_pull["manifest"]["layers"]
    data = gzip.decompress(compat_pull["blob"](layer["digest"]))
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        names = [m.name for m in tar.getmembers() if m.isfile()]
        assert sorted(os.path.basename(n) for n in names) == ["plugin.wasm", "runtime-config.json"]
        (member,) = [m for m in tar.getmembers() if os.path.basename(m.name) == "plugin.wasm"]
        f = tar.extractfile(member)
        assert f is not None
        return f.read()


def test_compat_image_is_one_gzip_layer_holding_plugin_wasm_with_the_variant_annotation(compat_pull, module):
    manifest = compat_pull["manifest"]
    assert [l["mediaType"] for l in manifest["layers"]] == [TAR_GZIP_LAYER]
    # solo-io/wasm spec-compat.md: required with this layer media type.
    assert manifest["annotations"]["module.wasm.image/variant"] == "compat"
    config = json.loads(compat_pull["blob"](manifest["config"]["digest"]))
    assert (config["os"], config["architecture"]) == ("wasip1", "wasm")
    plugin = compat_plugin(compat_pull)
    assert sha256(plugin) == sha256(module)


def test_rebuilding_gives_the_same_digests(pushed, tmp_path):
    """Timestamps come from the last commit, so a rebuild of the same commit
    is byte-identical: a digest pinned in a manifest stays valid."""
    before = json.loads((ROOT / "build" / "oci" / "compat" / "index.json").read_text())
    argv = [str(harness.PYTHON), "scripts/oci.py", "build"]
    r = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    after = json.loads((ROOT / "build" / "oci" / "compat" / "index.json").read_text())
    assert after == before
    assert before["manifests"][0]["digest"] == pushed["variants"]["compat"]["digest"]


# --- Envoy runs what was pulled ------------------------------------------------------


def fenced(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def example_configs() -> dict[str, Any]:
    """The plugin configuration every gateway example ships: Istio's
    pluginConfig, Envoy Gateway's config, and in examples/gateways.md the
    JSON blocks, Kong's filter config string and APISIX's conf string."""
    istio = yaml.safe_load(ISTIO.read_text())
    eep = yaml.safe_load((EG_DIR / "envoyextensionpolicy.yaml").read_text())
    configs = {"istio": istio["spec"]["pluginConfig"], "envoy-gateway": eep["spec"]["wasm"][0]["config"]}
    notes = GATEWAY_NOTES.read_text()
    for i, block in enumerate(fenced(notes, "json")):
        configs[f"notes-json-{i}"] = json.loads(block)
    for block in fenced(notes, "yaml"):
        doc = yaml.safe_load(block)
        for service in doc.get("services", []) if isinstance(doc, dict) else []:
            for chain in service.get("filter_chains", []):
                for f in chain["filters"]:
                    if f["name"] == "mcp_toon":
                        configs["kong"] = json.loads(f["config"])
    for block in fenced(notes, "sh"):
        m = re.search(r"-d '(.*)'", block, re.S)
        if m:
            route = json.loads(m.group(1))
            configs["apisix"] = json.loads(route["plugins"]["mcp_toon"]["conf"])
    return configs


def wasm_filter_config(listener: dict[str, Any]) -> dict[str, Any]:
    hcm = listener["filter_chains"][0]["filters"][0]["typed_config"]
    (wasm,) = [f for f in hcm["http_filters"] if f["name"] == "envoy.filters.http.wasm"]
    return wasm["typed_config"]["config"]


def loopback_cluster(name: str, port: int) -> dict[str, Any]:
    address = {"socket_address": {"address": "127.0.0.1", "port_value": port}}
    return {
        "name": name,
        "type": "STATIC",
        "connect_timeout": "5s",
        "load_assignment": {"cluster_name": name, "endpoints": [{"lb_endpoints": [{"endpoint": {"address": address}}]}]},
    }


def test_envoy_runs_the_pulled_modules_and_one_fetched_from_the_registry(
    demo, registry, pushed, artifact_pull, compat_pull, module, work_dir
):
    pulled = work_dir / "pulled-modules"
    pulled.mkdir(exist_ok=True)
    compat_wasm = pulled / "compat-plugin.wasm"
    compat_wasm.write_bytes(compat_plugin(compat_pull))
    (wasm_layer,) = [l for l in artifact_pull["manifest"]["layers"] if l["mediaType"] == WASM_LAYER]
    artifact_wasm = pulled / "artifact-plugin.wasm"
    artifact_wasm.write_bytes(artifact_pull["blob"](wasm_layer["digest"]))

    # As the gateways run it: their example configuration, and without
    # allow_on_headers_stop_iteration (neither WasmPlugin nor
    # EnvoyExtensionPolicy sets it).
    configs = example_configs()
    listeners = [
        Listener("compat", configs["istio"], allow_on_headers_stop_iteration=False),
        Listener("artifact", configs["envoy-gateway"], allow_on_headers_stop_iteration=False),
        Listener("registry", configs["envoy-gateway"], allow_on_headers_stop_iteration=False),
    ]
    admin_port = harness.free_port()
    config = harness.render_envoy(listeners, demo.port, admin_port, wasm=compat_wasm)
    wasm_config = {l["name"]: wasm_filter_config(l) for l in config["static_resources"]["listeners"]}
    wasm_config["artifact"]["vm_config"]["code"]["local"]["filename"] = str(artifact_wasm)
    # Plain Envoy straight from the registry: the artifact's wasm layer is the
    # raw module, so its blob URL and digest are an Envoy remote data source.
    wasm_config["registry"]["vm_config"]["code"] = {
        "remote": {
            "http_uri": {"uri": registry.blob_url(wasm_layer["digest"]), "cluster": "oci_registry", "timeout": "10s"},
            "sha256": wasm_layer["digest"].removeprefix("sha256:"),
        }
    }
    config["static_resources"]["clusters"].append(loopback_cluster("oci_registry", registry.port))
    config_path = work_dir / "envoy-oci.json"
    config_path.write_text(json.dumps(config, indent=1))
    proc = harness.Proc(
        "envoy-oci",
        [str(harness.ENVOY), "-c", str(config_path), "--concurrency", "1", "--log-level", "info", "--disable-hot-restart"],
        work_dir / "envoy-oci.log",
    )
    try:
        harness.wait_for_port(admin_port, proc, timeout=60)
        for l in listeners:
            harness.wait_for_port(l.port, proc, timeout=60)
        direct = harness.call_tool(demo.url, "list_users")
        original = json.loads(direct.json()["result"]["content"][0]["text"])
        for l in listeners:
            r = harness.call_tool(f"http://127.0.0.1:{l.port}/mcp", "list_users")
            assert r.status_code == 200, (l.name, r.status_code, r.text[:500])
            text = r.json()["result"]["content"][0]["text"]
            # The reference TypeScript decoder gives back the server's JSON.
            same_json(toon_decode(split_marker(text)), original)
        log = proc.log()
        assert log.count("mcp-toon: configuration accepted") >= len(listeners), log[-3000:]
        # The "registry" listener's module came from Envoy's own fetch (the
        # registry's access log: the other clients name themselves).
        fetches = [
            line
            for line in registry.proc.log().splitlines()
            if f'"GET /v2/{REPO}/blobs/{wasm_layer["digest"]} ' in line and " 200 " in line
        ]
        assert any(not re.search(r'"(skopeo|python-requests)/[^"]*"$', line) for line in fetches), fetches
    finally:
        proc.stop()


# --- the gateway examples -------------------------------------------------------------


def test_istio_wasmplugin_pulls_this_version_after_authn_and_authz():
    doc = yaml.safe_load(ISTIO.read_text())
    assert (doc["apiVersion"], doc["kind"]) == ("extensions.istio.io/v1alpha1", "WasmPlugin")
    spec = doc["spec"]
    assert re.fullmatch(rf"oci://[^/]+/mcp-toon:{re.escape(crate_version())}", spec["url"]), spec["url"]
    # Valid values from istio/api extensions/v1alpha1/wasm.proto. STATS
    # comes after Istio's authentication and authorization filters, which
    # must run on the page calls the plugin answers (docs/envoy.md "Where it
    # goes in the filter chain").
    assert spec["phase"] == "STATS"
    assert spec["type"] == "HTTP"
    assert spec["failStrategy"] in {"FAIL_CLOSE", "FAIL_OPEN", "FAIL_RELOAD"}
    assert spec["imagePullPolicy"] in {"IfNotPresent", "Always"}
    assert spec["pluginName"] == "mcp_toon"
    # WasmPlugin cannot set allow_on_headers_stop_iteration.
    assert not spec["pluginConfig"].get("hold_headers", False)


def quantity(q: str | int) -> int:
    """A Kubernetes resource quantity ("2Mi", "1048576", "1M") in bytes."""
    m = re.fullmatch(r"([0-9]+)([EPTGMK]i|[EPTGMk])?", str(q))
    assert m, q
    power = {"K": 1, "k": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
    unit = m.group(2) or ""
    base = 1024 if unit.endswith("i") else 1000
    return int(m.group(1)) * (base ** power[unit[0]] if unit else 1)


def test_envoy_gateway_policies_pull_this_version_and_raise_the_buffer_limits():
    docs = {p.name: yaml.safe_load(p.read_text()) for p in sorted(EG_DIR.glob("*.yaml"))}
    kinds = {d["kind"]: d for d in docs.values()}
    assert set(kinds) == {"EnvoyExtensionPolicy", "ClientTrafficPolicy", "BackendTrafficPolicy", "EnvoyProxy"}
    # The wasm filter after authorization (RBAC) and rate limits, which
    # Envoy Gateway lists after it by default.
    order = kinds["EnvoyProxy"]["spec"]["filterOrder"]
    assert {"name": "envoy.filters.http.wasm", "after": "envoy.filters.http.ratelimit"} in order
    assert {d["apiVersion"] for d in docs.values()} == {"gateway.envoyproxy.io/v1alpha1"}

    (wasm,) = kinds["EnvoyExtensionPolicy"]["spec"]["wasm"]
    assert wasm["code"]["type"] == "Image"
    assert re.fullmatch(rf"[^/]+/mcp-toon:{re.escape(crate_version())}", wasm["code"]["image"]["url"])
    assert wasm["rootID"] == "mcp_toon"
    config = wasm["config"]
    assert not config.get("hold_headers", False)

    # Envoy Gateway's default buffer limit is 32 KiB: both sides must hold
    # the largest body the plugin buffers.
    client = quantity(kinds["ClientTrafficPolicy"]["spec"]["connection"]["bufferLimit"])
    backend = quantity(kinds["BackendTrafficPolicy"]["spec"]["connection"]["bufferLimit"])
    assert client >= config["max_body_bytes"]
    assert backend == client
    # The buffer policies reach the same traffic as the extension policy.
    eep_target = kinds["EnvoyExtensionPolicy"]["spec"]["targetRefs"]
    assert kinds["BackendTrafficPolicy"]["spec"]["targetRefs"] == eep_target


def test_every_example_plugin_config_is_accepted_by_the_plugin(work_dir):
    """`envoy --mode validate` loads the plugin, whose on_configure refuses a
    bad configuration (Envoy then rejects the file), naming the field."""
    configs = example_configs()
    assert {"istio", "envoy-gateway", "kong", "apisix", "notes-json-0"} <= set(configs), configs.keys()
    distinct: dict[str, list[str]] = {}
    for name, cfg in configs.items():
        distinct.setdefault(json.dumps(cfg, sort_keys=True), []).append(name)
    for i, (text, names) in enumerate(distinct.items()):
        path = work_dir / f"examples-validate-{i}.json"
        path.write_text(json.dumps(harness.render_envoy([Listener("example", json.loads(text), False)], 8931, 9901)))
        r = harness.validate_envoy_config(path)
        out = r.stdout + r.stderr
        assert r.returncode == 0, f"{names}: {out[-3000:]}"
        assert "mcp-toon: configuration accepted" in out, f"{names}: {out[-3000:]}"
