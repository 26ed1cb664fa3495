//! What tests/apps/parity must answer wherever it is served (a directory, a
//! registry reference, a container under the shim): one check per feature,
//! shared by tests/tests/parity*.rs and deploy_parity.rs.

pub mod middleware;

use crate::service::Service;
use crate::{get, workspace_root};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The app's directory, after checking `make build` built its components.
pub fn app() -> PathBuf {
    for wasm in [
        "parity_front",
        "parity_back",
        "parity_sub2",
        "parity_sub3",
        "parity_greeter",
        "parity_mw",
    ] {
        let path = workspace_root().join(format!("target/wasm32-wasip2/release/{wasm}.wasm"));
        assert!(
            path.exists(),
            "{wasm}.wasm is not built: run `make build` first"
        );
    }
    workspace_root().join("tests/apps/parity")
}

/// The value of `name` in a `back` answer's `name: value` lines.
pub fn line<'a>(body: &'a str, name: &str) -> Option<&'a str> {
    let prefix = format!("{name}:");
    body.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .map(str::trim_start)
}

/// GETs `url` until it answers `want`, at most 10 s.
pub fn eventually(url: &str, want: &str) {
    let start = Instant::now();
    loop {
        let answer = get(url);
        if answer.status == 200 && answer.text() == want {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{url}: {} {} (want {want})",
            answer.status,
            answer.text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every feature of the app, answered at `base` (`http://host:port`):
/// chaining both ways, a dependency inheriting one grant and one inheriting
/// none, and, with `redis`, a message to both subscribers.
pub fn answers_everything(base: &str, redis: Option<&Service>) {
    let chained = get(&format!("{base}/front/chain/echo?q=1"));
    assert_eq!(chained.status, 200, "{}", chained.text());
    assert_eq!(line(&chained.text(), "spin-path-info"), Some("/echo"));
    assert_eq!(
        get(&format!("{base}/back/to-front")).text(),
        "front said 200 OK: hello from front"
    );
    assert_eq!(
        get(&format!("{base}/front/to/secret/x")).text(),
        "error=Http(ErrorCode::HttpRequestDenied)"
    );
    assert_eq!(
        get(&format!("{base}/front/greet/Ada")).text(),
        "Hello, Ada! (GREETING_STYLE=warm)"
    );
    assert_eq!(get(&format!("{base}/strict/greet/Ada")).status, 500);
    if let Some(redis) = redis {
        let payload = format!("message-{}", std::process::id());
        assert_eq!(publish(redis, "parity", payload.as_bytes()), 1);
        eventually(&format!("{base}/front/kv/sub2"), &format!("1:{payload}"));
        eventually(&format!("{base}/front/kv/sub3"), &payload);
    }
}

/// `redis://127.0.0.1:<port>` of a [`crate::brokers::redis`] server.
pub fn redis_url(redis: &Service) -> String {
    format!("redis://127.0.0.1:{}", redis.port)
}

/// Publishes `payload` on `channel` of `redis`; returns how many subscribers
/// got it (Redis' `PUBLISH` reply, read over a plain TCP stream).
pub fn publish(redis: &Service, channel: &str, payload: &[u8]) -> u64 {
    let mut stream = crate::service::dial(redis.port).expect("redis-server answers");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut command = b"*3\r\n$7\r\nPUBLISH\r\n".to_vec();
    for part in [channel.as_bytes(), payload] {
        command.extend_from_slice(format!("${}\r\n", part.len()).as_bytes());
        command.extend_from_slice(part);
        command.extend_from_slice(b"\r\n");
    }
    stream.write_all(&command).unwrap();
    let mut reply = [0u8; 64];
    let n = stream.read(&mut reply).unwrap();
    let reply = String::from_utf8_lossy(&reply[..n]);
    reply
        .strip_prefix(':')
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("PUBLISH answered {reply:?}"))
}
