//! Overload: many more concurrent requests than the instance cap. Every request
//! gets a `200` or a `503` (with `Retry-After` and a JSON error), the runner
//! stays up, the cap holds, and its memory returns to its idle level.

use e2e::{Server, get, send_with_headers};
use std::time::{Duration, Instant};

const MAX_CONCURRENT: usize = 8;
const MAX_QUEUED: usize = 32;
const CLIENTS: usize = 200;
/// RSS after the bursts may exceed the idle reading by at most this much.
const RSS_BOUND_KIB: u64 = 16 * 1024;

struct Outcome {
    status: u16,
    retry_after: Option<String>,
    error: Option<String>,
    took: Duration,
}

/// How long each request holds its instance: longer than a queued request
/// waits (`--queue-timeout 1`) plus the time the client threads take to start,
/// so no permit comes free while anyone still waits for one.
const HOLD_MS: u64 = 3000;

/// `CLIENTS` concurrent `/io?ms=HOLD_MS` requests, one thread and connection each.
fn burst(server: &Server) -> Vec<Outcome> {
    let threads: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let url = server.url(&format!("/io?ms={HOLD_MS}"));
            std::thread::spawn(move || {
                let start = Instant::now();
                let (answer, headers) = send_with_headers("GET", &url, None, b"");
                let took = start.elapsed();
                let retry_after = headers
                    .iter()
                    .find(|(k, _)| k == "retry-after")
                    .map(|(_, v)| v.clone());
                let error = (answer.status >= 400)
                    .then(|| answer.json()["error"].as_str().map(str::to_string))
                    .flatten();
                Outcome {
                    status: answer.status,
                    retry_after,
                    error,
                    took,
                }
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

#[test]
fn overload_is_answered_with_503s_and_memory_returns_to_idle() {
    let mut server = Server::runner(&[
        "--max-concurrent",
        &MAX_CONCURRENT.to_string(),
        "--max-queued",
        &MAX_QUEUED.to_string(),
        "--queue-timeout",
        "1",
    ]);
    // Warm up every path a burst takes (instantiation, the timer, the queue, the
    // 503 reply) with one burst, then take the idle reading: the first burst
    // sizes the allocator's and the runtime's pools, which then stay.
    for _ in 0..20 {
        assert_eq!(get(&server.url("/io?ms=1")).status, 200);
        assert_eq!(get(&server.url("/hello")).status, 200);
    }
    let cold = server.rss_kib();
    let first = burst(&server);
    std::thread::sleep(Duration::from_secs(1));
    let idle = server.rss_kib();

    let mut peak = idle;
    for round in 0..3 {
        let outcomes = burst(&server);
        peak = peak.max(server.rss_kib());
        check_round(&outcomes, round);
        assert!(
            server.is_alive(),
            "runner died under overload:\n{}",
            server.log()
        );
    }
    check_round(&first, 99);

    // Idle again: well-behaved requests are served at once, memory settles.
    assert_eq!(get(&server.url("/hello")).status, 200);
    std::thread::sleep(Duration::from_secs(1));
    let after = server.rss_kib();
    eprintln!(
        "RSS: before any burst {} MiB, idle after warm-up burst {} MiB, peak {} MiB, after {} MiB",
        cold / 1024,
        idle / 1024,
        peak / 1024,
        after / 1024
    );
    assert!(
        after <= idle + RSS_BOUND_KIB,
        "RSS {after} KiB after overload vs {idle} KiB idle"
    );
}

fn check_round(outcomes: &[Outcome], round: usize) {
    let ok = outcomes.iter().filter(|o| o.status == 200).count();
    let busy: Vec<_> = outcomes.iter().filter(|o| o.status == 503).collect();
    let other: Vec<u16> = outcomes
        .iter()
        .map(|o| o.status)
        .filter(|s| ![200, 503].contains(s))
        .collect();
    assert!(
        other.is_empty(),
        "round {round}: unexpected statuses {other:?}"
    );
    for o in &busy {
        assert_eq!(o.retry_after.as_deref(), Some("1"), "round {round}");
        assert!(
            o.error.as_deref().is_some_and(|e| e.contains("busy")),
            "round {round}: {:?}",
            o.error
        );
    }
    // The cap, exactly: the first 8 hold their instances for 3 s, every other
    // request is refused at once or after waiting 1 s in the queue.
    assert_eq!(
        ok, MAX_CONCURRENT,
        "round {round}: {ok} succeeded with --max-concurrent {MAX_CONCURRENT}"
    );
    // Past the bounded queue, refusals are immediate; the queue's come after its
    // timeout. How many arrive while the queue is full depends on how fast the
    // client threads start, so only half of the ideal count is required.
    let immediate = busy
        .iter()
        .filter(|o| o.took < Duration::from_millis(900))
        .count();
    assert!(
        immediate >= (CLIENTS - MAX_CONCURRENT - MAX_QUEUED) / 2,
        "round {round}: only {immediate} immediate 503s"
    );
    assert!(
        outcomes.iter().all(|o| o.took < Duration::from_secs(10)),
        "round {round}: a request waited too long"
    );
}
