//! `spinbench compare --precompile`: every component the benchmark file
//! measures, compiled into the cache `spinbench serve` keeps (loaded instead,
//! where an entry for the same wasm and engine is there already). `make build`
//! runs it after building the components, so the first `--quick` run, whose
//! starts load from that cache, compiles nothing.

use super::{Paths, Plan};
use anyhow::{Context, Result, bail};
use spinbench_host::manifest::Manifest;
use spinbench_host::{Host, HostOptions, Origin, PoolSizing};
use std::path::PathBuf;

pub fn main(plan: &Plan, paths: &Paths) -> Result<()> {
    let cache = paths.cache_dir();
    if cache.starts_with(&paths.work) {
        // `Paths` fell back to the run's own cache: no persistent one is known.
        bail!("--precompile: neither XDG_CACHE_HOME nor HOME is set, so there is no cache to fill");
    }
    let mut compiled = 0;
    for f in &plan.functions {
        let mut manifests = vec![paths.function_manifest(f)?];
        if f.p3_wasm.is_ok() {
            manifests.push(paths.p3_function_manifest(f)?);
        }
        for manifest in manifests {
            compiled += load(&manifest, &cache, &paths.limits)
                .with_context(|| format!("precompiling {} ({})", f.name, manifest.display()))?;
        }
    }
    spinbench_host::out_line!(
        "precompiled {} function(s) into {}: {compiled} compiled, the rest already there",
        plan.functions.len(),
        cache.display()
    )?;
    Ok(())
}

/// Loads `manifest`'s components through `cache` as `serve` would; how many compiled.
/// Under the run's limits, as its starts have them: the engine they configure
/// is part of each cache entry's key.
fn load(
    manifest: &std::path::Path,
    cache: &std::path::Path,
    limits: &crate::limit_args::LimitArgs,
) -> Result<usize> {
    let mut options = HostOptions {
        cache_dir: Some(PathBuf::from(cache)),
        // A small pool: its size does not change the compiled code, only start-up.
        pool: PoolSizing {
            max_instances: 8,
            ..PoolSizing::default()
        },
        ..HostOptions::default()
    };
    limits.apply(&mut options)?;
    let host = Host::new(&Manifest::load(manifest)?, &options)?;
    Ok(host
        .loads()
        .iter()
        .filter(|l| l.origin == Origin::Compiled)
        .count())
}
