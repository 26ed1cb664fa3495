//! Spin's SQLite databases as `spin up` serves them, through a spin-sdk 6
//! component (tests/apps/sqlite, the async functions of
//! `spin:sqlite/sqlite@3.1.0`): rows kept across requests and across a restart
//! in the state directory, every value type, `last-insert-rowid` and `changes`,
//! a database the runtime config file defines, and a database the manifest does
//! not grant denied with Spin's `access-denied`.

use e2e::{Answer, Server, get, send};
use std::path::Path;
use std::time::Duration;

const APP: &str = "tests/apps/sqlite";
const WASM: &str = "target/wasm32-wasip2/release/sqlite_app.wasm";

/// `serve` with its state directory, and `other` defined (an absolute path:
/// Spin resolves a relative one against the working directory) in `state`.
fn serve(state: &Path) -> Server {
    let config = state.join("runtime-config.toml");
    let other = state.join("other.db");
    std::fs::write(
        &config,
        format!(
            "[sqlite_database.other]\ntype = \"spin\"\npath = \"{}\"\n",
            other.display()
        ),
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

fn post(server: &Server, path: &str) -> Answer {
    send("POST", &server.url(path), None, b"")
}

#[test]
fn rows_persist_across_requests_and_restarts() {
    let state = tempfile::tempdir().unwrap();
    let mut server = serve(state.path());
    let first = post(&server, "/default?ada");
    assert_eq!(
        (first.status, first.text()),
        (200, "visit 1 by ada, row 1, changes 1".into())
    );
    post(&server, "/default?bo");
    assert_eq!(
        post(&server, "/default?ada").text(),
        "visit 2 by ada, row 3, changes 1"
    );
    assert!(state.path().join("state/sqlite_db.db").is_file());
    assert!(server.terminate(Duration::from_secs(10)).is_some());
    drop(server);
    let server = serve(state.path());
    assert_eq!(
        post(&server, "/default?ada").text(),
        "visit 3 by ada, row 4, changes 1"
    );
    let all = get(&server.url("/default"));
    assert_eq!(all.status, 200, "{}", all.text());
    assert_eq!(
        all.text(),
        "id,name,score,tag\n1 ada 0.5 blob:3\n2 bo 0.5 blob:2\n3 ada 0.5 blob:3\n4 ada 0.5 blob:3"
    );
}

#[test]
fn a_runtime_config_database_is_its_own_file() {
    let state = tempfile::tempdir().unwrap();
    let server = serve(state.path());
    post(&server, "/default?ada");
    assert_eq!(
        post(&server, "/other?ada").text(),
        "visit 1 by ada, row 1, changes 1"
    );
    assert!(state.path().join("other.db").is_file());
}

#[test]
fn a_database_not_granted_is_denied() {
    let state = tempfile::tempdir().unwrap();
    let server = serve(state.path());
    let denied = post(&server, "/forbidden?ada");
    assert_eq!(denied.status, 500);
    assert!(denied.text().contains("AccessDenied"), "{}", denied.text());
}
