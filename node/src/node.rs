//! A node on this machine: a network namespace of its own ([`NetNs`]) holding a
//! registry (Debian's `docker-registry`) on its loopback and containerd with its
//! CRI plugin, its own root, state and socket under one directory, CNI's bridge
//! for the pods, the runtime handlers `spinbench` and `runc`. Readiness is asked
//! of the services themselves (the registry's `/v2/`, CRI's `Status`), every wait
//! is bounded, and dropping the node tears everything down, however the caller
//! ended: pods through CRI, then every process it started by its PID, the shims
//! given its socket, mounts, cgroups, the namespace, the directory.

use crate::config::{NodeConfig, ShimScope};
use crate::cri::Cri;
use crate::netns::NetNs;
use crate::pod::{Pod, PodPlace, PodSpec};
use crate::procs;
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The registry's address inside the node's namespace: no other node shares it.
pub const REGISTRY: &str = "127.0.0.1:5000";
/// The pause image the node's CRI runs every pod sandbox from.
pub const PAUSE_IMAGE: &str = "127.0.0.1:5000/spinbench/pause:1";
/// How long the services get to answer after they start.
const READY_LIMIT: Duration = Duration::from_mins(1);
/// Where runwasi's shims keep a container's state: `<root>/<namespace>/<id>`
/// (CRI's namespace is `k8s.io`).
const SHIM_STATE: &str = "/run/containerd/spinbench/k8s.io";

/// Where the node's binaries come from.
pub struct NodeOptions {
    /// The directory holding `containerd-shim-spinbench-v1` (put first on
    /// containerd's `PATH`).
    pub shim_dir: PathBuf,
    /// The directory the node's own is made in (e.g. /tmp).
    pub parent_dir: PathBuf,
    /// The in-process shim's scope.
    pub shim_scope: ShimScope,
    /// How the node's own processes (the registry, containerd) are started: a
    /// test ties them to its process (`e2e::process::spawn_tied`), so that they
    /// die with it however it ends; the density command spawns them plainly.
    pub spawn: fn(Command) -> std::io::Result<Child>,
}

pub struct Node {
    label: String,
    dir: PathBuf,
    netns: NetNs,
    registry: Option<Child>,
    containerd: Option<Child>,
    cri: Option<Cri>,
    cgroup_root: String,
}

impl Node {
    /// Starts a node; fails (after tearing down what it started) if a service
    /// does not answer within a minute.
    pub fn start(options: &NodeOptions) -> Result<Node> {
        static COUNT: AtomicU32 = AtomicU32::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let label = format!("{pid}-{n}");
        let dir = options.parent_dir.join(format!("spinbench-node-{label}"));
        std::fs::create_dir_all(&dir)?;
        let netns = NetNs::create(&format!("spinbench-{label}"))?;
        let mut node = Node {
            cgroup_root: format!("/spinbench-{label}"),
            label,
            dir,
            netns,
            registry: None,
            containerd: None,
            cri: None,
        };
        node.boot(options, pid.wrapping_add(n))?;
        Ok(node)
    }

    fn boot(&mut self, options: &NodeOptions, seed: u32) -> Result<()> {
        // A subnet of its own per node (each lives in its own namespace anyway).
        let subnet = format!("10.{}.0.0/16", 100 + seed % 100);
        let network = format!("spinbench-{}", self.label);
        let bridge = format!("sb{}", seed % 100_000_000);
        let config = NodeConfig {
            dir: &self.dir,
            pause_image: PAUSE_IMAGE,
            registry: REGISTRY,
            network: &network,
            bridge: &bridge,
            subnet: &subnet,
        };
        config.write()?;
        let mut registry = self.netns.command("docker-registry");
        registry.arg("serve").arg(self.dir.join("registry.yml"));
        self.registry = Some(spawn_logged(
            options.spawn,
            registry,
            &self.dir.join("registry.log"),
        )?);
        let path = std::env::join_paths(std::iter::once(options.shim_dir.clone()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))?;
        let mut containerd = self.netns.command("containerd");
        // The in-process shim's scope and its node-wide compiled code, under the
        // node's directory (shims inherit containerd's environment).
        containerd
            .arg("--config")
            .arg(self.dir.join("containerd.toml"))
            .env("PATH", path)
            .env(ShimScope::ENV, options.shim_scope.env_value())
            .env("SPINBENCH_SHIM_CACHE", self.dir.join("shim-cache"));
        self.containerd = Some(spawn_logged(
            options.spawn,
            containerd,
            &self.dir.join("containerd.log"),
        )?);
        self.wait_until_ready(&config.socket())
    }

    fn wait_until_ready(&mut self, socket: &Path) -> Result<()> {
        let start = Instant::now();
        let mut last = String::from("not asked yet");
        while start.elapsed() < READY_LIMIT {
            if self.registry_answers() {
                if self.cri.is_none() && socket.exists() {
                    self.cri = Cri::connect(socket).ok();
                }
                if let Some(cri) = &self.cri {
                    match cri.ready() {
                        Ok(Ok(())) => return Ok(()),
                        Ok(Err(why)) => last = why,
                        Err(error) => last = format!("{error:#}"),
                    }
                }
            } else {
                last = "the registry does not answer /v2/".into();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!(
            "the node is not ready after {READY_LIMIT:?}: {last}\ncontainerd's log:\n{}",
            self.log_tail("containerd.log", 30)
        )
    }

    fn registry_answers(&self) -> bool {
        self.get(&format!("http://{REGISTRY}/v2/"))
            .is_ok_and(|(status, _)| status == 200)
    }

    pub fn cri(&self) -> &Cri {
        self.cri.as_ref().expect("a started node has a CRI client")
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn netns(&self) -> &NetNs {
        &self.netns
    }

    /// The node's containerd socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.join("containerd.sock")
    }

    /// The cgroup every pod's is made under.
    pub fn cgroup_root(&self) -> &str {
        &self.cgroup_root
    }

    /// The last `lines` lines of one of the node's logs.
    pub fn log_tail(&self, name: &str, lines: usize) -> String {
        let text = std::fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// `GET url` from inside the node's network namespace: its status and body.
    pub fn get(&self, url: &str) -> Result<(u16, String)> {
        self.get_within(url, Duration::from_secs(5))
    }

    pub fn get_within(&self, url: &str, limit: Duration) -> Result<(u16, String)> {
        self.netns.run(|| crate::http::get(url, limit))?
    }

    /// Runs `spec` as a pod (in the kubelet's order).
    pub fn run_pod(&self, spec: &PodSpec) -> Result<Pod> {
        let place = PodPlace {
            log_root: &self.dir.join("pods"),
            cgroup_root: &self.cgroup_root,
        };
        Pod::run(self.cri(), spec, &place)
    }

    /// Polls `url` until it answers `200` (a readiness probe), within `limit`:
    /// how long it took.
    pub fn wait_for_200(&self, url: &str, limit: Duration) -> Result<Duration> {
        let start = Instant::now();
        self.netns.run(|| {
            while start.elapsed() < limit {
                if crate::http::get(url, Duration::from_secs(1)).is_ok_and(|(s, _)| s == 200) {
                    return Ok(start.elapsed());
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            bail!("no 200 from {url} within {limit:?}")
        })?
    }

    /// A program run inside the node's network namespace (pushes to its registry).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        self.netns.command(program)
    }

    /// Runs `command` to success, or fails with its output.
    pub fn run_ok(&self, command: &mut Command) -> Result<String> {
        let output = command
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {command:?}"))?;
        if !output.status.success() {
            bail!(
                "{command:?}: {}\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Stops and removes every pod through CRI, each call bounded.
    fn remove_pods(&self) {
        let Some(cri) = &self.cri else { return };
        for container in cri.list_containers().unwrap_or_default() {
            let _ = cri.stop_container(&container.id, 0);
        }
        for sandbox in cri.list_pod_sandboxes().unwrap_or_default() {
            let _ = cri.stop_pod_sandbox(&sandbox.id);
            let _ = cri.remove_pod_sandbox(&sandbox.id);
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // What the shims ran, to clear their state should they leave it.
        let ids = self.cri.as_ref().map(Cri::ids).unwrap_or_default();
        self.remove_pods();
        self.cri = None;
        let socket = self.socket().display().to_string();
        if let Some(mut containerd) = self.containerd.take() {
            procs::stop(&mut containerd);
        }
        // A shim outlives containerd by design: ours are those given our socket.
        for shim in procs::shims_of(&socket) {
            procs::kill(shim.pid);
        }
        for id in ids {
            let _ = std::fs::remove_dir_all(Path::new(SHIM_STATE).join(id));
        }
        if let Some(mut registry) = self.registry.take() {
            procs::stop(&mut registry);
        }
        procs::unmount_under(&self.dir);
        procs::remove_cgroups(self.cgroup_root.trim_start_matches('/'));
        let _ = std::fs::remove_dir_all(&self.dir);
        // The namespace goes when `netns` drops, after this.
    }
}

fn spawn_logged(
    spawn: fn(Command) -> std::io::Result<Child>,
    mut command: Command,
    log: &Path,
) -> Result<Child> {
    let file = std::fs::File::create(log)?;
    command
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file);
    let what = format!("starting {command:?}");
    spawn(command).context(what)
}
