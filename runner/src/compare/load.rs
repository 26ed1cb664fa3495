//! Load: closed-loop virtual users with keep-alive for a fixed duration, driven by
//! oha in its own process (so its CPU is not the server's). Records throughput,
//! latency percentiles, errors, and, for local servers, the server's CPU use and
//! its RSS before, during (peak) and after the load.

use super::hosts::{self, Cache, HostKind, Server};
use super::http::Request;
use super::{ECHO_BODY, Function, Paths, Plan, Run, SUNTIMES_QUERY};
use crate::procfs;
use crate::report::{Better, Metric};
use anyhow::{Context, Result, bail};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const MEASUREMENT: &str = "load";
/// How often the server's RSS is sampled while the load runs.
const RSS_SAMPLE_EVERY: Duration = Duration::from_millis(20);
/// How long the server gets to give memory back before "RSS after" (`--quick`: less).
const SETTLE_AFTER_LOAD: Duration = Duration::from_secs(1);
const SETTLE_AFTER_LOAD_QUICK: Duration = Duration::from_millis(200);

/// One function's load: who sends what, and how the result is read.
pub struct Scenario {
    pub users: usize,
    pub request: Request,
    /// Body bytes per request when throughput is reported in MB/s (sha1).
    pub mb_per_request: Option<f64>,
    /// Report requests per second per core too (cpu).
    pub per_core: bool,
    /// The server holds each request this long (io): oha's run must outlast it.
    pub min_duration: Duration,
}

impl Scenario {
    pub fn describe(&self) -> String {
        format!(
            "{} users, {} {}{}",
            self.users,
            self.request.method,
            self.request.target,
            self.mb_per_request
                .map_or(String::new(), |mb| format!(" ({mb:.0} MB body)"))
        )
    }
}

/// The seeds' scenarios, sized for this machine (and smaller for `--quick`).
pub fn scenario(f: &Function, cores: usize, quick: bool) -> Scenario {
    let plain = |users, request| Scenario {
        users,
        request,
        mb_per_request: None,
        per_core: false,
        min_duration: Duration::ZERO,
    };
    match f.name {
        "hello" => plain(10, Request::get("/hello")),
        "echo" => plain(
            16,
            Request {
                method: "POST",
                target: "/echo".into(),
                content_type: Some("application/json"),
                body: ECHO_BODY.into(),
            },
        ),
        // Full speed: enough users to keep every core busy.
        "suntimes" => plain(4 * cores, Request::get(SUNTIMES_QUERY)),
        "cpu" => Scenario {
            per_core: true,
            ..plain(2 * cores, Request::get("/cpu?ms=1"))
        },
        // 1000 users each waiting 1 s: the ceiling is 1000 requests per second.
        "io" if quick => Scenario {
            min_duration: Duration::from_millis(300),
            ..plain(100, Request::get("/io?ms=100"))
        },
        "io" => Scenario {
            min_duration: Duration::from_secs(3),
            ..plain(1000, Request::get("/io?ms=1000"))
        },
        "sha1" => {
            let size: usize = if quick { 1 << 20 } else { 16 << 20 };
            let body: Vec<u8> = (0..size)
                .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3])
                .collect();
            Scenario {
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
            }
        }
        other => plain(1, Request::get(format!("/{other}"))),
    }
}

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

    /// A latency percentile in ms (`p` as oha names it: "p50", "p99.9").
    pub fn latency_ms(&self, p: &str) -> Option<f64> {
        self.latency_percentiles
            .get(p)
            .copied()
            .flatten()
            .map(|s| s * 1e3)
    }
}

/// Runs oha once against `base` (e.g. `http://127.0.0.1:3000`) and parses its report.
pub fn run_oha(
    base: &str,
    scenario: &Scenario,
    duration: Duration,
    body_file: Option<&Path>,
) -> Result<OhaReport> {
    let oha = hosts::on_path("oha")
        .map_err(anyhow::Error::msg)
        .context("oha is the load generator (cargo install oha --locked)")?;
    let mut cmd = Command::new(oha);
    let seconds = duration.max(scenario.min_duration).as_secs_f64();
    cmd.args([
        "--no-tui",
        "--output-format",
        "json",
        "-c",
        &scenario.users.to_string(),
        "-z",
        &format!("{}ms", (seconds * 1e3).round() as u64),
    ]);
    cmd.args(["-m", scenario.request.method]);
    if let Some(ct) = scenario.request.content_type {
        cmd.args(["-T", ct]);
    }
    if let Some(file) = body_file {
        cmd.arg("-D").arg(file);
    }
    cmd.arg(format!("{base}{}", scenario.request.target));
    let out = cmd.stdin(Stdio::null()).output().context("running oha")?;
    if !out.status.success() {
        bail!(
            "oha failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "parsing oha's JSON: {}",
            String::from_utf8_lossy(&out.stdout)
                .chars()
                .take(300)
                .collect::<String>()
        )
    })
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

/// Samples a process's RSS on a thread until dropped; keeps the peak.
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
                if let Ok(rss) = procfs::rss_bytes(pid) {
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

/// The figures of one load run, as metrics of `host`.
fn oha_metrics(
    f: &str,
    host: &str,
    scenario: &Scenario,
    report: &OhaReport,
    cores: usize,
) -> Vec<Metric> {
    let detail = scenario.describe();
    let m = |metric, unit, better| {
        Metric::new(MEASUREMENT, f, host, metric, unit, better).detail(detail.clone())
    };
    let rps = report.ok_count() as f64 / report.summary.total.max(1e-9);
    let mut out = vec![match scenario.mb_per_request {
        Some(mb) => m("throughput", "MB/s", Better::Higher).value(rps * mb),
        None => m("throughput", "req/s", Better::Higher).value(rps),
    }];
    if scenario.per_core {
        out.push(m("throughput_per_core", "req/s/core", Better::Higher).value(rps / cores as f64));
    }
    for (metric, p) in [
        ("latency_p50", "p50"),
        ("latency_p90", "p90"),
        ("latency_p95", "p95"),
        ("latency_p99", "p99"),
    ] {
        out.push(match report.latency_ms(p) {
            Some(v) => m(metric, "ms", Better::Lower).value(v),
            None => m(metric, "ms", Better::Lower).skipped("no successful requests"),
        });
    }
    if let Some(max) = report.summary.slowest {
        out.push(m("latency_max", "ms", Better::Lower).value(max * 1e3));
    }
    out.push(m("errors", "count", Better::Lower).value(report.error_count() as f64));
    out
}

/// Load on one locally started server: warm-up, timed run, CPU and RSS.
fn load_server(
    server: &Server,
    f: &Function,
    host: &str,
    scenario: &Scenario,
    plan: &Plan,
    body: Option<&Path>,
    cores: usize,
) -> Result<Vec<Metric>> {
    let base = format!("http://{}", server.addr);
    let pid = server.pid();
    // Before the warm-up: the fresh server's footprint, which "after" is compared with.
    let rss_idle = procfs::rss_bytes(pid)?;
    run_oha(&base, scenario, plan.warmup, body).context("warm-up")?;
    let sampler = RssSampler::start(pid);
    let cpu_before = procfs::cpu_seconds(pid)?;
    let started = Instant::now();
    let report = run_oha(&base, scenario, plan.load_duration, body)?;
    let wall = started.elapsed().as_secs_f64();
    let cpu = (procfs::cpu_seconds(pid)? - cpu_before) / wall;
    let peak = sampler.peak();
    std::thread::sleep(if plan.quick {
        SETTLE_AFTER_LOAD_QUICK
    } else {
        SETTLE_AFTER_LOAD
    });
    let rss_after = procfs::rss_bytes(pid)?;

    let mut out = oha_metrics(f.name, host, scenario, &report, cores);
    let detail = scenario.describe();
    let m = |metric, unit, better| {
        Metric::new(MEASUREMENT, f.name, host, metric, unit, better).detail(detail.clone())
    };
    out.push(m("server_cpu", "cores", Better::Lower).value(cpu));
    out.push(m("rss_before", "bytes", Better::Lower).value(rss_idle as f64));
    out.push(m("rss_peak", "bytes", Better::Lower).value(peak.max(rss_idle) as f64));
    out.push(m("rss_after", "bytes", Better::Lower).value(rss_after as f64));
    Ok(out)
}

/// `compare`'s load measurement: every function on every host, each host fresh.
pub fn measure_compare(run: &mut Run) -> Result<()> {
    let cores = run.report.machine.cores;
    let mut targets: Vec<(&Function, HostKind, Option<PathBuf>)> = Vec::new();
    for f in &run.plan.functions {
        for h in &run.plan.hosts {
            targets.push((f, *h, None));
        }
        if f.name == "sha1" && run.plan.has_host(HostKind::Native) {
            targets.push((f, HostKind::Native, Some(run.paths.soft_sha1_binary())));
        }
    }
    let bar = run.progress("load", targets.len());
    for (f, kind, soft) in targets {
        let host = if soft.is_some() {
            "native-soft-sha".to_string()
        } else {
            kind.name().to_string()
        };
        bar.set_message(format!("{} on {host}", f.name));
        let scenario = scenario(f, cores, run.plan.quick);
        let metrics = match load_target(
            &run.paths,
            &run.plan,
            f,
            kind,
            soft.as_deref(),
            &host,
            &scenario,
            cores,
        ) {
            Ok(metrics) => metrics,
            Err(Skip(why)) => vec![
                Metric::new(
                    MEASUREMENT,
                    f.name,
                    &host,
                    "throughput",
                    "req/s",
                    Better::Higher,
                )
                .detail(scenario.describe())
                .skipped(why),
            ],
        };
        for metric in metrics {
            run.record(metric);
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(())
}

/// Why a host's figures are missing; goes into the report.
pub struct Skip(pub String);

impl From<anyhow::Error> for Skip {
    fn from(e: anyhow::Error) -> Skip {
        Skip(format!("failed: {e:#}"))
    }
}

#[allow(clippy::too_many_arguments)]
fn load_target(
    paths: &Paths,
    plan: &Plan,
    f: &Function,
    kind: HostKind,
    soft: Option<&Path>,
    host: &str,
    scenario: &Scenario,
    cores: usize,
) -> Result<Vec<Metric>, Skip> {
    let addr = hosts::free_addr()?;
    let mut cmd =
        hosts::command(kind, f, paths, &Cache::Dir(paths.cache_dir()), addr).map_err(Skip)?;
    if let Some(soft) = soft {
        let bin = ensure_soft_sha1(paths, plan).map_err(Skip)?;
        debug_assert_eq!(bin, soft);
        cmd = Command::new(bin);
        cmd.arg("--listen").arg(addr.to_string());
    }
    let body = body_file(&paths.work, f, scenario)?;
    let (server, _) = Server::start(cmd, addr, &(f.probe)(), &format!("load-{}-{host}", f.name))?;
    Ok(load_server(
        &server,
        f,
        host,
        scenario,
        plan,
        body.as_deref(),
        cores,
    )?)
}

/// The native sha1 built with RustCrypto's portable backend (`--cfg sha1_backend="soft"`),
/// so native's figure without SHA instructions sits beside wasm's. Built on first use
/// into its own target dir (not in `--quick`: it takes a minute).
fn ensure_soft_sha1(paths: &Paths, plan: &Plan) -> Result<PathBuf, String> {
    let bin = paths.soft_sha1_binary();
    if bin.is_file() {
        return Ok(bin);
    }
    let build = "RUSTFLAGS='--cfg sha1_backend=\"soft\"' cargo build --release -p sha1-blocks --bin sha1-native --target-dir target/sha1-soft";
    if plan.quick {
        return Err(format!("not built (--quick does not build it): {build}"));
    }
    eprintln!("building the native sha1 without SHA instructions: {build}");
    let status = Command::new("cargo")
        .args([
            "build",
            "--release",
            "-p",
            "sha1-blocks",
            "--bin",
            "sha1-native",
            "--target-dir",
        ])
        .arg(paths.root.join("target/sha1-soft"))
        .env("RUSTFLAGS", "--cfg sha1_backend=\"soft\"")
        .current_dir(&paths.root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("running cargo: {e}"))?;
    if status.success() && bin.is_file() {
        Ok(bin)
    } else {
        Err(format!("build failed ({status}): {build}"))
    }
}

#[derive(clap::Args, Debug, Clone)]
pub struct LoadArgs {
    /// Base URL of a running host serving the function set, e.g. http://my-app.example.com
    #[arg(long)]
    pub url: String,
    /// Functions to load (comma-separated).
    #[arg(long, value_delimiter = ',', default_values = ["hello", "echo", "cpu", "io", "suntimes", "sha1"])]
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
}

/// `spinbench load --url`: the same scenarios against a host running elsewhere
/// (no CPU or RSS figures: the server is not ours to read).
pub fn main(args: LoadArgs) -> Result<()> {
    let started = Instant::now();
    let base = args.url.trim_end_matches('/').to_string();
    let compare_args = super::CompareArgs {
        manifest: "spin.toml".into(),
        functions: args.functions.clone(),
        hosts: vec!["native".into()],
        measurements: vec![MEASUREMENT.into()],
        duration: args.duration,
        samples: 1,
        runs: 1,
        quick: args.quick,
        results_dir: args.results_dir.clone(),
    };
    let plan = Plan::from_args(&compare_args)?;
    let mut report = crate::report::Report::new(std::env::args().collect(), &plan);
    report.plan.hosts = vec!["remote"];
    let cores = args.cores.unwrap_or(report.machine.cores);
    let work = std::env::temp_dir().join(format!("spinbench-load-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    for f in &plan.functions {
        eprintln!("load: {} against {base}", f.name);
        let scenario = scenario(f, cores, plan.quick);
        let body = body_file(&work, f, &scenario)?;
        let result = run_oha(&base, &scenario, plan.warmup, body.as_deref())
            .and_then(|_| run_oha(&base, &scenario, plan.load_duration, body.as_deref()));
        match result {
            Ok(oha) => oha_metrics(f.name, "remote", &scenario, &oha, cores)
                .into_iter()
                .for_each(|m| report.push(m)),
            Err(e) => report.push(
                Metric::new(
                    MEASUREMENT,
                    f.name,
                    "remote",
                    "throughput",
                    "req/s",
                    Better::Higher,
                )
                .skipped(format!("{e:#}")),
            ),
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

    const OHA_JSON: &str = r#"{"summary":{"successRate":1.0,"total":2.0,"slowest":0.004,"fastest":0.0001,"average":0.001,
        "requestsPerSec":1000.0,"totalData":26000,"sizePerRequest":13,"sizePerSec":13000.0},
        "latencyPercentiles":{"p10":0.0002,"p50":0.0005,"p90":0.001,"p95":0.0015,"p99":0.003,"p99.9":0.0039},
        "statusCodeDistribution":{"200":1990,"500":2},
        "errorDistribution":{"aborted due to deadline":8,"connection reset":1}}"#;

    #[test]
    fn reads_oha_json() {
        let r: OhaReport = serde_json::from_str(OHA_JSON).unwrap();
        assert_eq!((r.ok_count(), r.error_count()), (1990, 3));
        assert_eq!(r.latency_ms("p99"), Some(3.0));
        let f = super::super::function("hello").unwrap();
        let metrics = oha_metrics("hello", "wasm", &scenario(f, 2, true), &r, 2);
        assert_eq!(metrics[0].metric, "throughput");
        assert_eq!(metrics[0].p50(), Some(995.0));
    }
}
