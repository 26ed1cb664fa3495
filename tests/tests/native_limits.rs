//! The native servers (`<name>-native`) give the guarantees `spinbench serve` gives,
//! under the same flags: a request deadline (`--request-timeout`, 504), a body that
//! stops arriving (`--body-read-timeout`, 408) and a client that stops reading its
//! response (dropped after as long), a connection cap (`--max-connections`), an
//! accept loop that backs off quietly when out of descriptors, and CPU-bound
//! handlers kept off the async workers.

use e2e::{Answer, Server, artifact, get, read_response};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// A kept-alive connection that has sent one `GET` and may read its answer.
fn send_get(server: &Server, path: &str) -> TcpStream {
    let mut stream = TcpStream::connect(server.addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
    stream
}

#[test]
fn cpu_work_leaves_the_async_workers_free() {
    let server = Server::native("cpu");
    // One busy request more than the runtime has workers (one per core).
    let busy = thread::available_parallelism().map_or(2, std::num::NonZero::get) + 1;
    let (done, finished) = mpsc::channel();
    let heavy: Vec<_> = (0..busy)
        .map(|_| {
            let url = server.url("/cpu?ms=3000");
            let done = done.clone();
            thread::spawn(move || {
                let status = get(&url).status;
                done.send(Instant::now()).unwrap();
                status
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(500));
    let start = Instant::now();
    let light = get(&server.url("/cpu?ms=0"));
    let answered = Instant::now();
    assert_eq!(light.status, 200, "{}", light.text());
    for request in heavy {
        assert_eq!(request.join().unwrap(), 200);
    }
    let first_heavy_done = finished.try_iter().min().unwrap();
    let took = answered - start;
    assert!(
        answered < first_heavy_done && took < Duration::from_millis(1500),
        "/cpu?ms=0 took {took:?} while {busy} /cpu?ms=3000 ran (answered {:?} after the first of them ended)",
        answered.saturating_duration_since(first_heavy_done)
    );
}

/// Sends a request head declaring a 100-byte body and one byte of it, then nothing.
fn stalled_body(server: &Server, path: &str, content_type: &str) -> (Answer, Duration) {
    let mut stream = TcpStream::connect(server.addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    let start = Instant::now();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: {content_type}\r\ncontent-length: 100\r\n\r\n{{"
    )
    .unwrap();
    let answer = read_response(&mut stream)
        .unwrap_or_else(|e| panic!("no answer to a stalled body on {path}: {e}"));
    (answer, start.elapsed())
}

#[test]
fn a_stalled_request_body_gets_a_408() {
    // echo reads its body whole; sha1 hashes it a chunk at a time as it arrives.
    for (function, content_type) in [
        ("echo", "application/json"),
        ("sha1", "application/octet-stream"),
    ] {
        let server = Server::native_with(function, &["--body-read-timeout", "1"]);
        let (answer, took) = stalled_body(&server, &format!("/{function}"), content_type);
        assert_eq!(answer.status, 408, "{function}: {}", answer.text());
        assert_eq!(answer.content_type, "application/json");
        let error = answer.json()["error"].as_str().unwrap().to_string();
        assert!(error.contains("stalled"), "{function}: {error}");
        assert!(
            took < Duration::from_secs(5),
            "{function}: 408 after {took:?}"
        );
    }
}

#[test]
fn a_request_past_its_deadline_gets_a_504() {
    // A waiting handler (io) and a computing one on the blocking pool (cpu).
    for (function, path) in [("io", "/io?ms=5000"), ("cpu", "/cpu?ms=3000")] {
        let server = Server::native_with(function, &["--request-timeout", "1"]);
        let start = Instant::now();
        let answer = get(&server.url(path));
        let took = start.elapsed();
        assert_eq!(answer.status, 504, "{path}: {}", answer.text());
        assert_eq!(answer.content_type, "application/json");
        let error = answer.json()["error"].as_str().unwrap().to_string();
        assert!(error.contains("did not respond within 1s"), "{error}");
        assert!(
            took < Duration::from_millis(2500),
            "{path}: 504 after {took:?}"
        );
    }
}

#[test]
fn connections_past_the_cap_wait_until_one_closes() {
    let server = Server::native_with("hello", &["--max-connections", "4"]);
    let mut open: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut stream = send_get(&server, "/hello");
            assert_eq!(read_response(&mut stream).unwrap().status, 200);
            stream
        })
        .collect();
    // The kernel completes the fifth connection's handshake (the listen backlog), but
    // the server does not accept it while four are open.
    let mut fifth = send_get(&server, "/hello");
    fifth
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    match read_response(&mut fifth) {
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        other => panic!("a fifth connection was served past a cap of 4: {other:?}"),
    }
    drop(open.pop());
    fifth
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let answer = read_response(&mut fifth).expect("served once a connection closed");
    assert_eq!(answer.status, 200);
}

#[test]
fn a_client_that_stops_reading_is_dropped() {
    // Each request gets a ~60 KB 404 (the path is quoted back); 500 of them pipelined
    // are far more than the socket buffers hold, so the server's writes stall.
    const REQUESTS: usize = 500;
    let server = Server::native_with("hello", &["--body-read-timeout", "1"]);
    let path = format!("/{}", "a".repeat(60_000));
    let request = format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n");
    let mut stream = TcpStream::connect(server.addr).expect("connect");
    let mut writer = stream.try_clone().unwrap();
    writer
        .set_write_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let sender = thread::spawn(move || {
        for _ in 0..REQUESTS {
            if writer.write_all(request.as_bytes()).is_err() {
                return;
            }
        }
    });
    thread::sleep(Duration::from_secs(4));
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut received = 0;
    let mut buffer = vec![0u8; 1 << 16];
    let ended = loop {
        match stream.read(&mut buffer) {
            Ok(0) => break "closed",
            Ok(n) => received += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                break "still open";
            }
            Err(_) => break "reset",
        }
    };
    let _ = sender.join();
    assert!(
        ended != "still open" && received < REQUESTS * path.len(),
        "the server kept a connection whose client stopped reading ({ended}, {received} bytes received)"
    );
    assert_eq!(get(&server.url("/hello")).status, 200);
}

#[test]
fn out_of_descriptors_the_accept_loop_backs_off_quietly() {
    // hello-native with room for about a dozen connections: the rest of 40 wait in
    // the backlog, and every accept of them fails with EMFILE until some close.
    let program = artifact("release/hello-native");
    let server = Server::start(
        "hello-emfile",
        Path::new("/bin/sh"),
        &[
            "-c",
            "ulimit -n 24 && exec \"$0\" \"$@\"",
            program.to_str().unwrap(),
        ],
    );
    let clients: Vec<TcpStream> = (0..40)
        .map(|_| TcpStream::connect(server.addr).expect("connect"))
        .collect();
    thread::sleep(Duration::from_secs(2));
    // Counted before the clients close, which ends the failures. A descriptor freed
    // meanwhile (the harness's start-up probe closing) may start a second run.
    let log = server.log();
    let failures = log.matches("accept failed").count();
    assert!(
        (1..=3).contains(&failures),
        "{failures} accept failures logged in 2 s out of descriptors:\n{}",
        &log[..log.len().min(2000)]
    );
    drop(clients);
    let start = Instant::now();
    assert_eq!(get(&server.url("/hello")).status, 200);
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(server.log().contains("accepting again"));
}
