//! Soak: a bounded run of mixed requests against the runner, its RSS sampled
//! every second. After the warm-up (the first third of the run), RSS may not
//! grow beyond max(`GROWTH_BOUND_MIB`, 10 %) over its level at the end of the warm-up.
//!
//! 60 s by default (CI); `SPINBENCH_SOAK_SECS=600 cargo test --release -p e2e
//! --test soak -- --nocapture` for a longer local run.

use e2e::{Server, send};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const DEFAULT_SECS: u64 = 60;
const CLIENTS: usize = 6;
const GROWTH_BOUND_MIB: u64 = 10;

fn soak_duration() -> Duration {
    let secs = std::env::var("SPINBENCH_SOAK_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_SECS)
        .max(10);
    Duration::from_secs(secs)
}

/// One request of the mix, chosen by `i`; returns the status seen and the one expected.
fn mixed_request(addr: SocketAddr, i: u64) -> (u16, u16, &'static str) {
    let person = br#"{"FirstName":"John","LastName":"Doe","Age":33}"#;
    let block: Vec<u8> = (0..20_000u32).map(|b| b as u8).collect();
    let (what, method, target, content_type, body, expect): (_, _, _, _, &[u8], _) =
        match if i % 20 == 19 { 9 } else { i % 20 % 9 } {
            0 => ("hello", "GET", "/hello", None, b"", 200),
            1 => (
                "echo",
                "POST",
                "/echo",
                Some("application/json"),
                person,
                200,
            ),
            2 => ("cpu", "GET", "/cpu?ms=2", None, b"", 200),
            3 => ("io", "GET", "/io?ms=20", None, b"", 200),
            4 => (
                "suntimes",
                "GET",
                "/suntimes?lat=51.5&lon=-0.12&date=2024-06-21&tz=Europe/London",
                None,
                b"",
                200,
            ),
            5 => ("sha1", "POST", "/sha1", None, &block, 200),
            6 => (
                "echo 400",
                "POST",
                "/echo",
                Some("application/json"),
                b"{",
                400,
            ),
            7 => ("cpu 400", "GET", "/cpu?ms=-1", None, b"", 400),
            8 => ("404", "GET", "/nowhere", None, b"", 404),
            // Past the deadline: a parked guest, and every other time a busy one.
            _ if (i / 20).is_multiple_of(2) => ("io timeout", "GET", "/io?ms=5000", None, b"", 504),
            _ => ("cpu timeout", "GET", "/cpu?ms=5000", None, b"", 504),
        };
    let answer = send(
        method,
        &format!("http://{addr}{target}"),
        content_type,
        body,
    );
    (answer.status, expect, what)
}

#[test]
fn rss_stays_flat_under_a_mixed_load() {
    let duration = soak_duration();
    // A short deadline so the mix also exercises interrupted instances (504s).
    let mut server = Server::runner(&["--request-timeout", "0.5"]);
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..CLIENTS as u64)
        .map(|c| {
            let (stop, sent) = (stop.clone(), sent.clone());
            let addr = server.addr;
            std::thread::spawn(move || {
                let mut i = c * 3;
                let mut wrong = Vec::new();
                while !stop.load(Ordering::Acquire) {
                    let (status, expect, what) = mixed_request(addr, i);
                    if status != expect && wrong.len() < 10 {
                        wrong.push(format!("{what}: {status} (expected {expect})"));
                    }
                    sent.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
                wrong
            })
        })
        .collect();

    // The pooling allocator's warm slots and the allocators' arenas fill in the
    // first seconds (RSS plateaus after ~20 s at 150 requests/s); growth is
    // measured from the end of the first third.
    let warm_up = duration / 3;
    let start = Instant::now();
    let mut samples: Vec<(Duration, u64)> = Vec::new();
    while start.elapsed() < duration {
        std::thread::sleep(Duration::from_secs(1));
        assert!(server.is_alive(), "runner died:\n{}", server.log());
        samples.push((start.elapsed(), server.rss_kib()));
    }
    stop.store(true, Ordering::Release);
    let wrong: Vec<String> = clients
        .into_iter()
        .flat_map(|c| c.join().expect("client"))
        .collect();
    assert!(wrong.is_empty(), "unexpected answers: {wrong:?}");

    let baseline = samples
        .iter()
        .find(|(t, _)| *t >= warm_up)
        .expect("samples after warm-up")
        .1;
    let peak = samples
        .iter()
        .filter(|(t, _)| *t >= warm_up)
        .map(|s| s.1)
        .max()
        .unwrap();
    let first = samples[0].1;
    let requests = sent.load(Ordering::Relaxed);
    eprintln!(
        "soak {duration:?}: {requests} requests ({:.0}/s); RSS first {} MiB, after warm-up {} MiB, peak after warm-up {} MiB, last {} MiB",
        requests as f64 / duration.as_secs_f64(),
        first / 1024,
        baseline / 1024,
        peak / 1024,
        samples.last().unwrap().1 / 1024
    );
    let trace: Vec<u64> = samples.iter().map(|s| s.1 / 1024).collect();
    eprintln!("RSS MiB per second: {trace:?}");
    let bound = (GROWTH_BOUND_MIB * 1024).max(baseline / 10);
    assert!(
        peak <= baseline + bound,
        "RSS grew from {baseline} KiB to {peak} KiB (bound {bound} KiB): {samples:?}"
    );
}
