//! A load run's outcome as metrics: its figures (rate, latency percentiles,
//! errors, users answered), the server's CPU per request, the order the report
//! reads them in, and how a run that hit a limit is marked.

use super::MEASUREMENT;
use crate::compare::oha::{self, OhaReport, Steady};
use crate::compare::scenarios::Scenario;
use crate::report::{Better, Metric, describe_outcomes};
use std::collections::BTreeMap;

/// What one load run measured, whichever way oha's output was read.
pub(super) struct Figures {
    /// `200` answers per second.
    rate: f64,
    /// p50, p90, p95 and p99, in ms.
    latency_ms: [Option<f64>; 4],
    max_ms: Option<f64>,
    errors: u64,
    /// Answers by status code, and (read from oha's summary) transport errors.
    clients_saw: BTreeMap<String, u64>,
    /// Steady-state runs: the users that got an answer.
    users_answered: Option<usize>,
    /// Responses of any status over the whole run (what the server's CPU time
    /// over the run is divided by).
    answered: u64,
}

/// How a timed run ended.
pub(super) enum Outcome {
    Figures(Figures),
    /// The users never reached a steady state (too few got an answer, or too late).
    NoSteadyState {
        why: String,
        users_answered: usize,
        clients_saw: BTreeMap<String, u64>,
        answered: u64,
    },
}

impl Outcome {
    /// Responses of any status over the whole run.
    pub(super) fn answered(&self) -> u64 {
        match self {
            Outcome::Figures(figures) => figures.answered,
            Outcome::NoSteadyState { answered, .. } => *answered,
        }
    }
}

const PERCENTILES: [(&str, f64); 4] = [
    ("latency_p50", 50.0),
    ("latency_p90", 90.0),
    ("latency_p95", 95.0),
    ("latency_p99", 99.0),
];

impl From<&OhaReport> for Figures {
    fn from(r: &OhaReport) -> Figures {
        Figures {
            rate: r.ok_count() as f64 / r.summary.total.max(1e-9),
            latency_ms: PERCENTILES.map(|(_, q)| r.latency_ms(&format!("p{q}"))),
            max_ms: r.summary.slowest.map(|s| s * 1e3),
            errors: r.error_count(),
            clients_saw: r.clients_saw(),
            users_answered: None,
            answered: r.status_code_distribution.values().sum(),
        }
    }
}

impl Figures {
    pub(super) fn of_steady(s: &Steady, timeline: &oha::Timeline, users: usize) -> Figures {
        Figures {
            rate: s.rate,
            latency_ms: PERCENTILES.map(|(_, q)| s.latency_ms(q)),
            max_ms: s.latency_ms(100.0),
            errors: s.errors,
            clients_saw: timeline.status_counts(),
            users_answered: Some(timeline.users_answered(users)),
            answered: timeline.answered.len() as u64,
        }
    }
}

/// A metric of `scenario` on `host`, with the scenario's detail and `k`.
pub(super) fn metric(
    f: &str,
    host: &str,
    scenario: &Scenario,
    name: &'static str,
    unit: &'static str,
    better: Better,
) -> Metric {
    let m = Metric::new(MEASUREMENT, f, host, name, unit, better).detail(scenario.describe());
    match scenario.k {
        Some(k) => m.k(k),
        None => m,
    }
}

/// The figures of one load run, as metrics of `host`.
pub(super) fn figure_metrics(
    f: &str,
    host: &str,
    scenario: &Scenario,
    figures: &Figures,
    cores: usize,
) -> Vec<Metric> {
    let m = |name, unit, better| metric(f, host, scenario, name, unit, better);
    let rps = figures.rate;
    let mut out = vec![match scenario.mb_per_request {
        Some(mb) => m("throughput", "MB/s", Better::Higher).value(rps * mb),
        None => m("throughput", "req/s", Better::Higher).value(rps),
    }];
    if scenario.per_core {
        out.push(m("throughput_per_core", "req/s/core", Better::Higher).value(rps / cores as f64));
    }
    for ((name, _), v) in PERCENTILES.iter().zip(figures.latency_ms) {
        out.push(match v {
            Some(v) => m(name, "ms", Better::Lower).value(v),
            None => m(name, "ms", Better::Lower).skipped("no successful requests"),
        });
    }
    if let Some(max) = figures.max_ms {
        out.push(m("latency_max", "ms", Better::Lower).value(max));
    }
    out.push(
        m("errors", "count", Better::Lower)
            .value(figures.errors as f64)
            .clients_saw(figures.clients_saw.clone()),
    );
    if let Some(n) = figures.users_answered {
        out.push(m("users_answered", "count", Better::Higher).value(n as f64));
    }
    out
}

/// Server CPU per request, in µs: the CPU time of the server's process tree
/// over a run, divided by the responses (any status) it gave in that run. Unlike
/// a rate, it does not depend on how fast the load generator could ask: the
/// figure to prefer on a shared machine. The time is read in clock ticks
/// (10 ms), so a run whose server used less than one tick has no figure.
pub(super) fn cpu_per_request(m: Metric, cpu_seconds: f64, answered: u64) -> Metric {
    if answered == 0 {
        m.skipped("no request answered")
    } else if cpu_seconds <= 0.0 {
        m.skipped(format!(
            "under the CPU clock's resolution (no 10 ms tick in {answered} requests)"
        ))
    } else {
        m.value(cpu_seconds * 1e6 / answered as f64)
    }
}

/// The figures to read first come first in the tables (they are ordered by
/// first appearance): the rates, then CPU per request and its kernel share; the
/// rest keep their order.
const FIRST: [&str; 7] = [
    "throughput",
    "throughput_per_core",
    "throughput_wrk",
    "server_cpu_per_request",
    "server_cpu_per_request_wrk",
    "server_kernel_cpu_per_request",
    "server_kernel_cpu_per_request_wrk",
];

pub(super) fn in_reading_order(mut out: Vec<Metric>) -> Vec<Metric> {
    out.sort_by_key(|m| {
        FIRST
            .iter()
            .position(|f| *f == m.metric)
            .unwrap_or(FIRST.len())
    });
    out
}

/// A run that hit a limit: what happened.
pub(super) struct Hit {
    /// "12 requests were not answered 200", "only 1726 of 10000 users got an answer ...".
    pub(super) what: String,
    pub(super) clients_saw: ClientsSaw,
}

/// What the clients saw, and from which run when not the timed one.
pub(super) struct ClientsSaw {
    pub(super) outcomes: BTreeMap<String, u64>,
    pub(super) source: String,
}

/// The metrics of a timed run's outcome, and whether (how) it hit a limit.
pub(super) fn outcome_metrics(
    f: &str,
    host: &str,
    scenario: &Scenario,
    outcome: Outcome,
    cores: usize,
) -> (Vec<Metric>, Option<Hit>) {
    let m = |name, unit, better| metric(f, host, scenario, name, unit, better);
    match outcome {
        Outcome::Figures(figures) => {
            let hit = (figures.errors > 0).then(|| Hit {
                what: format!("{} requests were not answered 200", figures.errors),
                clients_saw: ClientsSaw {
                    outcomes: figures.clients_saw.clone(),
                    source: String::new(),
                },
            });
            (figure_metrics(f, host, scenario, &figures, cores), hit)
        }
        Outcome::NoSteadyState {
            why,
            users_answered,
            clients_saw,
            answered: _,
        } => (
            vec![
                m("throughput", "req/s", Better::Higher),
                m("users_answered", "count", Better::Higher).value(users_answered as f64),
                m("errors", "count", Better::Lower),
            ],
            Some(Hit {
                what: why,
                clients_saw: ClientsSaw {
                    outcomes: clients_saw,
                    source: String::new(),
                },
            }),
        ),
    }
}

/// Marks a run that hit a limit: the throughput (if it has no figure),
/// errors and users answered carry the limit, errors what the clients saw.
/// If the host broke instead (`serving`; `None`: not checked), its figures
/// are dropped for "failed: ...".
pub(super) fn mark_limit(
    mut out: Vec<Metric>,
    what: &str,
    serving: Option<Result<(), String>>,
    clients_saw: ClientsSaw,
) -> Vec<Metric> {
    let saw = format!(
        "clients saw{}: {}",
        clients_saw.source,
        describe_outcomes(&clients_saw.outcomes)
    );
    if let Some(Err(broke)) = serving {
        out.retain(|m| m.metric == "throughput" || m.metric == "errors");
        for m in &mut out {
            m.summary = None;
            m.skipped = Some(format!("failed: {what}, then {broke}; {saw}"));
        }
    } else {
        let kept = if serving.is_some() {
            "; the host kept serving"
        } else {
            ""
        };
        let limit = format!("{what}; {saw}{kept}");
        for m in &mut out {
            let marked = match m.metric {
                "throughput" => m.summary.is_none(),
                "errors" | "users_answered" => true,
                _ => false,
            };
            if marked {
                m.limit = Some(limit.clone());
            }
        }
    }
    if let Some(errors) = out.iter_mut().find(|m| m.metric == "errors") {
        errors.clients_saw = Some(clients_saw.outcomes);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::scenarios::scenarios;

    #[test]
    fn metrics_of_a_summary_run() {
        let r: OhaReport = serde_json::from_str(
            r#"{"summary":{"total":2.0,"slowest":0.004},"latencyPercentiles":{"p50":0.0005,"p90":0.001,"p95":0.0015,"p99":0.003},
            "statusCodeDistribution":{"200":1990,"500":2},"errorDistribution":{"aborted due to deadline":8,"connection reset":1}}"#,
        )
        .unwrap();
        let f = crate::compare::scenarios::tests::function(
            "[[component]]\nid = \"hello\"\nprobe = { path = \"/hello\" }\n[[component.load]]\nusers = 10\n[[component.load]]\nusers = 10000\nrequest = { path = \"/io?ms=1000\" }\n",
            "hello",
        );
        let s = &scenarios(&f, 2, true)[0];
        // Every answer counts for CPU per request, the 500s too; transport errors do not.
        assert_eq!(Figures::from(&r).answered, 1992);
        let metrics = figure_metrics("hello", "wasm", s, &Figures::from(&r), 2);
        let value = |name| {
            metrics
                .iter()
                .find(|m| m.metric == name)
                .and_then(Metric::p50)
        };
        assert_eq!(metrics[0].metric, "throughput");
        assert_eq!(value("throughput"), Some(995.0));
        assert_eq!(value("latency_p95"), Some(1.5));
        assert_eq!(value("latency_max"), Some(4.0));
        assert_eq!(value("errors"), Some(3.0));
        assert!(metrics.iter().all(|m| m.k == Some(10)));
        let io = &scenarios(&f, 2, false)[1];
        let m = metric("io", "wasm", io, "throughput", "req/s", Better::Higher);
        assert_eq!(m.k, Some(10_000));
        assert!(
            m.detail
                .unwrap()
                .starts_with("10000 users, GET /io?ms=1000")
        );
    }

    #[test]
    fn cpu_per_request_is_the_servers_cpu_time_over_its_answers() {
        let m = || {
            Metric::new(
                MEASUREMENT,
                "hello",
                "wasm",
                "server_cpu_per_request",
                "us",
                Better::Lower,
            )
        };
        assert_eq!(cpu_per_request(m(), 0.5, 10_000).p50(), Some(50.0));
        let no_tick = cpu_per_request(m(), 0.0, 1300);
        assert!(no_tick.p50().is_none());
        assert!(
            no_tick
                .skipped
                .unwrap()
                .contains("resolution (no 10 ms tick in 1300 requests)")
        );
        let none = cpu_per_request(m(), 0.5, 0);
        assert_eq!(none.skipped.as_deref(), Some("no request answered"));
    }

    /// The rates, then CPU per request, lead; the rest keep the order they came in.
    #[test]
    fn rates_and_cpu_per_request_come_first() {
        let named = |name| Metric::new(MEASUREMENT, "hello", "wasm", name, "x", Better::Lower);
        let out = in_reading_order(
            [
                "throughput",
                "latency_p50",
                "errors",
                "server_kernel_cpu_per_request",
                "server_cpu_per_request",
                "server_cpu",
                "client_cpu_wrk",
                "server_cpu_per_request_wrk",
                "throughput_wrk",
            ]
            .map(named)
            .to_vec(),
        );
        let names: Vec<&str> = out.iter().map(|m| m.metric).collect();
        assert_eq!(
            names,
            [
                "throughput",
                "throughput_wrk",
                "server_cpu_per_request",
                "server_cpu_per_request_wrk",
                "server_kernel_cpu_per_request",
                "latency_p50",
                "errors",
                "server_cpu",
                "client_cpu_wrk"
            ]
        );
    }
}
