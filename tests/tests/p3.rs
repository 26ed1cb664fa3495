//! The WASIp3 flavour (`spin-p3.toml`) under `spinbench serve`: reused
//! instances answer exactly as the WASIp2 components (fresh instance per
//! request) do, serve one component's requests concurrently, and keep the
//! same limits (deadline → 504, a fresh instance after it).

use e2e::{Answer, Server, artifact, get, send, workspace_root};
use std::time::{Duration, Instant};

fn p3_runner(extra_args: &[&str]) -> Server {
    artifact("p3/wasm32-wasip2/release/hello_p3.wasm");
    Server::runner_with(&workspace_root().join("spin-p3.toml"), extra_args)
}

/// (method, target, content type, body)
fn requests() -> Vec<(&'static str, String, Option<&'static str>, Vec<u8>)> {
    let seed = br#"{"FirstName":"John","LastName":"Doe","Age":33}"#.to_vec();
    let patterned: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let mut requests = vec![
        ("GET", "/hello".to_string(), None, vec![]),
        ("POST", "/hello".to_string(), None, vec![]),
        ("GET", "/hello/extra".to_string(), None, vec![]),
        ("GET", "/hello-sdk".to_string(), None, vec![]),
        ("POST", "/hello-sdk?anything=1".to_string(), None, vec![]),
        ("POST", "/echo".to_string(), Some("application/json"), seed),
        (
            "POST",
            "/echo".to_string(),
            Some("application/json"),
            br#"{"LastName":"Doe"}"#.to_vec(),
        ),
        (
            "POST",
            "/echo".to_string(),
            Some("application/json"),
            b"not json".to_vec(),
        ),
        ("GET", "/echo".to_string(), None, vec![]),
        ("GET", "/cpu?ms=3".to_string(), None, vec![]),
        ("GET", "/cpu?ms=-1".to_string(), None, vec![]),
        ("GET", "/io?ms=20".to_string(), None, vec![]),
        ("GET", "/io?ms=x".to_string(), None, vec![]),
        (
            "GET",
            "/suntimes?lat=51.5074&lon=-0.1278&date=2024-06-21&tz=Europe/London".to_string(),
            None,
            vec![],
        ),
        (
            "GET",
            "/suntimes?lat=91&lon=0&date=2024-06-21".to_string(),
            None,
            vec![],
        ),
        ("POST", "/sha1".to_string(), None, b"abc".to_vec()),
        ("POST", "/sha1".to_string(), None, patterned),
        ("POST", "/sha1".to_string(), None, vec![]),
        ("GET", "/sha1".to_string(), None, vec![]),
    ];
    // Past the 128-request reuse limit of one instance, so the answers also
    // come from a second instance.
    for i in 0..140 {
        requests.push(("GET", format!("/cpu?ms={}", i % 3), None, vec![]));
    }
    requests
}

#[test]
fn p3_answers_match_p2() {
    let p2 = Server::runner(&[]);
    let p3 = p3_runner(&[]);
    for (method, target, content_type, body) in requests() {
        let expected: Answer = send(method, &p2.url(&target), content_type, &body);
        let actual = send(method, &p3.url(&target), content_type, &body);
        assert_eq!(actual, expected, "{method} {target}");
    }
    let log = p3.log();
    assert!(log.contains("WASIp3, instances reused"), "{log}");
}

#[test]
fn p3_serves_one_components_requests_concurrently() {
    const N: usize = 24;
    let server = p3_runner(&[]);
    // Warm up (compile or load, first instance).
    assert_eq!(get(&server.url("/io?ms=1")).status, 200);
    let start = Instant::now();
    let handles: Vec<_> = (0..N)
        .map(|_| {
            let url = server.url("/io?ms=300");
            std::thread::spawn(move || get(&url))
        })
        .collect();
    for handle in handles {
        let answer = handle.join().unwrap();
        assert_eq!(answer.status, 200, "{}", answer.text());
    }
    let elapsed = start.elapsed();
    // Serially it would take N × 300 ms = 7.2 s; concurrently, about 300 ms.
    assert!(
        elapsed < Duration::from_millis(1_500),
        "{N} concurrent /io?ms=300 took {elapsed:?}"
    );
}

#[test]
fn p3_deadline_is_504_and_the_next_request_gets_a_working_instance() {
    let server = p3_runner(&["--request-timeout", "1"]);
    for target in ["/cpu?ms=3000", "/io?ms=3000"] {
        let start = Instant::now();
        let answer = get(&server.url(target));
        assert_eq!(answer.status, 504, "{target}: {}", answer.text());
        assert!(start.elapsed() < Duration::from_millis(2_500), "{target}");
        let next = get(&server.url("/cpu?ms=1"));
        assert_eq!(next.status, 200, "after {target}: {}", next.text());
    }
    let hello = get(&server.url("/hello"));
    assert_eq!(hello.status, 200);
}
