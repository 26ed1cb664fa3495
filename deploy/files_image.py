#!/usr/bin/env python3
"""Push a Spin app to an OCI registry as a plain image whose one layer holds the
manifest and every file it names, at the paths it names them.

This is the form a Spin containerd shim runs when an image has no Spin or Wasm
layers: it reads /spin.toml from the container's root filesystem
(spinframework/containerd-shim-spin v0.24.0, containerd-shim-spin/src/source.rs,
`Source::File`; the repository's images/*/Dockerfile build such images `FROM
scratch` for `--platform=wasi/wasm`), and so does spinbench's shim. The other form,
Spin's OCI artifact, is what `spinbench registry push` and `spin registry push`
write; deploy/local-node.sh measures both.

Usage: files_image.py MANIFEST REGISTRY_HOST:PORT REPOSITORY:TAG
Only plain HTTP to a registry on loopback: this is for the local node. A registry that
asks for a user gets REGISTRY_AUTH (USER:PASSWORD, from the environment) as Basic auth.
Standard library only; prints the manifest's digest.
"""

import base64
import hashlib
import io
import json
import os
import pathlib
import sys
import tarfile
import tomllib
import urllib.parse
import urllib.request

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar"


def app_files(manifest: pathlib.Path) -> list[str]:
    """The local files the manifest's components load, relative to its directory."""
    doc = tomllib.loads(manifest.read_text())
    if doc.get("spin_manifest_version") != 2:
        sys.exit(f"{manifest}: only Spin manifest v2 is handled here")
    files = []
    for cid, comp in sorted(doc.get("component", {}).items()):
        source = comp.get("source")
        if not isinstance(source, str):
            sys.exit(f"{manifest}: component {cid}: only a local file source is handled here")
        if comp.get("files"):
            sys.exit(f"{manifest}: component {cid}: `files` mounts are not handled here")
        files.append(source)
    for rel in files:
        if not (manifest.parent / rel).is_file():
            sys.exit(f"{manifest.parent / rel}: not found (build the app first: "
                     f"spinbench build --manifest {manifest})")
    return files


def layer_tar(manifest: pathlib.Path, files: list[str]) -> bytes:
    """An uncompressed tar with fixed owners and times, so one app gives one digest.
    The manifest goes to the root as spin.toml, the name the shim reads."""
    root = manifest.parent
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        text = manifest.read_bytes()
        info = tarfile.TarInfo("spin.toml")
        info.size, info.mode = len(text), 0o644
        tar.addfile(info, io.BytesIO(text))
        dirs = set()
        for rel in sorted(set(files)):
            parts = pathlib.PurePosixPath(rel).parts
            for i in range(1, len(parts)):
                dirs.add("/".join(parts[:i]))
        for d in sorted(dirs):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for rel in sorted(set(files)):
            data = (root / rel).read_bytes()
            info = tarfile.TarInfo(rel)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def send(url: str, method: str, data: bytes, headers: dict | None = None) -> object:
    """One request to the registry, with REGISTRY_AUTH's Basic auth when it is set."""
    headers = dict(headers or {})
    if os.environ.get("REGISTRY_AUTH"):
        token = base64.b64encode(os.environ["REGISTRY_AUTH"].encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    return urllib.request.urlopen(urllib.request.Request(url, method=method, data=data, headers=headers))


def push_blob(base: str, repo: str, data: bytes) -> str:
    d = digest(data)
    with send(f"{base}/v2/{repo}/blobs/uploads/", "POST", b"") as r:
        location = urllib.parse.urljoin(base, r.headers["Location"])
    sep = "&" if "?" in location else "?"
    with send(f"{location}{sep}digest={urllib.parse.quote(d)}", "PUT", data,
              {"Content-Type": "application/octet-stream"}) as r:
        if r.status != 201:
            sys.exit(f"blob upload of {d}: HTTP {r.status}")
    return d


def push_image(base: str, repo: str, tag: str, layer: bytes, config: dict) -> str:
    """Pushes an image of one uncompressed `layer` with the image config `config`
    (its rootfs filled in); returns the manifest's digest."""
    config = json.dumps(
        {**config, "rootfs": {"type": "layers", "diff_ids": [digest(layer)]}}, sort_keys=True
    ).encode()
    return push_manifest(base, repo, tag, (OCI_CONFIG, config), (OCI_LAYER, layer))


def push_manifest(base: str, repo: str, tag: str, config: tuple[str, bytes],
                  layer: tuple[str, bytes]) -> str:
    """Pushes a manifest of one config and one layer, each a (media type, bytes) pair,
    and both blobs; returns the manifest's digest."""
    layer_digest = push_blob(base, repo, layer[1])
    config_digest = push_blob(base, repo, config[1])
    image = json.dumps({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": config[0], "digest": config_digest, "size": len(config[1])},
        "layers": [{"mediaType": layer[0], "digest": layer_digest, "size": len(layer[1])}],
    }, sort_keys=True).encode()
    with send(f"{base}/v2/{repo}/manifests/{tag or 'latest'}", "PUT", image,
              {"Content-Type": OCI_MANIFEST}) as r:
        if r.status != 201:
            sys.exit(f"manifest upload: HTTP {r.status}")
    return digest(image)


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    manifest = pathlib.Path(sys.argv[1]).resolve()
    repo, _, tag = sys.argv[3].partition(":")
    layer = layer_tar(manifest, app_files(manifest))
    config = {"architecture": "wasm", "os": "wasi", "config": {"Entrypoint": ["/"]}}
    print(push_image(f"http://{sys.argv[2]}", repo, tag, layer, config))


if __name__ == "__main__":
    main()
