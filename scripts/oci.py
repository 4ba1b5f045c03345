#!/usr/bin/env python3
"""Packages the plugin as the two OCI images that gateways pull, and pushes
them to a registry. No Docker engine: umoci builds, skopeo and oras push.

    .venv/bin/python scripts/oci.py build
    .venv/bin/python scripts/oci.py push --registry 127.0.0.1:5000/mcp-toon

`make oci REGISTRY=...` runs the second after building the module.

Two images, one module (target/wasm32-wasip1/release/mcp_toon.wasm):

  REGISTRY:VERSION         the Wasm OCI artifact ("oci" variant of the Wasm
                           image spec, solo-io/wasm spec/spec.md). Manifest
                           config `application/vnd.module.wasm.config.v1+json`
                           (runtime-config.json); layers: runtime-config.json
                           again, as `application/vnd.module.wasm.config.v1+json`,
                           and plugin.wasm, raw, as
                           `application/vnd.module.wasm.content.layer.v1+wasm`.
                           The duplicated config layer is what Istio and Envoy
                           Gateway require of this variant: their fetchers
                           (Istio pkg/wasm/imagefetcher.go, Envoy Gateway
                           internal/wasm/imagefetcher.go, extractOCIArtifactImage)
                           refuse an image with other than exactly two layers.
                           The wasm layer's digest is the module's sha256.
                           Built and pushed by oras (PyPI `oras`).

  REGISTRY:VERSION-compat  the "compat" variant (solo-io/wasm spec/spec-compat.md):
                           a plain OCI image whose single
                           `application/vnd.oci.image.layer.v1.tar+gzip` layer
                           holds plugin.wasm (and runtime-config.json), with the
                           manifest annotation `module.wasm.image/variant=compat`
                           that the spec requires for this layer type. Any
                           registry that stores container images stores it.
                           Built by umoci (an OCI layout in build/oci/compat),
                           pushed by skopeo.

Beside them, the Traefik plugin (`make traefik`) as a release archive:
build/oci/mcp-toon-traefik-VERSION.tar.gz holds `mcp-toon/.traefik.yml` and
`mcp-toon/plugin.wasm`, the directory a Traefik operator unpacks under
`plugins-local/src/` (docs/traefik.md). Traefik loads local
plugins from files, not from a registry, so it is attached to the release,
not pushed.

VERSION is the crate version in Cargo.toml. Timestamps come from
SOURCE_DATE_EPOCH (default: the last commit's time), so rebuilding the same
commit gives the same digests.

`push` writes build/oci/pushed.json: each reference with the manifest digest
the pushing client reported, and the module's sha256.

Registry access: hosts on loopback (127.*, localhost, [::1]) are spoken to
over plain HTTP, others over HTTPS (override with --plain-http / --https).
Credentials come from the file named by --authfile or REGISTRY_AUTH_FILE
(docker/containers auth.json format), read by both skopeo and oras.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import io
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
import artifacts  # noqa: E402

WASM = artifacts.WASM
OUT = ROOT / "build" / "oci"
TRAEFIK_PLUGIN = ROOT / "build" / "traefik" / "plugins-local" / "src" / "mcp-toon"

# solo-io/wasm spec/spec.md ("oci" variant) and spec/spec-compat.md.
WASM_CONFIG_MEDIA_TYPE = "application/vnd.module.wasm.config.v1+json"
WASM_LAYER_MEDIA_TYPE = "application/vnd.module.wasm.content.layer.v1+wasm"
COMPAT_LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"
VARIANT_ANNOTATION = "module.wasm.image/variant"
# The root_id the module's examples and envoy/envoy.yaml use (the module
# accepts any).
ROOT_ID = "mcp_toon"


class OciError(Exception):
    pass


def crate_version() -> str:
    with open(ROOT / "Cargo.toml", "rb") as f:
        return tomllib.load(f)["package"]["version"]


def source_date_epoch() -> int:
    env = os.environ.get("SOURCE_DATE_EPOCH")
    if env:
        return int(env)
    r = subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=ROOT, capture_output=True, text=True)
    return int(r.stdout.strip()) if r.returncode == 0 and r.stdout.strip() else 0


def rfc3339(epoch: int) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run(argv: list[str], cwd: Path = ROOT) -> str:
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise OciError(f"{' '.join(argv)} exited with {r.returncode}:\n{r.stderr.strip() or r.stdout.strip()}")
    return r.stdout


def need(tool: str) -> None:
    if shutil.which(tool) is None:
        raise OciError(f"{tool} not found: run scripts/bootstrap.sh (it installs skopeo and umoci from Debian)")


def abi_versions(wasm: bytes) -> list[str]:
    """The proxy-wasm ABI versions the module exports (`proxy_abi_version_*`
    functions), for runtime-config.json."""
    found = sorted({m.decode() for m in re.findall(rb"proxy_abi_version_[0-9_]+", wasm)})
    if not found:
        raise OciError("the module exports no proxy_abi_version_* function: is it the proxy-wasm plugin build?")
    return found


def runtime_config(wasm: bytes) -> bytes:
    """runtime-config.json of the Wasm image spec ("Envoy WASM Filter
    Specification" section of spec.md)."""
    doc = {"type": "envoy_proxy", "abiVersions": abi_versions(wasm), "config": {"root_ids": [ROOT_ID]}}
    return (json.dumps(doc, separators=(",", ":")) + "\n").encode()


def annotations(version: str, epoch: int) -> dict[str, str]:
    return {
        "org.opencontainers.image.title": "mcp-toon",
        "org.opencontainers.image.description": "Proxy-wasm plugin that rewrites MCP tools/call results as TOON",
        "org.opencontainers.image.version": version,
        "org.opencontainers.image.licenses": "Apache-2.0",
        "org.opencontainers.image.created": rfc3339(epoch),
    }


# --- build ------------------------------------------------------------------------


def build(wasm_path: Path, version: str, out: Path = OUT) -> dict[str, Path]:
    """Writes build/oci/artifact/{plugin.wasm,runtime-config.json} (the files
    oras pushes) and build/oci/compat (an OCI layout holding the compat image,
    tag VERSION-compat)."""
    if not wasm_path.is_file():
        raise OciError(f"{wasm_path} not found: run `make build` first")
    wasm = wasm_path.read_bytes()
    if not wasm.startswith(b"\0asm"):
        raise OciError(f"{wasm_path} is not a WebAssembly module")
    epoch = source_date_epoch()
    config = runtime_config(wasm)

    artifact = out / "artifact"
    shutil.rmtree(artifact, ignore_errors=True)
    artifact.mkdir(parents=True)
    (artifact / "plugin.wasm").write_bytes(wasm)
    (artifact / "runtime-config.json").write_bytes(config)

    compat = build_compat(wasm, config, version, epoch, out)
    return {"artifact": artifact, "compat": compat}


def traefik_archive(plugin_dir: Path, version: str, out: Path = OUT) -> Path:
    """The Traefik plugin directory as a gzipped tar, reproducible: sorted,
    owned by root, timestamps SOURCE_DATE_EPOCH, gzip without a name or time."""
    files = [plugin_dir / ".traefik.yml", plugin_dir / "plugin.wasm"]
    for f in files:
        if not f.is_file():
            raise OciError(f"{f} not found: run `make traefik` first")
    if not files[1].read_bytes().startswith(b"\0asm"):
        raise OciError(f"{files[1]} is not a WebAssembly module")
    epoch = source_date_epoch()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for f in files:
            data = f.read_bytes()
            info = tarfile.TarInfo(f"mcp-toon/{f.name}")
            info.size, info.mtime, info.mode = len(data), epoch, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(data))
    out.mkdir(parents=True, exist_ok=True)
    archive = out / f"mcp-toon-traefik-{version}.tar.gz"
    archive.write_bytes(gzip.compress(raw.getvalue(), compresslevel=9, mtime=0))
    return archive


def build_compat(wasm: bytes, config: bytes, version: str, epoch: int, out: Path) -> Path:
    need("umoci")
    layout = out / "compat"
    bundle = out / "compat-bundle"
    tag = f"{version}-compat"
    image = f"{layout}:{tag}"
    shutil.rmtree(layout, ignore_errors=True)
    shutil.rmtree(bundle, ignore_errors=True)
    rootless = ["--rootless"] if os.geteuid() != 0 else []

    run(["umoci", "init", "--layout", str(layout)])
    run(["umoci", "new", "--image", image])
    # unpack + copy + repack gives one layer holding exactly these files.
    # (`umoci insert` would too, but umoci 0.4.7 writes its tar without the
    # end-of-archive blocks.)
    run(["umoci", "unpack", *rootless, "--image", image, str(bundle)])
    rootfs = bundle / "rootfs"
    (rootfs / "plugin.wasm").write_bytes(wasm)
    (rootfs / "runtime-config.json").write_bytes(config)
    for p in (rootfs / "plugin.wasm", rootfs / "runtime-config.json", rootfs):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
        os.utime(p, (epoch, epoch))
    created = rfc3339(epoch)
    run(
        [
            "umoci", "repack", "--image", image,
            "--history.created", created,
            "--history.created_by", "scripts/oci.py: plugin.wasm runtime-config.json",
            str(bundle),
        ]
    )  # fmt: skip
    config_args = ["umoci", "config", "--image", image, "--no-history", "--created", created]
    # The platform of a core-Wasm (WASI preview 1) module, as the CNCF Wasm
    # OCI artifact layout names it.
    config_args += ["--os", "wasip1", "--architecture", "wasm", "--author", "mcp-toon"]
    for key, value in {VARIANT_ANNOTATION: "compat", **annotations(version, epoch)}.items():
        config_args += ["--manifest.annotation", f"{key}={value}"]
    run(config_args)
    run(["umoci", "gc", "--layout", str(layout)])
    shutil.rmtree(bundle, ignore_errors=True)
    check_compat_layout(layout, tag, wasm)
    return layout


def check_compat_layout(layout: Path, tag: str, wasm: bytes) -> None:
    """The built layout is what the compat spec asks: one tar+gzip layer whose
    plugin.wasm is the module, and the variant annotation."""
    index = json.loads((layout / "index.json").read_text())
    (desc,) = [m for m in index["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag]
    manifest = json.loads(blob(layout, desc["digest"]))
    layers = manifest["layers"]
    if len(layers) != 1 or layers[0]["mediaType"] != COMPAT_LAYER_MEDIA_TYPE:
        raise OciError(f"compat image: want one {COMPAT_LAYER_MEDIA_TYPE} layer, have {layers}")
    if manifest.get("annotations", {}).get(VARIANT_ANNOTATION) != "compat":
        raise OciError(f"compat image: annotation {VARIANT_ANNOTATION}=compat missing")
    if plugin_from_tar_gz(blob(layout, layers[0]["digest"])) != wasm:
        raise OciError("compat image: plugin.wasm in the layer differs from the module")


def blob(layout: Path, digest: str) -> bytes:
    algo, _, hexd = digest.partition(":")
    data = (layout / "blobs" / algo / hexd).read_bytes()
    if hashlib.sha256(data).hexdigest() != hexd:
        raise OciError(f"blob {digest} does not match its digest")
    return data


def plugin_from_tar_gz(data: bytes) -> bytes:
    """plugin.wasm from a compat layer, found as Istio finds it (by base name)."""
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data)), mode="r:") as tar:
        for member in tar:
            if member.isfile() and os.path.basename(member.name) == "plugin.wasm":
                f = tar.extractfile(member)
                if f is not None:
                    return f.read()
    raise OciError("plugin.wasm not found in the layer")


# --- push -------------------------------------------------------------------------


def is_loopback(registry: str) -> bool:
    host = registry.split("/", 1)[0]
    host = host[1:].split("]", 1)[0] if host.startswith("[") else host.rsplit(":", 1)[0]
    return host == "localhost" or host == "::1" or host.startswith("127.")


def push(registry: str, version: str, built: dict[str, Path], plain_http: bool, authfile: str | None) -> dict:
    wasm_path = built["artifact"] / "plugin.wasm"
    result = {
        "version": version,
        "wasm_sha256": sha256_file(wasm_path),
        "variants": {
            "artifact": push_artifact(registry, f"{registry}:{version}", built["artifact"], version, plain_http, authfile),
            "compat": push_compat(f"{registry}:{version}-compat", built["compat"], f"{version}-compat", plain_http, authfile),
        },
    }
    (OUT / "pushed.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def push_compat(ref: str, layout: Path, tag: str, plain_http: bool, authfile: str | None) -> dict:
    need("skopeo")
    digest_file = layout.parent / "compat.digest"
    argv = ["skopeo", "copy", "--quiet", "--digestfile", str(digest_file)]
    # tls-verify=false lets skopeo fall back to HTTP.
    argv += ["--dest-tls-verify=false"] if plain_http else []
    argv += ["--dest-authfile", authfile] if authfile else []
    run([*argv, f"oci:{layout}:{tag}", f"docker://{ref}"])
    version = run(["skopeo", "--version"]).strip()
    return {"ref": ref, "digest": digest_file.read_text().strip(), "pushed_with": version}


def push_artifact(registry: str, ref: str, files: Path, version: str, plain_http: bool, authfile: str | None) -> dict:
    try:
        import oras.client
    except ImportError as e:
        raise OciError("the Python package `oras` is missing: run scripts/bootstrap.sh") from e
    host = registry.split("/", 1)[0]
    client = oras.client.OrasClient(hostname=host, insecure=plain_http)
    cwd = os.getcwd()
    # oras names each layer after its file (org.opencontainers.image.title),
    # so `oras pull` writes plugin.wasm; it wants paths below the working
    # directory.
    os.chdir(files)
    try:
        response = client.push(
            target=ref,
            config_path=authfile,
            files=[f"runtime-config.json:{WASM_CONFIG_MEDIA_TYPE}", f"plugin.wasm:{WASM_LAYER_MEDIA_TYPE}"],
            manifest_config=f"runtime-config.json:{WASM_CONFIG_MEDIA_TYPE}",
            manifest_annotations=annotations(version, source_date_epoch()),
            quiet=True,
        )
    except Exception as e:  # oras raises bare exceptions for HTTP errors
        raise OciError(f"oras push {ref}: {e}") from e
    finally:
        os.chdir(cwd)
    digest = response.headers.get("Docker-Content-Digest", "")
    if not digest:
        raise OciError(f"oras push {ref}: the registry reported no manifest digest")
    return {"ref": ref, "digest": digest, "pushed_with": f"oras-py {importlib.metadata.version('oras')}"}


# --- command line -------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    build_p = sub.add_parser("build", help="build both images under build/oci (no registry)")
    push_p = sub.add_parser("push", help="build both images and push them")
    push_p.add_argument("--registry", required=True, help="host[:port]/repository, e.g. 127.0.0.1:5000/mcp-toon")
    http = push_p.add_mutually_exclusive_group()
    http.add_argument("--plain-http", dest="plain_http", action="store_true", default=None, help="speak HTTP (default on loopback)")
    http.add_argument("--https", dest="plain_http", action="store_false", help="speak HTTPS even on loopback")
    push_p.add_argument("--authfile", default=os.environ.get("REGISTRY_AUTH_FILE"), help="auth.json with registry credentials")
    for sp in (build_p, push_p):
        sp.add_argument("--wasm", type=Path, default=WASM, help=f"the module (default {artifacts.shown(WASM)})")
        sp.add_argument("--traefik", type=Path, default=TRAEFIK_PLUGIN, help=f"the Traefik plugin directory (default {TRAEFIK_PLUGIN.relative_to(ROOT)})")
    args = p.parse_args(argv)

    try:
        version = crate_version()
        built = build(args.wasm, version)
        archive = traefik_archive(args.traefik, version)
        print(f"oci: Traefik plugin for the release: {archive.relative_to(ROOT)} (sha256 {sha256_file(archive)})")
        if args.command == "build":
            print(f"oci: built {built['artifact'].relative_to(ROOT)} and {built['compat'].relative_to(ROOT)} ({version})")
            return 0
        registry = args.registry.removeprefix("oci://").rstrip("/")
        if "/" not in registry or ":" in registry.rsplit("/", 1)[-1] or "@" in registry:
            raise OciError(f"--registry {registry!r}: give host[:port]/repository, without a tag (tags come from Cargo.toml)")
        plain = is_loopback(registry) if args.plain_http is None else args.plain_http
        result = push(registry, version, built, plain, args.authfile)
    except OciError as e:
        print(f"oci: error: {e}", file=sys.stderr)
        return 1
    for name, v in result["variants"].items():
        print(f"oci: pushed {v['ref']}@{v['digest']} ({name}, {v['pushed_with']})")
    print(f"oci: plugin.wasm sha256 {result['wasm_sha256']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
