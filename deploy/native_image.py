#!/usr/bin/env python3
"""Push a container image of one file: its only layer holds the file at /<its name>,
mode 0755, and the image's entrypoint runs it. This is the native side of the node's
comparison (deploy/local-node.sh): `hello-native` linked statically, run by `runc`,
against the same function as a wasm container. (The deploy tests also push a data file
this way: an image that is not a Spin app.)

Usage: native_image.py FILE REGISTRY_HOST:PORT REPOSITORY:TAG
Only plain HTTP to a registry on loopback. Standard library only; prints the
manifest's digest.
"""

import io
import pathlib
import platform
import sys
import tarfile

from files_image import push_image

# The image config's names for this machine's architecture (the OCI image spec's,
# which are Go's GOARCH values).
GOARCH = {"x86_64": "amd64", "aarch64": "arm64"}


def layer_tar(executable: pathlib.Path) -> bytes:
    """An uncompressed tar of the one file, with fixed owner and time."""
    data = executable.read_bytes()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(executable.name)
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    executable = pathlib.Path(sys.argv[1]).resolve()
    repo, _, tag = sys.argv[3].partition(":")
    arch = GOARCH.get(platform.machine(), platform.machine())
    config = {"architecture": arch, "os": "linux",
              "config": {"Entrypoint": [f"/{executable.name}"]}}
    print(push_image(f"http://{sys.argv[2]}", repo, tag, layer_tar(executable), config))


if __name__ == "__main__":
    main()
