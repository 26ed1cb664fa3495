//! Isolation: a misbehaving component (tests/misbehaving) served next to a
//! well-behaved one (hello). Each misbehaviour gets its documented status with a
//! JSON error, `/hello` keeps answering correctly while it runs and after it, and
//! the runner process stays up. The sandbox refuses files, environment, sockets,
//! name lookups and outbound HTTP. Host memory a guest can hold outside its
//! linear memory (header sets, stderr) is bounded, and guest stderr cannot
//! block the runner or forge its log.

use e2e::{Answer, Server, get, get_within, workspace_root};
use std::io::Read;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn manifest() -> PathBuf {
    workspace_root().join("tests/misbehaving/spin.toml")
}

/// The runner over tests/misbehaving/spin.toml, with a 2 s request deadline so the
/// runaway loop is cut short quickly.
fn runner() -> Server {
    runner_with(&[])
}

fn runner_with(extra_args: &[&str]) -> Server {
    let mut args = vec!["--request-timeout", "2"];
    args.extend_from_slice(extra_args);
    Server::runner_with(&manifest(), &args)
}

fn error_of(answer: &Answer) -> String {
    answer.json()["error"]
        .as_str()
        .unwrap_or_default()
        .to_string()
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

/// The TCP connect and the outbound request aim at a port this test listens on,
/// so they fail only because they are denied (a refused connection would not
/// prove anything), and nothing reaches the listener.
#[test]
fn the_sandbox_refuses_files_environment_sockets_and_outbound_http() {
    let server = runner();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let report = get(&server.url(&format!("/misbehave/escape?port={port}")));
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
    assert_eq!(report.as_object().unwrap().len(), 10, "{report}");
    // Denied by the host, not refused by the network.
    assert_eq!(report["tcp_error"], "PermissionDenied", "{report}");
    let outbound = report["outbound_error"].as_str().unwrap_or_default();
    assert!(outbound.contains("HttpRequestDenied"), "{report}");
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("something reached the test's listener: {other:?}"),
    }
}

/// The linear memory cap is the `--max-instance-memory` value, under both
/// allocators: 15 MiB fits under the default 16 MiB, 17 MiB does not; with
/// `--max-instance-memory 64`, 40 MiB fits and 65 MiB does not.
#[test]
fn the_memory_cap_is_the_flag_value_under_both_allocators() {
    for allocation in ["pooling", "on-demand"] {
        let cases: [(&str, &[(usize, u16)]); 2] = [
            ("16", &[(15, 200), (17, 500)]),
            ("64", &[(40, 200), (65, 500)]),
        ];
        for (cap, allocations) in cases {
            let mut server =
                runner_with(&["--allocation", allocation, "--max-instance-memory", cap]);
            for &(mib, status) in allocations {
                let answer = get(&server.url(&format!("/misbehave/alloc?mib={mib}")));
                assert_eq!(
                    answer.status,
                    status,
                    "{allocation}, cap {cap} MiB, {mib} MiB: {}",
                    answer.text()
                );
                assert_hello(&get(&server.url("/hello")), "after an allocation");
            }
            assert!(server.is_alive());
        }
    }
}

fn wait_for_log(server: &Server, what: &str) -> String {
    let start = Instant::now();
    loop {
        let log = server.log();
        if log.contains(what) || start.elapsed() > Duration::from_secs(5) {
            return log;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A guest that keeps thousands of header sets alive holds host memory its
/// linear memory cap does not count (the issue: 3,000 sets of one 100 KiB value
/// took the runner from 30 to 326 MiB). The field-size limit refuses a set
/// past 64 KiB, the resource cap a 257th live resource: each is a 500, the
/// memory comes back, and the neighbour is unaffected.
#[test]
fn header_set_floods_are_refused_and_their_memory_returned() {
    let mut server = runner();
    for _ in 0..50 {
        get(&server.url("/hello"));
    }
    let before = server.rss_kib();
    let cases = [
        // The flood: refused at the first set, by the field-size limit.
        ("kib=100&count=3000", 500),
        // One set past the field-size limit.
        ("kib=100&count=1", 500),
        // Small sets, many of them: refused by the resource cap.
        ("kib=8&count=3000", 500),
        // Within both: 100 sets of 32 KiB.
        ("kib=32&count=100", 200),
    ];
    for (query, status) in cases {
        let (answer, hellos) =
            misbehave_alongside_hello(&server, &format!("/misbehave/fields?{query}"));
        assert_eq!(answer.status, status, "{query}: {}", answer.text());
        if status == 500 {
            assert!(
                error_of(&answer).contains("misbehaving"),
                "{query}: {}",
                answer.text()
            );
        }
        assert!(hellos >= 3, "{query}: only {hellos} hellos");
    }
    let after = server.rss_kib();
    eprintln!("runner RSS: {before} KiB before the floods, {after} KiB after");
    assert!(
        after < before + 32 * 1024,
        "RSS grew from {before} to {after} KiB"
    );
    assert!(server.is_alive());
}

/// Guest stderr lands in the runner's log prefixed with the component and its
/// request, control characters escaped, and at most 64 KiB of it per request
/// followed by one marker; a guest cannot write a line that looks like the runner's.
#[test]
fn guest_stderr_is_prefixed_escaped_and_bounded() {
    let server = runner();
    let answer = get(&server.url("/misbehave/stderr?kib=64&lines=16"));
    assert_eq!(answer.status, 200, "{}", answer.text());
    let log = wait_for_log(&server, "truncated");
    let guest: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("guest[misbehaving #"))
        .collect();
    let forged = guest
        .iter()
        .find(|l| l.ends_with("]: error: forged runner line"))
        .unwrap_or_else(|| panic!("no prefixed forged line in:\n{log}"));
    let prefix = &forged[..forged.find("]: ").unwrap() + 3];
    assert!(
        !log.lines().any(|l| l.starts_with("error: forged")),
        "a guest wrote a runner line:\n{log}"
    );
    assert!(!log.contains('\x1b'), "a terminal escape got through");
    assert!(
        guest
            .iter()
            .any(|l| l.ends_with("\\u{1b}[2Jcleared screen"))
    );
    let request: Vec<&str> = guest
        .iter()
        .copied()
        .filter(|l| l.starts_with(prefix))
        .collect();
    let text_bytes: usize = request.iter().map(|l| l.len() - prefix.len()).sum();
    assert!(
        text_bytes <= 64 * 1024 + 200,
        "{text_bytes} bytes logged for one request"
    );
    assert!(
        text_bytes >= 60 * 1024,
        "{text_bytes} bytes logged for one request"
    );
    let markers = request.iter().filter(|l| l.contains("truncated")).count();
    assert_eq!(markers, 1, "truncation markers");
    assert!(
        !log.lines().any(|l| l.starts_with("eeee")),
        "unprefixed guest output"
    );
}

/// The attack: four requests write 64 KiB lines in a loop while the
/// runner's stderr is a pipe nobody reads. Guest output goes through a bounded
/// queue to one writer thread (which blocks) and is dropped when the queue is
/// full, so no request waits: the floods finish and `/hello` answers at once.
#[test]
fn a_stderr_nobody_reads_blocks_no_request() {
    let mut server = Server::runner_with_unread_stderr(&manifest(), &["--request-timeout", "10"]);
    let floods: Vec<_> = (0..4)
        .map(|_| {
            let url = server.url("/misbehave/stderr?kib=64&lines=2000");
            std::thread::spawn(move || get_within(&url, Duration::from_secs(20)))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..5 {
        let hello = get_within(&server.url("/hello"), Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("/hello while stderr is stalled: {e}"));
        assert_hello(&hello, "while stderr is stalled");
    }
    for flood in floods {
        let answer = flood.join().unwrap().expect("the flood request itself");
        assert_eq!(answer.status, 200, "{}", answer.text());
    }
    assert!(server.is_alive());
    server.kill();
    // What reached the pipe: runner lines and prefixed guest lines only.
    let mut stderr = Vec::new();
    let _ = server.take_stderr().unwrap().read_to_end(&mut stderr);
    let stderr = String::from_utf8_lossy(&stderr);
    assert!(stderr.contains("guest[misbehaving #"), "{stderr:.2000}");
    assert!(
        !stderr.lines().any(|l| l.starts_with("eeee")),
        "unprefixed guest output reached stderr"
    );
}
