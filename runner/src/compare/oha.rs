//! oha, the load generator, run in its own process (so its CPU is not the server's),
//! and the two ways its results are read.
//!
//! Short requests (hello, echo, …): oha's JSON summary of a timed run, after a
//! separate warm-up run. Requests in flight at the deadline are cut off and not
//! counted, and the run starts with every connection being opened; both cost a
//! few milliseconds out of ten seconds.
//!
//! Long requests (io: each one waits 1 s): read that way, the summary says 877
//! req/s where the server sustains ~998 (measured): the first second is the
//! ramp-up (connecting, with SYN retries when the accept backlog overflows), and
//! the ~1,000 requests in flight at the deadline are cut off, so completed /
//! duration is about 9/10 of the true rate. So those scenarios are read from oha's
//! per-request CSV instead ([`Timeline`]): oha runs for a ramp-up plus the
//! measured duration and waits for the requests still in flight at its deadline
//! (`-w`), and the rate is counted over a steady-state window that starts once
//! the users have their connections open and their first answers back.

use super::hosts;
use super::pin::Cpus;
use super::scenarios::Scenario;
use crate::stats;
use anyhow::{Context, Result, bail};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A request still unanswered this long after oha's deadline fails (`-w` waits
/// for in-flight requests, so this bounds the wait). The runner's own request
/// timeout is 30 s.
const REQUEST_TIMEOUT: &str = "30s";
/// The ramp-up ends when all users but one in this many have their first answer.
const RAMP_UP_STRAGGLERS: usize = 100;

/// What oha reports (the fields we read; see oha's `print_json`). Times in seconds.
#[derive(Debug, Deserialize)]
pub struct OhaReport {
    pub summary: OhaSummary,
    #[serde(rename = "latencyPercentiles")]
    pub latency_percentiles: BTreeMap<String, Option<f64>>,
    #[serde(rename = "statusCodeDistribution")]
    pub status_code_distribution: BTreeMap<String, u64>,
    #[serde(rename = "errorDistribution")]
    pub error_distribution: BTreeMap<String, u64>,
}

#[derive(Debug, Deserialize)]
pub struct OhaSummary {
    pub total: f64,
    pub slowest: Option<f64>,
}

impl OhaReport {
    pub fn ok_count(&self) -> u64 {
        self.status_code_distribution
            .get("200")
            .copied()
            .unwrap_or(0)
    }

    /// Non-200 answers and transport errors; requests cut off by the deadline
    /// (in flight when the duration ended) are not errors.
    pub fn error_count(&self) -> u64 {
        let bad_status: u64 = self
            .status_code_distribution
            .iter()
            .filter(|(s, _)| *s != "200")
            .map(|(_, n)| n)
            .sum();
        let failed: u64 = self
            .error_distribution
            .iter()
            .filter(|(e, _)| !e.contains("deadline"))
            .map(|(_, n)| n)
            .sum();
        bad_status + failed
    }

    /// What the clients got: answers by status code and transport errors by
    /// oha's message, without the requests cut off by the deadline.
    pub fn clients_saw(&self) -> BTreeMap<String, u64> {
        let errors = self
            .error_distribution
            .iter()
            .filter(|(e, _)| !e.contains("deadline"));
        self.status_code_distribution
            .iter()
            .chain(errors)
            .map(|(what, n)| (what.clone(), *n))
            .collect()
    }

    /// A latency percentile in ms (`p` as oha names it: "p50", "p99.9").
    pub fn latency_ms(&self, p: &str) -> Option<f64> {
        self.latency_percentiles
            .get(p)
            .copied()
            .flatten()
            .map(|s| s * 1e3)
    }
}

/// oha's command line for `scenario` against `base` (e.g. `http://127.0.0.1:3000`),
/// on `cpus` if pinned (`--pin`; its runtime then starts a worker thread per CPU it has).
fn command(
    base: &str,
    scenario: &Scenario,
    run_for: Duration,
    body: Option<&Path>,
    format: &str,
    cpus: Option<&Cpus>,
) -> Result<Command> {
    let oha = hosts::on_path("oha")
        .map_err(anyhow::Error::msg)
        .context("oha is the load generator (cargo install oha --locked)")?;
    let mut cmd = Command::new(oha);
    cmd.args([
        "--no-tui",
        "--output-format",
        format,
        "-c",
        &scenario.users.to_string(),
        "-z",
        &format!("{}ms", run_for.as_millis()),
    ]);
    cmd.args(["-m", &scenario.request.method]);
    for (name, value) in &scenario.request.headers {
        cmd.arg("-H").arg(format!("{name}: {value}"));
    }
    if let Some(file) = body {
        cmd.arg("-D").arg(file);
    }
    cmd.arg(format!("{base}{}", scenario.request.target));
    super::pin::apply(&mut cmd, cpus).context("pinning oha")?;
    Ok(cmd)
}

/// Runs oha to completion; its stdout.
fn output(mut cmd: Command) -> Result<Vec<u8>> {
    let out = super::group::output(cmd.stdin(Stdio::null())).context("running oha")?;
    if !out.status.success() {
        bail!(
            "oha failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

/// One timed oha run, read from its JSON summary.
pub fn run_summary(
    base: &str,
    scenario: &Scenario,
    duration: Duration,
    body: Option<&Path>,
    cpus: Option<&Cpus>,
) -> Result<OhaReport> {
    let stdout = output(command(base, scenario, duration, body, "json", cpus)?)?;
    serde_json::from_slice(&stdout).with_context(|| {
        format!(
            "parsing oha's JSON: {}",
            String::from_utf8_lossy(&stdout)
                .chars()
                .take(300)
                .collect::<String>()
        )
    })
}

/// One oha run of `run_for` that waits for the requests in flight at its
/// deadline, read from its per-request CSV.
pub fn run_timeline(
    base: &str,
    scenario: &Scenario,
    run_for: Duration,
    body: Option<&Path>,
    cpus: Option<&Cpus>,
) -> Result<Timeline> {
    let mut cmd = command(base, scenario, run_for, body, "csv", cpus)?;
    cmd.args(["-w", "-t", REQUEST_TIMEOUT]);
    let stdout = output(cmd)?;
    Timeline::parse(&String::from_utf8_lossy(&stdout), run_for.as_secs_f64())
}

/// One answered request in oha's CSV; times in seconds from oha's start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Answered {
    pub start: f64,
    pub duration: f64,
    pub status: u16,
    /// This request opened its connection (oha gives a connect time only then).
    pub connected: bool,
}

impl Answered {
    fn end(&self) -> f64 {
        self.start + self.duration
    }
}

/// Every answered request of one oha run. oha's CSV lists answers only (any
/// status); a transport error (reset, refused, timed out) is not in it, but
/// closes the user's connection, so the user's next answer shows a new one.
#[derive(Debug)]
pub struct Timeline {
    pub answered: Vec<Answered>,
    /// When oha stopped starting requests (its `-z`), on the same clock.
    pub deadline: f64,
}

/// The steady-state figures of a [`Timeline`].
#[derive(Debug, PartialEq)]
pub struct Steady {
    /// The window the rate is counted over (seconds from oha's start).
    pub from: f64,
    pub to: f64,
    /// `200` answers per second in the window.
    pub rate: f64,
    /// Latencies (s, sorted) of the requests started in the window.
    pub latencies: Vec<f64>,
    /// Over the whole run, ramp-up included: answers other than `200`, and
    /// connections opened other than one per user: each one beyond is a
    /// transport error (a lower bound on them: a user may fail several times
    /// before its next answer), each one short a user that never got an answer.
    pub errors: u64,
}

impl Steady {
    /// A latency percentile in ms.
    pub fn latency_ms(&self, q: f64) -> Option<f64> {
        (!self.latencies.is_empty()).then(|| stats::percentile_sorted(&self.latencies, q) * 1e3)
    }
}

impl Timeline {
    /// Reads oha's CSV (`request-start,DNS,DNS+dialup,Response-delay,request-duration,bytes,status`).
    pub fn parse(csv: &str, deadline: f64) -> Result<Timeline> {
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
        let column = |name: &str| {
            header
                .iter()
                .position(|h| h.trim() == name)
                .with_context(|| format!("oha's CSV has no {name:?} column: {header:?}"))
        };
        let (start, dialup, duration, status) = (
            column("request-start")?,
            column("DNS+dialup")?,
            column("request-duration")?,
            column("status")?,
        );
        let mut answered = Vec::new();
        for (n, line) in lines.enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let fields: Vec<&str> = line.split(',').collect();
            let field = |i: usize| {
                fields
                    .get(i)
                    .map(|f| f.trim())
                    .with_context(|| format!("oha's CSV line {}: {line:?}", n + 2))
            };
            let seconds = |i: usize| -> Result<f64> {
                let f = field(i)?;
                f.parse().with_context(|| format!("{f:?} is not a number"))
            };
            answered.push(Answered {
                start: seconds(start)?,
                duration: seconds(duration)?,
                status: field(status)?.parse().context("status")?,
                connected: seconds(dialup)? > 0.0,
            });
        }
        answered.sort_by(|a, b| a.start.total_cmp(&b.start));
        Ok(Timeline { answered, deadline })
    }

    /// Answers by status code over the whole run (oha's CSV has no transport
    /// errors: [`OhaReport::clients_saw`] has them).
    pub fn status_counts(&self) -> BTreeMap<String, u64> {
        let mut counts = BTreeMap::new();
        for a in &self.answered {
            *counts.entry(a.status.to_string()).or_default() += 1;
        }
        counts
    }

    /// How many of `users` got at least one answer (each user's first answer
    /// opens its connection).
    pub fn users_answered(&self, users: usize) -> usize {
        self.answered
            .iter()
            .filter(|a| a.connected)
            .count()
            .min(users)
    }

    /// The end of the ramp-up: when 99 % of the `users` had opened their
    /// connection and had their first answer back (the first answers that
    /// opened a connection, in order of start). `None` if fewer got one. Not all
    /// of them: one user whose connects kept failing (e.g. a SYN dropped from a
    /// full accept queue several times in a row) would otherwise hold the window
    /// back to the end of the run; such a user's lost time lowers the rate.
    pub fn ramp_up(&self, users: usize) -> Option<f64> {
        let mut ends: Vec<f64> = self
            .answered
            .iter()
            .filter(|a| a.connected)
            .take(users)
            .map(Answered::end)
            .collect();
        ends.sort_by(f64::total_cmp);
        let needed = users - users / RAMP_UP_STRAGGLERS;
        (needed > 0 && ends.len() >= needed).then(|| ends[needed - 1])
    }

    /// `200` answers per second over `[from, to]`, each request counted for the
    /// share of its own duration that lies inside: a request in flight at either
    /// edge counts for the part of it done in the window. In a closed loop each
    /// user's requests follow one another, so this is the users' request rate
    /// whatever the phase of their requests relative to the window (counting only
    /// whole requests that end inside it would be off by up to `users` requests
    /// when, as with io's 1 s waits, they all finish in the same instant).
    pub fn rate(&self, from: f64, to: f64) -> f64 {
        if to <= from {
            return 0.0;
        }
        let done: f64 = self
            .answered
            .iter()
            .filter(|a| a.status == 200)
            .map(|a| {
                let inside = a.end().min(to) - a.start.max(from);
                if a.duration > 0.0 {
                    inside.max(0.0) / a.duration
                } else {
                    f64::from(a.start >= from && a.start <= to)
                }
            })
            .sum();
        done / (to - from)
    }

    /// The steady state of a run of `users`: the window is the last `window`
    /// seconds before the deadline, or shorter if the ramp-up ended later, but
    /// not shorter than half of `window` (else the run did not reach a steady state).
    pub fn steady(&self, users: usize, window: f64) -> Result<Steady> {
        let ramp = self.ramp_up(users).with_context(|| {
            let connected = self.answered.iter().filter(|a| a.connected).count();
            format!(
                "only {connected} of {users} users got an answer in a {:.1} s run",
                self.deadline
            )
        })?;
        let from = ramp.max(self.deadline - window);
        let to = self.deadline;
        if to - from < window / 2.0 {
            bail!(
                "no steady state: the ramp-up (99 % of the users connected and answered once) ended at {ramp:.1} s of a {to:.1} s run"
            );
        }
        let mut latencies: Vec<f64> = self
            .answered
            .iter()
            .filter(|a| a.start >= from && a.start < to)
            .map(|a| a.duration)
            .collect();
        latencies.sort_by(f64::total_cmp);
        let non_ok = self.answered.iter().filter(|a| a.status != 200).count();
        let connections = self.answered.iter().filter(|a| a.connected).count();
        Ok(Steady {
            from,
            to,
            rate: self.rate(from, to),
            latencies,
            errors: (non_ok + connections.abs_diff(users)) as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OHA_JSON: &str = r#"{"summary":{"successRate":1.0,"total":2.0,"slowest":0.004,"fastest":0.0001,"average":0.001,
        "requestsPerSec":1000.0,"totalData":26000,"sizePerRequest":13,"sizePerSec":13000.0},
        "latencyPercentiles":{"p10":0.0002,"p50":0.0005,"p90":0.001,"p95":0.0015,"p99":0.003,"p99.9":0.0039},
        "statusCodeDistribution":{"200":1990,"500":2},
        "errorDistribution":{"aborted due to deadline":8,"connection reset":1}}"#;

    #[test]
    fn reads_oha_json() {
        let r: OhaReport = serde_json::from_str(OHA_JSON).unwrap();
        assert_eq!((r.ok_count(), r.error_count()), (1990, 3));
        let saw: Vec<(String, u64)> = r.clients_saw().into_iter().collect();
        assert_eq!(
            saw,
            [
                ("200".into(), 1990),
                ("500".into(), 2),
                ("connection reset".into(), 1)
            ]
        );
        assert_eq!(r.latency_ms("p99"), Some(3.0));
    }

    const HEADER: &str =
        "request-start,DNS,DNS+dialup,Response-delay,request-duration,bytes,status\n";

    /// `users` users each sending back-to-back requests of `d` seconds from
    /// `offset`, until `deadline` (the last one started before it is finished,
    /// as with `-w`). User `i` starts late by `late(i)` (a connect retry).
    fn closed_loop(users: usize, d: f64, deadline: f64, late: impl Fn(usize) -> f64) -> String {
        let mut csv = HEADER.to_string();
        for i in 0..users {
            let mut t = late(i);
            let mut first = true;
            while t < deadline {
                let (dialup, took) = if first { (0.05, d + 0.05) } else { (0.0, d) };
                csv.push_str(&format!("{t},0.00001,{dialup},{took},{took},25,200\n"));
                t += took;
                first = false;
            }
        }
        csv
    }

    #[test]
    fn reads_oha_csv() {
        let csv = format!(
            "{HEADER}0.5,0.0,0.0,1.0,1.0,25,503\n0.002,0.00004,0.0495,1.05,1.0547,25,200\n"
        );
        let t = Timeline::parse(&csv, 10.0).unwrap();
        assert_eq!(t.answered.len(), 2);
        assert_eq!(
            t.answered[0],
            Answered {
                start: 0.002,
                duration: 1.0547,
                status: 200,
                connected: true
            }
        );
        assert_eq!(
            (t.answered[1].status, t.answered[1].connected),
            (503, false)
        );
        let counts: Vec<(String, u64)> = t.status_counts().into_iter().collect();
        assert_eq!(counts, [("200".into(), 1), ("503".into(), 1)]);
        assert_eq!((t.users_answered(10), t.users_answered(0)), (1, 0));
        assert!(Timeline::parse("start,status\n1,200\n", 1.0).is_err());
        assert!(Timeline::parse(&format!("{HEADER}x,0,0,1,1,25,200\n"), 1.0).is_err());
    }

    /// The io case: 1,000 users, 1 s requests all finishing together, 400 of them
    /// a second late (a SYN retry): the steady-state rate is the users' real
    /// 1,000 / 1.002 s, from any window after the ramp-up.
    #[test]
    fn steady_rate_of_synchronised_long_requests() {
        let csv = closed_loop(1000, 1.002, 13.0, |i| if i < 400 { 1.0 } else { 0.0 });
        let t = Timeline::parse(&csv, 13.0).unwrap();
        let ramp = t.ramp_up(1000).unwrap();
        assert!((ramp - 2.052).abs() < 1e-9, "{ramp}");
        let s = t.steady(1000, 10.0).unwrap();
        assert_eq!((s.from, s.to, s.errors), (3.0, 13.0, 0));
        assert!((s.rate - 1000.0 / 1.002).abs() < 0.01, "{}", s.rate);
        // Every window, whatever its phase, gives the same rate.
        for from in [3.0, 3.3, 3.5, 4.9] {
            let r = t.rate(from, from + 5.0);
            assert!((r - 1000.0 / 1.002).abs() < 0.01, "{from}: {r}");
        }
        // Counting the whole requests that ended inside a window instead depends
        // on where the window falls relative to the bursts of answers.
        let whole = |from: f64| {
            let n = t
                .answered
                .iter()
                .filter(|a| (from..=from + 5.0).contains(&a.end()));
            n.count() as f64 / 5.0
        };
        assert_eq!((whole(3.0), whole(3.06)), (1000.0, 800.0));
        assert!((t.rate(3.06, 8.06) - 1000.0 / 1.002).abs() < 0.01);
        let p50 = s.latency_ms(50.0).unwrap();
        assert!((p50 - 1002.0).abs() < 1e-6, "{p50}");
    }

    #[test]
    fn a_late_ramp_shortens_the_window_or_fails() {
        let csv = closed_loop(10, 1.0, 12.0, |i| if i == 0 { 4.0 } else { 0.0 });
        let t = Timeline::parse(&csv, 12.0).unwrap();
        let s = t.steady(10, 10.0).unwrap();
        assert!((s.from - 5.05).abs() < 1e-9 && s.to == 12.0, "{s:?}");
        assert!(t.steady(10, 12.0).is_ok());
        assert!(t.steady(10, 20.0).is_err());
        // Of 11 users one never got an answer: no ramp-up end (99 % of them).
        assert!(t.steady(11, 10.0).is_err());
        assert!(t.steady(0, 10.0).is_err());
        assert!(
            Timeline::parse(HEADER, 12.0)
                .unwrap()
                .steady(10, 10.0)
                .is_err()
        );
    }

    /// One straggler in 200 (its connect retried until 9 s) does not hold the
    /// window back; its lost time lowers the rate. A user that never got an
    /// answer is an error.
    #[test]
    fn stragglers_lower_the_rate() {
        let csv = closed_loop(200, 1.0, 12.0, |i| if i == 0 { 9.0 } else { 0.0 });
        let t = Timeline::parse(&csv, 12.0).unwrap();
        let s = t.steady(200, 10.0).unwrap();
        assert_eq!((s.from, s.to, s.errors), (2.0, 12.0, 0));
        assert!(
            (s.rate - (199.0 * 10.0 + 2.95) / 10.0).abs() < 1e-9,
            "{}",
            s.rate
        );
        let s = t.steady(201, 10.0).unwrap();
        assert_eq!(s.errors, 1);
    }

    #[test]
    fn errors_are_other_statuses_and_reopened_connections() {
        let mut csv = closed_loop(2, 1.0, 5.0, |_| 0.0);
        csv.push_str("2.5,0.0,0.01,1.0,1.0,25,200\n2.6,0.0,0.0,0.001,0.001,25,503\n");
        let s = Timeline::parse(&csv, 5.0).unwrap().steady(2, 4.0).unwrap();
        assert_eq!(s.errors, 2);
        // The 503 is not counted in the rate; the extra request is.
        assert!(
            (s.rate - (2.0 * 3.95 + 1.0) / 3.95).abs() < 1e-9,
            "{}",
            s.rate
        );
    }
}
