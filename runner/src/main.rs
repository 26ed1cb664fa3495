//! `spinbench`: hosts the function set's components the way Spin does and
//! compares them with native builds of the same code.

mod benchfile;
mod compare;
mod host;
mod manifest;
mod procfs;
mod report;
mod rlimit;
mod spin_build;
mod stats;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(name = "spinbench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run every component's build command, like `spin build`.
    Build(BuildArgs),
    /// Serve the manifest's components over HTTP, one fresh instance per request.
    Serve(ServeArgs),
    /// Measure every function on every host (native, wasm, spin, wasmtime serve) and write a report.
    Compare(compare::CompareArgs),
    /// Run the load scenarios against a host already running elsewhere.
    Load(compare::load::LoadArgs),
    /// Compare two report.json files: the ratio of each median, marked beyond both runs' spread.
    Diff(report::diff::DiffArgs),
}

#[derive(Args)]
struct ManifestArg {
    /// The Spin manifest (v2).
    #[arg(long, default_value = "spin.toml")]
    manifest: PathBuf,
}

#[derive(Args)]
struct BuildArgs {
    #[command(flatten)]
    manifest: ManifestArg,
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    manifest: ManifestArg,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:3000")]
    listen: SocketAddr,
    /// Where compiled components are cached [default: $XDG_CACHE_HOME/spinbench or ~/.cache/spinbench].
    #[arg(long)]
    cache_dir: Option<PathBuf>,
    /// Compile every component at start, neither reading nor writing the cache.
    #[arg(long, conflicts_with = "cache_dir")]
    no_cache: bool,
    /// Per-request wall-clock limit in seconds; past it the request gets a 504.
    #[arg(long, default_value_t = 30.0)]
    request_timeout: f64,
    /// Pooling allocator slots (virtual address space only); must exceed --max-concurrent.
    #[arg(long, default_value_t = host::PoolSizing::default().max_instances)]
    max_instances: u32,
    /// Requests served at once (live instances); more wait in a queue, then get 503 + Retry-After.
    #[arg(long, default_value_t = host::AdmissionLimits::default().max_concurrent)]
    max_concurrent: usize,
    /// Requests that may wait for an instance at once; beyond it, an immediate 503.
    #[arg(long, default_value_t = host::AdmissionLimits::default().max_queued)]
    max_queued: usize,
    /// Seconds a queued request waits for an instance before its 503.
    #[arg(long, default_value_t = host::AdmissionLimits::default().queue_timeout.as_secs_f64())]
    queue_timeout: f64,
    /// Linear memory cap per instance in MiB; a guest allocating past it traps (500).
    #[arg(long, default_value_t = host::PoolSizing::default().max_memory_size >> 20)]
    max_instance_memory: usize,
    /// Request body cap in bytes, above every function's own limit; past it, 413.
    #[arg(long, default_value_t = host::DEFAULT_MAX_REQUEST_BODY)]
    max_request_body: u64,
    /// Request head cap in bytes (request line and headers, min 8192); past it, 431.
    #[arg(long, default_value_t = host::DEFAULT_MAX_HEADER_BYTES)]
    max_header_bytes: usize,
    /// Seconds a client has to send a request head, counted from its first byte or, on an idle keep-alive connection, from the last response (slowloris guard and idle timeout).
    #[arg(long, default_value_t = host::DEFAULT_HEADER_READ_TIMEOUT.as_secs_f64())]
    header_read_timeout: f64,
    /// Seconds in-flight requests get to finish after SIGTERM/SIGINT.
    #[arg(long, default_value_t = host::DEFAULT_SHUTDOWN_GRACE.as_secs_f64())]
    shutdown_grace: f64,
    /// Log one line per request on stderr.
    #[arg(long)]
    log_requests: bool,
}

impl ServeArgs {
    fn host_options(&self) -> Result<host::HostOptions> {
        let defaults = host::HostOptions::default();
        let cache_dir = match (&self.cache_dir, self.no_cache) {
            (_, true) => None,
            (Some(dir), false) => Some(dir.clone()),
            (None, false) => defaults.cache_dir,
        };
        if self.max_concurrent == 0 || self.max_concurrent >= self.max_instances as usize {
            anyhow::bail!(
                "--max-concurrent {} must be at least 1 and below --max-instances {}",
                self.max_concurrent,
                self.max_instances
            );
        }
        if self.max_instance_memory == 0 || self.max_instance_memory > 4096 {
            anyhow::bail!(
                "--max-instance-memory {} must be 1 to 4096 MiB",
                self.max_instance_memory
            );
        }
        Ok(host::HostOptions {
            cache_dir,
            request_timeout: seconds("--request-timeout", self.request_timeout)?,
            pool: host::PoolSizing {
                max_instances: self.max_instances,
                max_memory_size: self.max_instance_memory << 20,
            },
            admission: host::AdmissionLimits {
                max_concurrent: self.max_concurrent,
                max_queued: self.max_queued,
                queue_timeout: seconds("--queue-timeout", self.queue_timeout)?,
            },
            max_request_body: self.max_request_body,
        })
    }

    fn serve_options(&self) -> Result<host::ServeOptions> {
        Ok(host::ServeOptions {
            log_requests: self.log_requests,
            header_read_timeout: seconds("--header-read-timeout", self.header_read_timeout)?,
            max_header_bytes: self.max_header_bytes.max(8192),
            shutdown_grace: seconds("--shutdown-grace", self.shutdown_grace)?,
            ..host::ServeOptions::new(self.listen)
        })
    }
}

fn seconds(flag: &str, value: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(value).map_err(|e| anyhow::anyhow!("{flag} {value}: {e}"))
}

fn main() -> Result<()> {
    // The 10,000-user load scenario needs a socket per user in oha and in the
    // server (children inherit the limit); `compare` checks it per scenario.
    if let Err(e) = rlimit::raise_open_files() {
        eprintln!("warning: could not raise the open-files limit: {e}");
    }
    let result = match Cli::parse().command {
        Command::Build(args) => build(args),
        Command::Serve(args) => serve(args),
        Command::Compare(args) => compare::main(args),
        Command::Load(args) => compare::load::main(args),
        Command::Diff(args) => report::diff::main(args),
    };
    // A regression past --fail-above has its own exit code, so that CI tells
    // it from a run that failed.
    if let Err(e) = &result
        && let Some(regressed) = e.downcast_ref::<report::diff::Regressed>()
    {
        eprintln!("{regressed}");
        std::process::exit(report::diff::REGRESSED_EXIT_CODE);
    }
    result
}

fn build(args: BuildArgs) -> Result<()> {
    let manifest = manifest::Manifest::load(&args.manifest.manifest)?;
    spin_build::build_all(&manifest)
}

fn serve(args: ServeArgs) -> Result<()> {
    let manifest = manifest::Manifest::load(&args.manifest.manifest)?;
    let options = args.serve_options()?;
    let host = host::Host::new(&manifest, &args.host_options()?)?;
    host::serve(host, options)
}
