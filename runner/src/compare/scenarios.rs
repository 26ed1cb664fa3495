//! The load scenarios: how many users send what to each function, and whether
//! the run is read from oha's summary or in steady state from its per-request
//! timeline (`oha`).

use super::Function;
use super::http::Request;
use crate::benchfile::Throughput;
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
    /// The most it can do, in req/s, when its requests wait.
    pub ceiling: Option<f64>,
}

impl Scenario {
    pub fn describe(&self) -> String {
        format!(
            "{} users, {} {}{}{}{}",
            self.users,
            self.request.method,
            self.request.target,
            self.mb_per_request
                .map_or(String::new(), |mb| format!(" ({mb:.0} MB body)")),
            self.ceiling
                .map_or(String::new(), |c| format!(", ceiling {c:.0} req/s")),
            if self.ramp_up.is_some() {
                ", steady state (requests in flight at the window's edges counted pro rata)"
            } else {
                ""
            }
        )
    }
}

/// Why a scenario with `quick = false` in the benchmark file does not run in `--quick`.
pub const FULL_RUNS_ONLY: &str = "full runs only (quick = false in the benchmark file)";

/// The load scenarios of `f` from the benchmark file, sized for this machine
/// (their quick shape for `--quick`).
pub fn scenarios(f: &Function, cores: usize, quick: bool) -> Vec<Scenario> {
    // A function with several scenarios tells their rows apart by users (`k`).
    let several = f.spec.load.len() > 1;
    f.spec
        .load
        .iter()
        .map(|load| {
            let (shape, skip) = match (&load.quick, quick) {
                (Some(shape), true) => (shape, None),
                (None, true) => (&load.full, Some(FULL_RUNS_ONLY)),
                (_, false) => (&load.full, None),
            };
            let users = shape.users.count(cores);
            let request = Request::from(&shape.request);
            Scenario {
                users,
                mb_per_request: (load.throughput == Throughput::Bytes)
                    .then(|| request.body.len() as f64 / 1e6),
                request,
                per_core: load.per_core,
                ramp_up: shape.ramp_up,
                k: several.then_some(users),
                skip,
                ceiling: load.ceiling,
            }
        })
        .collect()
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
pub mod tests {
    use super::*;
    use crate::benchfile::BenchFile;
    use std::path::PathBuf;

    /// A function of the benchmark file `text`, without manifests.
    pub fn function(text: &str, id: &str) -> Function {
        let file = BenchFile::parse(text, PathBuf::from("/app")).unwrap();
        Function {
            name: id.into(),
            spec: file.component(id).unwrap().clone(),
            wasm: "/app/x.wasm".into(),
            manifest: "/app/spin.toml".into(),
            p3_wasm: Err("none".into()),
        }
    }

    const WAITS: &str = r#"
[[component]]
id = "wait"
probe = { path = "/wait?ms=0" }
[[component.load]]
users = 1000
request = { path = "/wait?ms=1000" }
ceiling = 1000
steady_state = { ramp_up = "3s" }
quick = { users = 100, request = { path = "/wait?ms=100" }, ramp_up = "300ms" }
[[component.load]]
users = "5*cores"
request = { method = "POST", path = "/wait?ms=1000", body_bytes = 2000000 }
throughput = "bytes"
per_core = true
quick = false
"#;

    #[test]
    fn scenarios_come_from_the_benchmark_file() {
        let f = function(WAITS, "wait");
        let full = scenarios(&f, 2, false);
        let users: Vec<_> = full
            .iter()
            .map(|s| (s.users, s.k, s.skip.is_some(), s.per_core))
            .collect();
        assert_eq!(
            users,
            [
                (1000, Some(1000), false, false),
                (10, Some(10), false, true)
            ]
        );
        assert_eq!(full[0].ramp_up, Some(Duration::from_secs(3)));
        assert_eq!(full[0].request.target, "/wait?ms=1000");
        assert!(full[0].describe().contains("steady state"));
        assert!(full[0].describe().contains("ceiling 1000 req/s"));
        assert_eq!(full[1].mb_per_request, Some(2.0));
        assert_eq!(full[1].request.method, "POST");
        // --quick: the quick shape, and the full-runs-only scenario listed as skipped.
        let quick = scenarios(&f, 2, true);
        assert_eq!(
            (quick[0].users, quick[0].ramp_up, quick[0].skip),
            (100, Some(Duration::from_millis(300)), None)
        );
        assert_eq!(quick[0].request.target, "/wait?ms=100");
        assert_eq!(quick[1].skip, Some(FULL_RUNS_ONLY));
    }

    #[test]
    fn one_scenario_has_no_k() {
        let f = function(
            "[[component]]\nid = \"a\"\nprobe = { path = \"/a\" }\n[[component.load]]\nusers = 3\n",
            "a",
        );
        let s = scenarios(&f, 2, false);
        assert_eq!((s.len(), s[0].users, s[0].k), (1, 3, None));
        assert_eq!(s[0].request.target, "/a");
        assert!(s[0].ramp_up.is_none() && s[0].mb_per_request.is_none());
    }
}
