//! Load: closed-loop virtual users with keep-alive for a fixed duration, driven by
//! oha in its own process (`oha`: how it is run and read). Records throughput,
//! latency percentiles, errors, and, for local servers, the CPU used by the
//! server, by oha and by the rest of the machine, and the server's RSS before,
//! during (peak) and after the load. The server is its whole process tree
//! (`tree`): `spin up` serves from a child.
//!
//! A run with errors, or in which the users never reached a steady state, hit
//! the host's limit if the host still serves afterwards: the report says what
//! the clients saw (status codes and transport errors) as a figure of that
//! host. A host that exited or stopped answering "failed".

use super::hosts::{self, Cache, HostKind, Server};
use super::oha::{self, OhaReport, Steady};
use super::outcome::MeasureError;
use super::scenarios::{Scenario, check_open_files, scenarios};
use super::tree::{self, Kind};
use super::wrk;
use super::{Function, Paths, Plan, Run};
use crate::benchfile::Variant;
use crate::model::Measurement;
use crate::procfs;
use crate::report::{Better, Metric, describe_outcomes};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const MEASUREMENT: Measurement = Measurement::Load;
/// How often the server's RSS is sampled while the load runs.
const RSS_SAMPLE_EVERY: Duration = Duration::from_millis(20);
/// How long the server gets to give memory back before "RSS after" (`--quick`: less).
const SETTLE_AFTER_LOAD: Duration = Duration::from_secs(1);
const SETTLE_AFTER_LOAD_QUICK: Duration = Duration::from_millis(200);
/// How long a host that hit a limit gets to answer the probe again before it
/// counts as broken rather than full.
const RECOVERY: Duration = Duration::from_secs(10);

/// What one load run measured, whichever way oha's output was read.
struct Figures {
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
enum Outcome {
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
    fn answered(&self) -> u64 {
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
    fn of_steady(s: &Steady, timeline: &oha::Timeline, users: usize) -> Figures {
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

/// The separate warm-up of a scenario read from oha's summary (a steady-state
/// one warms up inside its own run, before its window).
fn warm_up(base: &str, scenario: &Scenario, plan: &Plan, body: Option<&Path>) -> Result<()> {
    if scenario.ramp_up.is_none() {
        oha::run_summary(base, scenario, plan.warmup, body, plan.pinning.generator())
            .context("warm-up")?;
    }
    Ok(())
}

/// How long a steady-state scenario's one oha run lasts: its ramp-up, then
/// `plan.load_duration`.
fn steady_run_for(ramp_up: Duration, plan: &Plan) -> Duration {
    ramp_up.max(plan.warmup) + plan.load_duration
}

/// The timed run: oha's summary of `plan.load_duration`, or the steady state
/// of a run of the ramp-up plus `plan.load_duration`, counted over the last
/// `plan.load_duration` (`oha::Timeline::steady`).
fn timed_run(base: &str, scenario: &Scenario, plan: &Plan, body: Option<&Path>) -> Result<Outcome> {
    let Some(ramp_up) = scenario.ramp_up else {
        let summary = oha::run_summary(
            base,
            scenario,
            plan.load_duration,
            body,
            plan.pinning.generator(),
        )?;
        return Ok(Outcome::Figures(Figures::from(&summary)));
    };
    let run_for = steady_run_for(ramp_up, plan);
    let timeline = oha::run_timeline(base, scenario, run_for, body, plan.pinning.generator())?;
    Ok(
        match timeline.steady(scenario.users, plan.load_duration.as_secs_f64()) {
            Ok(steady) => Outcome::Figures(Figures::of_steady(&steady, &timeline, scenario.users)),
            Err(why) => Outcome::NoSteadyState {
                why: format!("{why:#}"),
                users_answered: timeline.users_answered(scenario.users),
                clients_saw: timeline.status_counts(),
                answered: timeline.answered.len() as u64,
            },
        },
    )
}

/// The body of a scenario in a file, for oha's `-D`.
fn body_file(dir: &Path, f: &Function, scenario: &Scenario) -> Result<Option<PathBuf>> {
    if scenario.request.body.is_empty() {
        return Ok(None);
    }
    let path = dir.join(format!("{}.body", f.name));
    std::fs::write(&path, &scenario.request.body)?;
    Ok(Some(path))
}

/// Samples the RSS of a process tree (summed over it) on a thread until dropped; keeps the peak.
struct RssSampler {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RssSampler {
    fn start(pid: u32) -> RssSampler {
        let (stop, peak) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
        );
        let (s, p) = (stop.clone(), peak.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                if let Ok(rss) = procfs::tree_rss_bytes(pid) {
                    p.fetch_max(rss, Ordering::Relaxed);
                }
                std::thread::sleep(RSS_SAMPLE_EVERY);
            }
        });
        RssSampler {
            stop,
            peak,
            thread: Some(thread),
        }
    }

    fn peak(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peak.load(Ordering::Relaxed)
    }
}

impl Drop for RssSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A metric of `scenario` on `host`, with the scenario's detail and `k`.
fn metric(
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
fn figure_metrics(
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
fn cpu_per_request(m: Metric, cpu_seconds: f64, answered: u64) -> Metric {
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
/// first appearance): the rates, then CPU per request; the rest keep their order.
const FIRST: [&str; 5] = [
    "throughput",
    "throughput_per_core",
    "throughput_wrk",
    "server_cpu_per_request",
    "server_cpu_per_request_wrk",
];

fn in_reading_order(mut out: Vec<Metric>) -> Vec<Metric> {
    out.sort_by_key(|m| {
        FIRST
            .iter()
            .position(|f| *f == m.metric)
            .unwrap_or(FIRST.len())
    });
    out
}

/// Load on one locally started server: warm-up, timed run, the CPU of the
/// server's tree (also per request), oha's and the rest of the machine's, and
/// the tree's RSS; then, if the run hit a limit, whether the host still serves
/// and what the clients saw, else wrk's check of the rate (`check_with_wrk`).
fn load_server(
    server: &Server,
    t: &Target,
    plan: &Plan,
    paths: &Paths,
    body: Option<&Path>,
    cores: usize,
) -> Result<Vec<Metric>> {
    let (f, host, scenario) = (t.f, t.host, t.scenario);
    let base = format!("http://{}", server.addr);
    let pid = server.pid();
    let m = |name, unit, better| metric(&f.name, host, scenario, name, unit, better);
    // Before the warm-up: the fresh server's footprint, which "after" is compared with.
    let memory_idle = procfs::tree_memory(pid)?;
    warm_up(&base, scenario, plan, body)?;
    let sampler = RssSampler::start(pid);
    let cpu_before = procfs::tree_cpu_seconds(pid)?;
    // oha is the only child reaped during the timed run: its CPU time.
    let client_before = procfs::children_cpu_seconds()?;
    let machine_before = procfs::machine_busy_seconds()?;
    let started = Instant::now();
    let outcome = timed_run(&base, scenario, plan, body)?;
    let wall = started.elapsed().as_secs_f64();
    let (cpu_seconds, cpu_parts) = tree::cpu_between(&cpu_before, &procfs::tree_cpu_seconds(pid)?);
    let cpu = cpu_seconds / wall;
    let client_cpu = (procfs::children_cpu_seconds()? - client_before) / wall;
    // What the rest of the machine used meanwhile (this process, other work):
    // on a shared machine, the sign that a figure was measured under contention.
    let machine = (procfs::machine_busy_seconds()? - machine_before) / wall;
    let other_cpu = (machine - cpu - client_cpu).max(0.0);
    let peak = sampler.peak();
    std::thread::sleep(if plan.quick {
        SETTLE_AFTER_LOAD_QUICK
    } else {
        SETTLE_AFTER_LOAD
    });
    let memory_after = procfs::tree_memory(pid)?;
    let (rss_before, before_parts) = tree::memory(&memory_idle, Kind::Rss);
    let (rss_after, after_parts) = tree::memory(&memory_after, Kind::Rss);

    let answered = outcome.answered();
    let (mut out, hit) = outcome_metrics(&f.name, host, scenario, outcome, cores);
    out.extend([
        cpu_per_request(
            m("server_cpu_per_request", "us", Better::Lower),
            cpu_seconds,
            answered,
        ),
        m("server_cpu", "cores", Better::Lower)
            .value(cpu)
            .processes(cpu_parts),
        m("client_cpu", "cores", Better::Lower).value(client_cpu),
        m("other_cpu", "cores", Better::Lower).value(other_cpu),
        m("rss_before", "bytes", Better::Lower)
            .value(rss_before)
            .processes(before_parts),
        m("rss_peak", "bytes", Better::Lower).value((peak as f64).max(rss_before)),
        m("rss_after", "bytes", Better::Lower)
            .value(rss_after)
            .processes(after_parts),
    ]);
    let Some(hit) = hit else {
        out.extend(check_with_wrk(server, t, plan, paths, body));
        return Ok(in_reading_order(out));
    };
    let serving = server.still_serves(&f.probe(), RECOVERY);
    // oha's CSV has answers only: for the transport errors, a second run read
    // from oha's summary (not when the host broke: it would see a dead host).
    let clients_saw = match (&serving, scenario.ramp_up) {
        (Ok(()), Some(_)) => match oha::run_summary(
            &base,
            scenario,
            steady_run_for(scenario.ramp_up.unwrap_or_default(), plan),
            body,
            plan.pinning.generator(),
        ) {
            Ok(again) => ClientsSaw {
                outcomes: again.clients_saw(),
                source: " (a second run of the scenario, read from oha's summary)".into(),
            },
            Err(e) => ClientsSaw {
                source: format!(" (answers only: a second run for the errors failed: {e:#})"),
                ..hit.clients_saw
            },
        },
        _ => hit.clients_saw,
    };
    Ok(in_reading_order(mark_limit(
        out,
        &hit.what,
        Some(serving),
        clients_saw,
    )))
}

/// wrk's check of oha's rate, run on the same (warm) server right after oha's
/// figures were taken: wrk's rate, the server's CPU per request under wrk, and
/// wrk's own CPU (`Report::finish` warns where the rates differ). None for a
/// scenario read in steady state (wrk's count over its whole run includes the
/// ramp-up, which oha's steady-state window leaves out) or without wrk (the
/// report says the check was skipped, once). A failed check is skipped with
/// why; it never costs the host its oha figures.
fn check_with_wrk(
    server: &Server,
    t: &Target,
    plan: &Plan,
    paths: &Paths,
    body: Option<&Path>,
) -> Vec<Metric> {
    let scenario = t.scenario;
    if scenario.ramp_up.is_some() || wrk::find().is_err() {
        return Vec::new();
    }
    let m = |name, unit, better| metric(&t.f.name, t.host, scenario, name, unit, better);
    let unit = if scenario.mb_per_request.is_some() {
        "MB/s"
    } else {
        "req/s"
    };
    let pid = server.pid();
    let run = || -> Result<Vec<Metric>> {
        let cpu_before = procfs::tree_cpu_seconds(pid)?;
        let client_before = procfs::children_cpu_seconds()?;
        let started = Instant::now();
        let summary = wrk::run(
            &format!("http://{}", server.addr),
            scenario,
            wrk::duration(plan.load_duration),
            body,
            &paths.work.join(format!("{}.wrk.lua", t.f.name)),
            plan.pinning.generator(),
            plan.pinning.generator_cores(),
        )?;
        let wall = started.elapsed().as_secs_f64();
        let (cpu_seconds, _) = tree::cpu_between(&cpu_before, &procfs::tree_cpu_seconds(pid)?);
        let client_cpu = (procfs::children_cpu_seconds()? - client_before) / wall;
        let rate = summary.ok_rate() * scenario.mb_per_request.unwrap_or(1.0);
        let mut throughput = m("throughput_wrk", unit, Better::Higher).value(rate);
        if summary.errors() > 0 {
            throughput = throughput.limit(format!(
                "wrk saw {} answers of 400 or above and {} socket errors",
                summary.bad_status, summary.socket_errors
            ));
        }
        Ok(vec![
            throughput,
            cpu_per_request(
                m("server_cpu_per_request_wrk", "us", Better::Lower),
                cpu_seconds,
                summary.requests,
            ),
            m("client_cpu_wrk", "cores", Better::Lower).value(client_cpu),
        ])
    };
    run().unwrap_or_else(|e| {
        vec![m("throughput_wrk", unit, Better::Higher).skipped(format!("the wrk check: {e:#}"))]
    })
}

/// A run that hit a limit: what happened.
struct Hit {
    /// "12 requests were not answered 200", "only 1726 of 10000 users got an answer ...".
    what: String,
    clients_saw: ClientsSaw,
}

/// What the clients saw, and from which run when not the timed one.
struct ClientsSaw {
    outcomes: BTreeMap<String, u64>,
    source: String,
}

/// The metrics of a timed run's outcome, and whether (how) it hit a limit.
fn outcome_metrics(
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
fn mark_limit(
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

/// `compare`'s load measurement: every scenario of every function on every
/// host, each host started fresh for each scenario.
pub fn measure_compare(run: &mut Run) {
    // Users and per-core figures are counted in the cores the server has: its
    // share when pinned (`--pin`).
    let cores = run.plan.pinning.server_cores();
    if wrk::find().is_err() {
        run.report.warnings.push(
            "load: `wrk` not on PATH: the check of oha's throughput with a second generator was skipped"
                .into(),
        );
    }
    let functions = run.plan.functions.clone();
    let all: Vec<(&Function, Scenario)> = functions
        .iter()
        .flat_map(|f| {
            scenarios(f, cores, run.plan.quick)
                .into_iter()
                .map(move |s| (f, s))
        })
        .collect();
    // (scenario, host, a native variant of the benchmark file instead of the host's server)
    let mut targets: Vec<(usize, HostKind, Option<&Variant>)> = Vec::new();
    for (i, (f, _)) in all.iter().enumerate() {
        targets.extend(run.plan.hosts.iter().map(|h| (i, *h, None)));
        if run.plan.has_host(HostKind::Native) {
            let variants = f.spec.native.iter().flat_map(|n| &n.variants);
            targets.extend(variants.map(|v| (i, HostKind::Native, Some(v))));
        }
    }
    let bar = super::progress("load", targets.len());
    for (i, kind, variant) in targets {
        let (f, scenario) = (all[i].0, &all[i].1);
        let host = match variant {
            Some(v) => v.host.clone(),
            None => kind.name().to_string(),
        };
        bar.set_message(format!("{} ({} users) on {host}", f.name, scenario.users));
        let target = Target {
            f,
            kind,
            variant,
            host: &host,
            scenario,
        };
        let metrics = match load_target(&run.paths, &run.plan, &target, cores) {
            Ok(metrics) => metrics,
            Err(error) => vec![
                metric(
                    &f.name,
                    &host,
                    scenario,
                    "throughput",
                    "req/s",
                    Better::Higher,
                )
                .skipped(error.reason()),
            ],
        };
        for metric in metrics {
            run.record(metric);
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
}

/// One scenario on one host.
struct Target<'a> {
    f: &'a Function,
    kind: HostKind,
    /// A native variant of the benchmark file, instead of `kind`'s server.
    variant: Option<&'a Variant>,
    host: &'a str,
    scenario: &'a Scenario,
}

fn load_target(
    paths: &Paths,
    plan: &Plan,
    t: &Target,
    cores: usize,
) -> Result<Vec<Metric>, MeasureError> {
    if let Some(why) = t.scenario.skip {
        return Err(MeasureError::Skipped(why.into()));
    }
    check_open_files(t.scenario)?;
    let addr = hosts::free_addr()?;
    let mut cmd = hosts::command(t.kind, t.f, paths, &Cache::Dir(paths.cache_dir()), addr)?;
    hosts::allow_concurrency(&mut cmd, t.kind, t.scenario.users)?;
    if let Some(variant) = t.variant {
        ensure_variant(paths, plan, variant)?;
        cmd = hosts::native_command(&variant.command, addr)?;
    }
    // The server's process tree on its CPUs from its first instruction (its
    // thread pools are sized by them), and everything it starts with it.
    super::pin::apply(&mut cmd, plan.pinning.server()).map_err(|e| format!("--pin: {e}"))?;
    let body = body_file(&paths.work, t.f, t.scenario)?;
    let label = format!("load-{}-{}-{}", t.f.name, t.scenario.users, t.host);
    let (server, _) = Server::start(cmd, addr, &t.f.probe(), &label)?;
    Ok(load_server(
        &server,
        t,
        plan,
        paths,
        body.as_deref(),
        cores,
    )?)
}

/// A native variant's program, brought up to date by the benchmark file's
/// `build` command in a full run (an incremental build is quick when nothing
/// changed, and a program left from older sources would be measured
/// otherwise); `--quick` uses what is there and builds nothing (a first build
/// takes minutes).
fn ensure_variant(paths: &Paths, plan: &Plan, variant: &Variant) -> Result<(), String> {
    let program = &variant.command.program;
    let build = match &variant.build {
        Some(build) if !plan.quick => build,
        _ if program.is_file() => return Ok(()),
        None => {
            return Err(format!(
                "{} not found (and no build command)",
                program.display()
            ));
        }
        Some(build) => return Err(format!("not built (--quick does not build it): {build}")),
    };
    eprintln!("building {}: {build}", variant.host);
    let status = Command::new("sh")
        .args(["-c", build])
        .current_dir(&paths.root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("running sh: {e}"))?;
    if status.success() && program.is_file() {
        Ok(())
    } else {
        Err(format!("build failed ({status}): {build}"))
    }
}

#[derive(clap::Args, Debug, Clone)]
pub struct LoadArgs {
    /// Base URL of a running host serving the function set, e.g. http://my-app.example.com
    #[arg(long)]
    pub url: String,
    /// The benchmark file whose load scenarios are run (or a directory holding spinbench.toml).
    #[arg(short = 'f', long = "from", default_value = crate::benchfile::DEFAULT_FILE)]
    pub from: PathBuf,
    /// Functions (the file's component ids) to load, comma-separated [default: every one in the file].
    #[arg(long, value_delimiter = ',')]
    pub functions: Vec<String>,
    /// Seconds per scenario (after its warm-up).
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Cores behind the URL, for the cpu scenario's users and per-core figure (default: this machine's).
    #[arg(long)]
    pub cores: Option<usize>,
    /// 1 s per scenario, small bodies, fewer users.
    #[arg(long)]
    pub quick: bool,
    /// Where `<timestamp>/report.json` is written.
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
    /// What serves the URL, written into the report's versions (repeatable), e.g.
    /// `--host-version containerd="containerd 1.7.24"`.
    #[arg(long = "host-version", value_name = "NAME=VERSION")]
    pub host_versions: Vec<String>,
}

/// `--host-version NAME=VERSION` values as a map; a value without `=`, or with an
/// empty name or version, is refused by name.
fn host_versions(specs: &[String]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for spec in specs {
        let (name, version) = spec
            .split_once('=')
            .map(|(n, v)| (n.trim(), v.trim()))
            .filter(|(n, v)| !n.is_empty() && !v.is_empty())
            .ok_or_else(|| anyhow::anyhow!("--host-version {spec:?}: expected NAME=VERSION"))?;
        out.insert(name.to_string(), version.to_string());
    }
    Ok(out)
}

/// `spinbench load --url`: the same scenarios against a host running elsewhere
/// (no CPU or RSS figures: the server is not ours to read).
pub fn main(args: &LoadArgs) -> Result<()> {
    let started = Instant::now();
    let base = args.url.trim_end_matches('/').to_string();
    let served_by = host_versions(&args.host_versions)?;
    let compare_args = super::CompareArgs {
        from: args.from.clone(),
        functions: args.functions.clone(),
        hosts: vec!["native".into()],
        measurements: vec![MEASUREMENT.name().into()],
        duration: args.duration,
        samples: 1,
        runs: 1,
        quick: args.quick,
        results_dir: args.results_dir.clone(),
        keep: crate::report::keep::KeepArgs::default(),
        command_hosts: Vec::new(),
        // The server is elsewhere: nothing to pin it away from.
        pin: super::pin::PinArg::Off,
    };
    let file = crate::benchfile::BenchFile::load(&args.from)?;
    let plan = Plan::from_args(&compare_args, super::functions(&file)?)?;
    let mut report = crate::report::Report::new(std::env::args().collect(), plan.info());
    report.plan.hosts = vec!["remote"];
    report.versions.host = served_by;
    report.plan.pinning.note = "the server runs elsewhere (--url): nothing pinned".into();
    let cores = args.cores.unwrap_or(report.machine.cores);
    let work = std::env::temp_dir().join(format!("spinbench-load-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    for f in &plan.functions {
        for scenario in scenarios(f, cores, plan.quick) {
            eprintln!("load: {} against {base}", scenario.describe());
            let m = |name, unit, better| metric(&f.name, "remote", &scenario, name, unit, better);
            let ready = match scenario.skip {
                Some(why) => Err(why.to_string()),
                None => check_open_files(&scenario),
            };
            let result = match ready {
                Err(why) => Err(anyhow::anyhow!(why)),
                Ok(()) => body_file(&work, f, &scenario).and_then(|body| {
                    let body = body.as_deref();
                    warm_up(&base, &scenario, &plan, body)?;
                    timed_run(&base, &scenario, &plan, body)
                }),
            };
            match result {
                Ok(outcome) => {
                    let (out, hit) = outcome_metrics(&f.name, "remote", &scenario, outcome, cores);
                    let out = match hit {
                        // Not our host: whether it still serves is not checked.
                        Some(hit) => mark_limit(out, &hit.what, None, hit.clients_saw),
                        None => out,
                    };
                    for m in out {
                        report.push(m);
                    }
                }
                Err(e) => {
                    report.push(m("throughput", "req/s", Better::Higher).skipped(format!("{e:#}")));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    report.finish(started.elapsed());
    print!("{}", crate::report::table::terminal(&report));
    let out_dir = args.results_dir.join(crate::report::timestamp());
    crate::report::write(&report, &out_dir)?;
    println!("report: {}", out_dir.join("report.json").display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_versions_are_name_version_pairs() {
        let got = host_versions(&[
            "containerd=containerd 1.7.24".into(),
            "shim = containerd-shim-spin-v2 0.24.0".into(),
        ])
        .unwrap();
        assert_eq!(got["containerd"], "containerd 1.7.24");
        assert_eq!(got["shim"], "containerd-shim-spin-v2 0.24.0");
        for bad in ["containerd", "=1.7", "containerd= "] {
            let e = host_versions(&[bad.into()]).unwrap_err().to_string();
            assert!(e.contains("expected NAME=VERSION"), "{bad}: {e}");
        }
    }

    #[test]
    fn metrics_of_a_summary_run() {
        let r: OhaReport = serde_json::from_str(
            r#"{"summary":{"total":2.0,"slowest":0.004},"latencyPercentiles":{"p50":0.0005,"p90":0.001,"p95":0.0015,"p99":0.003},
            "statusCodeDistribution":{"200":1990,"500":2},"errorDistribution":{"aborted due to deadline":8,"connection reset":1}}"#,
        )
        .unwrap();
        let f = super::super::scenarios::tests::function(
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
                "latency_p50",
                "errors",
                "server_cpu",
                "client_cpu_wrk"
            ]
        );
    }
}
