#!/usr/bin/env python3
"""The registry path's figures (issue 30), measured on this machine, not in a test.

Starts Debian's `docker-registry` on a free loopback port with its own storage
(no auth), then, with the function set built (`make build`):

1. push: `spinbench registry push --insecure` of spin.toml, each run to a new
   repository (every layer uploaded again);
2. pull: `spinbench registry pull --insecure` into an empty cache, each run;
3. start: process start to the first `200` from `GET /hello`, alternating
   `serve -f spin.toml` and `serve -f <reference>` (then `serve -f
   <reference>@<digest>`, which asks the registry nothing), each with a warm
   compiled-code cache and, for the references, a warm store.

Prints the median and spread of each over --runs runs.

Usage:  scripts/registry_figures.py [--runs N] [--spinbench PATH]
"""

import argparse
import http.client
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(port, path, timeout=0.2):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request("GET", path)
        status = c.getresponse().status
        c.close()
        return status
    except OSError:
        return None


def start_registry(work):
    port = free_port()
    config = work / "registry.yml"
    config.write_text(
        "version: 0.1\n"
        "log: { level: error }\n"
        f"storage: {{ filesystem: {{ rootdirectory: {work / 'data'} }} }}\n"
        f"http: {{ addr: 127.0.0.1:{port} }}\n"
    )
    log = open(work / "registry.log", "w")
    process = subprocess.Popen(["docker-registry", "serve", str(config)], stdout=log, stderr=log)
    for _ in range(200):
        if answers(port, "/v2/") == 200:
            return process, f"127.0.0.1:{port}"
        time.sleep(0.05)
    process.kill()
    sys.exit("docker-registry did not start")


def timed(command):
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def start_to_first_200(command):
    """Seconds from spawning `command` (which gets --listen) to its first 200 on /hello."""
    port = free_port()
    start = time.perf_counter()
    process = subprocess.Popen(
        command + ["--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while time.perf_counter() - start < 60:
            if answers(port, "/hello") == 200:
                return time.perf_counter() - start
            if process.poll() is not None:
                sys.exit(f"{command} exited with {process.returncode}")
            time.sleep(0.0005)
        sys.exit(f"{command} did not answer within 60 s")
    finally:
        process.terminate()
        process.wait()


def summary(name, seconds):
    ms = sorted(s * 1000 for s in seconds)
    print(
        f"{name}: median {statistics.median(ms):.1f} ms "
        f"(min {ms[0]:.1f}, max {ms[-1]:.1f}; {len(ms)} runs)"
    )
    return statistics.median(ms)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--spinbench", default=str(ROOT / "target/release/spinbench"))
    args = parser.parse_args()
    if not shutil.which("docker-registry"):
        print("skipped: docker-registry not on PATH")
        return
    spinbench = args.spinbench
    work = Path(tempfile.mkdtemp(prefix="spinbench-registry-figures-"))
    registry, host = start_registry(work)
    try:
        manifest = str(ROOT / "spin.toml")
        pushes = [
            timed([spinbench, "registry", "push", "--insecure", "-f", manifest, f"{host}/push{i}:0.1.0"])
            for i in range(args.runs)
        ]
        summary("push of the function set", pushes)
        reference = f"{host}/push0:0.1.0"
        pulls = []
        for i in range(args.runs):
            cache = work / f"pull-cache-{i}"
            pulls.append(timed([spinbench, "registry", "pull", "--insecure", "--cache-dir", str(cache), reference]))
            shutil.rmtree(cache)
        summary("pull into an empty cache", pulls)

        cache = str(work / "cache")
        pulled = subprocess.run(
            [spinbench, "registry", "pull", "--insecure", "--cache-dir", cache, reference],
            check=True,
            capture_output=True,
            text=True,
        )
        digest = pulled.stderr.split(": ")[1].split()[0]
        local = [spinbench, "serve", "-f", manifest, "--cache-dir", cache]
        by_tag = [spinbench, "serve", "-f", reference, "--insecure", "--cache-dir", cache]
        by_digest = [spinbench, "serve", "-f", f"{host}/push0@{digest}", "--insecure", "--cache-dir", cache]
        for command in (local, by_tag, by_digest):
            start_to_first_200(command)  # warms the compiled-code cache and the page cache
        starts = {"local": [], "tag": [], "digest": []}
        for _ in range(args.runs):
            starts["local"].append(start_to_first_200(local))
            starts["tag"].append(start_to_first_200(by_tag))
            starts["digest"].append(start_to_first_200(by_digest))
        base = summary("serve -f spin.toml, start to first 200", starts["local"])
        tag = summary("serve -f <reference> (a tag, warm cache), start to first 200", starts["tag"])
        pinned = summary("serve -f <reference>@<digest> (warm cache), start to first 200", starts["digest"])
        print(f"ratio tag/local {tag / base:.2f}, digest/local {pinned / base:.2f}")
    finally:
        registry.terminate()
        registry.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
