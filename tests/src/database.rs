//! What the database tests (`postgres.rs`, `mysql.rs`) share: serving a test
//! app whose components reach a database on a port given as a Spin variable,
//! and reading the line-per-step reports its routes answer.

use crate::{Server, artifact, built_app, get, workspace_root};
use std::path::Path;
use std::process::Command;

/// Whether the tests run as root (database servers refuse or need a flag).
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.starts_with(b"0\n"))
}

/// `spinbench serve` of the test app `app` (its components `wasm` built by
/// `make build`), with the database's `port` as the variable `port_variable`
/// (`SPIN_VARIABLE_<NAME>`) and `state` as its state directory.
pub fn serve_app(app: &str, wasm: &[&str], port_variable: &str, port: u16, state: &Path) -> Server {
    for wasm in wasm {
        built_app(app, wasm);
    }
    let dir = workspace_root().join(app);
    let cache = workspace_root().join("target/e2e-cache");
    let args = [
        "serve",
        "-f",
        dir.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
        "--state-dir",
        state.to_str().unwrap(),
    ];
    let label = Path::new(app).file_name().unwrap().to_str().unwrap();
    let port = port.to_string();
    Server::start_configured(
        label,
        &artifact("release/spinbench"),
        &args,
        |command, addr| {
            command
                .arg("--listen")
                .arg(addr.to_string())
                .env(port_variable, &port);
        },
    )
}

/// The report `path` answers, its lines (a `200` without a failed step).
pub fn report(server: &Server, path: &str) -> Vec<String> {
    let answer = get(&server.url(path));
    assert_eq!(answer.status, 200, "{path}: {}", answer.text());
    let text = answer.text();
    assert!(!text.contains("failed:"), "{path}:\n{text}");
    text.lines().map(str::to_string).collect()
}

/// The line of `report` that starts with `step:`.
pub fn step<'a>(report: &'a [String], step: &str) -> &'a str {
    report
        .iter()
        .find(|line| line.starts_with(&format!("{step}:")))
        .unwrap_or_else(|| panic!("no {step:?} in {report:#?}"))
}

/// Fails unless `line` holds every one of `parts`.
pub fn assert_has(line: &str, parts: &[&str]) {
    for part in parts {
        assert!(line.contains(part), "{part:?} not in {line}");
    }
}
