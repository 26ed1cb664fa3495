//! The runner's HTTP edge: request head and body size limits, the header-read
//! timeout (slowloris) that also closes idle keep-alive connections, and graceful
//! shutdown on SIGTERM within its bound.

use e2e::{Server, get, parse_response, raw_exchange};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn runner() -> Server {
    Server::runner(&[
        "--header-read-timeout",
        "1",
        "--max-header-bytes",
        "16384",
        "--max-request-body",
        "1000000",
    ])
}

/// Reads until the server closes the connection; returns the bytes and how long it took.
fn read_until_closed(stream: &mut TcpStream) -> (Vec<u8>, Duration) {
    let start = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    }
    (data, start.elapsed())
}

#[test]
fn oversized_heads_and_bodies_are_refused() {
    let server = runner();
    // A 20 KiB header: 431 from the HTTP layer, before any routing, and the
    // connection closed (the client asked to keep it).
    let head = format!(
        "GET /hello HTTP/1.1\r\nhost: x\r\nx-big: {}\r\n\r\n",
        "a".repeat(20 * 1024)
    );
    let (raw, took) = {
        let mut stream = TcpStream::connect(server.addr).unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        read_until_closed(&mut stream)
    };
    let answer = parse_response(&raw);
    assert_eq!(answer.status, 431, "{}", answer.text());
    // Well before the 1 s idle timeout would close it anyway.
    assert!(
        took < Duration::from_millis(800),
        "connection left open {took:?} after the 431"
    );

    // A declared body over --max-request-body: the runner's own 413, JSON, before
    // any instance exists (hello would ignore the body).
    let head =
        "POST /hello HTTP/1.1\r\nhost: x\r\ncontent-length: 2000000\r\nconnection: close\r\n\r\n";
    let answer = raw_exchange(server.addr, head.as_bytes(), 0, false);
    assert_eq!(answer.status, 413, "{}", answer.text());
    assert!(answer.json()["error"].as_str().unwrap().contains("1000000"));

    // A chunked body growing past it: the component sees its body end in an
    // error, and the runner answers 413 (sha1's own 64 MiB limit is not reached).
    let head =
        "POST /sha1 HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    let answer = raw_exchange(server.addr, head.as_bytes(), 2_000_000, true);
    assert_eq!(answer.status, 413, "{}", answer.text());
    assert!(answer.json()["error"].as_str().unwrap().contains("1000000"));

    assert_eq!(get(&server.url("/hello")).status, 200);
}

#[test]
fn slow_heads_and_idle_connections_are_closed() {
    let server = runner();
    // Slowloris: half a request head, then silence.
    let mut slow = TcpStream::connect(server.addr).unwrap();
    slow.write_all(b"GET /hello HTTP/1.1\r\nhost: x\r\n")
        .unwrap();
    let (_, took) = read_until_closed(&mut slow);
    assert!(
        took < Duration::from_secs(4),
        "slow head kept open {took:?}"
    );

    // Idle keep-alive: one full exchange, then nothing.
    let mut idle = TcpStream::connect(server.addr).unwrap();
    idle.write_all(b"GET /hello HTTP/1.1\r\nhost: x\r\n\r\n")
        .unwrap();
    let (data, took) = read_until_closed(&mut idle);
    assert!(String::from_utf8_lossy(&data).contains("Hello, World!"));
    assert!(
        took < Duration::from_secs(4),
        "idle connection kept open {took:?}"
    );
    assert_eq!(get(&server.url("/hello")).status, 200);
}

#[test]
fn sigterm_finishes_in_flight_requests_within_the_grace_period() {
    // An in-flight request shorter than the grace period completes.
    let mut server = Server::runner(&["--shutdown-grace", "5"]);
    let url = server.url("/io?ms=1500");
    let in_flight = std::thread::spawn(move || get(&url));
    std::thread::sleep(Duration::from_millis(300));
    let took = server
        .terminate(Duration::from_secs(8))
        .expect("runner exits");
    let answer = in_flight.join().unwrap();
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert!(
        took >= Duration::from_millis(900),
        "exited before the request finished: {took:?}"
    );

    // One longer than the grace period is cut off at the bound.
    let mut server = Server::runner(&["--shutdown-grace", "1"]);
    let addr = server.addr;
    let stuck = std::thread::spawn(move || {
        raw_exchange_or_nothing(
            addr,
            b"GET /io?ms=20000 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
        )
    });
    std::thread::sleep(Duration::from_millis(300));
    let took = server
        .terminate(Duration::from_secs(5))
        .expect("runner exits");
    assert!(
        took < Duration::from_secs(3),
        "grace bound exceeded: {took:?}"
    );
    let _ = stuck.join();
}

fn raw_exchange_or_nothing(addr: std::net::SocketAddr, request: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request).unwrap();
    read_until_closed(&mut stream).0
}
