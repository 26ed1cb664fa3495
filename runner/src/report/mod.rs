//! The report of a `compare` run: `report.json`, `report.md`, SVG charts, and the
//! terminal tables.
//!
//! # `report.json` schema (`"schema": "spinbench-report/1"`)
//!
//! As a JSON Schema: schema/report.schema.json (the e2e tests validate every
//! report they produce against it).
//!
//! A change that renames or removes a field bumps the version; new fields may be added.
//!
//! ```text
//! {
//!   "schema": "spinbench-report/1",
//!   "started_at": "2026-11-30T10:00:00Z",      // UTC
//!   "duration_s": 312.4,                        // the whole run
//!   "command": ["spinbench", "compare", ...],
//!   "machine": { "cpu_model", "cores", "kernel", "memory_total_bytes", "sha_instructions" },
//!   "versions": { "spinbench", "oha", "wrk", "spin", "wasmtime",     // null when absent
//!                 "host": { "<name>": "<version>" } },  // `load --host-version`: what served the URL
//!   "plan": { "functions", "hosts", "measurements", "load_duration_s", "warmup_s",
//!             "samples", "runs", "ks", "quick",
//!             "pinning": { "mode": "auto" | "manual" | "off",
//!                          "server_cpus": [0] | null,      // the server's process tree (load)
//!                          "generator_cpus": [1] | null,   // oha and wrk
//!                          "note": "what was done, or why nothing was" } },
//!   "metrics": [ {
//!       "measurement": "build_and_size" | "instance_cold_start" | "process_cold_start" | "memory" | "load",
//!       "function": "<component id of the benchmark file>",
//!       "host": "native" | "wasm" | "wasm-p3" | "spin" | "wasmtime-serve"
//!             | "wasmtime-serve-tuned" // serving hosts (`wasmtime serve` with Spin's pool settings)
//!             | "<name>"           // a --command-host
//!             | "native-fn"        // the logic called as a plain Rust function
//!             | "native-process"   // a fresh native process per request (CGI model)
//!             | "native-soft-sha"  // native sha1 without SHA CPU instructions
//!             | "wasm-empty-cache",// the runner started with no compiled code
//!       "metric": "total", "instantiate", "handle", "first_200", "wasm_size", ...,
//!                                   // load: "throughput", "server_cpu_per_request" (us: the
//!                                   // server tree's CPU time over the responses of the run),
//!                                   // "server_kernel_cpu_per_request" (its system time),
//!                                   // "throughput_wrk", "server_cpu_per_request_wrk",
//!                                   // "server_kernel_cpu_per_request_wrk",
//!                                   // "client_cpu_wrk" (wrk's check), latency_*, errors, ...
//!       "unit": "us" | "ms" | "bytes" | "req/s" | "req/s/core" | "MB/s" | "cores" | "count",
//!       "better": "lower" | "higher",
//!       "k": 100 | null,            // memory: concurrently live instances;
//!                                   // load: the users of an io scenario (io has two)
//!       "detail": "16 users, POST /echo" | null,
//!       "summary": { "n", "min", "p50", "p90", "p99", "max", "mean",
//!                    "mad", "rel_spread", "outliers" } | null,   // null when skipped
//!       "skipped": "why" | null,    // "failed: ..." when the host broke
//!       "limit": "what" | null,     // the host's limit this figure hit (it kept serving)
//!       "clients_saw": { "200": 1726, "503": 40, "connection refused": 812 } | null,
//!                                   // load `errors` and memory `live_requests_held`:
//!                                   // answers by status code and transport errors by oha's message
//!       "processes": [ { "pid", "command", "share" } ] | null
//!                                   // the host's process tree as counted in this figure
//!                                   // (server_cpu, rss_before/after, memory), each
//!                                   // process's part of it
//!   } ],
//!   "ratios": [ { "measurement", "function", "metric", "k", "host", "baseline",
//!                 "ratio" } ],       // host p50 / baseline p50, within this run
//!   "warnings": [ "..." ],      // noisy series; oha and wrk more than 10 % apart (with why),
//!                               // or their server CPU per request more than 15 % apart;
//!                               // the wrk check skipped (wrk not on PATH)
//!   "host_log": "hosts.log"     // compare: the hosts' own output, beside the report (absent: load)
//! }
//! ```
//!
//! A load run is one observation per host and metric, so its `summary` has `n` = 1
//! (latency percentiles are oha's, over all requests of the run; for the io
//! scenarios, read in steady state, over the requests started in the window).

pub mod charts;
pub mod diff;
pub mod headline;
pub mod html;
pub mod keep;
mod metric;
pub mod table;

pub use metric::{Better, Counted, Metric};

use crate::model::Measurement;
use crate::procfs::{self, Machine};
use crate::stats::{self, Summary};
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub const SCHEMA: &str = "spinbench-report/1";

#[derive(Debug, Clone, Serialize)]
pub struct Ratio {
    pub measurement: Measurement,
    pub function: String,
    pub metric: &'static str,
    pub k: Option<usize>,
    pub host: String,
    pub baseline: String,
    pub ratio: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Versions {
    pub spinbench: &'static str,
    pub oha: Option<String>,
    /// The second load generator, the check on oha's rates.
    pub wrk: Option<String>,
    pub spin: Option<String>,
    pub wasmtime: Option<String>,
    /// What served a `load --url` run, as its caller named it (`--host-version
    /// NAME=VERSION`): the load side cannot ask a host it did not start.
    pub host: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PlanInfo {
    pub functions: Vec<String>,
    pub hosts: Vec<&'static str>,
    pub measurements: Vec<Measurement>,
    pub load_duration_s: f64,
    pub warmup_s: f64,
    pub samples: usize,
    pub runs: usize,
    pub ks: Vec<usize>,
    pub quick: bool,
    /// Load: where the server and the load generators ran.
    pub pinning: PinInfo,
}

/// The CPUs the load measurement gave the server's process tree and the load
/// generators (`compare --pin`).
#[derive(Debug, Clone, Serialize)]
pub struct PinInfo {
    /// "auto", "manual" (`--pin SERVER:GENERATOR`) or "off".
    pub mode: &'static str,
    /// Both null when nothing was pinned (`--pin off`, one CPU, `spinbench load`).
    pub server_cpus: Option<Vec<usize>>,
    pub generator_cpus: Option<Vec<usize>>,
    /// What was done, or why nothing was.
    pub note: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub started_at: String,
    pub duration_s: f64,
    pub command: Vec<String>,
    pub machine: Machine,
    pub versions: Versions,
    pub plan: PlanInfo,
    pub metrics: Vec<Metric>,
    pub ratios: Vec<Ratio>,
    pub warnings: Vec<String>,
    /// The hosts' own output (their start-up lines, their stderr), relative to
    /// the report's directory; `None` where no host was started (`load`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_log: Option<String>,
}

/// What clients saw, most frequent first: `503 ×667, connection refused ×2`.
pub fn describe_outcomes(outcomes: &BTreeMap<String, u64>) -> String {
    let mut sorted: Vec<(&String, &u64)> = outcomes.iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(a.1));
    sorted
        .iter()
        .map(|(what, n)| format!("{what} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub use crate::model::is_baseline;

impl Report {
    /// An empty report of a run of `plan`, started now.
    pub fn new(command: Vec<String>, plan: PlanInfo) -> Report {
        Report {
            schema: SCHEMA,
            started_at: rfc3339(SystemTime::now()),
            duration_s: 0.0,
            command,
            machine: procfs::machine(),
            versions: Versions {
                spinbench: env!("CARGO_PKG_VERSION"),
                oha: tool_version("oha"),
                wrk: wrk_version(),
                spin: tool_version("spin"),
                wasmtime: tool_version("wasmtime"),
                host: BTreeMap::new(),
            },
            plan,
            metrics: Vec::new(),
            ratios: Vec::new(),
            warnings: Vec::new(),
            host_log: None,
        }
    }

    /// Adds a figure, and a warning if its spread is high.
    pub fn push(&mut self, metric: Metric) {
        if let Some(why) = metric.summary.as_ref().and_then(Summary::warning) {
            self.warnings.push(format!(
                "{} {} {} {}: {why}",
                metric.measurement, metric.function, metric.host, metric.metric
            ));
        }
        self.metrics.push(metric);
    }

    /// Computes the ratios of every host to every native baseline in the same row.
    pub fn finish(&mut self, took: Duration) {
        self.duration_s = took.as_secs_f64();
        self.ratios = ratios(&self.metrics);
        let pinning = &self.plan.pinning;
        let count = |cpus: &Option<Vec<usize>>| cpus.as_ref().map_or(self.machine.cores, Vec::len);
        let cpus = SplitCores {
            server: count(&pinning.server_cpus),
            generator: count(&pinning.generator_cpus),
            pinned: pinning.server_cpus.is_some(),
        };
        self.warnings
            .extend(generators_disagree(&self.metrics, cpus));
    }

    pub fn metrics_of(&self, measurement: Measurement) -> impl Iterator<Item = &Metric> {
        self.metrics
            .iter()
            .filter(move |m| m.measurement == measurement)
    }
}

/// How many CPUs the server and the load generators had.
#[derive(Debug, Clone, Copy)]
pub struct SplitCores {
    pub server: usize,
    pub generator: usize,
    /// Whether they were their own (`--pin`), or everyone's.
    pub pinned: bool,
}

/// How far apart oha's and wrk's rates may be before the report warns.
pub const GENERATORS_AGREE_WITHIN: f64 = 0.10;

/// How far apart the server's CPU per request under oha and under wrk may be
/// before the report warns, where their rates agree (issue 33's bound).
pub const CPU_PER_REQUEST_AGREES_WITHIN: f64 = 0.15;

/// Why a server's CPU per request can differ between two generators at one
/// concurrency: measured on loopback (docs/performance.md, "The kernel's share"),
/// where its `writev` also runs the generator's receive path and wakes it.
const LOOPBACK_WORK: &str = "on loopback the server's kernel time includes delivering each response to the generator and waking its thread where it waited, so it pays more per request under a generator that waits more (and more still where waking an idle CPU is dear, as in a VM)";

/// `; of it the kernel's a vs b` where both generators' kernel shares were measured.
fn kernel_shares(of: &dyn Fn(&str) -> Option<f64>) -> String {
    match (
        of("server_kernel_cpu_per_request"),
        of("server_kernel_cpu_per_request_wrk"),
    ) {
        (Some(a), Some(b)) => format!("; of it the kernel's {a:.1} vs {b:.1}"),
        _ => String::new(),
    }
}

/// `load <function> <host>[ K=<k>]`: the figure a generator warning is about.
fn load_label(oha: &Metric) -> String {
    format!(
        "load {} {}{}",
        oha.function,
        oha.host,
        oha.k.map_or(String::new(), |k| format!(" K={k}"))
    )
}

/// A warning for each load figure whose rate under wrk (`throughput_wrk`)
/// differs from oha's by more than [`GENERATORS_AGREE_WITHIN`], with what the
/// run says of why: whether the server spent the same CPU per request under
/// both (then the rates differ by the CPU it got: a generator that ran out of
/// its own CPUs, or other work on the server's), how much of its CPUs the
/// server got and each generator used, and how much the rest of the machine
/// took meanwhile. Where the rates agree, a warning if the server's CPU per
/// request under them does not ([`cpu_per_request_disagrees`]).
pub fn generators_disagree(metrics: &[Metric], cpus: SplitCores) -> Vec<String> {
    let mut warnings = Vec::new();
    for oha in metrics
        .iter()
        .filter(|m| m.measurement == Measurement::Load && m.metric == "throughput")
    {
        let of = |name: &str| {
            metrics
                .iter()
                .find(|o| o.metric == name && o.host == oha.host && o.same_scenario(oha))
                .and_then(Metric::p50)
        };
        let (Some(by_oha), Some(by_wrk)) = (oha.p50(), of("throughput_wrk")) else {
            continue;
        };
        let Some(ratio) = stats::ratio(by_wrk, by_oha) else {
            continue;
        };
        if (ratio - 1.0).abs() <= GENERATORS_AGREE_WITHIN {
            warnings.extend(cpu_per_request_disagrees(oha, &of));
            continue;
        }
        let mut why = Vec::new();
        let agree = |a: f64, b: f64| {
            stats::ratio(b, a).is_some_and(|r| (r - 1.0).abs() <= GENERATORS_AGREE_WITHIN)
        };
        match (of("server_cpu_per_request"), of("server_cpu_per_request_wrk")) {
            (Some(a), Some(b)) if agree(a, b) => why.push(format!(
                "the server spent the same CPU per request under both ({a:.1} vs {b:.1} µs): the rates differ by the CPU it got, not by the work it did"
            )),
            (Some(a), Some(b)) => why.push(format!(
                "the server's CPU per request differs too ({a:.1} µs under oha, {b:.1} under wrk{}): {LOOPBACK_WORK}, or the machine's contention changed between the runs",
                kernel_shares(&of)
            )),
            _ => {}
        }
        if let Some(cores) = of("server_cpu") {
            why.push(format!(
                "the server used {cores:.2} of its {} CPU(s) under oha",
                cpus.server
            ));
        }
        let generator = cpus.generator;
        let used = |name: &str, tool: &str| {
            of(name).map(|cores| {
                let all = cores >= 0.9 * generator as f64;
                format!(
                    "{tool} used {cores:.2} of its {generator} CPU(s){}",
                    if all {
                        ", all of them: its own limit, not the server's"
                    } else {
                        ""
                    }
                )
            })
        };
        why.extend(used("client_cpu", "oha"));
        why.extend(used("client_cpu_wrk", "wrk"));
        if let Some(cores) = of("other_cpu") {
            why.push(format!(
                "the rest of the machine used {cores:.2} cores during oha's run"
            ));
        }
        if !cpus.pinned {
            why.push("server and generators shared the CPUs (not pinned): a generator that costs more per request leaves the server less".into());
        }
        warnings.push(format!(
            "{}: oha and wrk differ by {:+.0} % ({} vs {} under wrk): {}; server CPU per request is the figure to compare",
            load_label(oha),
            (ratio - 1.0) * 100.0,
            table::fmt(by_oha, oha.unit),
            table::fmt(by_wrk, oha.unit),
            why.join("; ")
        ));
    }
    warnings
}

/// Where oha's and wrk's rates agree but the server's CPU per request under
/// them does not (beyond [`CPU_PER_REQUEST_AGREES_WITHIN`]): a warning with both
/// figures, their kernel shares and why.
fn cpu_per_request_disagrees(oha: &Metric, of: &dyn Fn(&str) -> Option<f64>) -> Option<String> {
    let (a, b) = (
        of("server_cpu_per_request")?,
        of("server_cpu_per_request_wrk")?,
    );
    let ratio = stats::ratio(b, a)?;
    if (ratio - 1.0).abs() <= CPU_PER_REQUEST_AGREES_WITHIN {
        return None;
    }
    Some(format!(
        "{}: the server's CPU per request differs by {:+.0} % between oha and wrk at the same rate ({a:.1} vs {b:.1} µs{}): {LOOPBACK_WORK}; compare hosts under one generator",
        load_label(oha),
        (ratio - 1.0) * 100.0,
        kernel_shares(of),
    ))
}

pub fn ratios(metrics: &[Metric]) -> Vec<Ratio> {
    let mut out = Vec::new();
    for m in metrics.iter().filter(|m| !is_baseline(&m.host)) {
        for base in metrics
            .iter()
            .filter(|b| is_baseline(&b.host) && b.same_row(m))
        {
            if let Some(ratio) = m
                .p50()
                .zip(base.p50())
                .and_then(|(v, b)| stats::ratio(v, b))
            {
                out.push(Ratio {
                    measurement: m.measurement,
                    function: m.function.clone(),
                    metric: m.metric,
                    k: m.k,
                    host: m.host.clone(),
                    baseline: base.host.clone(),
                    ratio,
                });
            }
        }
    }
    out
}

/// `<tool> --version`'s first line, if the tool is on PATH.
fn tool_version(tool: &str) -> Option<String> {
    let out = std::process::Command::new(tool)
        .arg("--version")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    out.status
        .success()
        .then(|| text.lines().next().unwrap_or("").trim().to_string())
}

/// `wrk -v`'s first line: wrk has no `--version` and exits 1 after printing it.
fn wrk_version() -> Option<String> {
    let out = std::process::Command::new("wrk").arg("-v").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next()?.trim();
    line.starts_with("wrk ").then(|| line.to_string())
}

/// Writes report.json, report.md, report.html and the charts into `dir`;
/// returns what it wrote.
pub fn write(report: &Report, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let charts = charts::all(report)?;
    let mut written = Vec::new();
    for (name, bytes) in [
        ("report.json", serde_json::to_vec_pretty(report)?),
        ("report.md", table::markdown(report).into_bytes()),
        ("report.html", html::report(report, &charts).into_bytes()),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    for chart in &charts {
        let path = dir.join(&chart.file);
        std::fs::write(&path, &chart.svg).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// The last lines of a run: what it wrote where, and the page to open.
pub fn where_it_is(report: &Report, dir: &Path, written: &[PathBuf]) -> String {
    let charts = written
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .count();
    let mut out = format!(
        "\nwrote report.json, report.md, report.html and {charts} chart(s) into {}\n",
        dir.display()
    );
    if let Some(log) = &report.host_log {
        out.push_str(&format!("hosts' output: {}\n", dir.join(log).display()));
    }
    out.push_str(&format!("report: {}\n", dir.join("report.json").display()));
    out.push_str(&format!("open: {}\n", dir.join("report.html").display()));
    out
}

/// `YYYYmmdd-HHMMSS` (UTC), for the results directory's name.
pub fn timestamp() -> String {
    let (date, time) = utc_parts(SystemTime::now());
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        date.0, date.1, date.2, time.0, time.1, time.2
    )
}

fn rfc3339(t: SystemTime) -> String {
    let (date, time) = utc_parts(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        date.0, date.1, date.2, time.0, time.1, time.2
    )
}

/// ((year, month, day), (hour, minute, second)) in UTC, without a date crate:
/// Howard Hinnant's days-to-civil algorithm.
fn utc_parts(t: SystemTime) -> ((i64, u32, u32), (u64, u64, u64)) {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = i64::try_from(secs / 86_400).expect("days since 1970 fit an i64");
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    ((year, month, day), (rem / 3600, rem % 3600 / 60, rem % 60))
}

#[cfg(test)]
mod tests;
