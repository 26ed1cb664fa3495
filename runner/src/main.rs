//! `spinbench`: hosts the function set's components the way Spin does and
//! compares them with native builds of the same code.

// Every line leaves whole, in one write (`lines`): never `println!`/`eprintln!`.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod benchfile;
mod compare;
mod duration;
mod limit_args;
mod model;
mod procfs;
mod registry;
mod report;
mod rlimit;
mod spin_build;
mod stats;

use anyhow::Result;
use clap::{Args, Parser, Subcommand, ValueEnum};
use duration::DurationArg;
use spinbench_host::{self as host, manifest};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
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
    /// Push and pull apps as Spin's OCI artifact, and log in to registries (`spin registry`).
    Registry(registry::RegistryArgs),
}

#[derive(Args)]
struct ManifestArg {
    /// The application: a Spin manifest (v2) file, a directory holding spin.toml, or (serve) an OCI reference pushed by `spin registry push` or `spinbench registry push` (as `spin up -f`).
    #[arg(short = 'f', long = "from", visible_alias = "manifest", alias = "file", default_value = manifest::DEFAULT_FILE)]
    from: PathBuf,
}

impl ManifestArg {
    fn load(&self) -> Result<manifest::Manifest> {
        manifest::Manifest::load(&manifest::resolve_path(&self.from))
    }
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
    #[command(flatten)]
    registry: registry::RegistryOptions,
    /// Address to listen on.
    #[arg(long, env = "SPIN_HTTP_LISTEN_ADDR", default_value = "127.0.0.1:3000")]
    listen: SocketAddr,
    /// Where compiled components are cached [default: $XDG_CACHE_HOME/spinbench or ~/.cache/spinbench].
    #[arg(long)]
    cache_dir: Option<PathBuf>,
    /// Compile every component at start, neither reading nor writing the cache.
    #[arg(long, conflicts_with = "cache_dir")]
    no_cache: bool,
    /// Per-request wall-clock limit (30s, 500ms, or seconds); past it the request gets a 504.
    #[arg(long, default_value_t = DurationArg(host::HostOptions::default().request_timeout))]
    request_timeout: DurationArg,
    /// Pooling allocator slots (virtual address space only); must exceed --max-concurrent.
    #[arg(long, default_value_t = host::PoolSizing::default().max_instances)]
    max_instances: u32,
    /// Requests served at once (live instances); more wait in a queue, then get 503 + Retry-After.
    #[arg(long, default_value_t = host::AdmissionLimits::default().max_concurrent)]
    max_concurrent: usize,
    /// Requests that may wait for an instance at once; beyond it, an immediate 503.
    #[arg(long, default_value_t = host::AdmissionLimits::default().max_queued)]
    max_queued: usize,
    /// How long a queued request waits for an instance before its 503.
    #[arg(long, default_value_t = DurationArg(host::AdmissionLimits::default().queue_timeout))]
    queue_timeout: DurationArg,
    /// Linear memory cap per instance in MiB; a guest allocating past it traps (500).
    #[arg(long, default_value_t = host::PoolSizing::default().max_memory_size >> 20)]
    max_instance_memory: usize,
    /// Instance allocator: `pooling` reserves address space for --max-instances up front (falling back to on-demand, with a warning, if it cannot); `on-demand` allocates per instance (for a limited address space; slower instantiation). The same limits hold under both.
    #[arg(long, value_enum, default_value_t = AllocationArg::Pooling)]
    allocation: AllocationArg,
    /// Live host resources (headers, requests, responses, bodies, streams) per instance; creating more fails the request (500).
    #[arg(long, default_value_t = host::GuestLimits::default().max_resources)]
    max_resources: usize,
    /// Bytes one header or trailer set built by a guest may hold; past it the guest gets an error (500 for a spin-sdk guest).
    #[arg(long, default_value_t = host::GuestLimits::default().max_http_fields_size)]
    max_http_fields_size: usize,
    /// Bytes of guest stdout and stderr logged per instance (prefixed with the component id); the rest is dropped after one marker line.
    #[arg(long, default_value_t = host::GuestLimits::default().max_log_bytes)]
    max_guest_log: usize,
    /// Request body cap in bytes, above every function's own limit; past it, 413.
    #[arg(long, default_value_t = host::DEFAULT_MAX_REQUEST_BODY)]
    max_request_body: u64,
    /// Request head cap in bytes (request line and headers, min 8192); past it, 431.
    #[arg(long, default_value_t = host::DEFAULT_MAX_HEADER_BYTES)]
    max_header_bytes: usize,
    /// How long a client has to send a request head, counted from its first byte or, on an idle keep-alive connection, from the last response (slowloris guard and idle timeout).
    #[arg(long, default_value_t = DurationArg(host::DEFAULT_HEADER_READ_TIMEOUT))]
    header_read_timeout: DurationArg,
    /// How long a request body may make no progress while the component waits for it; past it, 408 and the instance is dropped.
    #[arg(long, default_value_t = DurationArg(host::DEFAULT_BODY_READ_TIMEOUT))]
    body_read_timeout: DurationArg,
    /// How long a response may make no progress because the client does not read it; past it, the connection is closed and the instance dropped.
    #[arg(long, default_value_t = DurationArg(host::DEFAULT_RESPONSE_WRITE_TIMEOUT))]
    response_write_timeout: DurationArg,
    /// Connections open at once; past it, new connections wait in the listen backlog until one closes.
    #[arg(long, default_value_t = host::DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// How long in-flight requests get to finish after SIGTERM/SIGINT.
    #[arg(long, default_value_t = DurationArg(host::DEFAULT_SHUTDOWN_GRACE))]
    shutdown_grace: DurationArg,
    /// WASIp3 components: requests one instance serves before it is dropped (Spin's flag).
    #[arg(long, default_value_t = host::ReuseLimits::default().max_requests)]
    max_instance_reuse_count: usize,
    /// WASIp3 components: requests one instance serves at once (Spin's flag).
    #[arg(long, default_value_t = host::ReuseLimits::default().max_concurrent)]
    max_instance_concurrent_reuse_count: usize,
    /// WASIp3 components: how long an idle instance is kept for the next request (Spin's flag and variable).
    #[arg(long, env = "SPIN_HTTP_IDLE_INSTANCE_TIMEOUT_SECS", default_value_t = DurationArg(host::ReuseLimits::default().idle_timeout))]
    idle_instance_timeout: DurationArg,
    /// Log one line per request on stderr.
    #[arg(long)]
    log_requests: bool,
    /// Spin's runtime config file: key-value stores and SQLite databases other than the defaults (Spin's flag and variable).
    #[arg(long, env = "RUNTIME_CONFIG_FILE")]
    runtime_config_file: Option<PathBuf>,
    /// Where the default key-value store and SQLite database live [default: .spin beside the manifest]; "" keeps them in memory (Spin's flag).
    #[arg(long)]
    state_dir: Option<String>,
    #[command(flatten)]
    limits: limit_args::LimitArgs,
    /// A directory `files` sources may also come from, besides the app's own: for Spin's `{ source = "../sibling" }` layout (without it, a source outside the app's directory is refused).
    #[arg(long)]
    files_root: Option<PathBuf>,
    /// Serve only this component and the triggers naming it; repeatable (Spin's flag; SpinKube's variable takes a comma-separated list). A kept component that chains to one left out is refused, as by Spin.
    #[arg(
        short = 'c',
        long = "component-id",
        env = "SPIN_COMPONENTS_TO_RETAIN",
        value_delimiter = ',',
        value_parser = component_id
    )]
    component_ids: Vec<String>,
}

impl ServeArgs {
    fn host_options(&self) -> Result<host::HostOptions> {
        let defaults = host::HostOptions::default();
        let cache_dir = match (&self.cache_dir, self.no_cache) {
            (_, true) => None,
            (Some(dir), false) => Some(dir.clone()),
            (None, false) => defaults.cache_dir.clone(),
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
        if self.max_instance_reuse_count == 0 || self.max_instance_concurrent_reuse_count == 0 {
            anyhow::bail!(
                "--max-instance-reuse-count and --max-instance-concurrent-reuse-count must be at least 1"
            );
        }
        let mut options = host::HostOptions {
            cache_dir,
            request_timeout: self.request_timeout.0,
            pool: host::PoolSizing {
                max_instances: self.max_instances,
                max_memory_size: self.max_instance_memory << 20,
                ..defaults.pool
            },
            allocation: match self.allocation {
                AllocationArg::Pooling => host::Allocation::Pooling,
                AllocationArg::OnDemand => host::Allocation::OnDemand,
            },
            guest: host::GuestLimits {
                max_resources: self.max_resources,
                max_http_fields_size: self.max_http_fields_size,
                max_log_bytes: self.max_guest_log,
                ..defaults.guest
            },
            admission: host::AdmissionLimits {
                max_concurrent: self.max_concurrent,
                max_queued: self.max_queued,
                queue_timeout: self.queue_timeout.0,
            },
            max_request_body: self.max_request_body,
            reuse: host::ReuseLimits {
                max_requests: self.max_instance_reuse_count,
                max_concurrent: self.max_instance_concurrent_reuse_count,
                idle_timeout: self.idle_instance_timeout.0,
            },
            body_read_timeout: positive("--body-read-timeout", self.body_read_timeout)?,
            runtime_config_file: self.runtime_config_file.clone(),
            state_dir: host::StateDirArg::from_flag(self.state_dir.as_deref()),
            pool_in_background: true,
            files_root: self.files_root.clone(),
            ..defaults
        };
        self.limits.apply(&mut options)?;
        Ok(options)
    }

    fn serve_options(&self) -> Result<host::ServeOptions> {
        Ok(host::ServeOptions {
            log_requests: self.log_requests,
            header_read_timeout: self.header_read_timeout.0,
            max_header_bytes: self.max_header_bytes.max(8192),
            shutdown_grace: self.shutdown_grace.0,
            response_write_timeout: positive(
                "--response-write-timeout",
                self.response_write_timeout,
            )?,
            max_connections: match self.max_connections {
                0 => anyhow::bail!("--max-connections must be at least 1"),
                n => n,
            },
            ..host::ServeOptions::new(self.listen)
        })
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum AllocationArg {
    Pooling,
    OnDemand,
}

/// A component id as `-c` and `SPIN_COMPONENTS_TO_RETAIN` give it: `a, b`
/// names `a` and `b`: each entry is trimmed, an empty one refused.
fn component_id(text: &str) -> Result<String, String> {
    match text.trim() {
        "" => Err("an empty component id".into()),
        id => Ok(id.to_string()),
    }
}

/// A timeout of zero would fail every wait at once.
fn positive(flag: &str, value: DurationArg) -> Result<Duration> {
    match value.0 {
        Duration::ZERO => anyhow::bail!("{flag} must be above 0"),
        duration => Ok(duration),
    }
}

/// An error is one `Error: ...` line (its causes joined by `: `), never a
/// backtrace: a refused app is told in one line what to do instead.
fn main() -> ExitCode {
    // The 10,000-user load scenario needs a socket per user in oha and in the
    // server (children inherit the limit); `compare` checks it per scenario.
    if let Err(e) = rlimit::raise_open_files() {
        spinbench_host::err_line!("warning: could not raise the open-files limit: {e}");
    }
    let outcome = match Cli::parse().command {
        Command::Build(args) => build(&args),
        Command::Serve(args) => serve(&args),
        Command::Compare(args) => compare::main(&args),
        Command::Load(args) => compare::load::main(&args),
        Command::Diff(args) => report::diff::main(&args),
        Command::Registry(args) => registry::main(&args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        // A regression past --fail-above has its own exit code, so that CI tells
        // it from a run that failed.
        Err(error) => {
            if let Some(regressed) = error.downcast_ref::<report::diff::Regressed>() {
                spinbench_host::err_line!("{regressed}");
                ExitCode::from(report::diff::REGRESSED_EXIT_CODE)
            } else {
                spinbench_host::err_line!("Error: {error:#}");
                ExitCode::FAILURE
            }
        }
    }
}

fn build(args: &BuildArgs) -> Result<()> {
    spin_build::build_all(&args.manifest.load()?)
}

fn serve(args: &ServeArgs) -> Result<()> {
    let path = registry::resolve_app(
        &args.manifest.from,
        &args.registry,
        args.cache_dir.as_deref(),
    )?;
    let manifest = manifest::Manifest::load_retaining(&path, &args.component_ids)?;
    let host = host::Host::new(&manifest, &args.host_options()?)?;
    host::serve(host, args.serve_options()?)
}
