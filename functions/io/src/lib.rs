//! `GET|POST /io?ms=N`: waits N milliseconds without using the CPU, then
//! answers `{"status":"ok","ms":N}` — the Node vs Java seed's IO-bound endpoint.
//!
//! The wait itself is the host's: [`glue::Handler::Delayed`] hands back the
//! duration, and the native server or the component's WASI clock waits it.

use glue::{ApiError, Endpoint, Handler, Head, Query, Reply};
use serde::Serialize;
use std::time::Duration;

#[cfg(all(target_arch = "wasm32", feature = "p2"))]
glue::spin_component!(ENDPOINT);

pub const DEFAULT_MS: u64 = 1000;
pub const MAX_MS: u64 = 60_000;

pub static ENDPOINT: Endpoint = Endpoint {
    route: "/io",
    methods: &["GET", "POST"],
    handler: Handler::Delayed(io),
    cpu_bound: false,
};

#[derive(Serialize)]
pub struct Done {
    pub status: &'static str,
    pub ms: u64,
}

pub fn io(head: &Head) -> Result<(Duration, Reply), ApiError> {
    let ms = Query::parse(&head.query).integer("ms", DEFAULT_MS, 0..=MAX_MS)?;
    Ok((
        Duration::from_millis(ms),
        Reply::json(&Done { status: "ok", ms }),
    ))
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
    fn plans_the_wait_and_the_answer() {
        let (wait, reply) = io(&head("ms=250")).unwrap();
        assert_eq!(wait, Duration::from_millis(250));
        assert_eq!(reply.body, br#"{"status":"ok","ms":250}"#);
        assert_eq!(io(&head("")).unwrap().0, Duration::from_secs(1));
    }

    #[test]
    fn bad_ms_is_a_400_naming_it() {
        for query in ["ms=-5", "ms=60001", "ms=soon", "ms=1e3"] {
            let err = io(&head(query)).unwrap_err();
            assert_eq!(err.status, 400, "{query}");
            assert!(err.message.contains("ms"), "{query}");
        }
    }
}
