//! The function set under the real hosts, when they are installed: `spin up` over
//! spin.toml, and `wasmtime serve -Scli` on each component. Each must answer the
//! contract (`e2e::contract`) as the `<name>-native` binaries do. A host that is
//! not on `PATH` is skipped with a line saying so, and the test passes: CI has
//! neither; run it where they are to repeat the compatibility the README states.
//!
//! The components must be built first (`make build`, or `spin build`).

use e2e::contract::{Natives, cases, meets_contract};
use e2e::registry::Registry;
use e2e::{GroupServer, Scratch, Server, artifact, functions, on_path, workspace_root};
use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

#[test]
fn spin_up_answers_the_function_contract() {
    let Some(spin) = on_path("spin") else {
        return skipped("spin");
    };
    let version = version_of(&spin);
    for &f in functions() {
        artifact(&wasm_of(f));
    }
    let natives = Natives::start();
    let addr = Server::free_addr();
    let state = workspace_root().join(format!("target/e2e-logs/spin-state-{}", addr.port()));
    let mut command = Command::new(&spin);
    command
        .current_dir(workspace_root())
        .args(["up", "-f"])
        .arg(workspace_root().join("spin.toml"))
        .arg("--listen")
        .arg(addr.to_string())
        // Logs and state under target/, not in a `.spin/` beside spin.toml.
        .arg("--state-dir")
        .arg(&state)
        .process_group(0);
    let spin_up = GroupServer {
        server: Server::start_command("spin", command, addr),
    };
    let base = format!("http://{addr}");
    for case in cases() {
        meets_contract(&version, &case, &base, &natives);
    }
    let pgid = spin_up.pgid();
    drop(spin_up);
    assert!(
        !GroupServer::group_alive(pgid),
        "a process of `spin up`'s group outlived it"
    );
    reported(&version);
}

#[test]
fn wasmtime_serve_answers_each_components_contract() {
    let Some(wasmtime) = on_path("wasmtime") else {
        return skipped("wasmtime");
    };
    let version = version_of(&wasmtime);
    let natives = Natives::start();
    let cases = cases();
    for &f in functions() {
        let wasm = artifact(&wasm_of(f));
        let mut command = Command::new(&wasmtime);
        // Rust components import wasi:cli (stderr, environment), hence -Scli.
        // Port 0: it binds a free one and announces it.
        command
            .args(["serve", "-Scli", "--addr", "127.0.0.1:0"])
            .arg(&wasm);
        let server = Server::start_command(&format!("wasmtime-{f}"), command, any_port());
        let base = server.url("");
        // One component per process: other paths reach it too, so only its route's
        // cases say anything about it.
        for case in cases.iter().filter(|c| c.function == f && c.on_own_route()) {
            meets_contract(&version, case, &base, &natives);
        }
        drop(server);
    }
    reported(&version);
}

/// Spin's registry path both ways, against a real registry (`e2e::registry`):
/// what `spin registry push` writes, `spinbench serve -f <reference>` serves;
/// what `spinbench registry push` writes, `spin up -f <reference>` serves. Each
/// answers the function contract.
#[test]
fn spin_and_spinbench_serve_what_the_other_pushed() {
    let Some(spin) = on_path("spin") else {
        return skipped("spin");
    };
    let Some(registry) = Registry::shared() else {
        return;
    };
    let version = version_of(&spin);
    let scratch = Scratch::new("interop");
    let docker = registry.docker_config(&scratch.0);
    let credentials = |command: &mut Command| {
        command
            .env("DOCKER_CONFIG", &docker)
            .env("XDG_CONFIG_HOME", scratch.path("config"));
    };
    let natives = Natives::start();
    let manifest = workspace_root().join("spin.toml");

    let by_spin = registry.reference("interop:by-spin");
    let mut push = Command::new(&spin);
    push.args(["registry", "push", "--insecure", "-f"])
        .arg(&manifest)
        .arg(&by_spin);
    credentials(&mut push);
    let status = push.status().expect("spin registry push runs");
    assert!(status.success(), "{version}: spin registry push {by_spin}");
    let cache = scratch.path("cache");
    let served = Server::start_configured(
        "interop-spinbench",
        &artifact("release/spinbench"),
        &[
            "serve",
            "-f",
            &by_spin,
            "--insecure",
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
        |command, addr| {
            command.arg("--listen").arg(addr.to_string());
            credentials(command);
        },
    );
    for case in cases() {
        meets_contract(
            "spinbench serve of spin's push",
            &case,
            &format!("http://{}", served.addr),
            &natives,
        );
    }
    drop(served);

    let by_spinbench = registry.reference("interop:by-spinbench");
    let mut push = Command::new(artifact("release/spinbench"));
    push.args(["registry", "push", "--insecure", "-f"])
        .arg(&manifest)
        .arg(&by_spinbench);
    credentials(&mut push);
    assert!(
        push.status()
            .expect("spinbench registry push runs")
            .success()
    );
    let addr = Server::free_addr();
    let mut up = Command::new(&spin);
    up.current_dir(&scratch.0)
        .args([
            "up",
            "--insecure",
            "-f",
            &by_spinbench,
            "--listen",
            &addr.to_string(),
        ])
        .process_group(0);
    credentials(&mut up);
    let spin_up = GroupServer {
        server: Server::start_command("interop-spin", up, addr),
    };
    for case in cases() {
        meets_contract(
            &format!("{version} up of spinbench's push"),
            &case,
            &format!("http://{addr}"),
            &natives,
        );
    }
    drop(spin_up);
    say(&format!(
        "{version}: served spinbench's push, and spinbench served its push"
    ));
}

/// The component of `function` as spin.toml's `source` names it, relative to
/// `target/` (for [`artifact`]).
fn wasm_of(function: &str) -> String {
    let manifest = std::fs::read_to_string(workspace_root().join("spin.toml")).expect("spin.toml");
    let table = format!("[component.{function}]");
    manifest
        .lines()
        .skip_while(|line| line.trim() != table)
        .find_map(|line| line.trim().strip_prefix("source = "))
        .and_then(|source| source.trim_matches('"').strip_prefix("target/"))
        .unwrap_or_else(|| panic!("spin.toml: no source under target/ for {table}"))
        .to_string()
}

/// `<program> --version`'s first line, e.g. "spin 4.0.2 (…)".
fn version_of(program: &Path) -> String {
    let output = Command::new(program)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("{} --version: {e}", program.display()));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn skipped(program: &str) {
    say(&format!("skipped: {program} not on PATH"));
}

fn reported(version: &str) {
    say(&format!("{version}: answered the function contract"));
}

/// Writes past the test harness's output capture (which takes only `print!` and
/// `eprint!`), so that a skip or the host version shows in a plain `cargo test`.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "real_hosts: {line}");
}

/// `127.0.0.1:0`: a server given it binds a free port and announces it.
fn any_port() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}
