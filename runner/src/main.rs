//! `spinbench`: hosts the function set's components the way Spin does and
//! compares them with native builds of the same code.

mod compare;
mod host;
mod manifest;
mod procfs;
mod report;
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
    /// Component instances that can be live at once (pooling allocator size).
    #[arg(long, default_value_t = host::PoolSizing::default().max_instances)]
    max_instances: u32,
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
        let request_timeout = Duration::try_from_secs_f64(self.request_timeout)
            .map_err(|e| anyhow::anyhow!("--request-timeout {}: {e}", self.request_timeout))?;
        Ok(host::HostOptions {
            cache_dir,
            request_timeout,
            pool: host::PoolSizing {
                max_instances: self.max_instances,
                ..defaults.pool
            },
        })
    }
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Build(args) => build(args),
        Command::Serve(args) => serve(args),
        Command::Compare(args) => compare::main(args),
        Command::Load(args) => compare::load::main(args),
    }
}

fn build(args: BuildArgs) -> Result<()> {
    let manifest = manifest::Manifest::load(&args.manifest.manifest)?;
    spin_build::build_all(&manifest)
}

fn serve(args: ServeArgs) -> Result<()> {
    let manifest = manifest::Manifest::load(&args.manifest.manifest)?;
    let host = host::Host::new(&manifest, &args.host_options()?)?;
    let options = host::ServeOptions {
        listen: args.listen,
        log_requests: args.log_requests,
    };
    host::serve(host, options)
}
