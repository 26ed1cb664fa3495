//! A spin-sdk 2.2 app (tests/apps/spin2-sdk: the Spin 2.0-2.2 era, two
//! `wasm32-wasip1` modules whose worlds import `wasi:http@0.2.0-rc-2023-10-18`,
//! `wasi:io@0.2.0-rc-2023-10-18` and `fermyon:spin@2.0.0`) is served as
//! `spin up` 4.0.2 serves it: routes and headers both ways, a request body
//! echoed, a Spin variable with its default and from `SPIN_VARIABLE_*`, the
//! default key-value store, outbound HTTP to exactly the host its
//! `allowed_outbound_hosts` lists (a server this test runs on 127.0.0.1, its
//! port passed as a variable) with any other denied in Spin 4.0.2's words, and
//! a request body streamed back chunk by chunk through spin-sdk 2.2's
//! low-level handler, each chunk answered before the next is sent.

use e2e::{Server, artifact, exchange, get, header, parse_response, send, send_with_headers};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const APP: &str = "tests/apps/spin2-sdk";
const WASM: [&str; 2] = [
    "target/wasm32-wasip1/release/spin2_sdk.wasm",
    "target/wasm32-wasip1/release/spin2_stream.wasm",
];

fn built_app() -> PathBuf {
    for wasm in WASM {
        e2e::built_app(APP, wasm);
    }
    e2e::built_app(APP, WASM[0])
}

/// `spinbench serve` of the app with a state directory of its own (for the
/// `default` key-value store) and `env` set; the directory goes with it.
struct App {
    server: Server,
    state: tempfile::TempDir,
}

impl App {
    fn serve(env: &[(&str, &str)]) -> App {
        let app = built_app();
        let state = tempfile::tempdir().unwrap();
        let cache = e2e::workspace_root().join("target/e2e-cache");
        let args = [
            "serve",
            "-f",
            app.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
            "--state-dir",
            state.path().to_str().unwrap(),
        ];
        let server = Server::start_configured(
            "spin2-sdk",
            &artifact("release/spinbench"),
            &args,
            |command, addr| {
                command.arg("--listen").arg(addr.to_string());
                for (key, value) in env {
                    command.env(key, value);
                }
            },
        );
        App { server, state }
    }

    fn url(&self, path: &str) -> String {
        self.server.url(path)
    }
}

/// The value of response header `name` (names are lower-case), if sent once.

#[test]
fn hello_answers_its_method_and_path_with_its_headers() {
    let app = App::serve(&[]);
    let (answer, headers) = send_with_headers("GET", &app.url("/hello"), None, b"");
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(answer.text(), "GET /hello");
    assert_eq!(header(&headers, "content-type"), Some("text/plain"));
    assert_eq!(header(&headers, "x-spin2"), Some("yes"));
    // A path the component has no route for is its own 404, not the host's.
    let none = get(&app.url("/nothing/here"));
    assert_eq!(
        (none.status, none.text().as_str()),
        (404, "no route for GET /nothing/here")
    );
}

#[test]
fn echo_sends_the_body_and_the_x_echo_header_back() {
    let app = App::serve(&[]);
    // Every byte value, so nothing is taken for text on the way.
    let body: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
    let (answer, headers) = exchange(
        "POST",
        &app.url("/echo"),
        &[
            ("x-echo", "from the client 1"),
            ("content-type", "text/plain"),
        ],
        &body,
    );
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(answer.body, body);
    assert_eq!(header(&headers, "x-echo"), Some("from the client 1"));
    assert_eq!(
        header(&headers, "content-type"),
        Some("application/octet-stream")
    );
    // Without the header, none comes back.
    let (answer, headers) = exchange("POST", &app.url("/echo"), &[], b"plain");
    assert_eq!(
        (answer.status, answer.body.as_slice()),
        (200, &b"plain"[..])
    );
    assert_eq!(header(&headers, "x-echo"), None);
}

#[test]
fn the_variable_has_its_default_and_is_overridden_from_the_environment() {
    let app = App::serve(&[]);
    let answer = get(&app.url("/variable"));
    assert_eq!(
        (answer.status, answer.text().as_str()),
        (200, "hello from a Spin 2 app")
    );
    assert_eq!(answer.content_type, "text/plain");
    let app = App::serve(&[("SPIN_VARIABLE_MESSAGE", "set by the environment")]);
    let answer = get(&app.url("/variable"));
    assert_eq!(
        (answer.status, answer.text().as_str()),
        (200, "set by the environment")
    );
}

#[test]
fn the_default_key_value_store_keeps_what_is_put() {
    let app = App::serve(&[]);
    let missing = get(&app.url("/kv/greeting"));
    assert_eq!(
        (missing.status, missing.text().as_str()),
        (404, "no value for \"greeting\"")
    );
    // The PUT answers what it read back after writing.
    let put = send("PUT", &app.url("/kv/greeting"), None, b"hello, store");
    assert_eq!((put.status, put.text().as_str()), (200, "hello, store"));
    let bytes = [0u8, 255, 1, 254, b'\n'];
    let post = send("POST", &app.url("/kv/bytes"), None, &bytes);
    assert_eq!((post.status, post.body.as_slice()), (200, &bytes[..]));
    // Later requests, each a fresh instance, read the same store.
    let read = get(&app.url("/kv/greeting"));
    assert_eq!((read.status, read.text().as_str()), (200, "hello, store"));
    assert_eq!(read.content_type, "application/octet-stream");
    assert_eq!(get(&app.url("/kv/bytes")).body, bytes);
    let put = send("PUT", &app.url("/kv/greeting"), None, b"again");
    assert_eq!(put.text(), "again");
    assert_eq!(get(&app.url("/kv/greeting")).text(), "again");
    assert!(
        app.state.path().join("sqlite_key_value.db").is_file(),
        "the default store is Spin's file in the state directory"
    );
}

/// A loopback HTTP server run by a thread of this test: it answers up to 16
/// connections with `200` and `body`, and keeps each request line it read.
struct Upstream {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Upstream {
    fn start(body: &'static str) -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(16).flatten() {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut reader = BufReader::new(&stream);
                let mut line = String::new();
                let _ = reader.read_line(&mut line);
                seen.lock().unwrap().push(line.trim_end().to_string());
                // The rest of the head; a GET has no body.
                let mut rest = String::new();
                while reader.read_line(&mut rest).is_ok_and(|n| n > 2) {
                    rest.clear();
                }
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = (&stream).write_all(response.as_bytes());
            }
        });
        Upstream { addr, requests }
    }

    fn port(&self) -> u16 {
        self.addr.port()
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// How spin-sdk 2.2 prints a denied request under Spin 4.0.2: Spin answers the
/// 2023-10-18 candidate's `outgoing-handler` with `unexpected-error` holding the
/// current `error-code`'s text (spinframework/spin v4.0.2
/// `crates/factor-outbound-http/src/wasi_2023_10_18.rs`), and both sides print
/// their variants with their debug names.
const DENIED: &str = "Error::UnexpectedError(\"ErrorCode::HttpRequestDenied\")";

#[test]
fn outbound_http_reaches_the_listed_upstream() {
    let upstream = Upstream::start("from upstream");
    let port = upstream.port().to_string();
    let app = App::serve(&[("SPIN_VARIABLE_UPSTREAM_PORT", &port)]);
    let url = format!("http://127.0.0.1:{port}/from-spin2?x=1");
    let answer = get(&app.url(&format!("/outbound?url={url}")));
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(answer.text(), "upstream 200 from upstream");
    assert_eq!(answer.content_type, "text/plain");
    assert_eq!(upstream.requests(), ["GET /from-spin2?x=1 HTTP/1.1"]);
}

#[test]
fn outbound_http_to_an_unlisted_host_is_denied() {
    let listed = Upstream::start("listed");
    let unlisted = Upstream::start("must not be reached");
    let port = listed.port().to_string();
    let app = App::serve(&[("SPIN_VARIABLE_UPSTREAM_PORT", &port)]);
    for url in [
        // An unlisted port of the listed address.
        format!("http://127.0.0.1:{}/", unlisted.port()),
        // The listed port under a name the list does not hold.
        format!("http://localhost:{port}/"),
        // The listed port under another scheme.
        format!("https://127.0.0.1:{port}/"),
        // Another host altogether.
        format!("http://example.com:{port}/"),
    ] {
        let answer = get(&app.url(&format!("/outbound?url={url}")));
        assert_eq!(
            (answer.status, answer.text().as_str()),
            (502, DENIED),
            "{url}"
        );
    }
    assert!(listed.requests().is_empty(), "{:?}", listed.requests());
    assert!(unlisted.requests().is_empty(), "{:?}", unlisted.requests());
    // The listed one itself is still reachable.
    let answer = get(&app.url(&format!("/outbound?url=http://127.0.0.1:{port}/")));
    assert_eq!(answer.text(), "upstream 200 listed");
}

/// A chunked `POST /stream` whose chunks are sent one at a time: each is sent
/// only once the uppercased chunk before it has come back (or 10 s passed,
/// which fails). Returns the whole response, read to its end.
fn stream_chunks(addr: SocketAddr, chunks: &[&str]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(
            b"POST /stream HTTP/1.1\r\nhost: spin2\r\ntransfer-encoding: chunked\r\n\
              connection: close\r\n\r\n",
        )
        .unwrap();
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    for chunk in chunks {
        write!(stream, "{:x}\r\n{chunk}\r\n", chunk.len()).unwrap();
        let echoed = chunk.to_ascii_uppercase();
        let start = Instant::now();
        while !String::from_utf8_lossy(&received).contains(&echoed) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{chunk:?} did not come back before the next chunk was sent; got {:?}",
                String::from_utf8_lossy(&received)
            );
            let n = stream.read(&mut buffer).unwrap_or_else(|e| {
                panic!(
                    "{chunk:?} did not come back ({e}); got {:?}",
                    String::from_utf8_lossy(&received)
                )
            });
            assert!(
                n > 0,
                "closed early: {:?}",
                String::from_utf8_lossy(&received)
            );
            received.extend_from_slice(&buffer[..n]);
        }
    }
    stream.write_all(b"0\r\n\r\n").unwrap();
    stream.read_to_end(&mut received).unwrap();
    received
}

#[test]
fn a_streamed_body_comes_back_uppercased_chunk_by_chunk() {
    let app = App::serve(&[]);
    let chunks = ["first chunk, ", "the second one; ", "and 3rd."];
    let raw = stream_chunks(app.server.addr, &chunks);
    let answer = parse_response(&raw);
    assert_eq!(answer.status, 200);
    assert_eq!(answer.text(), "FIRST CHUNK, THE SECOND ONE; AND 3RD.");
    assert_eq!(answer.content_type, "text/plain");
    let head = String::from_utf8_lossy(&raw).to_ascii_lowercase();
    assert!(head.contains("\r\nx-spin2-stream: chunks\r\n"), "{head}");
    // A large body through the same component: many reads, many writes.
    let mut body = String::new();
    for i in 0..20_000 {
        body.push_str(&format!("line {i} of the body\n"));
    }
    let answer = send("POST", &app.url("/stream"), None, body.as_bytes());
    assert_eq!(answer.status, 200);
    assert_eq!(answer.text(), body.to_ascii_uppercase());
}
