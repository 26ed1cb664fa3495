//! `spinbench load --url`: the load scenarios of a benchmark file against a host
//! running elsewhere (no CPU or RSS figures: the server is not ours to read).

use super::figures::{mark_limit, metric, outcome_metrics};
use super::{MEASUREMENT, body_file, timed_run, warm_up};
use crate::compare::Plan;
use crate::compare::scenarios::{check_open_files, scenarios};
use crate::report::Better;
use anyhow::Result;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

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
    let compare_args = crate::compare::CompareArgs {
        from: args.from.clone(),
        functions: args.functions.clone(),
        hosts: vec!["native".into()],
        measurements: vec![MEASUREMENT.name().into()],
        duration: args.duration,
        samples: 1,
        runs: 1,
        quick: args.quick,
        precompile: false,
        verbose: false,
        results_dir: args.results_dir.clone(),
        keep: crate::report::keep::KeepArgs::default(),
        command_hosts: Vec::new(),
        // The server is elsewhere: nothing to pin it away from.
        pin: crate::compare::pin::PinArg::Off,
        registry: crate::registry::RegistryOptions::default(),
        limits: crate::limit_args::LimitArgs::default(),
    };
    let file = crate::benchfile::BenchFile::load(&args.from)?;
    let plan = Plan::from_args(&compare_args, crate::compare::functions(&file)?)?;
    let mut report = crate::report::Report::new(std::env::args().collect(), plan.info());
    report.plan.hosts = vec!["remote"];
    report.versions.host = served_by;
    report.plan.pinning.note = "the server runs elsewhere (--url): nothing pinned".into();
    let cores = args.cores.unwrap_or(report.machine.cores);
    let work = std::env::temp_dir().join(format!("spinbench-load-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    for f in &plan.functions {
        for scenario in scenarios(f, cores, plan.quick) {
            spinbench_host::err_line!("load: {} against {base}", scenario.describe());
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
    spinbench_host::lines::stdout(&crate::report::table::terminal(&report))?;
    let out_dir = args.results_dir.join(crate::report::timestamp());
    let written = crate::report::write(&report, &out_dir)?;
    spinbench_host::lines::stdout(&crate::report::where_it_is(&report, &out_dir, &written))?;
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
}
