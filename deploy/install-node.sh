#!/usr/bin/env bash
# Installs what the node runs on (deploy/local-node.sh, deploy/density.sh,
# tests/tests/deploy.rs and cri.rs), as root on Debian: `runc`, `docker-registry`, the
# CNI plugins pods are networked with (`containernetworking-plugins`: bridge, host-local,
# loopback in /usr/lib/cni) and `ip`/`nsenter` (iproute2, util-linux) from the machine's
# own release, and containerd
# >= 1.7.7, the first to hand a wasm layer to a shim (1.6 refuses a Spin OCI artifact at
# pull: "mismatched image rootfs and manifest layers").
#
# containerd: the release's own package when it is new enough (Debian 13: 1.7.24), else
# Debian 13's (trixie) package. On Debian 12 (1.6.20) that one is fetched with apt from a
# trixie index kept in a temporary directory, then installed with the machine's apt: the
# machine's sources are left as they are, and what it depends on (runc, libc6 >= 2.34)
# comes from the machine's own release. Exit: 0 installed (or already there), 1 failed.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "install-node.sh: run as root" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends runc docker-registry containernetworking-plugins \
    iproute2 util-linux >/dev/null

new_enough() { dpkg --compare-versions "$1" ge 1.7.7; }
installed=$(dpkg-query -W -f '${Version}' containerd 2>/dev/null || true)
if [ -n "$installed" ] && new_enough "$installed"; then
  echo "containerd $installed already installed"; exit 0
fi
candidate=$(apt-cache policy containerd | sed -n 's/^ *Candidate: //p')
if [ -n "$candidate" ] && [ "$candidate" != "(none)" ] && new_enough "$candidate"; then
  apt-get install -y --no-install-recommends containerd >/dev/null
  echo "containerd $candidate installed"; exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
  >"$tmp/sources.list"
trixie=(-o "Dir::Etc::SourceList=$tmp/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache" -o APT::Sandbox::User=root)
apt-get "${trixie[@]}" update >/dev/null
(cd "$tmp" && apt-get "${trixie[@]}" download containerd >/dev/null)
apt-get install -y --no-install-recommends "$tmp"/containerd_*.deb >/dev/null
echo "containerd $(dpkg-query -W -f '${Version}' containerd) installed (Debian 13's package)"
