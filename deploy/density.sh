#!/usr/bin/env bash
# Pods per node through CRI: N `hello` pods started one after the other through
# containerd's CRI plugin (as a scale-up's kubelet starts them), for N = 10, 100, 250,
# 500 by default, on spinbench's shim (the wasm `hello` as Spin's OCI artifact) and on
# runc (the static native `hello-native`), each subject on a node of its own: containerd
# with its CRI plugin in a network namespace of its own, pods networked by Debian's CNI
# plugins, a registry inside (`spinbench-node density`, node/). At each N it records per
# pod the PSS of every process the pods added (shims included), the memory charged to
# their cgroups, start latency p50/p99 (RunPodSandbox to the first 200 at the pod's IP),
# CPU while idle, and how many pods answer. deploy/README.md quotes a run.
#
# Usage (as root, from anywhere in the repository, after `make build`):
#   deploy/density.sh [--counts 10,100,250,500]
#                     [--subjects spinbench,spinbench-inprocess,spinbench-node,runc]
#                     [--results-dir results] [--settle-s 5] [--idle-s 10] [--floor-mib 3072]
# Writes <results-dir>/density-<timestamp>/density.{json,md,svg}. Starting pods stops
# (and the report says where) when the machine has less than --floor-mib available.
# Exit: 0 written; 2 something this needs is missing (named, with how to get it); 1 a
# step failed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
missing=()
need() { missing+=("$1: $2"); }
[ "$(id -u)" = 0 ] || need "root" "containerd and its shims run as root: run this with sudo"
for tool in containerd runc docker-registry ip nsenter python3; do
  command -v $tool >/dev/null || need "$tool" "sudo deploy/install-node.sh"
done
for plugin in bridge host-local loopback; do
  [ -x /usr/lib/cni/$plugin ] || need "/usr/lib/cni/$plugin" "sudo deploy/install-node.sh (containernetworking-plugins)"
done
[ -x target/release/spinbench-node ] || need "target/release/spinbench-node" \
  "make build, where protoc and libseccomp are (apt-get install protobuf-compiler libseccomp-dev)"
if [ ${#missing[@]} -gt 0 ]; then
  echo "deploy/density.sh cannot run; missing:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 2
fi
exec target/release/spinbench-node density "$@"
