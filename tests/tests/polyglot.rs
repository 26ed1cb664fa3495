//! Spin apps in Python and JavaScript, built by `make build` as their SDKs'
//! templates build them (tests/apps/python: spin-sdk 4.0.0 with componentize-py
//! 0.23.0, the Spin 4.0 `http-py` template's pins, and spin-sdk 5.0.0 with
//! componentize-py 0.25.1; tests/apps/js: @spinframework/build-tools 1.x,
//! componentize-js), served as `spin up` serves them: hello, a key-value
//! counter, a variable, a 1 MiB body echoed and the app's own 404.
//!
//! `compare -f` measures each from a benchmark file derived from its manifest.
//!
//! What they need of the host: componentize-py images start past the default
//! 16 MiB memory cap and instantiate 14 core modules (the pool is sized for
//! them, and the start line says so: `instance::limits`), and spin-sdk 5.0.0
//! imports every WASI 0.3 interface under its release candidate's name and its
//! release's side by side (`instance::prepare`).

use e2e::report as support;
use e2e::{Server, get, send};
use std::path::Path;

/// Each app: its directory, its built component, and its words at start.
struct App {
    dir: &'static str,
    wasm: &'static str,
    /// What its start line must say of the instance limits.
    limits: &'static str,
}

const PYTHON_SDK4: App = App {
    dir: "tests/apps/python/sdk4",
    wasm: "app.wasm",
    limits: "raised for this app to 14 core instances (\"python-sdk4\")",
};

const PYTHON_SDK5: App = App {
    dir: "tests/apps/python/sdk5",
    wasm: "app.wasm",
    limits: "raised for this app to 14 core instances (\"python-sdk5\")",
};

const JAVASCRIPT: App = App {
    dir: "tests/apps/js",
    wasm: "dist/js-app.wasm",
    limits: "(the defaults)",
};

/// `spinbench serve -f` of `app` with a fresh state directory, its greeting
/// variable set from the environment as `spin up` takes it.
fn serve(app: &App, state: &Path) -> Server {
    e2e::serve_test_app_with_env(
        app.dir,
        app.wasm,
        state,
        &[],
        &[("SPIN_VARIABLE_GREETING", "Howdy")],
    )
}

/// `len` bytes that are not all alike.
fn body(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3])
        .collect()
}

fn answers_every_route(app: &App) {
    let state = tempfile::tempdir().unwrap();
    let server = serve(app, state.path());
    for path in ["/hello", "/"] {
        let hello = get(&server.url(path));
        assert_eq!(
            (hello.status, hello.text().as_str()),
            (200, "Hello, World!"),
            "{} {path}",
            app.dir
        );
        assert_eq!(hello.content_type, "text/plain", "{}", app.dir);
    }
    // Key-value: a counter in the default store, kept in the state directory.
    assert_eq!(get(&server.url("/kv")).text(), "1", "{}", app.dir);
    assert_eq!(get(&server.url("/kv")).text(), "2", "{}", app.dir);
    assert!(state.path().join("sqlite_key_value.db").is_file());
    // A variable, from SPIN_VARIABLE_GREETING over its default.
    let variable = get(&server.url("/variable"));
    assert_eq!((variable.status, variable.text().as_str()), (200, "Howdy"));
    // A large body, back byte for byte.
    let sent = body(1 << 20);
    let echoed = send(
        "POST",
        &server.url("/echo"),
        Some("application/octet-stream"),
        &sent,
    );
    assert_eq!(echoed.status, 200, "{}: {}", app.dir, echoed.text());
    assert!(echoed.body == sent, "{}: the echo differs", app.dir);
    // A path the app has no route for: its own 404.
    let unknown = get(&server.url("/no/such/route"));
    assert_eq!(
        (unknown.status, unknown.text().as_str()),
        (404, "no route for /no/such/route"),
        "{}",
        app.dir
    );
    let log = server.log();
    assert!(log.contains(app.limits), "{}:\n{log}", app.dir);
}

#[test]
fn a_spin_sdk_4_python_app_answers_every_route() {
    answers_every_route(&PYTHON_SDK4);
}

#[test]
fn a_spin_sdk_5_python_app_answers_every_route_with_wasi_0_3_and_its_candidate_side_by_side() {
    answers_every_route(&PYTHON_SDK5);
}

#[test]
fn a_build_tools_javascript_app_answers_every_route() {
    answers_every_route(&JAVASCRIPT);
}

/// `compare -f` on a copy of `app` (its manifest and component, so that the
/// benchmark file it derives stays out of the tree): the instance cold start
/// and the load are measured. (The measurements that compile the component
/// again, the empty-cache process starts and the compile time, take 20 s to a
/// minute per compile for these: `make compare` measures them; CI leaves them out.)
fn compare_measures_it_without_a_benchmark_file(app: &App, id: &str) {
    let copy = e2e::built_app_copy(app.dir, app.wasm);
    let report = e2e::compare(
        &[
            "-f",
            copy.path().to_str().unwrap(),
            "--quick",
            "--hosts",
            "wasm",
            "--measurements",
            "instance_cold_start,load",
        ],
        id,
    );
    support::assert_valid_report(&report);
    assert_eq!(report["plan"]["functions"], serde_json::json!([id]));
    for (measurement, name) in [
        ("instance_cold_start", "total"),
        ("load", "server_cpu_per_request"),
    ] {
        support::assert_measured(&report, measurement, "wasm", name);
    }
}

#[test]
fn compare_measures_the_python_and_javascript_apps_without_a_benchmark_file() {
    for (app, id) in [
        (&PYTHON_SDK4, "python-sdk4"),
        (&PYTHON_SDK5, "python-sdk5"),
        (&JAVASCRIPT, "js-app"),
    ] {
        compare_measures_it_without_a_benchmark_file(app, id);
    }
}
