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
//!
//! `figures`: what a run's outcome becomes as metrics (and how a limit is marked);
//! `remote`: `spinbench load --url`, the same scenarios against a host elsewhere;
//! `wrk_check`: the second generator's check, in two halves around oha's timed run.

mod figures;
mod remote;
mod wrk_check;

pub use remote::{LoadArgs, main};

use super::estimate;
use super::hosts::{self, Cache, HostKind, Server};
use super::oha;
use super::outcome::MeasureError;
use super::progress::Step;
use super::scenarios::{Scenario, check_open_files, scenarios};
use super::tree::{self, Kind};
use super::wrk;
use super::{Function, Paths, Plan, Run};
use crate::benchfile::Variant;
use crate::model::Measurement;
use crate::procfs::{self, Reading};
use crate::report::{Better, Counted, Metric};
use anyhow::{Context, Result};
use figures::{
    ClientsSaw, Figures, Outcome, cpu_per_request, in_reading_order, mark_limit, metric,
    outcome_metrics,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use wrk_check::{wrk_checks, wrk_metrics, wrk_run};

const MEASUREMENT: Measurement = Measurement::Load;
/// How often the server's RSS is sampled while the load runs.
const RSS_SAMPLE_EVERY: Duration = Duration::from_millis(20);
/// How long the server gets to give memory back before "RSS after" (`--quick`: less).
const SETTLE_AFTER_LOAD: Duration = Duration::from_secs(1);
const SETTLE_AFTER_LOAD_QUICK: Duration = Duration::from_millis(100);
/// How long a host that hit a limit gets to answer the probe again before it
/// counts as broken rather than full.
const RECOVERY: Duration = Duration::from_secs(10);

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

/// What a server's process tree, and the load generators this process ran and
/// reaped, had spent at one moment: the start of a run they are measured over.
struct CpuMark {
    tree: Vec<Reading<f64>>,
    kernel: Vec<Reading<f64>>,
    generators: f64,
    at: Instant,
}

/// What they spent over a run, in seconds.
struct CpuSpent {
    server_seconds: f64,
    /// `server_seconds` by process of the tree.
    server_parts: Vec<Counted>,
    kernel_seconds: f64,
    /// The generator run meanwhile, the only child reaped during it.
    generator_seconds: f64,
    wall: f64,
}

impl CpuMark {
    fn now(pid: u32) -> Result<CpuMark> {
        Ok(CpuMark {
            tree: procfs::tree_cpu_seconds(pid)?,
            kernel: procfs::tree_kernel_cpu_seconds(pid)?,
            generators: procfs::children_cpu_seconds()?,
            at: Instant::now(),
        })
    }

    fn spent(&self, pid: u32) -> Result<CpuSpent> {
        let wall = self.at.elapsed().as_secs_f64();
        let (server_seconds, server_parts) =
            tree::cpu_between(&self.tree, &procfs::tree_cpu_seconds(pid)?);
        let (kernel_seconds, _) =
            tree::cpu_between(&self.kernel, &procfs::tree_kernel_cpu_seconds(pid)?);
        Ok(CpuSpent {
            server_seconds,
            server_parts,
            kernel_seconds,
            generator_seconds: procfs::children_cpu_seconds()? - self.generators,
            wall,
        })
    }
}

/// Load on one locally started server: warm-up, timed run, the CPU of the
/// server's tree (also per request), oha's and the rest of the machine's, and
/// the tree's RSS; then, if the run hit a limit, whether the host still serves
/// and what the clients saw, else wrk's check of the rate, run in two halves
/// around oha's timed run (`wrk_run`, `wrk_metrics`).
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
    // wrk's first half, before oha's timed run; its second comes after (`wrk_run`).
    // `--quick` (not for figures) runs the second only.
    let wrk_checks = wrk_checks(plan, f, scenario);
    let wrk_before = (wrk_checks && !plan.quick).then(|| wrk_run(server, t, plan, paths, body));
    let sampler = RssSampler::start(pid);
    let machine_before = procfs::machine_busy_seconds()?;
    let mark = CpuMark::now(pid)?;
    let outcome = timed_run(&base, scenario, plan, body)?;
    let CpuSpent {
        server_seconds: cpu_seconds,
        server_parts: cpu_parts,
        kernel_seconds,
        generator_seconds,
        wall,
    } = mark.spent(pid)?;
    let cpu = cpu_seconds / wall;
    let client_cpu = generator_seconds / wall;
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
        cpu_per_request(
            m("server_kernel_cpu_per_request", "us", Better::Lower),
            kernel_seconds,
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
        if wrk_checks {
            let after = || wrk_run(server, t, plan, paths, body);
            let runs = match wrk_before {
                Some(before) => before.and_then(|b| Ok(b.and(&after()?))),
                None => after(),
            };
            out.extend(wrk_metrics(t, runs));
        }
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
    let plan = &run.plan;
    let all = every_scenario(plan, cores);
    let targets = targets(plan, &all);
    let mut metrics = Vec::new();
    for (i, kind, variant) in targets {
        let (f, scenario) = (all[i].0, &all[i].1);
        let host = host_name(kind, variant);
        let target = Target {
            f,
            kind,
            variant,
            host: &host,
            scenario,
        };
        if scenario.skip.is_none() {
            run.progress.begin(&step(plan, &target));
        }
        match load_target(&run.paths, plan, &target, cores) {
            Ok(of_target) => metrics.extend(of_target),
            Err(error) => metrics.push(
                metric(
                    &f.name,
                    &host,
                    scenario,
                    "throughput",
                    "req/s",
                    Better::Higher,
                )
                .skipped(error.reason()),
            ),
        }
    }
    for metric in metrics {
        run.record(metric);
    }
    run.progress.end(MEASUREMENT);
}

/// Every load scenario of every function, sized for the server's `cores`.
fn every_scenario(plan: &Plan, cores: usize) -> Vec<(&Function, Scenario)> {
    plan.functions
        .iter()
        .flat_map(|f| {
            scenarios(f, cores, plan.quick)
                .into_iter()
                .map(move |s| (f, s))
        })
        .collect()
}

/// (scenario, host, a native variant of the benchmark file instead of the host's server)
fn targets<'a>(
    plan: &Plan,
    all: &[(&'a Function, Scenario)],
) -> Vec<(usize, HostKind, Option<&'a Variant>)> {
    let mut targets = Vec::new();
    for (i, &(f, _)) in all.iter().enumerate() {
        targets.extend(plan.hosts.iter().map(|h| (i, *h, None)));
        if plan.has_host(HostKind::Native) {
            let variants = f.spec.native.iter().flat_map(|n| &n.variants);
            targets.extend(variants.map(|v| (i, HostKind::Native, Some(v))));
        }
    }
    targets
}

fn host_name(kind: HostKind, variant: Option<&Variant>) -> String {
    match variant {
        Some(v) => v.host.clone(),
        None => kind.name().to_string(),
    }
}

/// Every scenario that runs, on every host.
pub fn steps(plan: &Plan) -> Vec<Step> {
    let all = every_scenario(plan, plan.pinning.server_cores());
    targets(plan, &all)
        .into_iter()
        .filter(|(i, _, _)| all[*i].1.skip.is_none())
        .map(|(i, kind, variant)| {
            let host = host_name(kind, variant);
            step(
                plan,
                &Target {
                    f: all[i].0,
                    kind,
                    variant,
                    host: &host,
                    scenario: &all[i].1,
                },
            )
        })
        .collect()
}

/// The host's start, the warm-up and the timed run (or the steady-state run),
/// the pause after it, and wrk's check.
fn step(plan: &Plan, t: &Target) -> Step {
    let runs = match t.scenario.ramp_up {
        Some(ramp_up) => steady_run_for(ramp_up, plan),
        None => plan.warmup + plan.load_duration,
    };
    let settle = if plan.quick {
        SETTLE_AFTER_LOAD_QUICK
    } else {
        SETTLE_AFTER_LOAD
    };
    let wrk = if wrk_checks(plan, t.f, t.scenario) {
        wrk::half_duration(plan.load_duration) * if plan.quick { 1 } else { 2 }
    } else {
        Duration::ZERO
    };
    let planned = estimate::start(t.f, t.kind != HostKind::Native) + runs + settle + wrk;
    Step::new(MEASUREMENT, &t.f.name, t.host, planned).detail(format!("{} users", t.scenario.users))
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
    // Held until the host listens (Server::start waits for it).
    let lease = hosts::free_addr()?;
    let addr = lease.addr();
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
    spinbench_host::err_line!("building {}: {build}", variant.host);
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
