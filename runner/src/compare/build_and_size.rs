//! Build and size: what ships (the `.wasm` and the native binary, on disk), what
//! compiling the component to machine code costs, and what loading that machine
//! code back from the runner's cache costs instead.
//!
//! A full run compiles each component three times without a cache, then once
//! more into a cache of its own to time the loads. `--quick` times no compile
//! (full runs only): it times loads from `spinbench serve`'s persistent cache,
//! which `make build` fills (`compare --precompile`); a component missing
//! there is compiled into it once, untimed, and every later start loads it.

use super::estimate;
use super::progress::Step;
use super::{Function, Plan, Run};
use crate::model::Measurement;
use crate::report::{Better, Metric};
use anyhow::{Result, bail};
use spinbench_host::manifest::Manifest;
use spinbench_host::{Host, HostOptions, Origin, PoolSizing};
use std::path::PathBuf;

const MEASUREMENT: Measurement = Measurement::BuildAndSize;

/// Compiles and cache loads timed per component: (full run, `--quick`).
const COMPILES: (usize, usize) = (3, 0);
const LOADS: (usize, usize) = (10, 3);

fn counts(plan: &Plan) -> (usize, usize) {
    if plan.quick {
        (COMPILES.1, LOADS.1)
    } else {
        (COMPILES.0, LOADS.0)
    }
}

/// One step per function: its compiles and loads.
pub fn steps(plan: &Plan) -> Vec<Step> {
    plan.functions.iter().map(|f| step(plan, f)).collect()
}

fn step(plan: &Plan, f: &Function) -> Step {
    let (compiles, loads) = counts(plan);
    // A full run compiles once more, to fill the cache its loads read; a
    // quick one loads once more, from a cache `make build` filled.
    let compiles = compiles + usize::from(!plan.quick);
    let loads = loads + usize::from(plan.quick);
    let planned = estimate::compile(f) * compiles as u32 + estimate::cache_load(f) * loads as u32;
    Step::new(MEASUREMENT, &f.name, "wasm", planned)
}

pub fn measure(run: &mut Run) {
    let functions = run.plan.functions.clone();
    for f in functions {
        run.progress.begin(&step(&run.plan, &f));
        let native = f.native().map(|n| n.command.program.clone());
        for (host, path) in [("native", native), ("wasm", Ok(f.wasm.clone()))] {
            let metric = Metric::new(
                MEASUREMENT,
                &f.name,
                host,
                "binary_size",
                "bytes",
                Better::Lower,
            );
            run.record(match path.map(|p| (std::fs::metadata(&p), p)) {
                Ok((Ok(meta), _)) => metric.value(meta.len() as f64),
                Ok((Err(_), p)) => {
                    metric.skipped(format!("{} not found (build it first)", p.display()))
                }
                Err(why) => metric.skipped(why),
            });
        }
        let (compile, load) = match compile_and_load(run, &f) {
            Ok((c, l)) => (c, Ok(l)),
            Err(e) => (Err(format!("{e:#}")), Err(format!("{e:#}"))),
        };
        for (name, result) in [("compile", compile), ("cache_load", load)] {
            let metric = Metric::new(MEASUREMENT, &f.name, "wasm", name, "ms", Better::Lower);
            run.record(match result {
                Ok(samples) => metric.samples(samples),
                Err(why) => metric.skipped(why),
            });
        }
    }
    run.progress.end(MEASUREMENT);
}

/// Why `--quick` times no compile.
pub const COMPILE_FULL_RUNS_ONLY: &str = "full runs only: --quick loads each component from the compiled-code cache `make build` fills, and compiles nothing it can load";

/// Times in ms, or why none were taken.
type Timed = Result<Vec<f64>, String>;

/// (compile times, cache load times) in ms, each from a fresh Host as `serve`
/// builds it. Under `--quick`, loads from the run's shared (persistent) cache
/// only.
fn compile_and_load(run: &Run, f: &Function) -> Result<(Timed, Vec<f64>)> {
    let manifest = Manifest::load(&run.paths.function_manifest(f)?)?;
    let (compiles, loads) = counts(&run.plan);
    // A small pool: the pool's size does not change compilation, only start-up.
    let options = |cache| -> Result<HostOptions> {
        let mut options = HostOptions {
            cache_dir: cache,
            pool: PoolSizing {
                max_instances: 8,
                ..PoolSizing::default()
            },
            ..HostOptions::default()
        };
        run.paths.limits.apply(&mut options)?;
        Ok(options)
    };
    let timed = |cache: Option<PathBuf>| -> Result<(Origin, f64)> {
        let host = Host::new(&manifest, &options(cache)?)?;
        let load = &host.loads()[0];
        Ok((load.origin, load.elapsed.as_secs_f64() * 1e3))
    };
    let expect = |cache: Option<PathBuf>, expected: Origin| -> Result<f64> {
        let (origin, ms) = timed(cache)?;
        if origin != expected {
            bail!("expected {expected:?}, got {origin:?}");
        }
        Ok(ms)
    };
    if run.plan.quick {
        let shared = run.paths.cache_dir();
        // Fills the cache if `make build` did not (then compiling, untimed).
        timed(Some(shared.clone()))?;
        let load = (0..loads)
            .map(|_| expect(Some(shared.clone()), Origin::LoadedFromCache))
            .collect::<Result<Vec<_>>>()?;
        return Ok((Err(COMPILE_FULL_RUNS_ONLY.to_string()), load));
    }
    let dir = run.paths.work.join(format!("build-cache-{}", f.name));
    let compile = (0..compiles)
        .map(|_| expect(None, Origin::Compiled))
        .collect::<Result<Vec<_>>>()?;
    expect(Some(dir.clone()), Origin::Compiled)?; // fills the cache
    let load = (0..loads)
        .map(|_| expect(Some(dir.clone()), Origin::LoadedFromCache))
        .collect::<Result<Vec<_>>>()?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok((Ok(compile), load))
}
