#!/usr/bin/env bash
# One node on this machine, as a Kubernetes node runs pods: an OCI registry and containerd
# on loopback, the app pushed and pulled, then `hello` as a wasm container under
# spinbench's containerd shim (io.containerd.spinbench.v1) against the native
# `hello-native` (static) as a runc container, both started by the same containerd and
# measured alike (deploy/node_bench.py: `ctr run` to the first 200, PSS per running
# container, server CPU per request). Where SpinKube's shim (`containerd-shim-spin-v2`)
# is on PATH, its column is measured too. Containers use the host's network (a pod's
# own network is the CNI's). deploy/README.md says what was run and found.
#
# Usage (as root, from anywhere in the repository, after `make build`):
#   deploy/local-node.sh [--manifest spin.toml] [--runs 5] [--requests 20000] [--running 4]
#                        [--results-dir results] [-- LOAD-ARGS...]
# With `-- LOAD-ARGS`, `spinbench load --url` then runs against the wasm container with
# them (e.g. -- --quick, -- --functions hello --duration 5).
#
# Environment: CONTAINERD_SHIM_SPIN  SpinKube's shim, if not on PATH as containerd-shim-spin-v2
#              KEEP_WORK=1           leave the temporary directory for a look afterwards
# Exit: 0 figures written and nothing left behind; 2 something this needs is missing
# (named, one line each, with how to get it); 1 a step failed (its output says which).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
manifest=spin.toml
results=results
runs=5
requests=20000
running=4
load_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --manifest) manifest=$2; shift 2 ;;
    --results-dir) results=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --running) running=$2; shift 2 ;;
    --) shift; load_args=("$@"); [ ${#load_args[@]} -gt 0 ] || load_args=(--quick); break ;;
    *) echo "unknown argument: $1 (see the top of $0)" >&2; exit 1 ;;
  esac
done
cd "$repo"
triple=$(rustc -vV 2>/dev/null | sed -n 's/^host: //p')
shim=target/release/containerd-shim-spinbench-v1
native=target/$triple/release/hello-native

# --- what this needs -------------------------------------------------------------------
missing=()
need() { missing+=("$1: $2"); }
[ "$(id -u)" = 0 ] || need "root" "containerd and its shims run as root: run this with sudo"
if command -v containerd >/dev/null; then
  # Wasm layers reach a shim from containerd 1.7.7 on; 1.6 refuses a Spin artifact at pull.
  cv=$(containerd --version | grep -oE ' v?[0-9]+\.[0-9]+\.[0-9]+' | head -1 | tr -d ' v')
  if [ "$(printf '%s\n1.7.7\n' "$cv" | sort -V | head -1)" != 1.7.7 ]; then
    need "containerd >= 1.7.7 (found $cv)" "sudo deploy/install-node.sh (Debian 13's package on Debian 12)"
  fi
else
  need "containerd >= 1.7.7" "sudo deploy/install-node.sh"
fi
for tool in ctr runc docker-registry; do
  command -v $tool >/dev/null || need "$tool" "sudo deploy/install-node.sh"
done
command -v curl >/dev/null || need "curl" "apt-get install curl"
python3 -c 'import tomllib' 2>/dev/null || need "python3 >= 3.11" "apt-get install python3"
command -v oha >/dev/null || need "oha" "make setup (cargo install oha --locked)"
[ -x target/release/spinbench ] || need "target/release/spinbench" "make build"
[ -x "$shim" ] || need "$shim" \
  "make build, where protoc and libseccomp are (apt-get install protobuf-compiler libseccomp-dev)"
[ -x "$native" ] || need "$native" "make build (the static hello-native, built beside the shim)"
[ -f "$manifest" ] || need "$manifest" "a Spin manifest v2 (--manifest)"
if [ ${#missing[@]} -gt 0 ]; then
  echo "deploy/local-node.sh cannot run; missing:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 2
fi
spin_shim=${CONTAINERD_SHIM_SPIN:-$(command -v containerd-shim-spin-v2 || true)}

# --- state under one temporary directory, every process stopped by PID ----------------
work=$(mktemp -d /tmp/spinbench-node.XXXXXX)
mkdir -p "$work/fifo" "$work/bin"
sock=$work/containerd.sock
ns=spinbench-$$
registry_pid='' containerd_pid=''
ctr_() { ctr --address "$sock" --namespace "$ns" "$@"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
stop() {
  set +e
  if [ -n "$containerd_pid" ]; then
    for c in $(ctr_ task ls -q 2>/dev/null); do ctr_ task kill --signal SIGKILL "$c"; sleep 0.2; ctr_ task delete "$c"; done >/dev/null 2>&1
    for c in $(ctr_ container ls -q 2>/dev/null); do ctr_ container delete "$c"; done >/dev/null 2>&1
    kill "$containerd_pid" 2>/dev/null; wait "$containerd_pid" 2>/dev/null
  fi
  # A shim outlives containerd by design; ours are the processes given our socket.
  for p in /proc/[0-9]*; do
    if { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -qE -- "^[^ ]*containerd-shim[^ ]* .*-address $sock( |$)"; then
      kill -9 "${p#/proc/}" 2>/dev/null
    fi
  done
  [ -n "$registry_pid" ] && { kill "$registry_pid" 2>/dev/null; wait "$registry_pid" 2>/dev/null; }
  findmnt -rn -o TARGET | grep -F "$work/" | sort -r | xargs -r -n1 umount -l 2>/dev/null
  # What the runtimes keep outside the work directory: the namespace's cgroups (runc
  # and youki remove a container's own, not its parent) and the shim's state root.
  find /sys/fs/cgroup -depth -type d -path "*/$ns*" -exec rmdir {} + 2>/dev/null
  rm -rf "/run/containerd/spinbench/$ns"
  if [ "${KEEP_WORK:-}" = 1 ]; then echo "left: $work"; else rm -rf "$work"; fi
}
trap stop EXIT
trap 'exit 1' INT TERM

# --- the registry (CNCF distribution) ---------------------------------------------------
registry_port=$(free_port)
cat >"$work/registry.yml" <<EOF
version: 0.1
log: { level: warn }
storage: { filesystem: { rootdirectory: $work/registry } }
http: { addr: 127.0.0.1:$registry_port }
EOF
docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
registry_pid=$!

# --- containerd, its own root, state and socket -----------------------------------------
cat >"$work/containerd.toml" <<EOF
version = 2
root = "$work/root"
state = "$work/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$work/opt"
EOF
# containerd finds a runtime's shim on its PATH: containerd-shim-<name>-<version>.
ln -s "$repo/$shim" "$work/bin/"
[ -n "$spin_shim" ] && ln -sf "$spin_shim" "$work/bin/containerd-shim-spin-v2"
PATH="$work/bin:$PATH" containerd --config "$work/containerd.toml" >"$work/containerd.log" 2>&1 &
containerd_pid=$!

for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$registry_port/v2/" >/dev/null && [ -S "$sock" ] && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$registry_port/v2/" >/dev/null || { cat "$work/registry.log"; echo "the registry did not start" >&2; exit 1; }
ctr_ version >/dev/null || { tail -20 "$work/containerd.log"; echo "containerd did not start" >&2; exit 1; }

# --- push and pull: hello as an app of its own, the native hello, the app --------------
# The comparison is `hello` against `hello`: a one-component app, as `spinbench compare`
# measures each function.
mkdir -p "$work/hello-app"
cp target/wasm32-wasip2/release/hello.wasm "$work/hello-app/"
printf '%s\n' 'spin_manifest_version = 2' '[application]' 'name = "hello"' '[[trigger.http]]' \
  'route = "/hello"' 'component = "hello"' '[component.hello]' 'source = "hello.wasm"' \
  >"$work/hello-app/spin.toml"
registry=127.0.0.1:$registry_port
app=$registry/spinbench:0.1.0
# Pushed as a node pulls apps: Spin's OCI artifact (`spinbench registry push`, the layout
# `spin registry push` writes); also as an image with files, the shim's other form.
push() { target/release/spinbench registry push --insecure -f "$1" "$2" >/dev/null; }
push "$work/hello-app" "$registry/hello:artifact"
python3 deploy/files_image.py "$work/hello-app/spin.toml" "$registry" hello:files >/dev/null
python3 deploy/native_image.py "$native" "$registry" hello:native >/dev/null
[ ${#load_args[@]} -eq 0 ] || push "$manifest" "$app"
pull() {
  ctr_ image pull --plain-http "$@" >>"$work/pull.log" 2>&1 \
    || { cat "$work/pull.log"; echo "ctr image pull $* failed" >&2; exit 1; }
}
pull --platform wasi/wasm "$registry/hello:artifact"
pull --platform wasi/wasm "$registry/hello:files"
pull "$registry/hello:native"
[ ${#load_args[@]} -eq 0 ] || pull --platform wasi/wasm "$app"
echo "pushed and pulled: $registry/hello:artifact, hello:files, hello:native (static)"

# --- measure ------------------------------------------------------------------------------
out=$results/node-$(date -u +%Y%m%d-%H%M%S)
spin_flag=()
[ -n "$spin_shim" ] && spin_flag=(--spin-shim)
python3 deploy/node_bench.py --address "$sock" --namespace "$ns" --work "$work" --out "$out" \
  --wasm "$registry/hello:artifact" --wasm-files "$registry/hello:files" \
  --native "$registry/hello:native" --runs "$runs" --requests "$requests" \
  --running "$running" \
  "${spin_flag[@]}"
{
  echo
  echo "Versions: $("$shim" -v | tr -s ' \n' ' '); $(containerd --version); $(runc --version | head -1);"
  echo "$(docker-registry --version)."
  [ -n "$spin_shim" ] && echo "SpinKube's shim: $("$spin_shim" --version 2>&1 | tr -s ' \n' ' ')."
} >>"$out/node.md"
echo "node figures: $out/node.md"

if [ ${#load_args[@]} -gt 0 ]; then
  port=$(free_port)
  ctr_ run --fifo-dir "$work/fifo" --runtime io.containerd.spinbench.v1 --net-host --platform wasi/wasm \
    --env "SPIN_HTTP_LISTEN_ADDR=127.0.0.1:$port" "$app" load /  >"$work/load-container.log" 2>&1 &
  for _ in $(seq 1800); do curl -sf -o /dev/null "http://127.0.0.1:$port/hello" && break; sleep 0.1; done
  target/release/spinbench load --url "http://127.0.0.1:$port" --results-dir "$results" \
    --host-version "shim=$("$shim" -v | tr -s ' \n' ' ')" \
    --host-version "containerd=$(containerd --version)" \
    --host-version "pushed as=Spin's OCI artifact (spinbench registry push)" "${load_args[@]}"
fi
