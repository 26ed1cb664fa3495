//! Isolation: a misbehaving component (tests/misbehaving) served next to a
//! well-behaved one (hello). Each misbehaviour gets its documented status with a
//! JSON error, `/hello` keeps answering correctly while it runs and after it, and
//! the runner process stays up. The sandbox refuses files, environment, sockets,
//! name lookups and outbound HTTP.

use e2e::{Answer, Server, get, workspace_root};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The runner over tests/misbehaving/spin.toml, with a 2 s request deadline so the
/// runaway loop is cut short quickly.
fn runner() -> Server {
    let manifest = workspace_root().join("tests/misbehaving/spin.toml");
    Server::runner_with(&manifest, &["--request-timeout", "2"])
}

fn assert_hello(answer: &Answer, when: &str) {
    assert_eq!(
        (answer.status, answer.text().as_str()),
        (200, "Hello, World!"),
        "/hello {when}"
    );
}

/// Sends `path` once while a helper thread keeps asking `/hello`; returns the bad
/// answer and how many hellos were answered (all correctly) meanwhile.
fn misbehave_alongside_hello(server: &Server, path: &str) -> (Answer, usize) {
    let running = Arc::new(AtomicBool::new(true));
    let hellos = {
        let running = running.clone();
        let url = server.url("/hello");
        let what = format!("while {path} runs");
        std::thread::spawn(move || {
            let mut answered = 0;
            // Bounded in count and in time.
            let start = Instant::now();
            while (running.load(Ordering::Acquire) || answered < 3)
                && answered < 20_000
                && start.elapsed() < Duration::from_secs(30)
            {
                assert_hello(&get(&url), &what);
                answered += 1;
            }
            answered
        })
    };
    let bad = get(&server.url(path));
    running.store(false, Ordering::Release);
    (bad, hellos.join().expect("hello thread"))
}

#[test]
fn misbehaviours_are_contained_and_hello_keeps_answering() {
    let mut server = runner();
    assert_eq!(get(&server.url("/misbehave/ok")).text(), "fine");
    let cases = [
        ("/misbehave/trap", 500, "trapped"),
        ("/misbehave/loop", 504, "did not respond within"),
        ("/misbehave/hog", 500, "trapped"),
        ("/misbehave/stack", 500, "trapped"),
        ("/misbehave/huge", 500, "trapped"),
    ];
    for (path, status, says) in cases {
        let start = Instant::now();
        let (bad, hellos) = misbehave_alongside_hello(&server, path);
        let took = start.elapsed();
        assert_eq!(bad.status, status, "{path}: {}", bad.text());
        assert_eq!(bad.content_type, "application/json", "{path}");
        let error = bad.json()["error"].as_str().unwrap_or_default().to_string();
        assert!(error.contains(says), "{path}: {error}");
        assert!(hellos >= 3, "{path}: only {hellos} hellos answered");
        assert!(
            server.is_alive(),
            "{path} took the runner down:\n{}",
            server.log()
        );
        assert_hello(&get(&server.url("/hello")), &format!("after {path}"));
        eprintln!("{path}: {status} in {took:.1?}, {hellos} hellos meanwhile");
    }
    // The loop is cut at the deadline, not later.
    let start = Instant::now();
    assert_eq!(get(&server.url("/misbehave/loop")).status, 504);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(server.is_alive());
}

/// Several misbehaviours at once, with hellos among them.
#[test]
fn concurrent_misbehaviours_leave_hello_alone() {
    let mut server = runner();
    let bad: Vec<_> = [
        "trap", "hog", "stack", "huge", "loop", "trap", "hog", "stack",
    ]
    .into_iter()
    .map(|what| {
        let url = server.url(&format!("/misbehave/{what}"));
        std::thread::spawn(move || get(&url).status)
    })
    .collect();
    for _ in 0..50 {
        assert_hello(
            &get(&server.url("/hello")),
            "among concurrent misbehaviours",
        );
    }
    for status in bad {
        let status = status.join().unwrap();
        assert!([500, 504].contains(&status), "{status}");
    }
    assert!(server.is_alive());
    assert_hello(
        &get(&server.url("/hello")),
        "after concurrent misbehaviours",
    );
}

#[test]
fn the_sandbox_refuses_files_environment_sockets_and_outbound_http() {
    let server = runner();
    let report = get(&server.url("/misbehave/escape"));
    assert_eq!(report.status, 200, "{}", report.text());
    let report = report.json();
    for field in [
        "read_root",
        "read_passwd",
        "write_tmp",
        "tcp_connect",
        "udp_bind",
        "dns_lookup",
        "outbound_http",
    ] {
        assert_eq!(report[field], false, "{field} was allowed: {report}");
    }
    assert_eq!(report["env_vars"], 0, "{report}");
    assert_eq!(report.as_object().unwrap().len(), 8, "{report}");
}
