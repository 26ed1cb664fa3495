//! `spinbench compare`: every measurement of every function on every host, in one
//! run, with the report written at the end. One module per measurement; `hosts`
//! starts and stops the processes they compare.

pub mod build_and_size;
pub mod estimate;
pub mod group;
pub mod hashing_per_core;
pub mod host_log;
pub mod hosts;
pub mod http;
pub mod instance_cold_start;
pub mod load;
pub mod memory;
pub mod oha;
pub mod outcome;
pub mod pin;
pub mod plain;
pub mod precompile;
pub mod process_cold_start;
pub mod progress;
pub mod scenarios;
pub mod services;
pub mod tree;
pub mod wrk;

use crate::benchfile::{BenchFile, Component, Native};
use crate::model::Measurement;
use crate::report::{Metric, PlanInfo, Report};
use anyhow::{Context, Result, bail};
use hosts::{CommandHost, HostKind};
use http::Request;
use spinbench_host::instance::{compiled_cache, remote_source};
use spinbench_host::manifest::{Digest, Manifest, Source, one_component};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// The benchmark file (or a directory holding spinbench.toml): the app's manifest, and what to measure of which component.
    #[arg(short = 'f', long = "from", default_value = crate::benchfile::DEFAULT_FILE)]
    pub from: PathBuf,
    /// Functions (the file's component ids) to measure, comma-separated [default: every one in the file].
    #[arg(long, value_delimiter = ',')]
    pub functions: Vec<String>,
    /// Hosts to compare (comma-separated): native, wasm, wasm-p3, spin, wasmtime-serve, wasmtime-serve-tuned (Spin's pool settings), or a --command-host's name. Absent ones are skipped.
    #[arg(long, value_delimiter = ',', default_values = ["native", "wasm", "wasm-p3", "spin", "wasmtime-serve", "wasmtime-serve-tuned"])]
    pub hosts: Vec<String>,
    /// A host run from a command (repeatable): NAME=COMMAND, split at spaces (no quoting), with {native}, {wasm}, {manifest} and {addr} replaced for each function by its native binary, its component, a Spin manifest of it alone, and the 127.0.0.1 address to listen on. Compared after the --hosts unless they name it. Like every host it runs in a process group of its own, stopped with everything it started. Example: 'my-spin=/opt/spin/spin up -f {manifest} --listen {addr}'
    #[arg(long = "command-host", value_name = "NAME=COMMAND")]
    pub command_hosts: Vec<String>,
    /// Measurements to run (comma-separated): build_and_size, instance_cold_start, hashing_per_core, process_cold_start, memory, load.
    #[arg(long, value_delimiter = ',', default_values = Measurement::names())]
    pub measurements: Vec<String>,
    /// Seconds each load scenario runs per host (after its warm-up).
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Fresh instances per function for the instance cold start.
    #[arg(long, default_value_t = 1000)]
    pub samples: usize,
    /// Process starts per host for the process cold start.
    #[arg(long, default_value_t = 20)]
    pub runs: usize,
    /// A first look (does everything run), not for figures: 0.3 s loads (wrk's check on the first function only), 100 samples, 5 starts, K up to 100, the file's quick scenarios; components loaded from the compiled-code cache `make build` fills (no compile timed, no empty-cache starts).
    #[arg(long)]
    pub quick: bool,
    /// Compile every component of the file (and its WASIp3 build) into the cache `spinbench serve` uses, then exit without measuring: `make build` runs it, so a --quick run, which loads from that cache, compiles nothing.
    #[arg(long, conflicts_with = "quick")]
    pub precompile: bool,
    /// Also show the hosts' own output (their start-up lines and stderr, kept in the run's hosts.log) as it comes.
    #[arg(short, long)]
    pub verbose: bool,
    /// Where `<timestamp>/report.json` and friends are written.
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
    /// Load: the CPUs of the server's process tree and of the load generators (oha, wrk), kept apart. auto: with 2 or more CPUs, the first half (the larger one) for the server, the rest for the generators (one each on 2); off: all share every CPU; SERVER_CPUS:GENERATOR_CPUS: CPU lists as taskset -c takes them, e.g. 0:1 or 0-3:4-7. Users and per-core figures are counted in the server's CPUs.
    #[arg(
        long,
        default_value = "auto",
        value_name = "off|auto|SERVER_CPUS:GENERATOR_CPUS"
    )]
    pub pin: pin::PinArg,
    #[command(flatten)]
    pub keep: crate::report::keep::KeepArgs,
    /// With -f an OCI reference: how its registry is reached.
    #[command(flatten)]
    pub registry: crate::registry::RegistryOptions,
    /// The limits every runner host gets (`spinbench serve`'s flags).
    #[command(flatten)]
    pub limits: crate::limit_args::LimitArgs,
}

/// One component of the benchmark file, with where the manifests put it.
#[derive(Debug, Clone)]
pub struct Function {
    /// The component id, the report's `function`.
    pub name: String,
    /// What the benchmark file says about it.
    pub spec: Component,
    /// Its `.wasm` (the manifest's `source`).
    pub wasm: PathBuf,
    /// The manifest it is in (the app's, or its own `manifest`).
    pub manifest: PathBuf,
    /// Its WASIp3 build, if the file names a WASIp3 manifest that has it.
    pub p3_wasm: Result<PathBuf, String>,
}

impl Function {
    /// The cheapest meaningful request: readiness probe and cold-start request.
    pub fn probe(&self) -> Request {
        Request::from(&self.spec.probe)
    }

    /// The native server, or why there is none.
    pub fn native(&self) -> Result<&Native, String> {
        self.spec.native.as_ref().ok_or_else(|| {
            format!(
                "no native command for {:?} in the benchmark file",
                self.name
            )
        })
    }
}

/// Every component of `file`, with sources from its manifests.
pub fn functions(file: &BenchFile) -> Result<Vec<Function>> {
    let manifest = Manifest::load(&file.manifest)?;
    file.check_against(&manifest)
        .with_context(|| format!("benchmark file for {}", file.manifest.display()))?;
    let p3 = match &file.p3_manifest {
        Some(path) => Ok(Manifest::load(path)?),
        None => Err("no p3_manifest in the benchmark file".to_string()),
    };
    file.components
        .iter()
        .map(|c| {
            let own = c.manifest.as_deref().map(Manifest::load).transpose()?;
            if let Some(own) = &own {
                c.check_against(own).with_context(|| {
                    format!("benchmark file for {}", file.manifest_of(c).display())
                })?;
            }
            let manifest = own.as_ref().unwrap_or(&manifest);
            if !manifest
                .http_routes()
                .iter()
                .any(|t| t.component() == Some(c.id.as_str()))
            {
                bail!("component {:?} has no [[trigger.http]] route", c.id);
            }
            // Another app's component has no build in this app's WASIp3 manifest.
            let p3_wasm = match &own {
                Some(_) => Err(format!(
                    "{:?} is another app's, not in the WASIp3 manifest",
                    c.id
                )),
                None => p3.as_ref().map_err(Clone::clone).and_then(|m| {
                    m.component
                        .get(&c.id)
                        .and_then(|comp| m.source_path(comp))
                        .ok_or_else(|| format!("{:?} is not in the WASIp3 manifest", c.id))
                }),
            };
            Ok(Function {
                name: c.id.clone(),
                spec: c.clone(),
                wasm: source_file(manifest, &c.id)?,
                manifest: file.manifest_of(c).to_path_buf(),
                p3_wasm,
            })
        })
        .collect()
}

/// Component `id`'s `.wasm` on disk: its local source, or a `{ url, digest }`
/// one fetched into the default cache directory (as `serve` keeps it there).
fn source_file(manifest: &Manifest, id: &str) -> Result<PathBuf> {
    let component = &manifest.component[id];
    if let Source::Remote { url, digest } = &component.source {
        let cache = compiled_cache::default_dir();
        let fetched = remote_source::fetch(url, Digest::parse(digest)?, cache.as_deref())
            .with_context(|| format!("component {id:?}"))?;
        if !fetched.path.is_file() {
            bail!(
                "component {id:?}: {url} is measured from a file, and there is no cache \
                 directory to keep it in (set XDG_CACHE_HOME or HOME)"
            );
        }
        return Ok(fetched.path);
    }
    manifest
        .source_path(component)
        .with_context(|| format!("component {id:?} has no local source"))
}

/// Where things are: the built artifacts, the runner, and the run's scratch space.
pub struct Paths {
    /// The benchmark file's directory: build commands run there.
    pub root: PathBuf,
    /// The `spinbench` binary that serves components (this one).
    pub runner: PathBuf,
    /// Scratch space for this run: code caches. Removed at the end.
    pub work: PathBuf,
    /// The compiled-code cache the run's starts share (see `cache_dir`).
    cache: PathBuf,
    /// The app's WASIp3 flavour's manifest.
    p3_manifest: Option<PathBuf>,
    /// Spin's runtime config file, for the hosts that read one.
    pub runtime_config: Option<PathBuf>,
    /// The operator's limits, for every runner host (in process too).
    pub limits: crate::limit_args::LimitArgs,
    /// One-component manifests written beside the app's, by flavour and
    /// component id: written once, read by every start. Removed at the end.
    written: Mutex<BTreeMap<(&'static str, String), PathBuf>>,
}

impl Paths {
    /// `persistent_cache`: the run's starts share `spinbench serve`'s cache
    /// (`--quick`, `--precompile`) instead of one of the run's own.
    pub fn new(
        file: &BenchFile,
        limits: &crate::limit_args::LimitArgs,
        persistent_cache: bool,
    ) -> Result<Paths> {
        let root = std::fs::canonicalize(&file.dir)
            .with_context(|| format!("directory {}", file.dir.display()))?;
        let work = std::env::temp_dir().join(format!("spinbench-compare-{}", std::process::id()));
        std::fs::create_dir_all(&work)?;
        let cache = persistent_cache
            .then(compiled_cache::default_dir)
            .flatten()
            .unwrap_or_else(|| work.join("cache"));
        Ok(Paths {
            root,
            runner: std::env::current_exe()?,
            work,
            cache,
            p3_manifest: file.p3_manifest.clone(),
            runtime_config: file
                .runtime_config
                .as_deref()
                .map(|path| {
                    std::fs::canonicalize(path)
                        .with_context(|| format!("runtime_config {}", path.display()))
                })
                .transpose()?,
            limits: limits.clone(),
            written: Mutex::default(),
        })
    }

    /// A manifest serving `f` alone, so the runner (and Spin) load one component,
    /// like the native binary serves one function.
    pub fn function_manifest(&self, f: &Function) -> Result<PathBuf> {
        self.one_component_manifest(f, &f.wasm, &f.manifest, "p2")
    }

    /// The same for `f`'s WASIp3 build.
    pub fn p3_function_manifest(&self, f: &Function) -> Result<PathBuf> {
        let wasm = f.p3_wasm.clone().map_err(anyhow::Error::msg)?;
        let manifest = self
            .p3_manifest
            .as_ref()
            .context("no p3_manifest in the benchmark file")?;
        self.one_component_manifest(f, &wasm, manifest, "p3")
    }

    /// Written beside the app's manifest: its relative paths (`source`,
    /// `files`, ...) then mean what they mean in the app.
    fn one_component_manifest(
        &self,
        f: &Function,
        wasm: &Path,
        manifest: &Path,
        flavour: &'static str,
    ) -> Result<PathBuf> {
        if !wasm.is_file() {
            bail!("{} not found (build it first)", wasm.display());
        }
        let mut written = self.written.lock().expect("never poisoned");
        let key = (flavour, f.name.clone());
        if let Some(path) = written.get(&key) {
            return Ok(path.clone());
        }
        let tag = format!("{}-{flavour}", std::process::id());
        let path = std::fs::canonicalize(one_component::write_beside(manifest, &f.name, &tag)?)?;
        written.insert(key, path.clone());
        Ok(path)
    }

    /// The warm code cache the run's starts share: a full run's own, empty at
    /// its start (its first start of each component compiles, and is timed as
    /// such); under `--quick`, `spinbench serve`'s persistent one, which
    /// `--precompile` (`make build`) fills, so a quick run compiles nothing.
    /// Every entry is checked against the wasm's and the engine's hashes
    /// before it is loaded (`compiled_cache`).
    pub fn cache_dir(&self) -> PathBuf {
        self.cache.clone()
    }
}

impl Drop for Paths {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.work);
        for path in self.written.get_mut().expect("never poisoned").values() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// `--quick`'s load run and its warm-up: enough for every host to answer
/// every function's scenario under load (the question a quick run answers),
/// short enough for the ~40 scenario × host runs to take seconds, not minutes.
const QUICK_LOAD: Duration = Duration::from_millis(300);
const QUICK_WARMUP: Duration = Duration::from_millis(100);

/// What this run does: the options resolved, `--quick` applied.
pub struct Plan {
    pub functions: Vec<Function>,
    pub hosts: Vec<HostKind>,
    pub measurements: Vec<Measurement>,
    pub load_duration: Duration,
    pub warmup: Duration,
    pub samples: usize,
    pub runs: usize,
    /// Concurrently live instances for per-instance memory.
    pub ks: Vec<usize>,
    pub quick: bool,
    /// Load: which CPUs the server and the load generators run on.
    pub pinning: pin::Pinning,
}

impl Plan {
    /// `all` is every function of the benchmark file; `--functions` picks among them.
    pub fn from_args(args: &CompareArgs, all: Vec<Function>) -> Result<Plan> {
        let functions = if args.functions.is_empty() {
            all
        } else {
            args.functions
                .iter()
                .map(|n| {
                    all.iter().find(|f| &f.name == n).cloned().with_context(|| {
                        let names: Vec<&str> = all.iter().map(|f| f.name.as_str()).collect();
                        format!("unknown function {n:?} (the file has {})", names.join(", "))
                    })
                })
                .collect::<Result<Vec<_>>>()?
        };
        let hosts = hosts(args)?;
        let measurements = args
            .measurements
            .iter()
            .map(|m| {
                Measurement::parse(m).with_context(|| {
                    format!(
                        "unknown measurement {m:?} (one of {})",
                        Measurement::names().join(", ")
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        if !(args.duration > 0.0 && args.duration <= 3600.0) {
            bail!("--duration must be in (0, 3600] seconds");
        }
        let quick = args.quick;
        let available = pin::Cpus::available().context("reading this process's CPU affinity")?;
        let machine_cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let pinning = pin::Pinning::resolve(&args.pin, &available, machine_cores)
            .map_err(anyhow::Error::msg)?;
        Ok(Plan {
            functions,
            hosts,
            measurements,
            load_duration: if quick {
                QUICK_LOAD
            } else {
                Duration::from_secs_f64(args.duration)
            },
            warmup: if quick {
                QUICK_WARMUP
            } else {
                Duration::from_secs_f64((args.duration / 5.0).clamp(0.5, 3.0))
            },
            samples: if quick {
                args.samples.min(100)
            } else {
                args.samples
            }
            .max(1),
            runs: if quick { args.runs.min(5) } else { args.runs }.max(1),
            ks: if quick {
                vec![1, 10, 100]
            } else {
                vec![1, 10, 100, 1000]
            },
            quick,
            pinning,
        })
    }

    pub fn measures(&self, measurement: Measurement) -> bool {
        self.measurements.contains(&measurement)
    }

    /// What the report says of this plan.
    pub fn info(&self) -> PlanInfo {
        PlanInfo {
            functions: self.functions.iter().map(|f| f.name.clone()).collect(),
            hosts: self.hosts.iter().map(|h| h.name()).collect(),
            measurements: self.measurements.clone(),
            load_duration_s: self.load_duration.as_secs_f64(),
            warmup_s: self.warmup.as_secs_f64(),
            samples: self.samples,
            runs: self.runs,
            ks: self.ks.clone(),
            quick: self.quick,
            pinning: self.pinning.info(),
        }
    }

    pub fn has_host(&self, kind: HostKind) -> bool {
        self.hosts.contains(&kind)
    }
}

/// The hosts `--hosts` names (built-in or command hosts), then the command
/// hosts it does not name.
fn hosts(args: &CompareArgs) -> Result<Vec<HostKind>> {
    let mut commands: Vec<&'static CommandHost> = Vec::new();
    for spec in &args.command_hosts {
        let host = CommandHost::parse(spec).map_err(anyhow::Error::msg)?;
        if commands.iter().any(|c| c.name == host.name) {
            bail!("--command-host {:?} given twice", host.name);
        }
        commands.push(host);
    }
    let mut hosts = args
        .hosts
        .iter()
        .map(|n| {
            HostKind::parse(n)
                .or_else(|| {
                    commands
                        .iter()
                        .find(|c| c.name == *n)
                        .map(|c| HostKind::Command(c))
                })
                .with_context(|| format!("unknown host {n:?}"))
        })
        .collect::<Result<Vec<_>>>()?;
    for host in commands.into_iter().map(HostKind::Command) {
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    Ok(hosts)
}

/// Everything a measurement needs: the plan, the paths, where to put results.
pub struct Run {
    pub plan: Plan,
    pub paths: Paths,
    pub report: Report,
    /// The run's progress line: each measurement begins its steps on it.
    pub progress: progress::Progress,
}

impl Run {
    pub fn record(&mut self, metric: Metric) {
        self.report.push(metric);
    }
}

/// An app directory written for this run, removed when it ends.
struct PulledApp(PathBuf);

impl Drop for PulledApp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `spinbench compare`: runs the plan and writes the report; prints where it is.
pub fn main(args: &CompareArgs) -> Result<()> {
    let started = Instant::now();
    let baseline = args.keep.read_baseline()?;
    // An app given by OCI reference is pulled (blobs into the default cache)
    // and written into a directory of this run's, removed at its end.
    let pulled =
        PulledApp(std::env::temp_dir().join(format!("spinbench-app-{}", std::process::id())));
    let from = if crate::registry::is_reference(&args.from) {
        crate::registry::pull_app(&args.from, &args.registry, None, Some(&pulled.0))?;
        pulled.0.clone()
    } else {
        args.from.clone()
    };
    let file = BenchFile::load(&from)?;
    let plan = Plan::from_args(args, functions(&file)?)?;
    let paths = Paths::new(&file, &args.limits, args.quick || args.precompile)?;
    if args.precompile {
        return precompile::main(&plan, &paths);
    }
    let out_dir = args.results_dir.join(crate::report::timestamp());
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let mut report = Report::new(std::env::args().collect(), plan.info());
    report.host_log = Some(HOST_LOG.to_string());
    let progress = progress::Progress::new(steps(&plan));
    let mut run = Run {
        plan,
        paths,
        report,
        progress,
    };

    // A runtime of its own for the signal handler, which must run while the
    // measurements block this thread.
    let signals = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    group::stop_all_on_signal(&signals);
    let host_log = host_log::HostLog::start(
        &out_dir.join(HOST_LOG),
        args.verbose.then(|| run.progress.clone()),
    )?;
    let services = services::start(&file.services, &run.paths.root)?;
    // The in-process measurements run on one thread: the measuring loop, the
    // instance and a WASIp3 instance's worker task, so a request crosses no
    // thread. On a multi-thread runtime the loop (on `block_on`'s thread) and the
    // worker (on a runtime thread) woke each other twice per request, and that
    // wake-up latency, not the host's work, was over a third of a reused WASIp3
    // request's time (docs/performance.md, "Where a reused WASIp3 request's time goes").
    let in_process = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    measure_all(&mut run, &in_process);
    drop(services);
    // Every group is stopped by its guard already; this catches any leak.
    group::stop_all();
    run.progress.finish();
    drop(host_log);

    run.report.finish(started.elapsed());
    spinbench_host::lines::stdout(&crate::report::table::terminal(&run.report))?;
    let written = crate::report::write(&run.report, &out_dir)?;
    spinbench_host::lines::stdout(&crate::report::where_it_is(&run.report, &out_dir, &written))?;
    crate::report::keep::keep(&run.report, &args.keep, baseline.as_ref())
}

/// The hosts' own output, in the run's results directory.
pub const HOST_LOG: &str = "hosts.log";

/// Every step the plan's measurements will take, in order.
fn steps(plan: &Plan) -> Vec<progress::Step> {
    Measurement::ALL
        .into_iter()
        .filter(|m| plan.measures(*m))
        .flat_map(|m| match m {
            Measurement::BuildAndSize => build_and_size::steps(plan),
            Measurement::InstanceColdStart => instance_cold_start::steps(plan),
            Measurement::HashingPerCore => hashing_per_core::steps(plan),
            Measurement::ProcessColdStart => process_cold_start::steps(plan),
            Measurement::Memory => memory::steps(plan),
            Measurement::Load => load::steps(plan),
        })
        .collect()
}

fn measure_all(run: &mut Run, runtime: &tokio::runtime::Runtime) {
    for measurement in Measurement::ALL {
        if !run.plan.measures(measurement) {
            continue;
        }
        match measurement {
            Measurement::BuildAndSize => build_and_size::measure(run),
            Measurement::InstanceColdStart => instance_cold_start::measure(run, runtime),
            Measurement::HashingPerCore => hashing_per_core::measure(run, runtime),
            Measurement::ProcessColdStart => process_cold_start::measure(run),
            Measurement::Memory => memory::measure(run),
            Measurement::Load => load::measure_compare(run),
        }
    }
}
