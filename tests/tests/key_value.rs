//! Spin's key-value stores as `spin up` serves them, through a spin-sdk 6
//! component (tests/apps/key-value, `spin:key-value/key-value@3.0.0`): values
//! kept across requests and across a restart in the state directory, a label
//! the runtime config file defines, a label the manifest does not grant denied
//! with Spin's `access-denied`, and a granted label nothing defines refused at
//! start, as Spin refuses it.

use e2e::{Answer, Server, artifact, get, send};
use std::path::Path;
use std::time::Duration;

const APP: &str = "tests/apps/key-value";
const WASM: &str = "target/wasm32-wasip2/release/key_value_app.wasm";

/// `serve` with its state directory and a runtime config file defining `cache`
/// in `state`.
fn serve(state: &Path) -> Server {
    let config = state.join("runtime-config.toml");
    std::fs::write(
        &config,
        "[key_value_store.cache]\ntype = \"spin\"\npath = \"cache/kv.db\"\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();
    e2e::serve_test_app(
        APP,
        WASM,
        &state.join("state"),
        &["--runtime-config-file", config],
    )
}

fn put(server: &Server, path: &str) -> Answer {
    send("PUT", &server.url(path), None, b"")
}

#[test]
fn values_persist_across_requests_and_restarts() {
    let state = tempfile::tempdir().unwrap();
    let mut server = serve(state.path());
    assert_eq!(get(&server.url("/default/greeting")).status, 404);
    let set = put(&server, "/default/greeting?hello");
    assert_eq!((set.status, set.text()), (200, "set greeting".into()));
    put(&server, "/default/name?ada");
    let value = get(&server.url("/default/greeting"));
    assert_eq!((value.status, value.text()), (200, "hello".into()));
    put(&server, "/default/greeting?again");
    assert_eq!(get(&server.url("/default/greeting")).text(), "again");
    assert_eq!(get(&server.url("/default")).text(), "greeting\nname");
    assert!(
        state.path().join("state/sqlite_key_value.db").is_file(),
        "the default store is Spin's file in the state directory"
    );
    assert!(server.terminate(Duration::from_secs(10)).is_some());
    drop(server);
    let server = serve(state.path());
    assert_eq!(get(&server.url("/default/greeting")).text(), "again");
    let deleted = send("DELETE", &server.url("/default/name"), None, b"");
    assert_eq!(deleted.text(), "deleted name: true");
    assert_eq!(get(&server.url("/default")).text(), "greeting");
}

#[test]
fn a_runtime_config_label_is_its_own_store_in_its_own_file() {
    let state = tempfile::tempdir().unwrap();
    let server = serve(state.path());
    assert_eq!(put(&server, "/cache/k?cached").status, 200);
    assert_eq!(get(&server.url("/cache/k")).text(), "cached");
    assert_eq!(get(&server.url("/default/k")).status, 404);
    assert!(state.path().join("cache/kv.db").is_file());
}

#[test]
fn a_label_not_granted_is_denied() {
    let state = tempfile::tempdir().unwrap();
    let server = serve(state.path());
    let denied = put(&server, "/forbidden/k?v");
    assert_eq!(denied.status, 500);
    assert!(denied.text().contains("AccessDenied"), "{}", denied.text());
}

#[test]
fn a_granted_label_nothing_defines_is_refused_at_start() {
    let state = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(artifact("release/spinbench"))
        .args([
            "serve",
            "-f",
            e2e::built_app(APP, WASM).to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .arg("--state-dir")
        .arg(state.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("unknown key_value_stores label \"cache\""),
        "{stderr}"
    );
}
