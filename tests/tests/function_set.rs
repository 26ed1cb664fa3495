//! The function set's contract, end to end: every request gets the same status,
//! content type and body from the components under `spinbench serve` as from the
//! `<name>-native` binaries, and the status each case expects.

use e2e::{Answer, Server, functions, raw_exchange, send};

struct Case {
    function: &'static str,
    method: &'static str,
    target: String,
    content_type: Option<&'static str>,
    body: Vec<u8>,
    expect: u16,
}

fn case(function: &'static str, method: &'static str, target: &str, expect: u16) -> Case {
    Case {
        function,
        method,
        target: target.to_string(),
        content_type: None,
        body: Vec::new(),
        expect,
    }
}

fn json(method: &'static str, body: &[u8], expect: u16) -> Case {
    Case {
        content_type: Some("application/json"),
        body: body.to_vec(),
        ..case("echo", method, "/echo", expect)
    }
}

fn sha1(body: Vec<u8>, expect: u16) -> Case {
    Case {
        body,
        ..case("sha1", "POST", "/sha1", expect)
    }
}

const LONDON: &str = "/suntimes?lat=51.5074&lon=-0.1278&date=2024-06-21&tz=Europe/London";

fn cases() -> Vec<Case> {
    let seed = br#"{"FirstName":"John","LastName":"Doe","Age":33}"#;
    let patterned: Vec<u8> = (0..1_000_000u32).map(|i| (i % 253) as u8).collect();
    vec![
        case("hello", "GET", "/hello", 200),
        case("hello", "GET", "/hello?anything=1", 200),
        case("hello", "POST", "/hello", 405),
        case("hello", "DELETE", "/hello", 405),
        case("hello", "GET", "/hello/extra", 404),
        case("hello", "GET", "/", 404),
        case("hello", "GET", "/no-such-route", 404),
        json("POST", seed, 200),
        json(
            "POST",
            br#"{"firstName":"Ana","lastName":"Li","age":-20}"#,
            200,
        ),
        json("POST", br#"{"LastName":"Doe","Age":33}"#, 400),
        json("POST", br#"{"FirstName":7,"LastName":"Doe","Age":33}"#, 400),
        json(
            "POST",
            br#"{"FirstName":"J","LastName":"D","Age":"33"}"#,
            400,
        ),
        json(
            "POST",
            br#"{"FirstName":"J","LastName":"D","Age":2147483640}"#,
            400,
        ),
        json(
            "POST",
            br#"{"FirstName":"J","LastName":"D","Age":1e400}"#,
            400,
        ),
        json(
            "POST",
            br#"{"FirstName":"J","LastName":"D","Age":NaN}"#,
            400,
        ),
        json("POST", br#"{"FirstName":"J","LastName":"D","Age":3"#, 400),
        json(
            "POST",
            b"{\"FirstName\":\"\xc3\x28\",\"LastName\":\"D\",\"Age\":3}",
            400,
        ),
        // As deep as serde_json goes (128 levels): the guest's small stack must hold it.
        json("POST", deepest_json_field().as_bytes(), 200),
        json("POST", b"", 400),
        json("POST", b"null", 400),
        json("POST", &vec![b' '; 65 * 1024], 413),
        json("GET", b"", 405),
        json("PUT", seed, 405),
        Case {
            content_type: Some("text/plain"),
            ..json("POST", seed, 415)
        },
        case("cpu", "GET", "/cpu?ms=5", 200),
        case("cpu", "GET", "/cpu", 200),
        case("cpu", "POST", "/cpu?ms=0", 200),
        case("cpu", "GET", "/cpu?ms=-1", 400),
        case("cpu", "GET", "/cpu?ms=10001", 400),
        case("cpu", "GET", "/cpu?ms=soon", 400),
        case("cpu", "GET", "/cpu?ms=1&ms=2", 400),
        case("cpu", "GET", "/cpu?ms=184467440737095516160", 400),
        case("cpu", "PUT", "/cpu", 405),
        case("io", "GET", "/io?ms=30", 200),
        case("io", "POST", "/io?ms=0", 200),
        case("io", "GET", "/io?ms=60001", 400),
        case("io", "GET", "/io?ms=%FF", 400),
        case("io", "DELETE", "/io", 405),
        case("suntimes", "GET", LONDON, 200),
        case(
            "suntimes",
            "GET",
            "/suntimes?lat=78.22&lon=15.65&date=2024-06-21&tz=Arctic/Longyearbyen",
            200,
        ),
        case(
            "suntimes",
            "GET",
            "/suntimes?lat=-33.87&lon=151.21&date=2024-12-21&tz=%2B10:00",
            200,
        ),
        case("suntimes", "GET", "/suntimes?lon=-0.12", 400),
        case("suntimes", "GET", "/suntimes?lat=NaN&lon=0", 400),
        case("suntimes", "GET", "/suntimes?lat=inf&lon=0", 400),
        case("suntimes", "GET", "/suntimes?lat=91&lon=0", 400),
        case("suntimes", "GET", "/suntimes?lat=0&lon=-181", 400),
        case(
            "suntimes",
            "GET",
            "/suntimes?lat=0&lon=0&date=2024-02-30",
            400,
        ),
        case(
            "suntimes",
            "GET",
            "/suntimes?lat=0&lon=0&date=1899-12-31",
            400,
        ),
        case(
            "suntimes",
            "GET",
            "/suntimes?lat=0&lon=0&date=yesterday",
            400,
        ),
        case(
            "suntimes",
            "GET",
            "/suntimes?lat=0&lon=0&tz=Mars/Olympus_Mons",
            400,
        ),
        case("suntimes", "GET", "/suntimes?lat=0&lon=0&tz=%2B25:00", 400),
        case("suntimes", "POST", LONDON, 405),
        sha1(b"abc".to_vec(), 200),
        sha1(Vec::new(), 200),
        sha1(patterned, 200),
        case("sha1", "GET", "/sha1", 405),
    ]
}

/// A valid person with an extra field nested 126 objects deep, the most serde_json
/// parses (its recursion limit is 128, counting the outer object).
fn deepest_json_field() -> String {
    format!(
        r#"{{"FirstName":"J","LastName":"D","Age":1,"deep":{}1{}}}"#,
        r#"{"a":"#.repeat(126),
        "}".repeat(126)
    )
}

fn describe(case: &Case) -> String {
    format!(
        "{} {} ({} body bytes)",
        case.method,
        case.target,
        case.body.len()
    )
}

fn ask(server: &Server, case: &Case) -> Answer {
    send(
        case.method,
        &server.url(&case.target),
        case.content_type,
        &case.body,
    )
}

#[test]
fn components_and_natives_give_identical_answers() {
    let runner = Server::runner(&[]);
    let natives: Vec<(&str, Server)> = functions()
        .iter()
        .map(|f| (*f, Server::native(f)))
        .collect();
    let native = |function: &str| &natives.iter().find(|(f, _)| *f == function).unwrap().1;

    for case in cases() {
        let from_wasm = ask(&runner, &case);
        let from_native = ask(native(case.function), &case);
        let what = describe(&case);
        assert_eq!(
            from_wasm.status,
            case.expect,
            "wasm: {what}: {}",
            from_wasm.text()
        );
        assert_eq!(from_native, from_wasm, "native vs wasm: {what}");
        if from_wasm.status >= 400 {
            assert_eq!(from_wasm.content_type, "application/json", "{what}");
            let error = from_wasm.json()["error"].clone();
            assert!(
                error.as_str().is_some_and(|e| !e.is_empty()),
                "{what}: {error}"
            );
        }
    }
}

#[test]
fn endpoints_answer_what_the_contract_says() {
    let runner = Server::runner(&[]);
    let hello = e2e::get(&runner.url("/hello"));
    assert_eq!(
        (hello.status, hello.text().as_str()),
        (200, "Hello, World!")
    );
    assert!(hello.content_type.starts_with("text/plain"));

    let seed = br#"{"FirstName":"John","LastName":"Doe","Age":33}"#;
    let echo = send("POST", &runner.url("/echo"), Some("application/json"), seed);
    assert_eq!(
        echo.text(),
        r#"{"firstName":"Johnx","lastName":"Doex","age":43}"#
    );

    assert_eq!(
        e2e::get(&runner.url("/cpu?ms=3")).text(),
        r#"{"status":"ok","ms":3}"#
    );
    assert_eq!(
        e2e::get(&runner.url("/io?ms=3")).text(),
        r#"{"status":"ok","ms":3}"#
    );

    let hashes = send("POST", &runner.url("/sha1"), None, &[7u8; 4096 * 2 + 1]).json();
    assert_eq!(hashes["bytes"], 8193);
    assert_eq!(hashes["blocks"], 3);
    assert_eq!(hashes["sha1"].as_array().unwrap().len(), 3);

    let sun = e2e::get(&runner.url(LONDON)).json();
    assert!(sun.to_string().contains("2024-06-21"), "{sun}");
}

#[test]
fn io_waits_are_concurrent_not_serialized() {
    let runner = Server::runner(&[]);
    let start = std::time::Instant::now();
    let waits: Vec<_> = (0..50)
        .map(|_| {
            let url = runner.url("/io?ms=500");
            std::thread::spawn(move || e2e::get(&url).status)
        })
        .collect();
    for wait in waits {
        assert_eq!(wait.join().unwrap(), 200);
    }
    // 50 sequential waits would take 25 s; concurrent ones take ~0.5 s.
    assert!(
        start.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
}

/// Bodies larger than a limit are refused with a 413 whether their length is
/// declared up front or only discovered while streaming.
#[test]
fn oversized_bodies_are_413_on_both_hosts() {
    let runner = Server::runner(&[]);
    let sha1_native = Server::native("sha1");
    let declared = |target: &str, len: usize| {
        format!(
            "POST {target} HTTP/1.1\r\nhost: x\r\ncontent-length: {len}\r\nconnection: close\r\n\r\n"
        )
    };
    let chunked =
        "POST /sha1 HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    for server in [&runner, &sha1_native] {
        let lying = raw_exchange(
            server.addr,
            declared("/sha1", 65 << 20).as_bytes(),
            1 << 20,
            false,
        );
        assert_eq!(lying.status, 413, "{}", lying.text());
        let streamed = raw_exchange(server.addr, chunked.as_bytes(), 65 << 20, true);
        assert_eq!(streamed.status, 413, "{}", streamed.text());
        assert!(streamed.json()["error"].as_str().unwrap().contains("limit"));
    }
}
