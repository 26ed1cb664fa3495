//! The bad-input battery beyond `function_set.rs`: wrong methods and content
//! types, absurd numbers, dates and zones, invalid UTF-8, truncated and chunked
//! bodies. On both hosts (the components under `spinbench serve` and the
//! `<name>-native` binaries) each is a 4xx with a JSON error, never a 5xx, and
//! the two hosts give identical answers.

use e2e::{Answer, Server, functions, parse_response, raw_exchange, raw_then_close, send};

struct Hosts {
    runner: Server,
    natives: Vec<(&'static str, Server)>,
}

impl Hosts {
    fn start() -> Hosts {
        Hosts {
            runner: Server::runner(&[]),
            natives: functions()
                .iter()
                .map(|f| (*f, Server::native(f)))
                .collect(),
        }
    }

    /// The runner and the function's native server.
    fn both(&self, function: &str) -> [(&'static str, &Server); 2] {
        let native = &self.natives.iter().find(|(f, _)| *f == function).unwrap().1;
        [("wasm", &self.runner), ("native", native)]
    }
}

fn assert_json_4xx(answer: &Answer, what: &str) {
    assert!(
        (400..500).contains(&answer.status),
        "{what}: {} {}",
        answer.status,
        answer.text()
    );
    assert_eq!(answer.content_type, "application/json", "{what}");
    let error = answer.json()["error"].clone();
    assert!(
        error.as_str().is_some_and(|e| !e.is_empty()),
        "{what}: {error}"
    );
}

/// (function, method, target, content type, body, expected status)
type Case = (
    &'static str,
    &'static str,
    String,
    Option<&'static str>,
    Vec<u8>,
    u16,
);

fn get(function: &'static str, target: &str, expect: u16) -> Case {
    (
        function,
        "GET",
        target.to_string(),
        None,
        Vec::new(),
        expect,
    )
}

fn method(function: &'static str, method: &'static str, expect: u16) -> Case {
    (
        function,
        method,
        format!("/{function}"),
        None,
        Vec::new(),
        expect,
    )
}

fn echo(content_type: Option<&'static str>, body: &[u8], expect: u16) -> Case {
    (
        "echo",
        "POST",
        "/echo".into(),
        content_type,
        body.to_vec(),
        expect,
    )
}

fn sun(query: &str) -> Case {
    get(
        "suntimes",
        &format!("/suntimes?lat=51.5&lon=-0.12&{query}"),
        400,
    )
}

fn cases() -> Vec<Case> {
    let person = br#"{"FirstName":"J","LastName":"D","Age":1}"#;
    let deep = format!("{}{}", "[".repeat(30_000), "]".repeat(30_000));
    let long_zone = format!("tz={}", "A/".repeat(2000));
    let mut cases = vec![
        // Methods nobody routes.
        method("hello", "PATCH", 405),
        method("hello", "OPTIONS", 405),
        method("hello", "BREW", 405),
        method("echo", "PATCH", 405),
        method("echo", "OPTIONS", 405),
        method("cpu", "PATCH", 405),
        method("io", "OPTIONS", 405),
        method("suntimes", "PATCH", 405),
        method("suntimes", "OPTIONS", 405),
        method("sha1", "PATCH", 405),
        method("sha1", "PUT", 405),
        // Content types echo does not read.
        echo(Some("application/x-www-form-urlencoded"), person, 415),
        echo(Some("multipart/form-data; boundary=x"), person, 415),
        echo(Some("text/json"), person, 415),
        echo(Some("application/jsonl"), person, 415),
        echo(Some(""), person, 415),
        // Malformed JSON, wrong types, huge numbers.
        echo(None, deep.as_bytes(), 400),
        echo(
            None,
            b"\xef\xbb\xbf{\"FirstName\":\"J\",\"LastName\":\"D\",\"Age\":1}",
            400,
        ),
        echo(
            None,
            b"{\"FirstName\":\"J\",\"LastName\":\"D\",\"Age\":1} trailing",
            400,
        ),
        echo(
            None,
            br#"{"FirstName":"\ud800","LastName":"D","Age":1}"#,
            400,
        ),
        echo(None, br#"{"FirstName":["J"],"LastName":"D","Age":1}"#, 400),
        echo(None, br#"{"FirstName":"J","LastName":null,"Age":1}"#, 400),
        echo(None, br#"{"FirstName":"J","LastName":"D","Age":true}"#, 400),
        echo(
            None,
            br#"{"FirstName":"J","LastName":"D","Age":-2147483649}"#,
            400,
        ),
        echo(
            None,
            br#"{"FirstName":"J","LastName":"D","Age":99999999999999999999999999}"#,
            400,
        ),
        echo(
            None,
            br#"{"FirstName":"J","LastName":"D","Age":-Infinity}"#,
            400,
        ),
        echo(None, b"\xff\xfe\x00\x00", 400),
        echo(None, b"[]", 400),
        echo(None, b"\"a string\"", 400),
        // Numbers the query parser must refuse.
        get("cpu", "/cpu?ms=1e3", 400),
        get("cpu", "/cpu?ms=0x10", 400),
        get("cpu", "/cpu?ms=", 400),
        get("cpu", "/cpu?ms=-0", 400),
        get("cpu", "/cpu?ms=NaN", 400),
        get("cpu", "/cpu?ms=%00", 400),
        get("cpu", "/cpu?ms=%FF%FE", 400),
        get("cpu", "/cpu?ms=18446744073709551616", 400),
        get("io", "/io?ms=inf", 400),
        get("io", "/io?ms=1.0", 400),
        get("io", "/io?ms=%E2%88%9E", 400),
        get("io", "/io?ms=5&ms=5", 400),
        // Coordinates.
        get("suntimes", "/suntimes?lat=1e309&lon=0", 400),
        get("suntimes", "/suntimes?lat=-inf&lon=0", 400),
        get("suntimes", "/suntimes?lat=0x10&lon=0", 400),
        get("suntimes", "/suntimes?lat=&lon=0", 400),
        get("suntimes", "/suntimes?lat=0&lon=NaN", 400),
        get("suntimes", "/suntimes?lat=0&lon=180.0000001", 400),
        get("suntimes", "/suntimes?lat=%FF&lon=0", 400),
        get("suntimes", "/suntimes?lat=0&lat=1&lon=0", 400),
        // Absurd dates and zones.
        sun("date=99999-01-01"),
        sun("date=0000-00-00"),
        sun("date=2024-13-01"),
        sun("date=2024-00-10"),
        sun("date=2023-02-29"),
        sun("date=2024-06-21T00:00"),
        sun("date=2102-01-01"),
        sun("date=-2024-06-21"),
        sun("date=%FF"),
        sun("date="),
        sun("tz=../../etc/passwd"),
        sun("tz=/etc/localtime"),
        sun("tz=%00"),
        sun("tz=Etc/GMT%2B15"),
        sun("tz=%2B99:99"),
        sun("tz=-25:00"),
        sun("tz=Europe/Londres"),
        sun(&long_zone),
    ];
    // Every endpoint: a path below it is not it.
    for &f in functions() {
        cases.push(get(f, &format!("/{f}/..%2F..%2Fetc%2Fpasswd"), 404));
    }
    cases
}

#[test]
fn bad_inputs_are_json_4xx_and_identical_on_both_hosts() {
    let hosts = Hosts::start();
    for (function, method, target, content_type, body, expect) in cases() {
        let what = format!("{method} {target} ({} body bytes)", body.len());
        let [(_, wasm), (_, native)] = hosts.both(function);
        let from_wasm = send(method, &wasm.url(&target), content_type, &body);
        let from_native = send(method, &native.url(&target), content_type, &body);
        assert_eq!(
            from_wasm.status,
            expect,
            "wasm: {what}: {}",
            from_wasm.text()
        );
        let path = target.split('?').next().unwrap_or_default();
        if path.strip_prefix('/') != Some(function) {
            // Off every route: the router's own 404, which each host words its
            // own way: `spin up`'s (and so spinbench serve's) has an empty body.
            assert_eq!(from_native.status, 404, "native: {what}");
            assert_json_4xx(&from_native, &what);
            assert!(
                from_wasm.body.is_empty(),
                "wasm: {what}: {}",
                from_wasm.text()
            );
            continue;
        }
        assert_json_4xx(&from_wasm, &what);
        assert_eq!(from_native, from_wasm, "native vs wasm: {what}");
    }
}

/// A body shorter than its `Content-Length`, then the client closes its side: an
/// error, never a 5xx; or no answer at all (the client is gone anyway).
#[test]
fn truncated_bodies_are_never_5xx() {
    let hosts = Hosts::start();
    let cases = [
        (
            "echo",
            "POST /echo",
            r#"{"FirstName":"J","#.as_bytes().to_vec(),
            200,
        ),
        ("sha1", "POST /sha1", vec![7u8; 10_000], 100_000),
    ];
    for (function, request_line, sent, declared) in cases {
        for (host, server) in hosts.both(function) {
            let mut request = format!(
                "{request_line} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {declared}\r\n\r\n"
            )
            .into_bytes();
            request.extend_from_slice(&sent);
            let raw = raw_then_close(server.addr, &request);
            let what = format!(
                "{host}: {request_line} with {} of {declared} bytes",
                sent.len()
            );
            if raw.is_empty() {
                eprintln!("{what}: connection closed without an answer");
                continue;
            }
            let answer = parse_response(&raw);
            assert_json_4xx(&answer, &what);
        }
    }
    // Both servers are still fine.
    for (function, server) in &hosts.natives {
        let status = e2e::get(&server.url(&format!("/{function}?ms=0"))).status;
        assert!(status < 500, "{function}: {status}");
    }
    assert_eq!(e2e::get(&hosts.runner.url("/hello")).status, 200);
}

/// Chunked request bodies: well-formed ones are read like any other body (a
/// JSON error where the content is wrong), malformed framing is a 4xx.
#[test]
fn chunked_bodies_are_read_or_refused_with_4xx() {
    let hosts = Hosts::start();
    let chunked = |target: &str, chunks: &[&[u8]]| {
        let mut request = format!(
            "POST {target} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
        )
        .into_bytes();
        for chunk in chunks {
            request.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            request.extend_from_slice(chunk);
            request.extend_from_slice(b"\r\n");
        }
        request.extend_from_slice(b"0\r\n\r\n");
        request
    };
    for (host, server) in hosts.both("echo") {
        let good = chunked(
            "/echo",
            &[br#"{"FirstName":"J","#, br#""LastName":"D","Age":1}"#],
        );
        let answer = raw_exchange(server.addr, &good, 0, false);
        assert_eq!(answer.status, 200, "{host}: {}", answer.text());
        assert_eq!(
            answer.text(),
            r#"{"firstName":"Jx","lastName":"Dx","age":11}"#
        );

        let bad = chunked("/echo", &[br#"{"FirstName":"J","#, br#""LastName":"#]);
        let answer = raw_exchange(server.addr, &bad, 0, false);
        assert_json_4xx(&answer, &format!("{host}: chunked truncated JSON"));
        assert_eq!(answer.status, 400);

        let oversized: Vec<u8> = vec![b' '; 70 * 1024];
        let big = chunked("/echo", &[&oversized[..40_000], &oversized[40_000..]]);
        let answer = raw_exchange(server.addr, &big, 0, false);
        assert_json_4xx(&answer, &format!("{host}: chunked oversized echo body"));
        assert_eq!(answer.status, 413);
    }
    for (host, server) in hosts.both("sha1") {
        let good = chunked("/sha1", &[&[1u8; 5000], &[2u8; 5000]]);
        let answer = raw_exchange(server.addr, &good, 0, false);
        assert_eq!(answer.status, 200, "{host}: {}", answer.text());
        assert_eq!(answer.json()["blocks"], 3, "{host}");
    }
}

/// Raw bytes a client library will not send: invalid UTF-8 and control bytes in
/// the request line. Refused before any function runs, with a 4xx.
#[test]
fn invalid_bytes_in_the_request_line_are_4xx() {
    let hosts = Hosts::start();
    let lines: [&[u8]; 3] = [
        b"GET /cpu?ms=\xff\xfe HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
        b"GET /suntimes?lat=0&lon=0&tz=\xc3\x28 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
        b"GET /cpu?ms=1\x00 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    ];
    for line in lines {
        let function = if line.starts_with(b"GET /cpu") {
            "cpu"
        } else {
            "suntimes"
        };
        for (host, server) in hosts.both(function) {
            let answer = raw_exchange(server.addr, line, 0, false);
            let what = format!("{host}: {:?}", String::from_utf8_lossy(line));
            assert!(
                (400..500).contains(&answer.status),
                "{what}: {}",
                answer.status
            );
        }
    }
}
