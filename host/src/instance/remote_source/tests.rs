use super::*;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const WASM: &[u8] = b"\0asm a component, as far as this test cares";

/// A server on loopback answering `/a.wasm` with [`WASM`], `/moved` with a
/// redirect to it and anything else with 404; it serves at most `limit`
/// connections. Returns its base URL and how many requests it has answered.
fn server(limit: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let answered = Arc::new(AtomicUsize::new(0));
    let count = answered.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(limit) {
            let mut stream = stream.unwrap();
            let mut request_line = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            reader.read_line(&mut request_line).unwrap();
            // The rest of the head, up to the blank line.
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap() > 2 {
                line.clear();
            }
            let path = request_line.split(' ').nth(1).unwrap_or("");
            let head = match path {
                "/a.wasm" => format!("200 OK\r\ncontent-length: {}", WASM.len()),
                "/moved" => "302 Found\r\nlocation: /a.wasm\r\ncontent-length: 0".into(),
                _ => "404 Not Found\r\ncontent-length: 0".into(),
            };
            write!(stream, "HTTP/1.1 {head}\r\nconnection: close\r\n\r\n").unwrap();
            if path == "/a.wasm" {
                stream.write_all(WASM).unwrap();
            }
            count.fetch_add(1, Ordering::SeqCst);
        }
    });
    (base, answered)
}

fn digest_of(bytes: &[u8]) -> Digest {
    Digest::of(bytes)
}

#[test]
fn a_source_is_fetched_checked_kept_by_its_digest_and_then_read_from_disk() {
    let (base, answered) = server(4);
    let cache = tempfile::tempdir().unwrap();
    let url = format!("{base}/a.wasm");
    let fetched = fetch(&url, digest_of(WASM), Some(cache.path())).unwrap();
    assert_eq!(fetched.wasm, WASM);
    let kept = cache
        .path()
        .join("sources")
        .join(format!("sha256-{}.wasm", digest_of(WASM).hex()));
    assert_eq!(fetched.path, kept);
    assert_eq!(std::fs::read(&kept).unwrap(), WASM);
    let again = fetch(&url, digest_of(WASM), Some(cache.path())).unwrap();
    assert_eq!(again.wasm, WASM);
    assert_eq!(
        answered.load(Ordering::SeqCst),
        1,
        "read from disk the second time"
    );
}

#[test]
fn a_kept_file_that_no_longer_matches_is_fetched_again() {
    let (base, answered) = server(4);
    let cache = tempfile::tempdir().unwrap();
    let url = format!("{base}/a.wasm");
    let fetched = fetch(&url, digest_of(WASM), Some(cache.path())).unwrap();
    std::fs::write(&fetched.path, b"\0asm swapped").unwrap();
    let again = fetch(&url, digest_of(WASM), Some(cache.path())).unwrap();
    assert_eq!(again.wasm, WASM);
    assert_eq!(std::fs::read(&fetched.path).unwrap(), WASM);
    assert_eq!(answered.load(Ordering::SeqCst), 2);
}

#[test]
fn a_digest_mismatch_is_refused_with_both_digests_and_nothing_is_kept() {
    let (base, _) = server(2);
    let cache = tempfile::tempdir().unwrap();
    let other = digest_of(b"another component");
    let error = fetch(&format!("{base}/a.wasm"), other, Some(cache.path()))
        .err()
        .expect("a mismatch is an error");
    let text = format!("{error:#}");
    assert!(
        text.contains(&format!(
            "invalid content digest; expected {other}, downloaded {}",
            digest_of(WASM)
        )),
        "{text}"
    );
    let kept = std::fs::read_dir(cache.path().join("sources"))
        .unwrap()
        .count();
    assert_eq!(kept, 0);
}

#[test]
fn redirects_are_followed_and_an_error_status_is_said() {
    let (base, _) = server(4);
    let fetched = fetch(&format!("{base}/moved"), digest_of(WASM), None).unwrap();
    assert_eq!(fetched.wasm, WASM);
    assert_eq!(fetched.path, PathBuf::from(format!("{base}/moved")));
    let error = fetch(&format!("{base}/gone.wasm"), digest_of(WASM), None)
        .err()
        .expect("a 404 is an error");
    let text = format!("{error:#}");
    assert!(text.contains("Error fetching source URL"), "{text}");
    assert!(text.contains("404"), "{text}");
}

#[test]
fn only_http_and_https_are_fetched() {
    let error = fetch("file:///etc/passwd", digest_of(WASM), None)
        .err()
        .expect("refused");
    assert!(
        format!("{error:#}").contains("only http and https"),
        "{error:#}"
    );
}
