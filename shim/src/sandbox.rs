//! The shim as containerd-shim-wasm 1.0 asks for it: a [`Shim`] naming the
//! runtime and the layers it reads, and a [`Sandbox`] whose `run_wasi` runs
//! inside the container (its namespaces, cgroup and root filesystem, after
//! `pivot_root`): it serves the app until SIGTERM.

use crate::app::{self, App};
use crate::artifact;
use crate::env::ContainerEnv;
use crate::memory;
use crate::precompile::AppCompiler;
use anyhow::{Context, Result};
use containerd_shim_wasm::sandbox::Sandbox;
use containerd_shim_wasm::sandbox::context::RuntimeContext;
use containerd_shim_wasm::shim::{Compiler, Shim, Version, version};
use spinbench_host::manifest::Manifest;
use spinbench_host::{Host, HostOptions, MemoryFit, PoolSizing, ServeOptions};
use std::path::{Path, PathBuf};

/// Where the kubelet mounts a container's termination message file (its
/// `terminationMessagePath`, which `kubectl describe` shows as the message).
pub(crate) const TERMINATION_LOG: &str = "/dev/termination-log";

/// `io.containerd.spinbench.v1`: containerd runs `containerd-shim-spinbench-v1`.
pub struct SpinbenchShim;

#[derive(Default)]
pub struct SpinbenchSandbox;

impl Shim for SpinbenchShim {
    fn name() -> &'static str {
        "spinbench"
    }

    fn version() -> Version {
        version!()
    }

    type Sandbox = SpinbenchSandbox;

    fn supported_layers_types() -> &'static [&'static str] {
        artifact::LAYER_TYPES
    }

    async fn compiler() -> Option<impl Compiler> {
        Some(AppCompiler)
    }
}

impl Sandbox for SpinbenchSandbox {
    async fn run_wasi(&self, ctx: &impl RuntimeContext) -> Result<i32> {
        // The reason goes to the container's stderr, where `ctr` and `kubectl
        // logs` show it; an `Err` would reach only the shim's own log.
        match serve(ctx) {
            Ok(()) => Ok(0),
            Err(error) => {
                spinbench_host::err_line!("Error: {error:#}");
                // Where the kubelet mounts the termination message file, the
                // reason becomes the container's status message too.
                if Path::new(TERMINATION_LOG).exists() {
                    let _ = std::fs::write(TERMINATION_LOG, format!("{error:#}"));
                }
                Ok(1)
            }
        }
    }

    /// Any image is tried; what is wrong with one is said by `run_wasi`, in
    /// the container's log, not by a refusal before it starts.
    async fn can_handle(&self, _ctx: &impl RuntimeContext) -> Result<()> {
        Ok(())
    }
}

/// Loads the app the image carries and serves it until SIGTERM or SIGINT,
/// letting in-flight requests finish (the host's shutdown grace, 10 s: within
/// Kubernetes' default 30 s grace period).
fn serve(ctx: &impl RuntimeContext) -> Result<()> {
    let env = ContainerEnv::new(ctx.envs());
    let listen = env.listen_addr()?;
    let App {
        manifest,
        cache_dir,
    } = app::materialize(&ctx.entrypoint().source)?;
    let manifest = Manifest::load_retaining(&manifest, &env.components_to_retain())?;
    let options = host_options(
        &env,
        cache_dir,
        memory::memory_fit(Path::new("/sys/fs/cgroup")),
        app::runtime_config_file(),
    )?;
    // The host runs its own tokio runtime; this function runs inside the
    // library's, which a runtime cannot be started from.
    std::thread::Builder::new()
        .name("spinbench-host".into())
        .spawn(move || -> Result<()> {
            let host = Host::new(&manifest, &options)?;
            spinbench_host::serve(host, ServeOptions::new(listen))
        })
        .context("starting the host's thread")?
        .join()
        .unwrap_or_else(|_| anyhow::bail!("the host panicked"))
}

/// `serve`'s options, with the container's environment for variables and
/// limits and its memory limit (`memory_fit`) as the pool's bound.
pub(crate) fn host_options(
    env: &ContainerEnv,
    cache_dir: Option<PathBuf>,
    memory_fit: Option<MemoryFit>,
    runtime_config_file: Option<PathBuf>,
) -> Result<HostOptions> {
    let defaults = HostOptions::default();
    let pool = PoolSizing {
        max_memory_size: env
            .max_instance_memory()?
            .unwrap_or(defaults.pool.max_memory_size),
        ..defaults.pool
    };
    if memory_fit.is_none() {
        spinbench_host::err_line!(
            "no container memory limit visible (/sys/fs/cgroup): up to {} instances of {} MiB linear memory",
            pool.max_instances,
            pool.max_memory_size >> 20
        );
    }
    let mut options = HostOptions {
        cache_dir,
        pool,
        memory_fit,
        pool_in_background: true,
        runtime_config_file,
        env: Some(env.variables()),
        ..defaults
    };
    env.apply_limits(&mut options)?;
    Ok(options)
}
