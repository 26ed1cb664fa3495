#!/usr/bin/env python3
"""The node's figures (deploy/local-node.sh runs this): the same `hello` as a wasm
container under a containerd shim and as a native container under runc, started by one
containerd on this machine, each measured the same way:

- `ctr run` to the first `200` of GET /hello, image already pulled: RUNS rounds, each one
  start of every runtime in turn (a new container, killed and deleted before the next);
  the first start of an image on the node is reported apart (a shim compiles or
  precompiles there), the median of the rest;
- PSS per running container: RUNNING containers at once, each warmed, summed once idle
  and divided by their number (pages they share are shared, as on a node running many):
  their tasks' processes, and with their shims' (runwasi's shim and its zygote; runc's
  `containerd-shim-runc-v2`), from smaps_rollup;
- server CPU per request: the first container's cgroup CPU time over REQUESTS requests
  to /hello (oha, 10 connections, bounded in count and time) divided by the answered
  ones, and its shim's own CPU over the same load;
- SIGTERM to exit, and what the container left once deleted (processes, mounts, cgroups).

Writes node.json and node.md to OUT. Usage:
  node_bench.py --address SOCK --namespace NS --work DIR --out DIR --wasm ARTIFACT
                --wasm-files IMAGE --native IMAGE [--spin-shim] [--runs N] [--requests N]
                [--running N]
Standard library only, plus `ctr` and `oha` on PATH; as root.
"""

import argparse
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

CGROUP_MOUNT = "type=cgroup,src=cgroup,dst=/sys/fs/cgroup,options=ro:nosuid:noexec:nodev"


def runtimes(args):
    """What is compared: one row per runtime, each how `ctr run` starts its container."""
    wasm = ["--platform", "wasi/wasm", "--mount", CGROUP_MOUNT]
    table = [
        {"name": "spinbench", "label": "wasm (Spin's OCI artifact), io.containerd.spinbench.v1",
         "runtime": "io.containerd.spinbench.v1", "image": args.wasm, "flags": wasm,
         "command": lambda addr: ["/"], "env": lambda addr: [f"SPIN_HTTP_LISTEN_ADDR={addr}"]},
        {"name": "spinbench-files", "label": "wasm (image with files: compiled at every start), "
         "io.containerd.spinbench.v1",
         "runtime": "io.containerd.spinbench.v1", "image": args.wasm_files, "flags": wasm,
         "command": lambda addr: ["/"], "env": lambda addr: [f"SPIN_HTTP_LISTEN_ADDR={addr}"]},
        {"name": "spin", "label": "wasm, io.containerd.spin.v2 (SpinKube's shim)",
         "runtime": "io.containerd.spin.v2", "image": args.wasm, "flags": wasm,
         "command": lambda addr: ["/"], "env": lambda addr: [f"SPIN_HTTP_LISTEN_ADDR={addr}"],
         "skipped": None if args.spin_shim else
         "`containerd-shim-spin-v2` not on PATH (deploy/README.md says how to get it)"},
        {"name": "native", "label": "native hello-native (static), io.containerd.runc.v2",
         "runtime": "io.containerd.runc.v2", "image": args.native,
         "flags": ["--runc-root", str(pathlib.Path(args.work) / "runc")],
         "command": lambda addr: ["/hello-native", "--listen", addr], "env": lambda addr: []},
    ]
    return table


def free_addr() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"127.0.0.1:{port}"


class Node:
    def __init__(self, args):
        self.base = ["ctr", "--address", args.address, "--namespace", args.namespace]
        self.namespace = args.namespace
        self.work = pathlib.Path(args.work)

    def ctr(self, *argv, check=True) -> str:
        out = subprocess.run(self.base + list(argv), capture_output=True, text=True)
        if check and out.returncode != 0:
            sys.exit(f"ctr {' '.join(argv)}: {out.stderr.strip()}")
        return out.stdout

    def start(self, row, cid: str, addr: str):
        """`ctr run` in the foreground (its output is the container's), in the background."""
        argv = self.base + ["run", "--fifo-dir", str(self.work / "fifo"), "--net-host",
                            "--runtime", row["runtime"], *row["flags"]]
        for pair in row["env"](addr):
            argv += ["--env", pair]
        argv += [row["image"], cid, *row["command"](addr)]
        log = open(self.work / f"{cid}.log", "wb")
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def task_pid(self, cid: str):
        for line in self.ctr("task", "ls").splitlines()[1:]:
            fields = line.split()
            if fields and fields[0] == cid:
                return int(fields[1])
        return None

    def stop(self, cid: str, run, signal="SIGTERM") -> float:
        """Kills the task, waits for `ctr run` to return, deletes the container; the
        milliseconds from the signal to the exit."""
        start = time.monotonic()
        self.ctr("task", "kill", "--signal", signal, cid, check=False)
        try:
            run.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.ctr("task", "kill", "--signal", "SIGKILL", cid, check=False)
            run.wait()
        elapsed = (time.monotonic() - start) * 1e3
        self.ctr("task", "delete", cid, check=False)
        self.ctr("container", "delete", cid, check=False)
        return elapsed

    def leftovers(self, cid: str) -> list:
        left = []
        if cid in self.ctr("container", "ls", "-q").split():
            left.append(f"container {cid}")
        for pid, argv in processes().items():
            if pair_in(argv, "-id", cid) and pair_in(argv, "-namespace", self.namespace):
                left.append(f"process {pid}")
        with open("/proc/self/mountinfo") as f:
            left += [f"mount {l.split()[4]}" for l in f if f"/{self.namespace}/{cid}" in l.split()[4]]
        for hierarchy in pathlib.Path("/sys/fs/cgroup").iterdir():
            if (hierarchy / self.namespace / cid).exists():
                left.append(f"cgroup {hierarchy / self.namespace / cid}")
        return left


def first_200(url: str, run, limit_s: float) -> float:
    """Polls until a 200 (or the run ends or time is up); when it came, in seconds."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if run.poll() is not None:
            return None
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return time.monotonic()
        except OSError:
            pass
        time.sleep(0.002)
    return None


def read(path) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def processes() -> dict:
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            argv = read(f"/proc/{name}/cmdline").split("\0")
            out[int(name)] = [a for a in argv if a]
    return out


def pair_in(argv, flag, value) -> bool:
    return any(a == flag and b == value for a, b in zip(argv, argv[1:]))


def descendants(roots: set) -> set:
    parent = {}
    for name in os.listdir("/proc"):
        stat = read(f"/proc/{name}/stat") if name.isdigit() else ""
        if stat:
            parent[int(name)] = int(stat[stat.rindex(")") + 2:].split()[1])
    tree, grew = set(roots), True
    while grew:
        more = {p for p, pp in parent.items() if pp in tree} - tree
        tree |= more
        grew = bool(more)
    return tree


def pss_kib(pids) -> float:
    total = 0.0
    for pid in pids:
        for line in read(f"/proc/{pid}/smaps_rollup").splitlines():
            if line.startswith("Pss:"):
                total += float(line.split()[1])
    return total


def cpu_s(pids) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        stat = read(f"/proc/{pid}/stat")
        if stat:
            fields = stat[stat.rindex(")") + 2:].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def cgroup_cpu_s(pid: int) -> float:
    """CPU time of the cgroup `pid` is in: cpuacct.usage (v1) or cpu.stat (v2)."""
    for line in read(f"/proc/{pid}/cgroup").splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(","):
            ns = read(f"/sys/fs/cgroup/{controllers}{path}/cpuacct.usage").strip()
            if not ns:
                ns = read(f"/sys/fs/cgroup/cpuacct{path}/cpuacct.usage").strip()
            return int(ns) / 1e9
        if controllers == "":
            for stat in read(f"/sys/fs/cgroup{path}/cpu.stat").splitlines():
                if stat.startswith("usage_usec"):
                    return int(stat.split()[1]) / 1e6
    sys.exit(f"no CPU accounting found for the cgroup of {pid}")


def settle(pid: int) -> None:
    """Waits (30 s at most) until the container is idle: under 2 ms of CPU in 500 ms, so
    that what it does in the background after its start (spinbench's host prepares its
    full pool after the first requests) is not counted against requests."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        before = cgroup_cpu_s(pid)
        time.sleep(0.5)
        if cgroup_cpu_s(pid) - before < 0.002:
            return


def cgroup_memory_kib(pid: int) -> float:
    """Memory charged to the cgroup `pid` is in (what a memory limit holds it to):
    memory.usage_in_bytes (v1) or memory.current (v2)."""
    for line in read(f"/proc/{pid}/cgroup").splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return int(read(f"/sys/fs/cgroup/memory{path}/memory.usage_in_bytes")) / 1024
        if controllers == "":
            return int(read(f"/sys/fs/cgroup{path}/memory.current")) / 1024
    sys.exit(f"no memory accounting found for the cgroup of {pid}")


def shim_pids(node: Node, cid: str) -> set:
    return {pid for pid, argv in processes().items()
            if pair_in(argv, "-id", cid) and pair_in(argv, "-namespace", node.namespace)}


def load(url: str, requests: int) -> dict:
    # Bounded in count, each request in time, and the whole run in time.
    out = subprocess.run(["oha", "-n", str(requests), "-c", "10", "-t", "10s", "--no-tui",
                          "--output-format", "json", url], capture_output=True, text=True,
                         timeout=300)
    if out.returncode != 0:
        sys.exit(f"oha: {out.stderr.strip()}")
    report = json.loads(out.stdout)
    codes = report.get("statusCodeDistribution", {})
    return {"ok": int(codes.get("200", 0)), "other": sum(int(v) for k, v in codes.items() if k != "200")}


def start_serving(node: Node, row, cid: str):
    """Starts container `cid`; its `ctr run`, address and milliseconds to the first 200."""
    addr = free_addr()
    t0 = time.monotonic()
    run = node.start(row, cid, addr)
    t1 = first_200(f"http://{addr}/hello", run, 180)
    if t1 is None:
        node.stop(cid, run, "SIGKILL")
        log = read(node.work / f"{cid}.log")
        sys.exit(f"{row['name']}: no 200 from /hello after `ctr run`:\n{log[-3000:]}")
    return run, addr, (t1 - t0) * 1e3


def start_rounds(node: Node, rows, runs: int) -> dict:
    """`runs` rounds, each one start of every runtime in turn (so that a change in the
    machine's load falls on all of them alike): each runtime's milliseconds, and what
    its containers left behind."""
    starts = {row["name"]: ([], []) for row in rows}
    for i in range(runs):
        for row in rows:
            cid = f"{row['name']}-start-{i}"
            run, _, ms = start_serving(node, row, cid)
            node.stop(cid, run, "SIGKILL")
            starts[row["name"]][0].append(ms)
            starts[row["name"]][1].extend(node.leftovers(cid))
    return starts


def measure(node: Node, row, starts, requests: int, running: int) -> dict:
    starts, left = starts
    # `running` containers at once, each warmed, then all settled: PSS per container;
    # the first one loaded: CPU per request.
    containers = []
    for i in range(running):
        cid = f"{row['name']}-{i}"
        run, addr, _ = start_serving(node, row, cid)
        load(f"http://{addr}/hello", 1000)
        containers.append((cid, run, addr, node.task_pid(cid)))
    for _, _, _, pid in containers:
        settle(pid)
    trees = [descendants({pid}) for _, _, _, pid in containers]
    shims = [shim_pids(node, cid) - tree for (cid, _, _, _), tree in zip(containers, trees)]
    pss_containers = pss_kib(set().union(*trees))
    pss_all = pss_kib(set().union(*trees, *shims))
    charged = sum(cgroup_memory_kib(pid) for _, _, _, pid in containers)
    cid, run, addr, pid = containers[0]
    cpu0, shim0 = cgroup_cpu_s(pid), cpu_s(shims[0])
    answered = load(f"http://{addr}/hello", requests)
    cpu1, shim1 = cgroup_cpu_s(pid), cpu_s(shims[0])
    stop_ms = [node.stop(cid, run) for cid, run, _, _ in containers]
    for cid, _, _, _ in containers:
        left += node.leftovers(cid)
    first, rest = starts[0], starts[1:] or starts
    return {
        "label": row["label"],
        "start_ms": [round(s, 1) for s in starts],
        "first_start_ms": round(first, 1),
        "start_median_ms": round(statistics.median(rest), 1),
        "running": running,
        "pss_kib": round(pss_containers / running),
        "pss_with_shim_kib": round(pss_all / running),
        "cgroup_memory_kib": round(charged / running),
        "processes": len(trees[0]), "shim_processes": len(shims[0]),
        "cpu_us_per_request": round((cpu1 - cpu0) / max(answered["ok"], 1) * 1e6, 2),
        "shim_cpu_us_per_request": round((shim1 - shim0) / max(answered["ok"], 1) * 1e6, 2),
        "requests": answered["ok"], "errors": answered["other"],
        "sigterm_to_exit_ms": round(statistics.median(stop_ms), 1),
        "left_behind": left,
    }


ROWS = [
    ("`ctr run` to the first `200`, first start of the image (ms)", "first_start_ms"),
    ("`ctr run` to the first `200`, median of the later starts (ms)", "start_median_ms"),
    ("PSS per running container (KiB)", "pss_kib"),
    ("PSS per running container with its shim's processes (KiB)", "pss_with_shim_kib"),
    ("memory charged to the container's cgroup, per container (KiB)", "cgroup_memory_kib"),
    ("server CPU per request, the container's cgroup (µs)", "cpu_us_per_request"),
    ("its shim's CPU per request (µs)", "shim_cpu_us_per_request"),
    ("SIGTERM to exit, median (ms)", "sigterm_to_exit_ms"),
]


def markdown(results: dict, runs: int, requests: int, running: int) -> str:
    names = list(results)
    head = "| figure | " + " | ".join(names) + " | spinbench/native |"
    lines = ["# hello on one node: wasm and native containers (deploy/local-node.sh)", "",
             head, "|---|" + "---:|" * (len(names) + 1)]
    for title, key in ROWS:
        cells = []
        for name in names:
            r = results[name]
            cells.append("skipped" if "skipped" in r else f"{r[key]:,}")
        wasm, native = results.get("spinbench", {}), results.get("native", {})
        ratio = (f"{wasm[key] / native[key]:.2f}×" if key in wasm and key in native
                 and native[key] else "")
        lines.append(f"| {title} | " + " | ".join(cells) + f" | {ratio} |")
    lines += ["", f"{runs} rounds of starts, each round one start of every runtime in turn, each a new",
              "container (image pulled) killed and deleted before the next; then, per runtime,",
              f"{running} containers running at once, each warmed with 1,000",
              "requests, their PSS summed over them once idle and divided by their number (what one",
              "more container costs a node, shared pages shared), and the first one loaded with",
              f"{requests:,} requests (oha, 10 connections) for its CPU.", ""]
    for name, r in results.items():
        lines.append(f"- **{name}**: {r.get('label', '')}: "
                     + (f"skipped: {r['skipped']}" if "skipped" in r else
                        f"starts {r['start_ms']} ms; {r['processes']} container and "
                        f"{r['shim_processes']} shim processes; {r['requests']:,} answered, "
                        f"{r['errors']} errors; left behind: {r['left_behind'] or 'nothing'}"))
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag in ("--address", "--namespace", "--work", "--out", "--wasm", "--wasm-files",
                 "--native"):
        p.add_argument(flag, required=True)
    p.add_argument("--spin-shim", action="store_true")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--requests", type=int, default=20000)
    p.add_argument("--running", type=int, default=4)
    args = p.parse_args()
    node = Node(args)
    results = {}
    rows = [row for row in runtimes(args) if not row.get("skipped")]
    print(f"starting {', '.join(r['name'] for r in rows)} in turn, {args.runs} rounds", flush=True)
    starts = start_rounds(node, rows, args.runs)
    for row in runtimes(args):
        if row.get("skipped"):
            results[row["name"]] = {"label": row["label"], "skipped": row["skipped"]}
            continue
        print(f"measuring {row['name']} running ({args.running} containers, "
              f"{args.requests} requests)", flush=True)
        results[row["name"]] = measure(node, row, starts[row["name"]], args.requests,
                                       args.running)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "node.json").write_text(json.dumps(results, indent=2) + "\n")
    md = markdown(results, args.runs, args.requests, args.running)
    (out / "node.md").write_text(md)
    print(md)
    if any(r.get("left_behind") for r in results.values()):
        sys.exit("containers left something behind (node.json, left_behind)")


if __name__ == "__main__":
    main()
