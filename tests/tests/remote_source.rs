//! `source = { url, digest }`, as `spin up` (4.0.2) loads it: the component
//! fetched at start from a server on loopback, its SHA-256 checked against
//! the manifest's digest, then served; a mismatch stops the start in one line
//! naming both digests.

use e2e::{Server, artifact, get, run_to_exit};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A server on loopback answering every `GET` with `body`, for at most
/// `limit` connections; its base URL and how many it has answered.
fn file_server(body: Vec<u8>, limit: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let answered = Arc::new(AtomicUsize::new(0));
    let count = answered.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(limit) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 2 {
                line.clear();
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
            count.fetch_add(1, Ordering::SeqCst);
        }
    });
    (base, answered)
}

fn hello_wasm() -> Vec<u8> {
    std::fs::read(artifact("wasm32-wasip2/release/hello.wasm")).expect("hello.wasm is built")
}

/// A one-component manifest whose source is `url` with `digest`.
fn manifest(url: &str, digest: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spin.toml"),
        format!(
            "spin_manifest_version = 2\n\
             [application]\nname = \"remote\"\n\
             [[trigger.http]]\nroute = \"/hello\"\ncomponent = \"hello\"\n\
             [component.hello]\nsource = {{ url = \"{url}\", digest = \"sha256:{digest}\" }}\n"
        ),
    )
    .unwrap();
    dir
}

#[test]
fn a_component_fetched_by_url_and_digest_is_served() {
    let wasm = hello_wasm();
    let digest = e2e::sha256_hex(&wasm);
    let (base, answered) = file_server(wasm, 4);
    let app = manifest(&format!("{base}/hello.wasm"), &digest);
    let cache = tempfile::tempdir().unwrap();
    for start in 1..=2 {
        let server = Server::start(
            "spinbench",
            &artifact("release/spinbench"),
            &serve_args(&app, &cache),
        );
        let answer = get(&format!("http://{}/hello", server.addr));
        assert_eq!(answer.status, 200, "start {start}: {}", answer.text());
    }
    // Fetched at the first start; the second read it back from the cache.
    assert_eq!(answered.load(Ordering::SeqCst), 1);
    assert!(
        cache
            .path()
            .join(format!("sources/sha256-{digest}.wasm"))
            .is_file()
    );
}

fn serve_args<'a>(app: &'a tempfile::TempDir, cache: &'a tempfile::TempDir) -> [&'a str; 5] {
    [
        "serve",
        "--manifest",
        app.path().to_str().unwrap(),
        "--cache-dir",
        cache.path().to_str().unwrap(),
    ]
}

#[test]
fn a_component_whose_digest_differs_is_refused_naming_both() {
    let wasm = hello_wasm();
    let actual = e2e::sha256_hex(&wasm);
    let (base, _) = file_server(wasm, 4);
    let claimed = "0".repeat(64);
    let app = manifest(&format!("{base}/hello.wasm"), &claimed);
    let cache = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = serve_args(&app, &cache).map(String::from).to_vec();
    args.extend(["--listen".into(), "127.0.0.1:0".into()]);
    let (status, output) = run_to_exit(
        &artifact("release/spinbench"),
        &args,
        std::time::Duration::from_mins(1),
    )
    .expect("refused at start");
    assert!(!status.success());
    assert!(
        output.contains(&format!(
            "invalid content digest; expected sha256:{claimed}, downloaded sha256:{actual}"
        )),
        "{output}"
    );
}
