//! `spinbench compare`: every measurement of every function on every host, in one
//! run, with the report written at the end. One module per measurement; `hosts`
//! starts and stops the processes they compare.

pub mod build_and_size;
pub mod group;
pub mod hashing_per_core;
pub mod hosts;
pub mod http;
pub mod instance_cold_start;
pub mod load;
pub mod memory;
pub mod oha;
pub mod process_cold_start;
pub mod scenarios;
pub mod tree;

use crate::report::{Metric, Report};
use anyhow::{Context, Result, bail};
use hosts::{CommandHost, HostKind};
use http::Request;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The measurements, in the order they run and are reported.
pub const MEASUREMENTS: [&str; 6] = [
    "build_and_size",
    "instance_cold_start",
    "hashing_per_core",
    "process_cold_start",
    "memory",
    "load",
];

#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// The Spin manifest whose components are compared: a file, or a directory holding spin.toml.
    #[arg(short = 'f', long = "from", visible_alias = "manifest", alias = "file", default_value = crate::manifest::DEFAULT_FILE)]
    pub manifest: PathBuf,
    /// Functions to measure (comma-separated): hello, echo, cpu, io, suntimes, sha1.
    #[arg(long, value_delimiter = ',', default_values = ["hello", "echo", "cpu", "io", "suntimes", "sha1"])]
    pub functions: Vec<String>,
    /// Hosts to compare (comma-separated): native, wasm, wasm-p3, spin, wasmtime-serve, wasmtime-serve-tuned (Spin's pool settings), or a --command-host's name. Absent ones are skipped.
    #[arg(long, value_delimiter = ',', default_values = ["native", "wasm", "wasm-p3", "spin", "wasmtime-serve", "wasmtime-serve-tuned"])]
    pub hosts: Vec<String>,
    /// A host run from a command (repeatable): NAME=COMMAND, split at spaces (no quoting), with {native}, {wasm}, {manifest} and {addr} replaced for each function by its native binary, its component, a Spin manifest of it alone, and the 127.0.0.1 address to listen on. Compared after the --hosts unless they name it. Like every host it runs in a process group of its own, stopped with everything it started. Example: 'my-spin=/opt/spin/spin up -f {manifest} --listen {addr}'
    #[arg(long = "command-host", value_name = "NAME=COMMAND")]
    pub command_hosts: Vec<String>,
    /// Measurements to run (comma-separated): build_and_size, instance_cold_start, hashing_per_core, process_cold_start, memory, load.
    #[arg(long, value_delimiter = ',', default_values = MEASUREMENTS)]
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
    /// A run under a minute: 1 s loads, 100 samples, 5 starts, K up to 100, no 10,000-user io load.
    #[arg(long)]
    pub quick: bool,
    /// Where `<timestamp>/report.json` and friends are written.
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
}

/// One function of the set, and the canned request every host gets for it.
pub struct Function {
    pub name: &'static str,
    /// Cargo package (the `.wasm` is named after it).
    pub package: &'static str,
    pub route: &'static str,
    /// The cheapest meaningful request: readiness probe and cold-start request.
    pub probe: fn() -> Request,
}

pub const ECHO_BODY: &str = r#"{"FirstName":"John","LastName":"Doe","Age":33}"#;
pub const SUNTIMES_QUERY: &str = "/suntimes?lat=51.5&lon=-0.12&date=2024-06-21&tz=Europe/London";

pub static FUNCTIONS: [Function; 6] = [
    Function {
        name: "hello",
        package: "hello",
        route: "/hello",
        probe: || Request::get("/hello"),
    },
    Function {
        name: "echo",
        package: "echo",
        route: "/echo",
        probe: echo_request,
    },
    Function {
        name: "cpu",
        package: "cpu",
        route: "/cpu",
        probe: || Request::get("/cpu?ms=0"),
    },
    Function {
        name: "io",
        package: "io",
        route: "/io",
        probe: || Request::get("/io?ms=0"),
    },
    Function {
        name: "suntimes",
        package: "suntimes",
        route: "/suntimes",
        probe: || Request::get(SUNTIMES_QUERY),
    },
    Function {
        name: "sha1",
        package: "sha1-blocks",
        route: "/sha1",
        probe: sha1_small_request,
    },
];

fn echo_request() -> Request {
    Request {
        method: "POST",
        target: "/echo".into(),
        content_type: Some("application/json"),
        body: ECHO_BODY.into(),
    }
}

fn sha1_small_request() -> Request {
    Request {
        method: "POST",
        target: "/sha1".into(),
        content_type: Some("application/octet-stream"),
        body: vec![0x5a; 4096],
    }
}

pub fn function(name: &str) -> Option<&'static Function> {
    FUNCTIONS.iter().find(|f| f.name == name)
}

/// Where things are: the built artifacts, the runner, and the run's scratch space.
pub struct Paths {
    /// The workspace root (the manifest's directory).
    pub root: PathBuf,
    /// The `spinbench` binary that serves components (this one).
    pub runner: PathBuf,
    /// Scratch space for this run: per-function manifests, code caches. Removed at the end.
    pub work: PathBuf,
}

impl Paths {
    pub fn new(manifest: &Path) -> Result<Paths> {
        let manifest = std::fs::canonicalize(manifest)
            .with_context(|| format!("manifest {}", manifest.display()))?;
        let root = manifest
            .parent()
            .context("manifest has no directory")?
            .to_path_buf();
        let work = std::env::temp_dir().join(format!("spinbench-compare-{}", std::process::id()));
        std::fs::create_dir_all(&work)?;
        Ok(Paths {
            root,
            runner: std::env::current_exe()?,
            work,
        })
    }

    pub fn native_binary(&self, f: &Function) -> PathBuf {
        self.root
            .join("target/release")
            .join(format!("{}-native", f.name))
    }

    /// The native binary built with RustCrypto's portable SHA-1 (no SHA instructions).
    pub fn soft_sha1_binary(&self) -> PathBuf {
        self.root.join("target/sha1-soft/release/sha1-native")
    }

    pub fn wasm_file(&self, f: &Function) -> PathBuf {
        self.root
            .join("target/wasm32-wasip2/release")
            .join(format!("{}.wasm", f.package.replace('-', "_")))
    }

    /// A manifest serving `f` alone, so the runner (and Spin) load one component,
    /// like the native binary serves one function.
    pub fn function_manifest(&self, f: &Function) -> Result<PathBuf> {
        let path = self.work.join(format!("{}.spin.toml", f.name));
        let toml = format!(
            "spin_manifest_version = 2\n\n[application]\nname = \"spinbench-{name}\"\nversion = \"0.1.0\"\n\n\
             [[trigger.http]]\nroute = \"{route}\"\ncomponent = \"{name}\"\n\n\
             [component.{name}]\nsource = {source:?}\nallowed_outbound_hosts = []\n",
            name = f.name,
            route = f.route,
            source = self.wasm_file(f).display().to_string(),
        );
        std::fs::write(&path, toml).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }

    /// The shared warm code cache of this run.
    pub fn cache_dir(&self) -> PathBuf {
        self.work.join("cache")
    }
}

impl Drop for Paths {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.work);
    }
}

/// What this run does: the options resolved, `--quick` applied.
pub struct Plan {
    pub functions: Vec<&'static Function>,
    pub hosts: Vec<HostKind>,
    pub measurements: Vec<String>,
    pub load_duration: Duration,
    pub warmup: Duration,
    pub samples: usize,
    pub runs: usize,
    /// Concurrently live instances for per-instance memory.
    pub ks: Vec<usize>,
    pub quick: bool,
}

impl Plan {
    pub fn from_args(args: &CompareArgs) -> Result<Plan> {
        let functions = args
            .functions
            .iter()
            .map(|n| function(n).with_context(|| format!("unknown function {n:?}")))
            .collect::<Result<Vec<_>>>()?;
        let hosts = hosts(args)?;
        for m in &args.measurements {
            if !MEASUREMENTS.contains(&m.as_str()) {
                bail!(
                    "unknown measurement {m:?} (one of {})",
                    MEASUREMENTS.join(", ")
                );
            }
        }
        if !(args.duration > 0.0 && args.duration <= 3600.0) {
            bail!("--duration must be in (0, 3600] seconds");
        }
        let quick = args.quick;
        Ok(Plan {
            functions,
            hosts,
            measurements: args.measurements.clone(),
            load_duration: Duration::from_secs_f64(if quick { 1.0 } else { args.duration }),
            warmup: Duration::from_secs_f64(if quick {
                0.2
            } else {
                (args.duration / 5.0).clamp(0.5, 3.0)
            }),
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
        })
    }

    pub fn measures(&self, name: &str) -> bool {
        self.measurements.iter().any(|m| m == name)
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
}

impl Run {
    pub fn record(&mut self, metric: Metric) {
        self.report.push(metric);
    }

    /// A progress bar for `len` steps of `what`.
    pub fn progress(&self, what: &str, len: usize) -> ProgressBar {
        let bar = ProgressBar::new(len as u64);
        bar.set_style(
            ProgressStyle::with_template("{prefix:>20} [{bar:30}] {pos}/{len} {elapsed} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(what.to_string());
        bar
    }
}

/// `spinbench compare`: runs the plan and writes the report; prints where it is.
pub fn main(args: CompareArgs) -> Result<()> {
    let started = Instant::now();
    let plan = Plan::from_args(&args)?;
    let paths = Paths::new(&crate::manifest::resolve_path(&args.manifest))?;
    let out_dir = args.results_dir.join(crate::report::timestamp());
    let report = Report::new(std::env::args().collect(), &plan);
    let mut run = Run {
        plan,
        paths,
        report,
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    group::stop_all_on_signal(&runtime);
    let result = measure_all(&mut run, &runtime);
    // Every group is stopped by its guard already; this catches any leak.
    group::stop_all();
    result?;
    hosts::remove_logs();

    run.report.finish(started.elapsed());
    print!("{}", crate::report::table::terminal(&run.report));
    let written = crate::report::write(&run.report, &out_dir)?;
    for path in &written {
        println!("wrote {}", path.display());
    }
    println!("report: {}", out_dir.join("report.json").display());
    Ok(())
}

fn measure_all(run: &mut Run, runtime: &tokio::runtime::Runtime) -> Result<()> {
    if run.plan.measures("build_and_size") {
        build_and_size::measure(run)?;
    }
    if run.plan.measures("instance_cold_start") {
        instance_cold_start::measure(run, runtime)?;
    }
    if run.plan.measures("hashing_per_core") {
        hashing_per_core::measure(run, runtime)?;
    }
    if run.plan.measures("process_cold_start") {
        process_cold_start::measure(run)?;
    }
    if run.plan.measures("memory") {
        memory::measure(run)?;
    }
    if run.plan.measures("load") {
        load::measure_compare(run)?;
    }
    Ok(())
}
