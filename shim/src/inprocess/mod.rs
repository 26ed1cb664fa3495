//! The in-process design (`containerd-shim-spinbench-inprocess-v1`, runtime
//! `io.containerd.spinbench-inprocess.v1`): the shim serves its pod's containers
//! in its own process, on runwasi's lower library (`containerd-shimkit`: the
//! shim protocol and task service) instead of its container library (a zygote
//! process, a container process per container through youki, the pause image's
//! process). A pod is then one process: the sandbox is a record that lives until
//! it is killed, and the app runs on threads of the shim that joined the pod's
//! network namespace, with the container's cgroup and resources applied to the
//! shim (when it serves one pod: [`Scope`]).
//!
//! What the container design gives and this one does not: the app does not run
//! inside the container's mount, PID, IPC or UTS namespaces, seccomp profile or
//! user; the wasm sandbox (and the host's capability checks) is its isolation,
//! as for every app that `spinbench serve` runs, and the process runs as the
//! shim's user.

mod app;
mod image;
mod placement;

use app::AppRun;
use chrono::{DateTime, Utc};
use containerd_shimkit::sandbox::sync::WaitableCell;
use containerd_shimkit::sandbox::{Error, Instance, InstanceConfig};
use oci_spec::runtime::Spec;
use std::collections::HashMap;
use std::future::Future as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

/// CRI's annotations on a container's spec.
const CONTAINER_TYPE: &str = "io.kubernetes.cri.container-type";
const SANDBOX_ID: &str = "io.kubernetes.cri.sandbox-id";
/// Exit status of a task killed with SIGKILL, as a shell reports it.
pub const KILLED: u32 = 128 + 9;

/// Which containers one shim process serves: those of one pod (containerd
/// starts a shim per pod sandbox, the default), or every pod of the node
/// (`SPINBENCH_SHIM_SCOPE=node` in containerd's environment: one shim for the
/// node, whose pods then share its memory, its CPU and its fate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Pod,
    Node,
}

/// The environment variable [`Scope`] is read from.
pub const SCOPE_VAR: &str = "SPINBENCH_SHIM_SCOPE";

impl Scope {
    pub fn from_env() -> Scope {
        match std::env::var(SCOPE_VAR).as_deref() {
            Ok("node") => Scope::Node,
            _ => Scope::Pod,
        }
    }
}

/// Each pod sandbox's network namespace, by sandbox id: CRI names the app
/// container's namespaces after the sandbox task's PID, which here is the shim's
/// own, so the app finds its pod's namespace through its sandbox.
fn sandbox_networks() -> &'static Mutex<HashMap<String, PathBuf>> {
    static NETWORKS: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    NETWORKS.get_or_init(Mutex::default)
}

/// A task of the in-process shim: a pod sandbox, or an app container.
pub struct InProcess {
    id: String,
    exit: WaitableCell<(u32, DateTime<Utc>)>,
    kind: Kind,
}

enum Kind {
    Sandbox,
    App(Arc<AppRun>),
}

impl Instance for InProcess {
    async fn new(id: String, cfg: &InstanceConfig) -> Result<Self, Error> {
        let spec = Spec::load(cfg.bundle.join("config.json"))?;
        let annotations = spec.annotations().clone().unwrap_or_default();
        let exit = WaitableCell::new();
        if annotations.get(CONTAINER_TYPE).map(String::as_str) == Some("sandbox") {
            if let Some(path) = placement::network_namespace(&spec) {
                lock_networks().insert(id.clone(), path);
            }
            return Ok(Self {
                id,
                exit,
                kind: Kind::Sandbox,
            });
        }
        let network = match annotations.get(SANDBOX_ID) {
            Some(sandbox) => lock_networks().get(sandbox).cloned(),
            None => placement::network_namespace(&spec),
        };
        let run = AppRun::new(cfg, spec, network, Scope::from_env(), exit.clone());
        Ok(Self {
            id,
            exit,
            kind: Kind::App(Arc::new(run)),
        })
    }

    async fn start(&self) -> Result<u32, Error> {
        if let Kind::App(run) = &self.kind {
            run.start(&self.id)
                .await
                .map_err(|e| Error::Others(format!("{e:#}")))?;
        }
        Ok(std::process::id())
    }

    async fn kill(&self, signal: u32) -> Result<(), Error> {
        // As runc's shim answers: a task that has exited is not found. containerd's
        // forced delete (what CRI does on every container exit) then stops there
        // instead of waiting for a second exit it would never see.
        if self.has_exited() {
            return Err(Error::NotFound(format!(
                "task {}: process already finished",
                self.id
            )));
        }
        match &self.kind {
            Kind::Sandbox => {
                let _ = self
                    .exit
                    .set((if signal == 9 { KILLED } else { 0 }, Utc::now()));
            }
            Kind::App(run) => run.stop(signal == 9),
        }
        Ok(())
    }

    async fn delete(&self) -> Result<(), Error> {
        match &self.kind {
            Kind::Sandbox => {
                lock_networks().remove(&self.id);
            }
            Kind::App(run) => run.delete(&self.id)?,
        }
        Ok(())
    }

    async fn wait(&self) -> (u32, DateTime<Utc>) {
        *self.exit.wait().await
    }
}

impl InProcess {
    /// Whether the task's exit is set (one poll of its cell, never waiting).
    fn has_exited(&self) -> bool {
        let exit = std::pin::pin!(self.exit.wait());
        exit.poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
            .is_ready()
    }
}

fn lock_networks() -> std::sync::MutexGuard<'static, HashMap<String, PathBuf>> {
    sandbox_networks()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The shim's entry point: containerd's `start`, `delete` and the daemon, as
/// runwasi's shimkit runs them for [`InProcess`] tasks; with [`Scope::Node`],
/// `start` hands every pod the one daemon of the node instead.
pub fn main() {
    limit_malloc_arenas();
    if Scope::from_env() == Scope::Node && is_start() {
        if let Err(error) = start_node_wide() {
            spinbench_host::err_line!("{error:#}");
            std::process::exit(1);
        }
        return;
    }
    containerd_shimkit::sandbox::cli::shim_main::<InProcess>(
        "spinbench-inprocess",
        containerd_shimkit::shim_version!(),
        Some(containerd_shimkit::Config {
            no_setup_logger: false,
            // The library's own log goes to containerd's (the shim log); warnings up.
            default_log_level: "warn".to_string(),
            no_reaper: false,
            no_sub_reaper: false,
        }),
    );
}

/// glibc gives threads that allocate arenas of their own, up to 8 per core,
/// each keeping what it touched; the shim's threads are many and mostly idle
/// (the task service's, the runtimes', each pod's), so two arenas serve them.
#[allow(
    unsafe_code,
    reason = "mallopt(3) through libc: it sets one allocator parameter"
)]
fn limit_malloc_arenas() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only sets an allocator parameter; called before any
    // thread of ours starts.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// The daemon's group: every task of the node (runwasi groups by pod sandbox).
const NODE_GROUP: &str = "spinbench-node";

fn is_start() -> bool {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    containerd_shim::parse(&args).is_ok_and(|flags| flags.action == "start")
}

/// containerd's `start` for the node-wide daemon: the address of the running
/// one, or of one started now, printed as containerd expects.
fn start_node_wide() -> anyhow::Result<()> {
    use std::io::Write as _;
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    let flags = containerd_shim::parse(&args)?;
    let opts = containerd_shim::StartOpts {
        id: flags.id,
        publish_binary: flags.publish_binary,
        address: flags.address,
        ttrpc_address: std::env::var("TTRPC_ADDRESS")?,
        namespace: flags.namespace,
        debug: flags.debug,
    };
    let (_, address) = containerd_shim::spawn(opts, NODE_GROUP, vec![])?;
    containerd_shim::util::write_address(&address)?;
    write!(std::io::stdout().lock(), "{address}")?;
    Ok(())
}
