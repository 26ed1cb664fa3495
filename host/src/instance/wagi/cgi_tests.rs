use super::*;

/// The response of output `stdout`.
fn response(stdout: &[u8]) -> Result<Response<Bytes>, CgiError> {
    super::response(BytesMut::from(stdout))
}

fn request(uri: &str, headers: &[(&str, &str)]) -> http::request::Parts {
    let mut builder = http::Request::post(uri);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(()).unwrap().into_parts().0
}

fn variable<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

#[test]
fn the_command_line_is_the_path_then_the_query_pairs() {
    let uri: http::Uri = "http://h/cgi/run?a=1&b=2".parse().unwrap();
    assert_eq!(
        arguments("${SCRIPT_NAME} ${ARGS}", &uri),
        ["/cgi/run", "a=1", "b=2"]
    );
    let bare: http::Uri = "http://h/cgi".parse().unwrap();
    assert_eq!(arguments("${SCRIPT_NAME} ${ARGS}", &bare), ["/cgi", ""]);
    assert_eq!(arguments("prog --verbose", &bare), ["prog", "--verbose"]);
}

#[test]
fn the_environment_has_cgi_s_variables_and_spin_s() {
    let parts = request(
        "http://example.com:3000/cgi/a%20b?x=1",
        &[
            ("host", "example.com:3000"),
            ("user-agent", "test/1"),
            ("content-type", "text/plain"),
            ("authorization", "secret"),
            ("spin-full-url", "http://example.com:3000/cgi/a%20b?x=1"),
            ("spin-path-info", "/a%20b"),
            ("spin-matched-route", "/cgi/..."),
            ("spin-component-route", "/cgi"),
            ("spin-raw-component-route", "/cgi/..."),
            ("spin-base-path", "/"),
            ("spin-client-addr", "127.0.0.1:51000"),
            ("spin-path-match-user-id", "42"),
        ],
    );
    let env = environment(&parts, 5);
    for (name, value) in [
        ("REQUEST_METHOD", "POST"),
        ("CONTENT_LENGTH", "5"),
        ("CONTENT_TYPE", ""),
        ("GATEWAY_INTERFACE", "CGI/1.1"),
        ("QUERY_STRING", "x=1"),
        ("SCRIPT_NAME", "/cgi"),
        ("PATH_INFO", "/a%20b"),
        ("X_RAW_PATH_INFO", "/a%20b"),
        ("PATH_TRANSLATED", "/a b"),
        ("SERVER_NAME", "example.com"),
        ("SERVER_PORT", "3000"),
        ("SERVER_PROTOCOL", "HTTP/1.1"),
        ("SERVER_SOFTWARE", "WAGI/1"),
        ("REMOTE_ADDR", "127.0.0.1"),
        ("REMOTE_HOST", "127.0.0.1"),
        ("X_FULL_URL", "http://example.com:3000/cgi/a%20b?x=1"),
        ("X_MATCHED_ROUTE", "/cgi/..."),
        ("X_COMPONENT_ROUTE", "/cgi"),
        ("X_RAW_COMPONENT_ROUTE", "/cgi/..."),
        ("X_BASE_PATH", "/"),
        ("X_CLIENT_ADDR", "127.0.0.1:51000"),
        ("X_PATH_MATCH_USER_ID", "42"),
        ("HTTP_USER_AGENT", "test/1"),
        ("HTTP_CONTENT_TYPE", "text/plain"),
        ("HTTP_HOST", "example.com:3000"),
    ] {
        assert_eq!(variable(&env, name), Some(value), "{name}");
    }
    // Not passed on (RFC 3875 4.1.18), and the spin-* headers only under
    // their CGI names.
    assert_eq!(variable(&env, "HTTP_AUTHORIZATION"), None);
    assert!(!env.iter().any(|(name, _)| name.starts_with("HTTP_SPIN_")));
}

#[test]
fn without_a_host_header_the_server_is_spin_s_default_host() {
    let env = environment(&request("/x", &[]), 0);
    assert_eq!(variable(&env, "SERVER_NAME"), Some("default_host"));
    assert_eq!(variable(&env, "SERVER_PORT"), Some("80"));
}

#[test]
fn a_content_type_and_a_body_make_a_200() {
    let response = response(b"Content-Type: text/plain\r\nX-Extra: 1\r\n\r\nhello\r\n").unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/plain");
    assert_eq!(response.headers()["x-extra"], "1");
    assert_eq!(&response.body()[..], b"hello\r\n");
}

#[test]
fn a_status_line_sets_the_status_and_a_location_redirects() {
    let teapot = response(b"status: 418 I'm a teapot\ncontent-type: text/plain\n\n").unwrap();
    assert_eq!(teapot.status(), 418);
    let moved = response(b"Location: /elsewhere\n\n").unwrap();
    assert_eq!(moved.status(), 302);
    assert_eq!(moved.headers()["location"], "/elsewhere");
    let explicit = response(b"Location: /elsewhere\nStatus: 301\n\n").unwrap();
    assert_eq!(explicit.status(), 301);
    let garbled = response(b"Status: nonsense\ncontent-type: text/plain\n\n").unwrap();
    assert_eq!(garbled.status(), 502);
}

#[test]
fn output_without_type_location_or_status_is_spin_s_500() {
    for stdout in [&b"X-Only: 1\n\nbody"[..], b"no blank line at all"] {
        let response = response(stdout).unwrap();
        assert_eq!(response.status(), 500);
        assert_eq!(
            &response.body()[..],
            b"Exactly one of 'location' or 'content-type' must be specified"
        );
    }
    assert_eq!(response(b"").unwrap_err(), CgiError::NoOutput);
}
