//! The function set's contract, end to end: every request gets the same status,
//! content type and body from the components under `spinbench serve` as from the
//! `<name>-native` binaries, and the status each case expects (the requests are
//! `e2e::contract`'s, which tests/real_hosts.rs sends to Spin and wasmtime too).
//! Off every route both answer `404`: `spinbench serve` with Spin's empty body.

use e2e::contract::{Case, LONDON, cases};
use e2e::{Answer, Server, functions, raw_exchange, send};

fn ask(server: &Server, case: &Case) -> Answer {
    case.send_to(&format!("http://{}", server.addr))
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
        let what = case.describe();
        assert_eq!(
            from_wasm.status,
            case.expect,
            "wasm: {what}: {}",
            from_wasm.text()
        );
        if !case.on_own_route() {
            // The router's own 404: Spin's, with an empty body, under
            // spinbench serve; the native server's names the path.
            assert_eq!(from_native.status, 404, "native: {what}");
            assert!(
                from_wasm.body.is_empty(),
                "wasm: {what}: {}",
                from_wasm.text()
            );
            continue;
        }
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
