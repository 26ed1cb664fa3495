//! Build and size: what ships (the `.wasm` and the native binary, on disk), what
//! compiling the component to machine code costs, and what loading that machine
//! code back from the runner's cache costs instead.

use super::{Function, Run};
use crate::model::Measurement;
use crate::report::{Better, Metric};
use anyhow::{Result, bail};
use spinbench_host::manifest::Manifest;
use spinbench_host::{Host, HostOptions, Origin, PoolSizing};

const MEASUREMENT: Measurement = Measurement::BuildAndSize;

pub fn measure(run: &mut Run) {
    let functions = run.plan.functions.clone();
    let bar = super::progress("build and size", functions.len());
    let (compiles, loads) = if run.plan.quick { (1, 3) } else { (3, 10) };
    for f in functions {
        bar.set_message(f.name.clone());
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
        let (compile, load) = match compile_and_load(run, &f, compiles, loads) {
            Ok((c, l)) => (Ok(c), Ok(l)),
            Err(e) => (Err(format!("{e:#}")), Err(format!("{e:#}"))),
        };
        for (name, result) in [("compile", compile), ("cache_load", load)] {
            let metric = Metric::new(MEASUREMENT, &f.name, "wasm", name, "ms", Better::Lower);
            run.record(match result {
                Ok(samples) => metric.samples(samples),
                Err(why) => metric.skipped(why),
            });
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
}

/// (compile times, cache load times) in ms, each from a fresh Host as `serve` builds it.
fn compile_and_load(
    run: &Run,
    f: &Function,
    compiles: usize,
    loads: usize,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let manifest = Manifest::load(&run.paths.function_manifest(f)?)?;
    let dir = run.paths.work.join(format!("build-cache-{}", f.name));
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
    let elapsed = |cache, expect: Origin| -> Result<f64> {
        let host = Host::new(&manifest, &options(cache)?)?;
        let load = &host.loads()[0];
        if load.origin != expect {
            bail!("expected {expect:?}, got {:?}", load.origin);
        }
        Ok(load.elapsed.as_secs_f64() * 1e3)
    };
    let compile = (0..compiles)
        .map(|_| elapsed(None, Origin::Compiled))
        .collect::<Result<Vec<_>>>()?;
    elapsed(Some(dir.clone()), Origin::Compiled)?; // fills the cache
    let load = (0..loads)
        .map(|_| elapsed(Some(dir.clone()), Origin::LoadedFromCache))
        .collect::<Result<Vec<_>>>()?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok((compile, load))
}
