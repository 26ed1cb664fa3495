#!/usr/bin/env bash
# The node below SpinKube, on this machine: an OCI registry and containerd on loopback,
# the app pushed, pulled by containerd and run under the Spin containerd shim as the
# operator's pod runs it (`ctr run --runtime io.containerd.spin.v2`, host network),
# then `spinbench load --url` against it. deploy/README.md says what was run and found.
#
# Usage (as root, from anywhere in the repository):
#   deploy/local-node.sh [--manifest spin.toml] [--results-dir results] [-- LOAD-ARGS...]
# LOAD-ARGS go to `spinbench load` (e.g. -- --quick, -- --functions hello --duration 5).
#
# Environment: CONTAINERD_SHIM_SPIN  the shim binary, if `containerd-shim-spin-v2` is not
#                                    on PATH
#              SNAPSHOTTER           containerd's snapshotter (default overlayfs)
#              KEEP_WORK=1           leave the temporary directory for a look afterwards
# Exit: 0 a report was written; 2 something this needs is missing (named, one line each,
# with how to get it); 1 a step failed (its output says which).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
manifest=spin.toml
results=results
load_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --manifest) manifest=$2; shift 2 ;;
    --results-dir) results=$2; shift 2 ;;
    --) shift; load_args=("$@"); break ;;
    *) echo "unknown argument: $1 (see the top of $0)" >&2; exit 1 ;;
  esac
done
cd "$repo"

# --- what this needs -------------------------------------------------------------------
missing=()
need() { missing+=("$1: $2"); }
[ "$(id -u)" = 0 ] || need "root" "containerd and its shims run as root: run this with sudo"
shim=${CONTAINERD_SHIM_SPIN:-$(command -v containerd-shim-spin-v2 || true)}
[ -n "$shim" ] && [ -x "$shim" ] || need "containerd-shim-spin-v2" \
  "a release of spinframework/containerd-shim-spin, or its source built with 'cargo build --release -p containerd-shim-spin-v2'; on PATH or as CONTAINERD_SHIM_SPIN"
if command -v containerd >/dev/null; then
  # Wasm layers are passed to a shim from containerd 1.7.7 on; 1.6 refuses a Spin
  # artifact at pull ("mismatched image rootfs and manifest layers").
  cv=$(containerd --version | grep -oE ' v?[0-9]+\.[0-9]+\.[0-9]+' | head -1 | tr -d ' v')
  if [ "$(printf '%s\n1.7.7\n' "$cv" | sort -V | head -1)" != 1.7.7 ]; then
    need "containerd >= 1.7.7 (found $cv)" "Debian 13's package (1.7.24); on Debian 12: apt-get install -t trixie containerd"
  fi
else
  need "containerd >= 1.7.7" "apt-get install containerd (Debian 13; on Debian 12: -t trixie)"
fi
command -v ctr >/dev/null || need "ctr" "comes with Debian's containerd package"
command -v docker-registry >/dev/null || need "docker-registry" "apt-get install docker-registry"
command -v curl >/dev/null || need "curl" "apt-get install curl"
python3 -c 'import tomllib' 2>/dev/null || need "python3 >= 3.11" "apt-get install python3"
[ -x target/release/spinbench ] || need "target/release/spinbench" "make build"
command -v oha >/dev/null || need "oha" "make setup (cargo install oha --locked)"
[ -f "$manifest" ] || need "$manifest" "a Spin manifest v2 (--manifest)"
if [ ${#missing[@]} -gt 0 ]; then
  echo "deploy/local-node.sh cannot run; missing:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 2
fi

# --- state under one temporary directory, every process stopped by PID ----------------
work=$(mktemp -d /tmp/spinbench-node.XXXXXX)
sock=$work/containerd.sock
ns=spinbench
container=spinbench-app
registry_pid='' containerd_pid=''
ctr_() { ctr --address "$sock" --namespace "$ns" "$@"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
stop() {
  set +e
  if [ -n "$containerd_pid" ]; then
    ctr_ task kill --signal SIGKILL "$container" >/dev/null 2>&1
    for _ in $(seq 50); do ctr_ task ls -q 2>/dev/null | grep -qx "$container" || break; sleep 0.1; ctr_ task delete "$container" >/dev/null 2>&1; done
    ctr_ container delete "$container" >/dev/null 2>&1
    kill "$containerd_pid" 2>/dev/null; wait "$containerd_pid" 2>/dev/null
  fi
  # A shim outlives containerd by design; ours are the processes given our socket.
  for p in /proc/[0-9]*; do
    if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "-address $sock"; then kill -9 "${p#/proc/}" 2>/dev/null; fi
  done
  [ -n "$registry_pid" ] && { kill "$registry_pid" 2>/dev/null; wait "$registry_pid" 2>/dev/null; }
  findmnt -rn -o TARGET | grep -F "$work/" | sort -r | xargs -r -n1 umount -l 2>/dev/null
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
# containerd finds `containerd-shim-spin-v2` for io.containerd.spin.v2 on its PATH.
PATH="$(dirname "$shim"):$PATH" containerd --config "$work/containerd.toml" >"$work/containerd.log" 2>&1 &
containerd_pid=$!

for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$registry_port/v2/" >/dev/null && [ -S "$sock" ] && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$registry_port/v2/" >/dev/null || { cat "$work/registry.log"; echo "the registry did not start" >&2; exit 1; }
ctr_ version >/dev/null || { tail -20 "$work/containerd.log"; echo "containerd did not start" >&2; exit 1; }

# --- push: as `spin registry push` does when spin is here, else as a files image --------
image=127.0.0.1:$registry_port/spinbench:0.1.0
if command -v spin >/dev/null; then
  pushed_as="Spin OCI artifact, spin registry push ($(spin --version | head -1))"
  spin registry push --insecure -f "$manifest" "$image"
  platform=()
else
  pushed_as="image with files (deploy/files_image.py: /spin.toml and the .wasm files; spin not on PATH)"
  python3 deploy/files_image.py "$manifest" "127.0.0.1:$registry_port" spinbench:0.1.0
  platform=(--platform wasi/wasm)
fi
echo "pushed: $image as $pushed_as"

# --- pull and run under the shim, as the operator's pod would ---------------------------
ctr_ image pull --plain-http "${platform[@]}" "$image" >"$work/pull.log" 2>&1 || { cat "$work/pull.log"; echo "ctr image pull failed" >&2; exit 1; }
app_port=$(free_port)
started=$(date +%s%N)
ctr_ run -d --snapshotter "${SNAPSHOTTER:-overlayfs}" --runtime io.containerd.spin.v2 --net-host \
  --env "SPIN_HTTP_LISTEN_ADDR=127.0.0.1:$app_port" "${platform[@]}" "$image" "$container" / >"$work/run.log" 2>&1 \
  || { cat "$work/run.log"; tail -20 "$work/containerd.log"; echo "ctr run failed" >&2; exit 1; }
url=http://127.0.0.1:$app_port
first_200=''
for _ in $(seq 1800); do   # 180 s at most: the shim compiles each component first
  if [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/hello" 2>/dev/null)" = 200 ]; then
    first_200=$(( ($(date +%s%N) - started) / 1000000 )); break
  fi
  ctr_ task ls 2>/dev/null | grep -q "^$container .*RUNNING" || { ctr_ task ls; tail -30 "$work/containerd.log"; echo "the app's task is not running" >&2; exit 1; }
  sleep 0.1
done
[ -n "$first_200" ] || { tail -30 "$work/containerd.log"; echo "no 200 from $url/hello in 180 s" >&2; exit 1; }
task_pid=$(ctr_ task ls | awk -v c="$container" '$1 == c { print $2 }')
shim_version=$("$shim" --version 2>&1 | tr -s ' \n' ' ' | sed 's/ $//')
echo "running: $url (task pid $task_pid), first 200 after ${first_200} ms from ctr run"

# --- measure ----------------------------------------------------------------------------
before=$(python3 deploy/shim_tree.py "$sock")
out=$(mktemp)
target/release/spinbench load --url "$url" --results-dir "$results" \
  --host-version "shim=$shim_version" \
  --host-version "containerd=$(containerd --version)" \
  --host-version "registry=$(docker-registry --version)" \
  --host-version "pushed as=$pushed_as" \
  "${load_args[@]}" | tee "$out"
after=$(python3 deploy/shim_tree.py "$sock")
report=$(sed -n 's/^report: //p' "$out" | tail -1)
rm -f "$out"
[ -n "$report" ] || { echo "spinbench load wrote no report" >&2; exit 1; }
# Beside the report: what `load --url` cannot see of a host it did not start.
python3 - "$before" "$after" "$first_200" "$(dirname "$report")/local-node.md" <<'PY'
import json, sys
before, after = json.loads(sys.argv[1]), json.loads(sys.argv[2])
lines = [
    "# The app under containerd and the Spin shim (deploy/local-node.sh)",
    "",
    "| figure | value |",
    "|---|---:|",
    f"| `ctr run` to the first `200` of `GET /hello` (ms) | {sys.argv[3]} |",
    f"| the shim's processes before the load | {len(before['pids'])} |",
    f"| their RSS before / after the load (KiB) | {before['rss_kib']:.0f} / {after['rss_kib']:.0f} |",
    f"| their PSS before / after the load (KiB) | {before['pss_kib']:.0f} / {after['pss_kib']:.0f} |",
    f"| their CPU over the load, warm-ups included (s) | {after['cpu_s'] - before['cpu_s']:.2f} |",
    "",
    "The shim's processes: those given this run's containerd socket (`-address`), with their",
    "descendants, read from /proc (deploy/shim_tree.py).",
]
open(sys.argv[4], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
echo "done: $report"
