//! A registry that misbehaves on purpose, for the pull's bounds: a small
//! HTTP/1.1 server on a loopback port of its own (bound to port 0, so no
//! other test can take it) answering `/v2/` and one repository's manifest
//! and blobs as a [`Script`] says, counting the bytes it managed to send.
//! Every answer it streams is bounded in bytes and time ([`STREAM_LIMIT`],
//! [`STREAM_TIME`]), so a client that never stops reading still ends.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The most one answer streams: far past any bound a pull should keep.
pub const STREAM_LIMIT: u64 = 1 << 30;
/// The longest one answer streams.
pub const STREAM_TIME: Duration = Duration::from_mins(2);

/// How one path is answered.
#[derive(Clone)]
pub enum Body {
    /// These bytes, with their `Content-Length`.
    Exact(Vec<u8>),
    /// These bytes first, then zeros without end (no `Content-Length`: the
    /// connection's close ends it), up to the stream limits.
    Endless(Vec<u8>),
    /// One zero byte every `interval`, without end, up to the stream limits.
    Trickle(Duration),
    /// `Content-Length: n`, then as many zeros as the client reads.
    Claims(u64),
}

/// What the registry answers: the manifest of any tag, and blobs by digest
/// (`sha256:...`); anything else is a 404.
#[derive(Clone)]
pub struct Script {
    pub manifest: Body,
    pub blobs: Vec<(String, Body)>,
}

pub struct FakeRegistry {
    pub addr: SocketAddr,
    sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl FakeRegistry {
    /// Starts one answering as `script` says.
    pub fn start(script: Script) -> FakeRegistry {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let sent = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (counter, stopped) = (sent.clone(), stop.clone());
        std::thread::spawn(move || {
            let started = Instant::now();
            while !stopped.load(Ordering::Relaxed) && started.elapsed() < STREAM_TIME * 2 {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (script, counter) = (script.clone(), counter.clone());
                        std::thread::spawn(move || answer(stream, &script, &counter));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        FakeRegistry { addr, sent, stop }
    }

    /// `127.0.0.1:<port>/<repository>:<tag>`.
    pub fn reference(&self, name: &str) -> String {
        format!("{}/{name}", self.addr)
    }

    /// Bytes of answer bodies sent so far (accepted by the client's socket).
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

impl Drop for FakeRegistry {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Answers one request on `stream`, then closes it.
fn answer(stream: TcpStream, script: &Script, sent: &AtomicU64) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(stream) => stream,
        Err(_) => return,
    });
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    // The headers, up to the blank line (64 at most).
    for _ in 0..64 {
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() || line.trim().is_empty() {
            break;
        }
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("");
    let body = if path == "/v2/" {
        Some(Body::Exact(b"{}".to_vec()))
    } else if path.contains("/manifests/") {
        Some(script.manifest.clone())
    } else {
        script
            .blobs
            .iter()
            .find(|(digest, _)| path.ends_with(&format!("/blobs/{digest}")))
            .map(|(_, body)| body.clone())
    };
    let mut stream = stream;
    let Some(body) = body else {
        let _ = stream.write_all(
            b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
        );
        return;
    };
    let media_type = "application/vnd.oci.image.manifest.v1+json";
    let length = match &body {
        Body::Exact(bytes) => format!("Content-Length: {}\r\n", bytes.len()),
        Body::Claims(n) => format!("Content-Length: {n}\r\n"),
        Body::Endless(_) | Body::Trickle(_) => String::new(),
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {media_type}\r\n{length}Connection: close\r\n\r\n"
    );
    if stream.write_all(head.as_bytes()).is_err() {
        return;
    }
    stream_body(&mut stream, &body, sent);
}

fn stream_body(stream: &mut TcpStream, body: &Body, sent: &AtomicU64) {
    let mut send = |bytes: &[u8]| {
        if stream.write_all(bytes).is_err() {
            return false;
        }
        sent.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        true
    };
    match body {
        Body::Exact(bytes) => {
            send(bytes);
        }
        Body::Endless(first) => {
            if send(first) {
                zeros(&mut send, 64 << 10, Duration::ZERO);
            }
        }
        Body::Claims(_) => zeros(&mut send, 64 << 10, Duration::ZERO),
        Body::Trickle(interval) => zeros(&mut send, 1, *interval),
    }
}

/// Zeros, `chunk` bytes at a time with `pause` between, until the client
/// stops reading or the stream limits are reached.
fn zeros(send: &mut impl FnMut(&[u8]) -> bool, chunk: usize, pause: Duration) {
    let started = Instant::now();
    let zeros = vec![0u8; chunk];
    let mut total: u64 = 0;
    while total < STREAM_LIMIT && started.elapsed() < STREAM_TIME && send(&zeros) {
        total += chunk as u64;
        std::thread::sleep(pause);
    }
}
