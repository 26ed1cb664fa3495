//! Process cold start: from exec to the first `200` over loopback, repeated. The
//! runner is started with its compiled-code cache warm and, in a full run,
//! with an empty one (compilation included); each process serves one
//! function, like the native one.

use super::estimate;
use super::hosts::{self, Cache, HostKind, Server};
use super::outcome::MeasureError;
use super::progress::Step;
use super::{Function, Plan, Run};
use crate::model::Measurement;
use crate::report::{Better, Metric};
use anyhow::Result;
use std::time::Duration;

const MEASUREMENT: Measurement = Measurement::ProcessColdStart;

/// Why `--quick` has no empty-cache starts.
pub const EMPTY_CACHE_FULL_RUNS_ONLY: &str = "full runs only: an empty-cache start compiles the component first (seconds for a Python or JavaScript app), which --quick leaves out";

/// The variants timed for one function: (reported host, host kind, cache).
fn variants(plan: &Plan) -> Vec<(&'static str, HostKind, Option<bool>)> {
    let mut out = Vec::new();
    for kind in &plan.hosts {
        match kind {
            HostKind::Wasm => {
                out.push(("wasm", *kind, Some(true)));
                out.push(("wasm-empty-cache", *kind, Some(false)));
            }
            other => out.push((other.name(), *other, None)),
        }
    }
    out
}

/// Timed starts of a variant: compiling dominates an empty-cache start and
/// varies little, so it gets fewer; `--quick` none.
fn runs(plan: &Plan, warm: Option<bool>) -> usize {
    match warm {
        Some(false) if plan.quick => 0,
        Some(false) => (plan.runs / 4).max(2),
        _ => plan.runs,
    }
}

/// Per function and variant: its starts (and the warm-up start before them).
pub fn steps(plan: &Plan) -> Vec<Step> {
    let variants = variants(plan);
    plan.functions
        .iter()
        .flat_map(|f| variants.iter().filter_map(|v| step(plan, f, v)))
        .collect()
}

/// The step of one variant of `f`, if it runs in this plan.
fn step(
    plan: &Plan,
    f: &Function,
    &(host, kind, warm): &(&'static str, HostKind, Option<bool>),
) -> Option<Step> {
    let runs = runs(plan, warm);
    let each = match warm {
        Some(false) => estimate::compile(f) + estimate::warm_start(f),
        _ => estimate::start(f, kind != HostKind::Native),
    };
    let starts = runs + usize::from(warm != Some(false));
    (runs > 0).then(|| Step::new(MEASUREMENT, &f.name, host, each * starts as u32))
}

pub fn measure(run: &mut Run) {
    let functions = run.plan.functions.clone();
    let variants = variants(&run.plan);
    for f in functions {
        for variant in &variants {
            let &(host, kind, warm) = variant;
            let metric = Metric::new(MEASUREMENT, &f.name, host, "first_200", "ms", Better::Lower);
            let Some(step) = step(&run.plan, &f, variant) else {
                run.record(metric.skipped(EMPTY_CACHE_FULL_RUNS_ONLY));
                continue;
            };
            run.progress.begin(&step);
            let metric = match starts(run, &f, kind, warm, runs(&run.plan, warm)) {
                Ok(samples) => metric.samples(samples),
                Err(error) => metric.skipped(error.reason()),
            };
            run.record(metric);
        }
    }
    run.progress.end(MEASUREMENT);
}

/// `runs` timed starts after one untimed warm-up start (which also fills the
/// shared cache). Empty-cache starts need no warm-up: the warm-cache series ran
/// first and already brought the binaries into the page cache.
fn starts(
    run: &Run,
    f: &Function,
    kind: HostKind,
    warm: Option<bool>,
    runs: usize,
) -> Result<Vec<f64>, MeasureError> {
    let empty_cache = warm == Some(false);
    let warmups = usize::from(!empty_cache);
    let mut samples = Vec::with_capacity(runs);
    for i in 0..warmups + runs {
        let cache = if empty_cache {
            Cache::Dir(run.paths.work.join(format!("empty-cache-{}-{i}", f.name)))
        } else {
            Cache::Dir(run.paths.cache_dir())
        };
        let took = start_once(run, f, kind, &cache).map_err(|e| MeasureError::skipped(&e));
        if let (true, Cache::Dir(dir)) = (empty_cache, &cache) {
            let _ = std::fs::remove_dir_all(dir);
        }
        if i >= warmups {
            samples.push(took?.as_secs_f64() * 1e3);
        } else {
            took?;
        }
    }
    Ok(samples)
}

fn start_once(run: &Run, f: &Function, kind: HostKind, cache: &Cache) -> Result<Duration> {
    // Held until the host listens (Server::start waits for it).
    let lease = hosts::free_addr()?;
    let addr = lease.addr();
    let cmd = hosts::command(kind, f, &run.paths, cache, addr).map_err(anyhow::Error::msg)?;
    let label = format!("start-{}-{}", f.name, kind.name());
    let (server, took) = Server::start(cmd, addr, &f.probe(), &label)?;
    drop(server);
    Ok(took)
}
