//! The function set under the real hosts, when they are installed: `spin up` over
//! spin.toml, and `wasmtime serve -Scli` on each component. Each must answer the
//! contract (`e2e::contract`) as the `<name>-native` binaries do. A host that is
//! not on `PATH` is skipped with a line saying so, and the test passes: CI has
//! neither; run it where they are to repeat the compatibility the README states.
//!
//! The components must be built first (`make build`, or `spin build`).

use e2e::contract::{Case, cases};
use e2e::{Answer, GroupServer, Server, artifact, functions, on_path, workspace_root};
use std::io::Write;
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
        let addr = Server::free_addr();
        let mut command = Command::new(&wasmtime);
        // Rust components import wasi:cli (stderr, environment), hence -Scli.
        command
            .args(["serve", "-Scli", "--addr", &addr.to_string()])
            .arg(&wasm);
        let server = Server::start_command(&format!("wasmtime-{f}"), command, addr);
        let base = format!("http://{addr}");
        // One component per process: other paths reach it too, so only its route's
        // cases say anything about it.
        for case in cases.iter().filter(|c| c.function == f && c.on_own_route()) {
            meets_contract(&version, case, &base, &natives);
        }
        drop(server);
    }
    reported(&version);
}

/// The `<name>-native` binaries, the reference every host's answers are held to.
struct Natives(Vec<(&'static str, Server)>);

impl Natives {
    fn start() -> Natives {
        Natives(
            functions()
                .iter()
                .map(|f| (*f, Server::native(f)))
                .collect(),
        )
    }

    fn answer(&self, case: &Case) -> Answer {
        let (_, server) = self
            .0
            .iter()
            .find(|(f, _)| *f == case.function)
            .expect("a native binary per function");
        case.send_to(&format!("http://{}", server.addr))
    }
}

/// Sends `case` to the host at `base` and holds its answer to the contract: the
/// expected status; on the function's own route the native binary's exact answer,
/// and a refusal carries a JSON error. Off its route only the status counts: the
/// `404` is the host router's own.
fn meets_contract(host: &str, case: &Case, base: &str, natives: &Natives) {
    let from_host = case.send_to(base);
    let what = case.describe();
    assert_eq!(
        from_host.status,
        case.expect,
        "{host}: {what}: {}",
        from_host.text()
    );
    if !case.on_own_route() {
        return;
    }
    assert_eq!(from_host, natives.answer(case), "{host} vs native: {what}");
    if from_host.status >= 400 {
        assert_eq!(from_host.content_type, "application/json", "{host}: {what}");
        let error = from_host.json()["error"].clone();
        assert!(
            error.as_str().is_some_and(|e| !e.is_empty()),
            "{host}: {what}: {error}"
        );
    }
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
