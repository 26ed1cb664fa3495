//! A request body that trickles in, never stalling long enough for
//! `--body-read-timeout`, ends at `--body-total-timeout` with a `408` and a
//! JSON error that says so, for a WASIp2 component, a WASIp3 one and a WAGI
//! program alike; the instance is freed and the host serves on. Without the
//! total deadline the body would hold its instance until the client stopped
//! (here: the request deadline's 504 at 20 s).

use e2e::{Server, artifact, get, parse_response, workspace_root};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

/// `POST path` declaring 100 bytes and sending one every 300 ms (each well
/// within the read timeout) until the server answers; the status, the JSON
/// error and how long it took.
fn trickle(addr: SocketAddr, path: &str) -> (u16, String, Duration) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(40)))
        .unwrap();
    let start = Instant::now();
    stream
        .write_all(
            format!(
                "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain\r\ncontent-length: 100\r\n\r\n"
            )
            .as_bytes(),
        )
        .expect("write");
    let mut writer = stream.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        for _ in 0..100 {
            if writer.write_all(b"x").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    });
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let took = start.elapsed();
    let _ = stream.shutdown(std::net::Shutdown::Both);
    let _ = sender.join();
    let answer = parse_response(&raw);
    let error = answer.json()["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (answer.status, error, took)
}

fn check(manifest: &Path, path: &str, probe: &str) {
    let server = Server::runner_with(
        manifest,
        &[
            "--body-read-timeout",
            "5",
            "--body-total-timeout",
            "2",
            "--request-timeout",
            "20",
            "--max-concurrent",
            "1",
            "--max-instances",
            "2",
        ],
    );
    let (status, error, took) = trickle(server.addr, path);
    assert_eq!(status, 408, "{path}: {error}");
    assert!(error.contains("not complete within 2s"), "{path}: {error}");
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(8),
        "{path}: 408 after {took:?}"
    );
    // The one instance is free again.
    assert_eq!(get(&server.url(probe)).status, 200, "{path}");
}

#[test]
fn a_trickling_body_ends_at_the_total_deadline_wasip2() {
    check(&workspace_root().join("spin.toml"), "/echo", "/hello");
}

#[test]
fn a_trickling_body_ends_at_the_total_deadline_wasip3() {
    artifact("p3/wasm32-wasip2/release/hello_p3.wasm");
    check(&workspace_root().join("spin-p3.toml"), "/echo", "/hello");
}

#[test]
fn a_trickling_body_ends_at_the_total_deadline_wagi() {
    let app = e2e::built_app(
        "tests/apps/wagi",
        "target/wasm32-wasip1/release/wagi_app.wasm",
    );
    check(&app.join("spin.toml"), "/cgi/body", "/cgi/probe");
}
