//! `wasi:keyvalue@0.2.0-draft2` as Spin 4.0.2 serves it, through a
//! wit-bindgen component (tests/apps/wasi-keyvalue, a WASIp2 component as
//! componentize-py and spin-python-sdk build): `open` of a granted label, and
//! `access-denied` for any other; a bucket's `get`/`set`/`delete`/`exists`/
//! `list-keys`; `batch`'s `get-many`/`set-many`/`delete-many`; `atomics`'
//! `increment` and a `cas` swap, won and lost; and the store shared with
//! Spin's own `fermyon:spin/key-value@2.0.0`, kept in the state directory.

use e2e::{Answer, Server, get, send};
use std::path::Path;

const APP: &str = "tests/apps/wasi-keyvalue";
const WASM: &str = "target/wasm32-wasip2/release/wasi_keyvalue_app.wasm";

/// `serve` with its state directory in `state`.
fn serve(state: &Path) -> Server {
    e2e::serve_test_app(APP, WASM, &state.join("state"), &[])
}

fn call(server: &Server, method: &str, path: &str) -> (u16, String) {
    let answer: Answer = send(method, &server.url(path), None, b"");
    (answer.status, answer.text())
}

fn ok(text: &str) -> (u16, String) {
    (200, text.to_string())
}

#[test]
fn open_and_a_bucket_s_operations_answer_as_spin_s() {
    let state = tempfile::tempdir().unwrap();
    let server = serve(state.path());
    assert_eq!(call(&server, "GET", "/open?default"), ok("opened default"));
    // Not granted, defined or not: Spin checks the grant first.
    for label in ["forbidden", "nowhere"] {
        let answer = call(&server, "GET", &format!("/open?{label}"));
        assert_eq!(answer, (500, "access-denied".into()), "{label}");
    }
    assert_eq!(
        call(&server, "GET", "/value/k"),
        (404, "no key \"k\"".into())
    );
    assert_eq!(call(&server, "GET", "/exists/k"), ok("false"));
    assert_eq!(call(&server, "PUT", "/value/k?v1"), ok("set k"));
    assert_eq!(call(&server, "PUT", "/value/j?x"), ok("set j"));
    assert_eq!(call(&server, "PUT", "/value/k?v2"), ok("set k"));
    assert_eq!(call(&server, "GET", "/value/k"), ok("v2"));
    assert_eq!(call(&server, "GET", "/exists/k"), ok("true"));
    assert_eq!(call(&server, "GET", "/keys"), ok("j\nk\ncursor: none"));
    assert_eq!(
        call(&server, "GET", "/keys?j"),
        (500, "other: list_keys: cursor not supported".into())
    );
    assert_eq!(call(&server, "DELETE", "/value/k"), ok("deleted k"));
    assert_eq!(call(&server, "DELETE", "/value/k"), ok("deleted k"));
    assert_eq!(call(&server, "GET", "/exists/k"), ok("false"));
    assert_eq!(call(&server, "GET", "/keys"), ok("j\ncursor: none"));
}

#[test]
fn batches_set_get_and_delete_many_keys() {
    let state = tempfile::tempdir().unwrap();
    let server = serve(state.path());
    assert_eq!(call(&server, "GET", "/get-many?a,b"), ok(""));
    assert_eq!(call(&server, "POST", "/set-many?a=1&b=2&c=3"), ok("set 3"));
    // Only keys that exist are answered, as Spin's SQLite store answers.
    let (status, body) = call(&server, "GET", "/get-many?c,missing,a");
    let mut lines: Vec<&str> = body.lines().collect();
    lines.sort_unstable();
    assert_eq!((status, lines), (200, vec!["a=1", "c=3"]));
    assert_eq!(
        call(&server, "POST", "/delete-many?a,b,missing"),
        ok("deleted 3")
    );
    assert_eq!(call(&server, "GET", "/keys"), ok("c\ncursor: none"));
    assert_eq!(call(&server, "GET", "/value/c"), ok("3"));
}

#[test]
fn increment_counts_and_a_value_it_cannot_read_is_an_error_not_a_crash() {
    let state = tempfile::tempdir().unwrap();
    let server = serve(state.path());
    assert_eq!(call(&server, "POST", "/increment/n?5"), ok("5"));
    assert_eq!(call(&server, "POST", "/increment/n?-7"), ok("-2"));
    assert_eq!(call(&server, "PUT", "/value/word?hello"), ok("set word"));
    let (status, body) = call(&server, "POST", "/increment/word?1");
    assert_eq!(status, 500, "{body}");
    assert!(
        body.starts_with("other: ") && body.contains("5 bytes"),
        "{body}"
    );
    // The host still serves, and the value is untouched.
    assert_eq!(call(&server, "GET", "/value/word"), ok("hello"));
    assert_eq!(call(&server, "POST", "/increment/n?2"), ok("0"));
}

#[test]
fn a_cas_swaps_the_value_it_read_and_a_conflicting_swap_hands_back_a_fresh_cas() {
    let state = tempfile::tempdir().unwrap();
    let server = serve(state.path());
    assert_eq!(call(&server, "POST", "/cas/k?one"), ok("<none> -> one"));
    assert_eq!(call(&server, "POST", "/cas/k?two"), ok("one -> two"));
    assert_eq!(call(&server, "GET", "/value/k"), ok("two"));
    assert_eq!(
        call(&server, "POST", "/cas-conflict/k?three"),
        ok("read two; failed, then saw intruder; retried: three")
    );
    assert_eq!(call(&server, "GET", "/value/k"), ok("three"));
}

#[test]
fn spin_key_value_and_wasi_keyvalue_share_the_store_in_the_state_directory() {
    let state = tempfile::tempdir().unwrap();
    let server = serve(state.path());
    assert_eq!(
        call(&server, "PUT", "/spin/shared?hello"),
        ok("spin set shared")
    );
    assert_eq!(call(&server, "GET", "/value/shared"), ok("hello"));
    assert_eq!(get(&server.url("/keys")).text(), "shared\ncursor: none");
    assert!(
        state.path().join("state/sqlite_key_value.db").is_file(),
        "the default store is Spin's file in the state directory"
    );
}
