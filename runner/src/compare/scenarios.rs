//! The load scenarios: how many users send what to each function, and whether
//! the run is read from oha's summary or in steady state from its per-request
//! timeline (`oha`).

use super::http::Request;
use super::{ECHO_BODY, Function, SUNTIMES_QUERY};
use crate::rlimit;
use std::time::Duration;

/// File descriptors oha and the server each need beyond one socket per user.
const SPARE_FDS: u64 = 256;

/// One load scenario: who sends what, and how the result is read.
pub struct Scenario {
    pub users: usize,
    pub request: Request,
    /// Body bytes per request when throughput is reported in MB/s (sha1).
    pub mb_per_request: Option<f64>,
    /// Report requests per second per core too (cpu).
    pub per_core: bool,
    /// Long requests (io): read in steady state from oha's per-request timeline
    /// (`oha::Timeline`): one run of at least this ramp-up, then the duration.
    /// `None`: a warm-up run, then a timed run read from oha's summary.
    pub ramp_up: Option<Duration>,
    /// The report's `k` of this scenario's rows where a function has several
    /// scenarios (io: its users).
    pub k: Option<usize>,
    /// Why this scenario does not run in this plan, if it does not.
    pub skip: Option<&'static str>,
}

impl Scenario {
    pub fn describe(&self) -> String {
        format!(
            "{} users, {} {}{}{}",
            self.users,
            self.request.method,
            self.request.target,
            self.mb_per_request
                .map_or(String::new(), |mb| format!(" ({mb:.0} MB body)")),
            if self.ramp_up.is_some() {
                ", steady state (requests in flight at the window's edges counted pro rata)"
            } else {
                ""
            }
        )
    }
}

/// The 10,000-user io scenario is left out of `--quick`: with its ramp-up it
/// takes ~20 s per host, and a quick run stays under a minute.
pub const FULL_RUNS_ONLY: &str = "full runs only (--quick runs the 100-user io scenario)";

/// The seeds' scenarios of `f`, sized for this machine (and smaller for `--quick`).
pub fn scenarios(f: &Function, cores: usize, quick: bool) -> Vec<Scenario> {
    let plain = |users, request| Scenario {
        users,
        request,
        mb_per_request: None,
        per_core: false,
        ramp_up: None,
        k: None,
        skip: None,
    };
    // `users` users each waiting `ms`: the ceiling is users * 1000 / ms requests
    // per second. Every user connects at once at the start; the ramp-up until
    // they have their first answer back was measured at 2.1-2.3 s for 1,000
    // users (the accept backlog overflows: some SYNs are retried after 1 s) and
    // 3.3-5.6 s for 10,000 (99 % of them) on native and the runner, on this
    // 2-core machine. `wasmtime serve`, which listens with a backlog of 100
    // where tokio's servers use 1,024, took 11.5 s to 26 s: past the allowance
    // it is reported as failed, with the reason.
    let io = |users, ms, ramp_up| Scenario {
        ramp_up: Some(ramp_up),
        k: Some(users),
        ..plain(users, Request::get(format!("/io?ms={ms}")))
    };
    let one = |s| vec![s];
    match f.name {
        "hello" => one(plain(10, Request::get("/hello"))),
        "echo" => one(plain(
            16,
            Request {
                method: "POST",
                target: "/echo".into(),
                content_type: Some("application/json"),
                body: ECHO_BODY.into(),
            },
        )),
        // Full speed: enough users to keep every core busy.
        "suntimes" => one(plain(4 * cores, Request::get(SUNTIMES_QUERY))),
        "cpu" => one(Scenario {
            per_core: true,
            ..plain(2 * cores, Request::get("/cpu?ms=1"))
        }),
        "io" if quick => vec![
            io(100, 100, Duration::from_millis(300)),
            Scenario {
                skip: Some(FULL_RUNS_ONLY),
                ..io(10_000, 1000, Duration::from_secs(8))
            },
        ],
        "io" => vec![
            io(1_000, 1000, Duration::from_secs(3)),
            io(10_000, 1000, Duration::from_secs(8)),
        ],
        "sha1" => {
            let size: usize = if quick { 1 << 20 } else { 16 << 20 };
            let body: Vec<u8> = (0..size)
                .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3])
                .collect();
            one(Scenario {
                mb_per_request: Some(size as f64 / 1e6),
                ..plain(
                    cores,
                    Request {
                        method: "POST",
                        target: "/sha1".into(),
                        content_type: Some("application/octet-stream"),
                        body,
                    },
                )
            })
        }
        other => one(plain(1, Request::get(format!("/{other}")))),
    }
}

/// Whether this process (and so oha and the server, its children) may open a
/// socket per user; `spinbench` raised its soft limit to the hard one at start.
pub fn check_open_files(scenario: &Scenario) -> Result<(), String> {
    let needed = scenario.users as u64 + SPARE_FDS;
    match rlimit::open_files() {
        Ok(limit) if limit >= needed => Ok(()),
        Ok(limit) => Err(format!(
            "{} users need {needed} open files in oha and in the server; RLIMIT_NOFILE is {limit} (raise the hard limit: ulimit -Hn)",
            scenario.users
        )),
        Err(e) => Err(format!("reading RLIMIT_NOFILE: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_scenarios() {
        let io = super::super::function("io").unwrap();
        let full = scenarios(io, 2, false);
        let users: Vec<_> = full
            .iter()
            .map(|s| (s.users, s.k, s.skip.is_some()))
            .collect();
        assert_eq!(
            users,
            [(1000, Some(1000), false), (10_000, Some(10_000), false)]
        );
        assert!(
            full.iter()
                .all(|s| s.ramp_up.is_some() && s.request.target == "/io?ms=1000")
        );
        // --quick: the 10,000-user scenario is listed, as skipped.
        let quick = scenarios(io, 2, true);
        assert_eq!((quick[0].users, quick[0].skip), (100, None));
        assert_eq!(
            (quick[1].users, quick[1].skip),
            (10_000, Some(FULL_RUNS_ONLY))
        );
        assert!(full[1].describe().contains("steady state"));
    }
}
