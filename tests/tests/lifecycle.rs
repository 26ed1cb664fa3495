//! The request lifecycle against clients that vanish, stall or flood: a client
//! that hangs up cancels its request (WASIp2 and WASIp3), a stalled request body
//! gets a `408`, an unread response is dropped, the connection cap holds, and
//! running out of file descriptors is survived quietly. Each test fails when its
//! guard is removed: without it, the instances stay taken and `/hello` gets 503s.

use e2e::{Server, artifact, get, parse_response, workspace_root};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn manifest(name: &str) -> PathBuf {
    workspace_root().join(name)
}

fn p3_manifest() -> PathBuf {
    artifact("p3/wasm32-wasip2/release/hello_p3.wasm");
    manifest("spin-p3.toml")
}

/// Sends a complete GET and hangs up `after` later, without reading.
fn hang_up(addr: SocketAddr, path: &str, after: Duration) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
        .expect("write");
    std::thread::sleep(after);
}

/// `clients` threads, each running `client` once; waits for all of them.
fn in_parallel(clients: usize, client: impl Fn(usize) + Send + Sync + 'static) {
    let client = std::sync::Arc::new(client);
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let client = client.clone();
            std::thread::spawn(move || client(i))
        })
        .collect();
    for thread in threads {
        thread.join().expect("client thread");
    }
}

/// Asks `/hello` until it answers 200, for at most `limit`; returns how long it took.
fn hello_within(server: &Server, limit: Duration) -> Duration {
    let start = Instant::now();
    let mut last = None;
    while start.elapsed() < limit {
        let answer = get(&server.url("/hello"));
        if answer.status == 200 {
            return start.elapsed();
        }
        last = Some((answer.status, answer.text()));
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!(
        "/hello not 200 within {limit:?}; last answer {last:?}\n{}",
        server.log()
    );
}

fn clients_that_hang_up_free_their_instances(manifest: &Path) {
    let server = Server::runner_with(manifest, &["--max-concurrent", "8", "--max-queued", "8"]);
    let addr = server.addr;
    in_parallel(20, move |_| {
        hang_up(addr, "/io?ms=20000", Duration::from_millis(5));
    });
    let took = hello_within(&server, Duration::from_secs(3));
    eprintln!(
        "{}: /hello answered {took:?} after 20 hang-ups",
        manifest.display()
    );
}

#[test]
fn wasip2_clients_that_hang_up_free_their_instances() {
    clients_that_hang_up_free_their_instances(&manifest("spin.toml"));
}

#[test]
fn wasip3_clients_that_hang_up_free_their_instances() {
    clients_that_hang_up_free_their_instances(&p3_manifest());
}

/// 400 clients send a long request and hang up at once: their tasks must not
/// outlive their permits in the reused instances and fill the pool for everyone.
#[test]
fn wasip3_orphans_cannot_fill_the_pool() {
    let server = Server::runner_with(
        &p3_manifest(),
        &[
            "--max-concurrent",
            "4",
            "--max-instances",
            "8",
            "--max-queued",
            "4",
        ],
    );
    let addr = server.addr;
    // In waves, so that each request gets an instance before its client goes.
    in_parallel(4, move |_| {
        for _ in 0..100 {
            hang_up(addr, "/io?ms=20000", Duration::from_millis(20));
        }
    });
    let took = hello_within(&server, Duration::from_secs(3));
    assert_eq!(get(&server.url("/io?ms=1")).status, 200);
    assert_eq!(get(&server.url("/echo")).status, 405);
    eprintln!("/hello answered {took:?} after 400 hang-ups");
}

/// `clients` parallel GETs of `path`; their statuses, sorted.
fn statuses_of(addr: SocketAddr, path: &'static str, clients: usize) -> Vec<u16> {
    let statuses = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = statuses.clone();
    in_parallel(clients, move |_| {
        let answer = get(&format!("http://{addr}{path}"));
        seen.lock().unwrap().push(answer.status);
    });
    let mut statuses = statuses.lock().unwrap().clone();
    statuses.sort_unstable();
    statuses
}

/// Idle WASIp3 instances hold pool slots but no permits. Four `io` instances,
/// kept idle for a minute, leave one slot of five: without the reclaim, three
/// of four concurrent `cpu` requests get `503 no instance of "cpu" available`
/// until the idle ones time out. With it, the idle instances give their slots
/// to the component that needs them, whichever it is.
#[test]
fn idle_wasip3_instances_give_their_slots_to_other_components() {
    let server = Server::runner_with(
        &p3_manifest(),
        &[
            "--max-concurrent",
            "4",
            "--max-instances",
            "5",
            "--max-instance-concurrent-reuse-count",
            "1",
            "--idle-instance-timeout",
            "60s",
        ],
    );
    let addr = server.addr;
    for (path, component) in [
        ("/io?ms=300", "io"),
        ("/cpu?ms=100", "cpu"),
        ("/io?ms=100", "io again"),
    ] {
        assert_eq!(
            statuses_of(addr, path, 4),
            vec![200; 4],
            "{component}: four at once, beside idle instances\n{}",
            server.log()
        );
    }
    assert_eq!(get(&server.url("/hello")).status, 200, "{}", server.log());
}

/// A busy WASIp3 host queues requests while it has capacity, rather than
/// refusing them: a response delivered in full gives its permit back at once
/// and leaves its instance open. Here three long requests hold three of four
/// permits, and eight quick `method` requests follow one by one, each expected
/// to get `status`: if a quick request's permit stays with the long requests'
/// instance, the next one waits out the queue timeout and gets a `503`.
fn quick_requests_beside_long_ones_give_their_permits_back(method: &str, status: u16) {
    let request = |method: &str, path: &str| {
        format!("{method} {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").into_bytes()
    };
    let server = Server::runner_with(
        &p3_manifest(),
        &["--max-concurrent", "4", "--max-queued", "8"],
    );
    let addr = server.addr;
    let long = std::thread::spawn(move || statuses_of(addr, "/io?ms=3000", 3));
    std::thread::sleep(Duration::from_millis(500));
    for i in 0..8 {
        let answer = e2e::raw_exchange(server.addr, &request(method, "/io?ms=10"), 0, false);
        assert_eq!(
            answer.status,
            status,
            "quick {method} {i} beside three long requests: {}\n{}",
            answer.text(),
            server.log()
        );
    }
    assert_eq!(long.join().expect("long requests"), vec![200; 3]);
}

/// hyper stops polling a body once its `Content-Length` is written, without
/// asking for its end; counted as abandoned, each such response closed its
/// instance and kept its permit until the instance's other requests ended
/// (53,913 `503`s of 97,921 at 10,000 users).
#[test]
fn wasip3_complete_responses_give_their_permits_back() {
    quick_requests_beside_long_ones_give_their_permits_back("GET", 200);
}

/// A `HEAD` response declares a `Content-Length` and hyper sends no body at
/// all: nothing of it is left undelivered when hyper drops it. (The functions
/// answer `HEAD` with a `405` and its JSON error's length.)
#[test]
fn wasip3_head_responses_give_their_permits_back() {
    quick_requests_beside_long_ones_give_their_permits_back("HEAD", 405);
}

/// `POST /echo` declaring 100 bytes and sending one: answered 408 with a JSON
/// error after the body read timeout; returns how long it took.
fn stalled_echo(addr: SocketAddr) -> (u16, String, Duration) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let start = Instant::now();
    stream
        .write_all(
            b"POST /echo HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{",
        )
        .expect("write");
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let took = start.elapsed();
    let answer = parse_response(&raw);
    let error = answer.json()["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (answer.status, error, took)
}

fn stalled_bodies_get_408_and_free_their_instances(manifest: &Path) {
    let server = Server::runner_with(
        manifest,
        &[
            "--max-concurrent",
            "8",
            "--body-read-timeout",
            "1",
            "--queue-timeout",
            "5",
        ],
    );
    let addr = server.addr;
    let answers = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let collected = answers.clone();
    in_parallel(20, move |_| {
        let answer = stalled_echo(addr);
        collected.lock().unwrap().push(answer);
    });
    for (status, error, took) in answers.lock().unwrap().iter() {
        assert_eq!(*status, 408, "{error}");
        assert!(error.contains("no data received for 1s"), "{error}");
        // 1 s for the first 8; the queued ones get an instance as those go
        // (8 more at 2 s, the last 4 at 3 s).
        assert!(
            *took >= Duration::from_millis(900) && *took < Duration::from_secs(6),
            "408 after {took:?}"
        );
    }
    hello_within(&server, Duration::from_secs(2));
}

#[test]
fn wasip2_stalled_bodies_get_408_and_free_their_instances() {
    stalled_bodies_get_408_and_free_their_instances(&manifest("spin.toml"));
}

#[test]
fn wasip3_stalled_bodies_get_408_and_free_their_instances() {
    stalled_bodies_get_408_and_free_their_instances(&p3_manifest());
}

/// A client asks for a 512 MiB response and never reads it: after the write
/// timeout the connection is closed and the one instance freed for `/hello`.
#[test]
fn an_unread_response_frees_its_instance_after_the_write_timeout() {
    let server = Server::runner_with(
        &workspace_root().join("tests/misbehaving/spin.toml"),
        &[
            "--max-instance-memory",
            "1024",
            "--max-instances",
            "4",
            "--max-concurrent",
            "1",
            // A queued /hello gives up long before the write timeout frees the
            // instance, so the 503 below cannot race with it.
            "--queue-timeout",
            "100ms",
            "--response-write-timeout",
            "2",
        ],
    );
    let mut reader = TcpStream::connect(server.addr).expect("connect");
    reader
        .write_all(b"GET /misbehave/huge HTTP/1.1\r\nhost: x\r\n\r\n")
        .expect("write");
    // The response starts (the instance is taken), then stalls.
    let mut first = [0u8; 12];
    reader.read_exact(&mut first).expect("response head");
    assert_eq!(&first, b"HTTP/1.1 200");
    assert_eq!(
        get(&server.url("/hello")).status,
        503,
        "the one instance is taken"
    );
    let took = hello_within(&server, Duration::from_secs(8));
    eprintln!("/hello answered {took:?} after the unread response began");
    drop(reader);
}

/// One GET /hello on `stream`, keeping the connection; the answer's status, or
/// `None` if nothing came within `wait`.
fn hello_on(stream: &mut TcpStream, wait: Duration) -> Option<u16> {
    stream.set_read_timeout(Some(wait)).unwrap();
    stream
        .write_all(b"GET /hello HTTP/1.1\r\nhost: x\r\n\r\n")
        .expect("write");
    let mut raw = Vec::new();
    let mut buf = [0u8; 1024];
    while !raw.ends_with(b"Hello, World!") {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return None;
            }
            Err(e) => panic!("read: {e}"),
        }
    }
    Some(parse_response(&raw).status)
}

#[test]
fn connections_past_the_cap_wait_until_one_closes() {
    let server = Server::runner(&["--max-connections", "2"]);
    let mut first = TcpStream::connect(server.addr).unwrap();
    let mut second = TcpStream::connect(server.addr).unwrap();
    let wait = Duration::from_secs(5);
    assert_eq!(hello_on(&mut first, wait), Some(200));
    assert_eq!(hello_on(&mut second, wait), Some(200));
    // The third waits in the backlog: connected, not served.
    let mut third = TcpStream::connect(server.addr).unwrap();
    assert_eq!(hello_on(&mut third, Duration::from_secs(1)), None);
    // The open ones keep being served.
    assert_eq!(hello_on(&mut first, wait), Some(200));
    drop(first);
    let start = Instant::now();
    let mut raw = Vec::new();
    let mut buf = [0u8; 1024];
    third.set_read_timeout(Some(wait)).unwrap();
    while !raw.ends_with(b"Hello, World!") {
        let n = third
            .read(&mut buf)
            .expect("the third connection is served");
        assert!(n > 0, "closed");
        raw.extend_from_slice(&buf[..n]);
    }
    assert_eq!(parse_response(&raw).status, 200);
    eprintln!(
        "third connection served {:?} after the first closed",
        start.elapsed()
    );
    assert_eq!(hello_on(&mut second, wait), Some(200));
}

/// With 64 file descriptors, 150 connections run the runner out of them: it
/// backs off and logs once per episode, not 100 lines a second, and serves
/// again once they close.
#[test]
fn running_out_of_descriptors_is_survived_quietly() {
    let runner = artifact("release/spinbench");
    let manifest = manifest("spin.toml");
    let cache = workspace_root().join("target/e2e-cache");
    let server = Server::start(
        "spinbench-emfile",
        std::path::Path::new("sh"),
        &[
            "-c",
            "ulimit -n 64 && exec \"$0\" \"$@\"",
            runner.to_str().unwrap(),
            "serve",
            "--manifest",
            manifest.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
    );
    assert_eq!(get(&server.url("/hello")).status, 200);
    let flood: Vec<TcpStream> = (0..150)
        .filter_map(|_| TcpStream::connect(server.addr).ok())
        .collect();
    let held_for = Duration::from_secs(3);
    std::thread::sleep(held_for);
    drop(flood);
    hello_within(&server, Duration::from_secs(5));
    let log = server.log();
    let failures = log.matches("accept failed").count();
    assert!(
        log.contains("Too many open files"),
        "the flood did not exhaust descriptors:\n{log}"
    );
    assert!(
        failures <= 3,
        "{failures} 'accept failed' lines in {held_for:?}:\n{log}"
    );
}
