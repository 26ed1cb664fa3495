//! `GET|POST /cpu?ms=N`: keeps a CPU busy for N milliseconds of wall time, then
//! answers `{"status":"ok","ms":N}` — the Node vs Java seed's CPU-bound endpoint.

use glue::{ApiError, Endpoint, Handler, Head, Query, Reply};
use serde::Serialize;
use std::time::{Duration, Instant};

#[cfg(all(target_arch = "wasm32", feature = "p2"))]
glue::spin_component!(ENDPOINT);

pub const DEFAULT_MS: u64 = 1;
pub const MAX_MS: u64 = 10_000;

pub static ENDPOINT: Endpoint = Endpoint {
    route: "/cpu",
    methods: &["GET", "POST"],
    handler: Handler::Head(cpu),
    // Busy-waits up to MAX_MS: it would hold an async worker that long.
    cpu_bound: true,
};

#[derive(Serialize)]
pub struct Done {
    pub status: &'static str,
    pub ms: u64,
}

pub fn cpu(head: &Head) -> Result<Reply, ApiError> {
    let ms = Query::parse(&head.query).integer("ms", DEFAULT_MS, 0..=MAX_MS)?;
    busy_wait(Duration::from_millis(ms));
    Ok(Reply::json(&Done { status: "ok", ms }))
}

/// Spins on the clock like the seed's `while (now - start < wait) {}`: the
/// point is to occupy the CPU, so no sleeping and no yielding.
pub fn busy_wait(duration: Duration) {
    let start = Instant::now();
    while start.elapsed() < duration {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(query: &str) -> Head {
        Head {
            query: query.to_string(),
            ..Head::default()
        }
    }

    #[test]
    fn answers_with_the_waited_milliseconds() {
        let reply = cpu(&head("ms=2")).unwrap();
        assert_eq!(reply.body, br#"{"status":"ok","ms":2}"#);
        let reply = cpu(&head("")).unwrap();
        assert_eq!(reply.body, br#"{"status":"ok","ms":1}"#);
    }

    #[test]
    fn busy_wait_lasts_at_least_the_duration() {
        let start = Instant::now();
        busy_wait(Duration::from_millis(3));
        assert!(start.elapsed() >= Duration::from_millis(3));
    }

    #[test]
    fn bad_ms_is_a_400_naming_it() {
        for query in [
            "ms=-1",
            "ms=10001",
            "ms=abc",
            "ms=1.5",
            "ms=99999999999999999999999",
        ] {
            let err = cpu(&head(query)).unwrap_err();
            assert_eq!(err.status, 400, "{query}");
            assert!(err.message.contains("ms"), "{query}");
        }
    }
}
