//! What Spin 4.0.2's `spin new http-rust` writes (tests/apps/spin4-template:
//! spin-sdk 6, a WASIp3 component on `wasi:http@0.3.0-rc-2026-03-15`, with a
//! `:name` route and a variable read through `spin:variables@3.0.0`) is served
//! as `spin up` serves it, and `compare -f` measures it without a benchmark
//! file of its own.

use e2e::report as support;

use e2e::{Server, artifact, get, workspace_root};
use std::path::{Path, PathBuf};

const APP: &str = "tests/apps/spin4-template";
const WASM: &str = "target/wasm32-wasip2/release/spin4_template.wasm";

fn built_app() -> PathBuf {
    e2e::built_app(APP, WASM)
}

fn serve(app: &Path, env: &[(&str, &str)]) -> Server {
    let cache = workspace_root().join("target/e2e-cache");
    let args = [
        "serve",
        "-f",
        app.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
    ];
    Server::start_configured(
        "spin4-template",
        &artifact("release/spinbench"),
        &args,
        |command, addr| {
            command.arg("--listen").arg(addr.to_string());
            for (key, value) in env {
                command.env(key, value);
            }
        },
    )
}

#[test]
fn the_spin_4_template_app_answers_with_its_route_match_and_variable() {
    let server = serve(&built_app(), &[]);
    let answer = get(&server.url("/hello/Ada"));
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(answer.content_type, "text/plain");
    assert_eq!(answer.text(), "Hello, Ada!");
    // A path the `:name` route does not match is Spin's empty 404.
    let none = get(&server.url("/hello/Ada/Lovelace"));
    assert_eq!((none.status, none.body.len()), (404, 0));
    // Its `println!` reaches the log, as under `spin up`: written by the host's
    // logger once the guest's output stream is read, which may be just after
    // the response went out, so the log is read until it shows (or 5 s pass).
    let printed =
        |log: &str| log.contains("guest[spin4-template") && log.contains("Handling request to");
    let waited = std::time::Instant::now();
    let mut log = server.log();
    while !printed(&log) && waited.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(20));
        log = server.log();
    }
    assert!(printed(&log), "{log}");
    assert!(
        log.contains("WASI 0.3.0-rc-2026-03-15 served as 0.3.0"),
        "{log}"
    );
}

#[test]
fn its_variable_is_overridden_from_the_environment() {
    let server = serve(&built_app(), &[("SPIN_VARIABLE_GREETING", "Howdy")]);
    assert_eq!(get(&server.url("/hello/Bo")).text(), "Howdy, Bo!");
}

/// A copy of the app (its manifest and its built component) in a fresh
/// directory, so that what `compare` writes beside it stays out of the tree.
fn app_copy() -> tempfile::TempDir {
    e2e::built_app_copy(APP, WASM)
}

#[test]
fn compare_measures_it_from_a_benchmark_file_derived_from_its_manifest() {
    let app = app_copy();
    let report = e2e::compare(
        &[
            "-f",
            app.path().to_str().unwrap(),
            "--quick",
            "--measurements",
            "process_cold_start,load",
        ],
        "spin4-template",
    );
    support::assert_valid_report(&report);
    assert_eq!(
        report["plan"]["functions"],
        serde_json::json!(["spin4-template"])
    );
    for (measurement, name) in [("process_cold_start", "first_200"), ("load", "throughput")] {
        support::assert_measured(&report, measurement, "wasm", name);
    }
    let derived = std::fs::read_to_string(app.path().join("spinbench.toml")).unwrap();
    assert!(
        derived.contains("id = \"spin4-template\"") && derived.contains("path = \"/hello/name\""),
        "{derived}"
    );
}
