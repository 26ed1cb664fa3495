//! The end-to-end harness: starts built artifacts (`spinbench serve`, the
//! `<name>-native` binaries) as real processes on loopback ports, talks HTTP to
//! them, and stops them when dropped.
//!
//! The artifacts are built by the test command (`make test`) before `cargo test`
//! runs: building inside a test would contend for cargo's own build lock.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The function set: the component ids of the repository's benchmark file
/// (spinbench.toml), each also its route and its `<id>-native` binary's name.
pub fn functions() -> &'static [&'static str] {
    static IDS: OnceLock<Vec<&'static str>> = OnceLock::new();
    IDS.get_or_init(|| {
        let path = workspace_root().join("spinbench.toml");
        let text = std::fs::read_to_string(&path).expect("spinbench.toml at the repo root");
        let file: toml::Table = toml::from_str(&text).expect("spinbench.toml is TOML");
        file["component"]
            .as_array()
            .expect("[[component]] tables")
            .iter()
            .map(|c| &*c["id"].as_str().expect("a component id").to_string().leak())
            .collect()
    })
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

/// A built file under the workspace's `target/`, or a panic saying how to build it.
pub fn artifact(relative: &str) -> PathBuf {
    let path = workspace_root().join("target").join(relative);
    assert!(
        path.exists(),
        "{} is missing: run `make build` (or `make test`) first",
        path.display()
    );
    path
}

/// A server process on a loopback port; killed when dropped.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    log: PathBuf,
}

impl Server {
    /// Starts `program args... --listen 127.0.0.1:<free port>` and waits until it accepts.
    pub fn start(name: &str, program: &Path, args: &[&str]) -> Server {
        let addr = free_loopback_addr();
        let log = log_path(name, addr.port());
        let child = Command::new(program)
            .args(args)
            .arg("--listen")
            .arg(addr.to_string())
            .stdin(Stdio::null())
            .stdout(File::create(&log).expect("log file"))
            .stderr(File::create(&log).expect("log file"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        let mut server = Server { child, addr, log };
        server.wait_until_accepting(Duration::from_secs(120));
        server
    }

    /// `<name>-native`, built natively in release mode.
    pub fn native(function: &str) -> Server {
        Server::start(
            function,
            &artifact(&format!("release/{function}-native")),
            &[],
        )
    }

    /// `spinbench serve` over the repo's spin.toml, with its own compiled-code cache.
    pub fn runner(extra_args: &[&str]) -> Server {
        Server::runner_with(&workspace_root().join("spin.toml"), extra_args)
    }

    /// `spinbench serve` over `manifest`, with the e2e compiled-code cache.
    pub fn runner_with(manifest: &Path, extra_args: &[&str]) -> Server {
        let cache = workspace_root().join("target/e2e-cache");
        let mut args = vec![
            "serve",
            "--manifest",
            manifest.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
        ];
        args.extend_from_slice(extra_args);
        Server::start("spinbench", &artifact("release/spinbench"), &args)
    }

    pub fn url(&self, path_and_query: &str) -> String {
        format!("http://{}{}", self.addr, path_and_query)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running.
    pub fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The process's resident set size (`VmRSS` in /proc/<pid>/status), in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("/proc/<pid>/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS line")
    }

    /// Sends SIGTERM and waits up to `limit` for the process to exit; returns how
    /// long it took, or `None` if it was still running (it is then killed on drop).
    pub fn terminate(&mut self, limit: Duration) -> Option<Duration> {
        let start = Instant::now();
        Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("kill -TERM");
        while start.elapsed() < limit {
            if let Ok(Some(_)) = self.child.try_wait() {
                return Some(start.elapsed());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// What the server wrote to stdout and stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_until_accepting(&mut self, limit: Duration) {
        let start = Instant::now();
        while start.elapsed() < limit {
            if TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "server exited with {status} before accepting:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("server did not accept within {limit:?}:\n{}", self.log());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_loopback_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
}

fn log_path(name: &str, port: u16) -> PathBuf {
    let dir = workspace_root().join("target/e2e-logs");
    std::fs::create_dir_all(&dir).expect("log dir");
    dir.join(format!("{name}-{port}.log"))
}

/// What a test compares between hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }
}

/// One request over a fresh connection; 4xx and 5xx are answers, not errors.
pub fn send(method: &str, url: &str, content_type: Option<&str>, body: &[u8]) -> Answer {
    send_with_headers(method, url, content_type, body).0
}

/// Like [`send`], also returning the response headers (names lower-case).
pub fn send_with_headers(
    method: &str,
    url: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> (Answer, Vec<(String, String)>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .allow_non_standard_methods(true)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into();
    let mut request = ureq::http::Request::builder().method(method).uri(url);
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    let request = request.body(body.to_vec()).expect("valid request");
    let mut response = agent
        .run(request)
        .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let headers: Vec<(String, String)> = response
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let content_type = headers
        .iter()
        .find(|(k, _)| k == "content-type")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let body = response
        .body_mut()
        .with_config()
        .limit(64 * 1024 * 1024)
        .read_to_vec()
        .unwrap_or_else(|e| panic!("{method} {url}: reading body: {e}"));
    let answer = Answer {
        status: response.status().as_u16(),
        content_type,
        body,
    };
    (answer, headers)
}

/// Writes `request` as is, closes the writing half (so a body shorter than its
/// `Content-Length` ends early), and returns whatever came back (possibly nothing).
pub fn raw_then_close(addr: SocketAddr, request: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let _ = stream.write_all(request);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    response
}

pub fn get(url: &str) -> Answer {
    send("GET", url, None, b"")
}

/// Writes `head` and then `body_len` bytes of zeros (ignoring write errors, as a
/// server may answer and close before reading it all), and reads the answer.
/// For requests a well-behaved client library will not send: lying lengths,
/// endless chunked bodies, raw bytes in the request line.
pub fn raw_exchange(addr: SocketAddr, head: &[u8], body_len: usize, chunked: bool) -> Answer {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream.write_all(head).expect("write head");
    let mut writer = stream.try_clone().expect("clone");
    let sender = std::thread::spawn(move || {
        let chunk = vec![0u8; 64 * 1024];
        let mut left = body_len;
        while left > 0 {
            let n = left.min(chunk.len());
            let ok = if chunked {
                write!(writer, "{n:x}\r\n")
                    .and_then(|_| writer.write_all(&chunk[..n]))
                    .and_then(|_| writer.write_all(b"\r\n"))
            } else {
                writer.write_all(&chunk[..n])
            };
            if ok.is_err() {
                return;
            }
            left -= n;
        }
        if chunked {
            let _ = writer.write_all(b"0\r\n\r\n");
        }
    });
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let _ = sender.join();
    parse_response(&response)
}

/// Parses a `Connection: close` HTTP/1.1 response, with or without chunked framing.
pub fn parse_response(raw: &[u8]) -> Answer {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let header = |name: &str| {
        head.split("\r\n")
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_string())
    };
    let payload = &raw[split + 4..];
    let body = if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        dechunk(payload)
    } else {
        payload.to_vec()
    };
    Answer {
        status,
        content_type: header("content-type").unwrap_or_default(),
        body,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(line_end) = data.windows(2).position(|w| w == b"\r\n") {
        let size_field = String::from_utf8_lossy(&data[..line_end]);
        let size =
            usize::from_str_radix(size_field.split(';').next().unwrap().trim(), 16).unwrap_or(0);
        data = &data[line_end + 2..];
        if size == 0 || data.len() < size {
            break;
        }
        body.extend_from_slice(&data[..size]);
        data = &data[(size + 2).min(data.len())..];
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_chunked_responses() {
        let plain =
            parse_response(b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\n\r\n{}");
        assert_eq!((plain.status, plain.body.as_slice()), (404, &b"{}"[..]));
        let chunked = parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n5\r\nHello\r\n3\r\n!!!\r\n0\r\n\r\n",
        );
        assert_eq!(chunked.body, b"Hello!!!");
        assert_eq!(chunked.content_type, "text/plain");
    }
}
