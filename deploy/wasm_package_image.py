#!/usr/bin/env python3
"""Push one wasm as `wkg oci push` writes it: the Wasm OCI artifact of the CNCF TAG
Runtime's wasm working group (an image config of media type
application/vnd.wasm.config.v0+json, and one application/wasm layer), which SpinKube's
shim runs as a one-component Spin app (containerd-shim-spin v0.23.0, #392) and so does
spinbench's. containerd's `ctr run` cannot run such an image (it reads only OCI and
Docker image configs: runwasi's README says so); the kubelet's path, CRI, can.

Usage: wasm_package_image.py WASM REGISTRY_HOST:PORT REPOSITORY:TAG
Only plain HTTP to a registry on loopback. Standard library only; prints the
manifest's digest.
"""

import json
import pathlib
import sys

from files_image import digest, push_manifest

WASM_CONFIG = "application/vnd.wasm.config.v0+json"
WASM_LAYER = "application/wasm"


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    wasm = pathlib.Path(sys.argv[1]).read_bytes()
    repo, _, tag = sys.argv[3].partition(":")
    config = json.dumps({"architecture": "wasm", "os": "wasip2",
                         "layerDigests": [digest(wasm)]}, sort_keys=True).encode()
    print(push_manifest(f"http://{sys.argv[2]}", repo, tag, (WASM_CONFIG, config),
                        (WASM_LAYER, wasm)))


if __name__ == "__main__":
    main()
