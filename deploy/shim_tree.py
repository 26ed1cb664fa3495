#!/usr/bin/env python3
"""What the Spin shim's processes of one containerd use: every process whose command line
names that containerd's socket (`-address SOCKET`: the shim), with all its descendants
(the container's processes). Prints one JSON object: pids, RSS and PSS summed (KiB), and
user + system CPU seconds summed over the live processes.

Usage: shim_tree.py SOCKET
"""

import json
import os
import sys


def read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    needle = f"-address {sys.argv[1]}"
    parent, cmdline = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        stat = read(f"/proc/{name}/stat")
        if not stat:
            continue
        # Fields after the command name, which may hold spaces: state, ppid, ...
        fields = stat[stat.rindex(")") + 2:].split()
        parent[int(name)] = int(fields[1])
        cmdline[int(name)] = read(f"/proc/{name}/cmdline").replace("\0", " ")
    tree = {pid for pid, cmd in cmdline.items() if needle in cmd and pid != os.getpid()}
    grew = True
    while grew:
        more = {pid for pid, ppid in parent.items() if ppid in tree} - tree
        tree |= more
        grew = bool(more)
    ticks = os.sysconf("SC_CLK_TCK")
    rss = pss = cpu = 0.0
    for pid in tree:
        for line in read(f"/proc/{pid}/smaps_rollup").splitlines():
            key, _, rest = line.partition(":")
            if key in ("Rss", "Pss"):
                kib = float(rest.split()[0])
                rss, pss = (rss + kib, pss) if key == "Rss" else (rss, pss + kib)
        stat = read(f"/proc/{pid}/stat")
        if stat:
            fields = stat[stat.rindex(")") + 2:].split()
            cpu += (int(fields[11]) + int(fields[12])) / ticks   # utime, stime
    print(json.dumps({"pids": sorted(tree), "rss_kib": rss, "pss_kib": pss, "cpu_s": cpu}))


if __name__ == "__main__":
    main()
