//! WAGI (`executor = { type = "wagi" }`), as `spin up` 4.0.2 runs it, through
//! tests/apps/wagi (a Rust program built for `wasm32-wasip1`, a core module
//! with `_start`, as WAGI programs are): the request reaches the program as
//! its command line (`argv`, default and from the manifest), CGI variables
//! (with Spin's `X_*` ones and the component's `environment`) and stdin; its
//! stdout is the response: headers passed on, `Status`, `Location` (a 302),
//! and no output at all a 500.

use e2e::{Server, artifact, exchange, get, header};

const APP: &str = "tests/apps/wagi";
const WASM: &str = "target/wasm32-wasip1/release/wagi_app.wasm";

fn serve() -> Server {
    serve_with(&[])
}

fn serve_with(flags: &[&str]) -> Server {
    let app = e2e::built_app(APP, WASM);
    let args = e2e::runner_args(&app.join("spin.toml"), flags);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Server::start("wagi", &artifact("release/spinbench"), &args)
}

/// The program's `NAME=value` lines, by name.
fn lines(text: &str) -> std::collections::BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

#[test]
fn a_request_is_the_program_s_arguments_variables_and_stdin() {
    let server = serve();
    let url = server.url("/cgi/some/path?a=1&b=2");
    let (answer, headers) = exchange("POST", &url, &[("x-test", "yes")], b"the body");
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(answer.content_type, "text/plain");
    assert_eq!(header(&headers, "x-wagi"), Some("yes"));
    let seen = lines(&answer.text());
    let port = server.addr.port().to_string();
    for (name, value) in [
        ("args", "/cgi/some/path|a=1|b=2"),
        ("stdin", "the body"),
        ("REQUEST_METHOD", "POST"),
        ("SCRIPT_NAME", "/cgi"),
        ("PATH_INFO", "/some/path"),
        ("QUERY_STRING", "a=1&b=2"),
        ("CONTENT_LENGTH", "8"),
        ("SERVER_NAME", "127.0.0.1"),
        ("SERVER_PORT", port.as_str()),
        ("X_MATCHED_ROUTE", "/cgi/..."),
        ("HTTP_X_TEST", "yes"),
        ("GREETING", "hello from the manifest"),
    ] {
        assert_eq!(seen.get(name).map(String::as_str), Some(value), "{name}");
    }
    assert_eq!(
        seen["X_FULL_URL"],
        format!("http://127.0.0.1:{port}/cgi/some/path?a=1&b=2")
    );
}

#[test]
fn the_manifest_s_argv_and_a_named_segment_reach_the_program() {
    let server = serve();
    let answer = get(&server.url("/named/joe?x=1"));
    assert_eq!(answer.status, 200, "{}", answer.text());
    let seen = lines(&answer.text());
    assert_eq!(seen["args"], "wagi|x=1|--from-manifest");
    assert_eq!(seen["X_PATH_MATCH_NAME"], "joe");
    // That component has no `environment`.
    assert_eq!(seen["GREETING"], "");
}

#[test]
fn status_and_location_lines_set_the_response() {
    let server = serve();
    let teapot = get(&server.url("/cgi/teapot"));
    assert_eq!(teapot.status, 418);
    assert_eq!(teapot.text(), "short and stout");
    let (moved, headers) = exchange("GET", &server.url("/cgi/redirect"), &[], b"");
    assert_eq!(moved.status, 302);
    assert_eq!(header(&headers, "location"), Some("/elsewhere"));
}

#[test]
fn a_program_that_writes_nothing_is_a_500_and_the_next_request_is_served() {
    let server = serve();
    let silent = get(&server.url("/cgi/silent"));
    assert_eq!(silent.status, 500, "{}", silent.text());
    assert_eq!(get(&server.url("/cgi/after")).status, 200);
}

/// What a program writes is held up to `--max-wagi-output`: past it the
/// request is a `500` with a JSON error (not a truncated `200`), within it
/// the whole output is the response; the host serves on.
#[test]
fn output_past_the_operator_s_cap_is_a_500() {
    let server = serve_with(&["--max-wagi-output", "65536"]);
    let url = server.url("/cgi/echo");
    let (past, _) = exchange("POST", &url, &[], &vec![b'x'; 100 << 10]);
    assert_eq!(past.status, 500, "{}", past.text());
    assert_eq!(past.content_type, "application/json");
    let (within, _) = exchange("POST", &url, &[], &vec![b'x'; 10 << 10]);
    assert_eq!(within.status, 200, "{}", within.text());
    assert!(within.text().contains(&"x".repeat(10 << 10)));
}
