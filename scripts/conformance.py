#!/usr/bin/env python3
"""Runs Spin's conformance suite against `spinbench serve`.

The suite (github.com/fermyon/conformance-tests, now spinframework/conformance-tests)
is what Spin's own CI runs against every Spin build: per test, a `spin.toml` template
and a `test.json5` of requests and expected responses. Given a checkout of it, this
script does what the suite's own runner does, with spinbench in Spin's place:

1. builds each component of `components/` as the suite builds them
   (`cargo build --release --target=wasm32-unknown-unknown`);
2. per test: starts the services its preconditions name on 127.0.0.1 (an HTTP and a
   TCP echo here; redis-server, mosquitto and PostgreSQL from Debian's packages when
   installed, else the test is skipped, saying so), fills the manifest's
   `%{source=...}` and `%{port=...}` templates, and starts `spinbench serve -f` on it;
3. replays the invocations and judges each response by the suite's rule: status, then
   body, then exactly the listed headers (optional ones may be absent; any other
   header fails).

Usage:  scripts/conformance.py CHECKOUT [--spinbench PATH] [--only NAME ...]
Without a checkout it says so and exits 0 (CI has no network, so no checkout).
Exit status: 0 when every test that ran passed, 1 otherwise.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOOLCHAIN = "1.95.0"  # rust-toolchain.toml's; the suite pins none for its components
TEMPLATE = re.compile(r"%\{(.*?)\}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", nargs="?", type=Path, help="a checkout of the suite")
    parser.add_argument("--spinbench", type=Path, default=REPO / "target/release/spinbench")
    parser.add_argument("--only", nargs="*", default=[], help="run only these tests")
    args = parser.parse_args()
    if args.checkout is None or not (args.checkout / "tests").is_dir():
        print("skipped: no checkout of Spin's conformance suite given "
              "(git clone https://github.com/fermyon/conformance-tests, then pass its path)")
        return 0
    if not args.spinbench.exists():
        print(f"error: {args.spinbench} is missing: run `make build` first")
        return 1
    components = build_components(args.checkout)
    results = []
    for test in sorted(p for p in (args.checkout / "tests").iterdir() if p.is_dir()):
        if args.only and test.name not in args.only:
            continue
        outcome, detail = run_test(test, components, args.spinbench)
        results.append((test.name, outcome, detail))
        line = f"{outcome:4} {test.name}"
        print(line + (f": {detail}" if detail else ""), flush=True)
    passed = sum(1 for _, o, _ in results if o == "PASS")
    failed = sum(1 for _, o, _ in results if o == "FAIL")
    skipped = sum(1 for _, o, _ in results if o == "SKIP")
    print(f"\n{passed} passed, {failed} failed, {skipped} skipped (of {len(results)})")
    return 1 if failed else 0


def build_components(checkout):
    """Each component's .wasm, built as the suite's `package_into` builds it."""
    subprocess.run(["rustup", "target", "add", "wasm32-unknown-unknown",
                    "--toolchain", TOOLCHAIN], check=True, capture_output=True)
    target = checkout / "target"
    env = dict(os.environ, RUSTUP_TOOLCHAIN=TOOLCHAIN, CARGO_TARGET_DIR=str(target))
    built = {}
    for component in sorted(p for p in (checkout / "components").iterdir() if p.is_dir()):
        print(f"building component {component.name} ...", flush=True)
        subprocess.run(["cargo", "build", "--release", "--target=wasm32-unknown-unknown"],
                       cwd=component, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        package = component_package(component)
        wasm = target / "wasm32-unknown-unknown/release" / (package.replace("-", "_") + ".wasm")
        if not wasm.exists():
            raise SystemExit(f"error: {component.name}: no {wasm} after its build")
        built[component.name] = wasm
    return built


def component_package(component):
    text = (component / "Cargo.toml").read_text()
    match = re.search(r'^name\s*=\s*"([^"]+)"', text, re.MULTILINE)
    return match.group(1) if match else component.name


def run_test(test, components, spinbench):
    config = parse_json5((test / "test.json5").read_text())
    with tempfile.TemporaryDirectory(prefix=f"conformance-{test.name}-") as scratch:
        scratch = Path(scratch)
        services = Services()
        try:
            for precondition in config.get("preconditions", []):
                missing = services.start(precondition["kind"], test)
                if missing:
                    return "SKIP", missing
            manifest = fill(TEMPLATE, (test / "spin.toml").read_text(),
                            lambda key, value: template_value(key, value, components,
                                                              scratch, services))
            (scratch / "spin.toml").write_text(manifest)
            for extra in test.iterdir():
                if extra.name not in ("spin.toml", "test.json5"):
                    shutil.copy(extra, scratch / extra.name)
            with Spinbench(spinbench, scratch) as server:
                for number, invocation in enumerate(config["invocations"], 1):
                    failure = judge(invocation, server.port, services)
                    if failure:
                        return "FAIL", f"invocation {number}: {failure}\n{server.log()}"
            return "PASS", ""
        except Exception as error:  # a test that cannot run is a failure, said why
            return "FAIL", f"{type(error).__name__}: {error}"
        finally:
            services.stop()


def template_value(key, value, components, scratch, services):
    if key == "source":
        wasm = components[value]
        shutil.copy(wasm, scratch / wasm.name)
        return wasm.name
    if key == "port":
        return str(services.port(int(value)))
    raise ValueError(f"unknown template key {key!r}")


def fill(pattern, text, replace):
    def one(match):
        key, _, value = match.group(1).partition("=")
        return replace(key.strip(), value.strip())
    return pattern.sub(one, text)


def judge(invocation, port, services):
    """The suite's rule: status, then body, then exactly the listed headers."""
    request = invocation["request"]
    expected = invocation["response"]
    headers = [(h["name"], fill(TEMPLATE, h["value"],
                                lambda k, v: str(services.port(int(v))) if k == "port" else None))
               for h in request.get("headers", [])]
    status, body, actual = send(port, request.get("method", "GET"), request["path"], headers,
                                request.get("body"))
    want_status = expected.get("status", 200)
    if status != want_status:
        return f"status {status} != {want_status}; body: {body!r}"
    want_body = expected.get("body") or ""
    if body != want_body:
        return f"body {body!r} != {want_body!r}"
    actual = {name.lower(): value.lower() for name, value in actual}
    for header in expected.get("headers", []):
        name = header["name"].lower()
        value = actual.pop(name, None)
        if value is None:
            if header.get("optional"):
                continue
            return f"header {header['name']!r} missing"
        if header.get("value") is not None and value != header["value"].lower():
            return f"header {header['name']!r} is {value!r}, not {header['value'].lower()!r}"
    if actual:
        return f"unexpected headers: {actual}"
    return None


def send(port, method, path, headers, body):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    names = {name.lower() for name, _ in headers}
    if "host" not in names:
        connection.putheader("Host", f"127.0.0.1:{port}")
    for name, value in headers:
        connection.putheader(name, value)
    payload = body.encode() if body is not None else None
    if payload is not None:
        connection.putheader("Content-Length", str(len(payload)))
    connection.endheaders(payload)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, data.decode("utf-8", "replace"), response.getheaders()


def parse_json5(text):
    """The JSON5 the suite's test files use: comments, unquoted keys, trailing commas."""
    try:
        import json5  # noqa: PLC0415 (optional: the suite's files also parse without it)
        return json5.loads(text)
    except ImportError:
        pass
    out, i, in_string = [], 0, False
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    text = "".join(out)
    text = re.sub(r'([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:', r'\1"\2":', text)
    text = re.sub(r",(\s*[}\]])", r"\1", text)
    return json.loads(text)


class Spinbench:
    """`spinbench serve -f <dir>` on a free loopback port, stopped on exit."""

    def __init__(self, spinbench, app):
        self.port = free_port()
        self.log_file = open(app / "spinbench.log", "w+")
        self.process = subprocess.Popen(
            [str(spinbench), "serve", "-f", str(app), "--listen", f"127.0.0.1:{self.port}",
             "--cache-dir", str(REPO / "target/conformance-cache")],
            stdout=self.log_file, stderr=subprocess.STDOUT, start_new_session=True)

    def __enter__(self):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"spinbench serve exited: {self.log()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"spinbench serve did not listen within 60 s: {self.log()}")

    def log(self):
        self.log_file.flush()
        self.log_file.seek(0)
        return self.log_file.read().strip()

    def __exit__(self, *_):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
        self.log_file.close()


class Services:
    """The precondition services of one test, each on a free loopback port."""

    def __init__(self):
        self.ports = {}   # guest port -> host port
        self.stops = []

    def port(self, guest):
        if guest not in self.ports:
            raise KeyError(f"no service exposes port {guest}")
        return self.ports[guest]

    def start(self, kind, test):
        """Starts `kind`; returns why the test is skipped, or None."""
        if kind in ("key-value-store", "sqlite"):
            return None  # the default store and database need no service
        if kind == "http-echo":
            server = ThreadingHTTPServer(("127.0.0.1", 0), EchoHandler)
            self._serve(server, 80)
            return None
        if kind == "tcp-echo":
            server = ThreadingTCPServer(("127.0.0.1", 0), TcpEchoHandler)
            self._serve(server, 7)
            return None
        starter = {"redis": self._redis, "mqtt": self._mosquitto, "postgres": self._postgres}
        if kind not in starter:
            return f"precondition {kind!r} is not one this script can provide"
        return starter[kind](test)

    def _serve(self, server, guest_port):
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.ports[guest_port] = server.server_address[1]
        self.stops.append(server.shutdown)

    def _process(self, command, guest_port, port, ready):
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        self.stops.append(lambda: (os.killpg(process.pid, signal.SIGTERM), process.wait(10)))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                if ready():
                    self.ports[guest_port] = port
                    return None
            except OSError:
                pass
            time.sleep(0.2)
        return f"{command[0]} did not start on 127.0.0.1:{port}"

    def _redis(self, _test):
        if not shutil.which("redis-server"):
            return "redis-server not installed (Debian: apt-get install redis-server)"
        port = free_port()
        return self._process(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no"], 6379, port, lambda: True)

    def _mosquitto(self, _test):
        if not shutil.which("mosquitto"):
            return "mosquitto not installed (Debian: apt-get install mosquitto)"
        port = free_port()
        config = Path(tempfile.mkdtemp(prefix="mosquitto-")) / "mosquitto.conf"
        config.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\n")
        return self._process(["mosquitto", "-c", str(config)], 1883, port, lambda: True)

    def _postgres(self, test):
        bin_dir = postgres_bin()
        if bin_dir is None:
            return "PostgreSQL not installed (Debian: apt-get install postgresql)"
        data = Path(tempfile.mkdtemp(prefix="pg-"))
        as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if as_postgres:
            shutil.chown(data, "postgres")
        password = data / "pw"
        password.write_text("postgres\n")
        if as_postgres:
            shutil.chown(password, "postgres")
        subprocess.run(as_postgres + [str(bin_dir / "initdb"), "-D", str(data / "db"),
                                      "-U", "postgres", "--pwfile", str(password),
                                      "--auth=md5"], check=True, capture_output=True)
        port = free_port()
        why = self._process(as_postgres + [str(bin_dir / "postgres"), "-D", str(data / "db"),
                                           "-p", str(port), "-h", "127.0.0.1", "-k", str(data)],
                            5432, port, lambda: True)
        if why:
            return why
        env = dict(os.environ, PGPASSWORD="postgres")
        psql_program = bin_dir / "psql" if (bin_dir / "psql").is_file() else shutil.which("psql")
        if psql_program is None:
            return "psql not installed (Debian: apt-get install postgresql-client)"
        psql = [str(psql_program), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
                "-v", "ON_ERROR_STOP=1", "-q"]
        subprocess.run(psql + ["-c", "CREATE DATABASE spin_dev"], env=env, check=True,
                       capture_output=True)
        init = test.parent.parent / "crates/test-environment/services/postgres-init"
        for script in sorted(init.glob("*.sql")) if init.is_dir() else []:
            subprocess.run(psql + ["-d", "spin_dev", "-f", str(script)], env=env, check=True,
                           capture_output=True)
        return None

    def stop(self):
        for stop in reversed(self.stops):
            try:
                stop()
            except Exception:  # a service already gone is stopped
                pass


class EchoHandler(BaseHTTPRequestHandler):
    """The suite's `http-echo` service: a POST's body back, `text/plain`."""

    def log_message(self, *_):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer(body)

    def do_GET(self):
        self._answer(b"Hello, world!")

    def _answer(self, body):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class ThreadingHTTPServer(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True


class TcpEchoHandler(socketserver.BaseRequestHandler):
    """The suite's `tcp-echo` service."""

    def handle(self):
        while data := self.request.recv(1024):
            self.request.sendall(data)


class ThreadingTCPServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def postgres_bin():
    """The directory of PostgreSQL's programs: `initdb` on PATH (following a
    symlink into Debian's versioned directory, where psql's server tools are),
    else the newest /usr/lib/postgresql/*/bin."""
    initdb = shutil.which("initdb")
    if initdb:
        bin_dir = Path(os.path.realpath(initdb)).parent
        if (bin_dir / "postgres").is_file():
            return bin_dir
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                      key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0) \
        if Path("/usr/lib/postgresql").is_dir() else []
    return versions[-1] if versions else None


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


if __name__ == "__main__":
    sys.exit(main())
