//! An app container served on threads of the shim: its app made from the
//! image's layers (or its files), the host built with the container's
//! environment and memory limit, serving in the pod's network namespace until
//! containerd kills the task. A refused app fails `StartContainer` with the
//! reason, which CRI keeps as the container's status message (what `kubectl
//! describe` shows); the reason also goes to the container's log and to its
//! termination message file, where the kubelet reads one.

use super::image::Store;
use super::placement::{self, Joined};
use super::{KILLED, Scope};
use crate::app::{self, App};
use crate::env::ContainerEnv;
use crate::sandbox::TERMINATION_LOG;
use anyhow::{Context, Result, bail};
use chrono::{DateTime, Utc};
use containerd_shimkit::sandbox::InstanceConfig;
use containerd_shimkit::sandbox::sync::WaitableCell;
use oci_spec::runtime::Spec;
use spinbench_host::manifest::Manifest;
use spinbench_host::{Allocation, Host, ServeOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::{Notify, oneshot};

/// The node's compiled code, shared by every pod of an image: one copy on disk
/// and in the page cache, mapped by each (`SPINBENCH_SHIM_CACHE` overrides it).
const CACHE_DIR: &str = "/var/lib/containerd-shim-spinbench/cache";
const CACHE_VAR: &str = "SPINBENCH_SHIM_CACHE";

pub struct AppRun {
    cfg: InstanceConfig,
    spec: Spec,
    network: Option<PathBuf>,
    scope: Scope,
    exit: WaitableCell<(u32, DateTime<Utc>)>,
    stop: Arc<Notify>,
    joined: Mutex<Option<Joined>>,
}

impl AppRun {
    pub fn new(
        cfg: &InstanceConfig,
        spec: Spec,
        network: Option<PathBuf>,
        scope: Scope,
        exit: WaitableCell<(u32, DateTime<Utc>)>,
    ) -> AppRun {
        AppRun {
            cfg: cfg.clone(),
            spec,
            network,
            scope,
            exit,
            stop: Arc::new(Notify::new()),
            joined: Mutex::new(None),
        }
    }

    /// Makes the app and starts serving it; fails with the reason it cannot.
    pub async fn start(&self, id: &str) -> Result<()> {
        let result = self.try_start(id).await;
        if let Err(error) = &result {
            self.report(&format!("{error:#}"));
        }
        result
    }

    async fn try_start(&self, id: &str) -> Result<()> {
        let layers = Store::connect(&self.cfg.containerd_address, &self.cfg.namespace)
            .await?
            .wasm_layers(id, &spinbench_oci::PullLimits::from_env()?)
            .await?;
        let env = ContainerEnv::new(
            self.spec
                .process()
                .as_ref()
                .and_then(|p| p.env().clone())
                .as_deref()
                .unwrap_or_default(),
        );
        let listen = env.listen_addr()?;
        let rootfs = self.cfg.bundle.join("rootfs");
        let App {
            manifest,
            cache_dir: _,
        } = app::materialize_in(&rootfs, &layers)?;
        let manifest = Manifest::load_retaining(&manifest, &env.components_to_retain())?;
        let runtime_config = rootfs.join("runtime-config.toml");
        let mut options = crate::sandbox::host_options(
            &env,
            Some(cache_dir()),
            placement::memory_limit(&self.spec).map(crate::memory::fit_in),
            runtime_config.is_file().then_some(runtime_config),
        )?;
        if self.scope == Scope::Node {
            // A pool reserves address space for every slot up front (Spin's
            // 1,100 slots of 4 GiB each: 4.4 TB), and one process has 128 TiB:
            // a node-wide shim of pooled pods died at its 29th pod. Its pods
            // allocate each instance when it starts instead; the memory limit
            // still caps how many are served at once (the admission cap).
            options.allocation = Allocation::OnDemand;
        }
        // Compiled (once per node and image) before the pod's cgroup is joined:
        // a compiler's peak is the node's cost, not the pod's, as with runwasi's
        // precompile hook; the host then maps the node's copy.
        spinbench_host::precompile(&manifest, &cache_dir())?;
        if self.scope == Scope::Pod {
            // The pod is charged for the app from here on, and held to its limits.
            let joined = placement::join_cgroup(&self.spec, id)?;
            *self
                .joined
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = joined;
            self.redirect_output()?;
        }
        let (ready, loaded) = oneshot::channel();
        let network = self.network.clone();
        let stop = self.stop.clone();
        let exit = self.exit.clone();
        let scope = self.scope;
        std::thread::Builder::new()
            .name(format!("app-{}", id.chars().take(12).collect::<String>()))
            .spawn(move || {
                let host = network
                    .as_deref()
                    .map_or(Ok(()), placement::enter_network_namespace)
                    .and_then(|()| Host::new(&manifest, &options));
                let host = match host {
                    Ok(host) => {
                        let _ = ready.send(Ok(()));
                        host
                    }
                    Err(error) => {
                        let _ = ready.send(Err(error));
                        return;
                    }
                };
                let mut serve = ServeOptions::new(listen);
                serve.stop = Some(stop);
                let code = match spinbench_host::serve(host, serve) {
                    Ok(()) => 0,
                    Err(error) => {
                        spinbench_host::err_line!("Error: {error:#}");
                        1
                    }
                };
                if scope == Scope::Pod {
                    release_output();
                }
                let _ = exit.set((code, Utc::now()));
            })
            .context("starting the app's thread")?;
        match loaded.await {
            Ok(result) => result,
            Err(_) => bail!("the app's thread ended before it was ready"),
        }
    }

    /// The host writes to this process's stdout and stderr: with one pod per
    /// shim, those become the container's (what CRI writes to its log).
    fn redirect_output(&self) -> Result<()> {
        for (path, fd) in [(&self.cfg.stdout, 1), (&self.cfg.stderr, 2)] {
            if path.as_os_str().is_empty() {
                continue;
            }
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .with_context(|| format!("opening the container's output {}", path.display()))?;
            nix::unistd::dup2(file.as_raw_fd(), fd).context("redirecting the app's output")?;
        }
        Ok(())
    }

    /// The reason the app did not start, where the container's users look.
    fn report(&self, reason: &str) {
        let line = format!("Error: {reason}\n");
        if !self.cfg.stderr.as_os_str().is_empty()
            && let Ok(mut stderr) = std::fs::OpenOptions::new()
                .write(true)
                .open(&self.cfg.stderr)
        {
            let _ = stderr.write_all(line.as_bytes());
        }
        if let Some(file) = termination_log(&self.spec) {
            let _ = std::fs::write(file, reason);
        }
    }

    /// SIGTERM or SIGINT: the host drains in-flight requests (its grace) and
    /// the task exits 0; SIGKILL: the task is reported killed at once.
    pub fn stop(&self, kill: bool) {
        self.stop.notify_one();
        if kill {
            if self.scope == Scope::Pod {
                release_output();
            }
            let _ = self.exit.set((KILLED, Utc::now()));
        }
    }

    pub fn delete(&self, id: &str) -> Result<()> {
        let joined = self
            .joined
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(joined) = joined {
            joined.leave(id)?;
        }
        Ok(())
    }
}

/// Closes the container's output (the shim's stdout and stderr point at
/// /dev/null again) before its exit is reported: containerd deletes a task
/// only once its output's FIFOs are closed (its IO copy ends), so a task that
/// exits with them open is never deleted, as a container process's exit closes
/// them. Best effort: an exit must be reported whatever happens here.
fn release_output() {
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        for fd in [1, 2] {
            let _ = nix::unistd::dup2(null.as_raw_fd(), fd);
        }
    }
}

/// The host file mounted at [`TERMINATION_LOG`], if the spec has one.
fn termination_log(spec: &Spec) -> Option<PathBuf> {
    spec.mounts()
        .as_ref()?
        .iter()
        .find(|m| m.destination() == Path::new(TERMINATION_LOG))?
        .source()
        .clone()
}

fn cache_dir() -> PathBuf {
    std::env::var_os(CACHE_VAR)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(CACHE_DIR), PathBuf::from)
}
