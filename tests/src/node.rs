//! A node on this machine for the deploy tests: containerd with its own
//! config, state and socket under one temporary directory, `ctr` against it,
//! spinbench's containerd shim (`target/release/containerd-shim-spinbench-v1`)
//! on containerd's `PATH` as the runtime `io.containerd.spinbench.v1`, and the
//! test binary's registry (`e2e::registry`: Debian's `docker-registry` on
//! loopback) to push to and pull from. Everything is stopped by its PID and
//! removed when the node is dropped, including what the runtimes keep outside
//! that directory (cgroups, the shim's state under /run/containerd/spinbench).

use crate::registry::{self, Registry};
use crate::{Server, artifact, on_path, run_to_exit, workspace_root};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The runtime the shim registers as.
pub const RUNTIME: &str = "io.containerd.spinbench.v1";
/// Where the shim keeps its containers' state (containerd-shimkit's default root
/// joined with the runtime's name), one directory per containerd namespace.
const SHIM_STATE: &str = "/run/containerd/spinbench";

/// What the node needs and this machine lacks, one item each.
pub fn missing() -> Vec<String> {
    let mut missing: Vec<String> = ["containerd", "ctr", "runc", "docker-registry", "python3"]
        .into_iter()
        .filter(|tool| on_path(tool).is_none())
        .map(String::from)
        .collect();
    if on_path("containerd").is_some() && !containerd_is_new_enough() {
        missing.push("containerd >= 1.7.7 (deploy/install-node.sh)".into());
    }
    if !shim_binary().is_file() {
        missing.push(
            "target/release/containerd-shim-spinbench-v1 (`make build` where protoc and libseccomp are)"
                .into(),
        );
    }
    if !crate::is_root() {
        missing.push("root".into());
    }
    missing
}

fn shim_binary() -> PathBuf {
    workspace_root().join("target/release/containerd-shim-spinbench-v1")
}

/// containerd >= 1.7.7: the first to hand a shim wasm layers.
fn containerd_is_new_enough() -> bool {
    let Ok(output) = Command::new("containerd").arg("--version").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let version = text
        .split_whitespace()
        .find(|word| {
            word.trim_start_matches('v')
                .starts_with(|c: char| c.is_ascii_digit())
        })
        .unwrap_or_default()
        .trim_start_matches('v');
    let numbers: Vec<u32> = version
        .split(['.', '~', '-', '+'])
        .take(3)
        .map(|n| n.parse().unwrap_or(0))
        .collect();
    numbers >= vec![1, 7, 7]
}

/// A registry and a containerd, with everything they started.
pub struct Node {
    dir: PathBuf,
    socket: PathBuf,
    namespace: String,
    pub registry: &'static Registry,
    containerd: Child,
}

impl Node {
    pub fn start() -> Node {
        static COUNT: AtomicU32 = AtomicU32::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let label = format!("{}-{n}", std::process::id());
        sweep_orphans();
        let dir = std::env::temp_dir().join(format!("spinbench-e2e-node-{label}"));
        std::fs::create_dir_all(dir.join("fifo")).expect("the node's directory");
        let registry = Registry::shared().expect("docker-registry (node::missing says so)");
        let socket = dir.join("containerd.sock");
        let containerd = start_containerd(&dir, &socket);
        let mut node = Node {
            dir,
            socket,
            namespace: format!("e2e-{label}"),
            registry,
            containerd,
        };
        node.wait_until_ready();
        node
    }

    fn wait_until_ready(&mut self) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(30) {
            if self.socket.exists() && self.ctr(&["version"]).status.success() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("containerd did not start:\n{}", self.file("containerd.log"));
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// A file of the node's directory (a log), or "" if it is not there.
    pub fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_default()
    }

    /// A private directory inside the node's.
    pub fn scratch(&self, name: &str) -> PathBuf {
        let dir = self.dir.join("scratch").join(name);
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        dir
    }

    fn ctr_command(&self) -> Command {
        let mut command = Command::new("ctr");
        command
            .arg("--address")
            .arg(&self.socket)
            .arg("--namespace")
            .arg(&self.namespace);
        command
    }

    /// `ctr args...` against this node's containerd and namespace.
    pub fn ctr(&self, args: &[&str]) -> Output {
        self.ctr_command()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("ctr runs")
    }

    /// `ctr args...`, which must succeed; its stdout.
    pub fn ctr_ok(&self, args: &[&str]) -> String {
        let output = self.ctr(args);
        assert!(
            output.status.success(),
            "ctr {args:?}: {}\n{}",
            String::from_utf8_lossy(&output.stderr),
            self.file("containerd.log")
                .lines()
                .rev()
                .take(20)
                .collect::<Vec<_>>()
                .join("\n")
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Pushes an image with `script` (one of deploy/'s image scripts) and
    /// `args`, named `repository:tag` in this node's registry, and pulls it into
    /// containerd (`wasi/wasm` images by that platform); returns its reference.
    pub fn push_and_pull(&self, script: &str, args: &[&Path], name: &str, wasm: bool) -> String {
        let mut push = Command::new("python3");
        push.arg(workspace_root().join("deploy").join(script))
            .args(args)
            .arg(self.registry.host())
            .arg(name)
            .env(
                "REGISTRY_AUTH",
                format!("{}:{}", registry::USER, registry::PASSWORD),
            );
        self.push_then_pull(&mut push, name, wasm)
    }

    /// Pushes the app of `manifest` as Spin's OCI artifact (`spinbench registry
    /// push`), named `repository:tag`, and pulls it; returns its reference.
    pub fn push_artifact_and_pull(&self, manifest: &Path, name: &str) -> String {
        let docker = self.registry.docker_config(&self.scratch("docker"));
        let mut push = Command::new(artifact("release/spinbench"));
        push.args(["registry", "push", "--insecure", "-f"])
            .arg(manifest)
            .arg(self.registry.reference(name))
            .env("DOCKER_CONFIG", docker)
            .env("XDG_CONFIG_HOME", self.scratch("config"));
        self.push_then_pull(&mut push, name, true)
    }

    /// Runs `push`, which pushes `repository:tag`, then pulls it.
    fn push_then_pull(&self, push: &mut Command, name: &str, wasm: bool) -> String {
        let output = push.output().unwrap_or_else(|e| panic!("{push:?}: {e}"));
        assert!(
            output.status.success(),
            "{push:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        self.pull(name, wasm)
    }

    /// `ctr image pull` of `repository:tag` from the registry (`wasi/wasm` images
    /// by that platform); returns its reference.
    pub fn pull(&self, name: &str, wasm: bool) -> String {
        let image = self.registry.reference(name);
        let user = format!("{}:{}", registry::USER, registry::PASSWORD);
        let mut pull = vec!["image", "pull", "--plain-http", "--user", &user];
        if wasm {
            pull.extend(["--platform", "wasi/wasm"]);
        }
        pull.push(&image);
        self.ctr_ok(&pull);
        image
    }

    /// `ctr run` of `image` as container `id` under the shim, on the host's
    /// network, listening on `addr`, with the container's cgroup mounted as
    /// Kubernetes' CRI mounts it (so the shim sees its memory limit), and `extra`
    /// flags. `ctr run` stays in the foreground: its output is the container's.
    fn run_command(&self, id: &str, image: &str, addr: &str, extra: &[&str]) -> Command {
        let mut command = self.ctr_command();
        command
            .args(["run", "--fifo-dir"])
            .arg(self.dir.join("fifo"))
            .args([
                "--runtime",
                RUNTIME,
                "--net-host",
                "--platform",
                "wasi/wasm",
            ])
            .args([
                "--mount",
                "type=cgroup,src=cgroup,dst=/sys/fs/cgroup,options=ro:nosuid:noexec:nodev",
            ])
            .args(["--env", &format!("SPIN_HTTP_LISTEN_ADDR={addr}")])
            .args(extra)
            .args([image, id, "/"]);
        command
    }

    /// Container `id` of `image`, once it answers HTTP: its `ctr run` (whose log
    /// is the container's stdout and stderr) as a [`Server`].
    pub fn run(&self, id: &str, image: &str, extra: &[&str]) -> Server {
        // Port 0: the app binds a free one and announces it (`Serving http://…`).
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let command = self.run_command(id, image, &addr.to_string(), extra);
        Server::start_command(id, command, addr)
    }

    /// Container `id` of `image`, run until it exits (within two minutes): its
    /// exit status (`ctr run` exits with the task's) and its output.
    pub fn run_to_exit(&self, id: &str, image: &str, extra: &[&str]) -> (ExitStatus, String) {
        let addr = Server::free_addr().to_string();
        let command = self.run_command(id, image, &addr, extra);
        let args: Vec<String> = command
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        run_to_exit(Path::new("ctr"), &args, Duration::from_mins(2))
            .unwrap_or_else(|| panic!("container {id} still running after two minutes"))
    }

    /// The PID of container `id`'s task, if it has one.
    pub fn task_pid(&self, id: &str) -> Option<u32> {
        let list = self.ctr_ok(&["task", "ls"]);
        list.lines().find_map(|line| {
            let mut fields = line.split_whitespace();
            (fields.next() == Some(id)).then(|| fields.next()?.parse().ok())?
        })
    }

    /// Everything container `id` could leave behind and still does: its task,
    /// its container record and snapshot, processes of its shim, mounts,
    /// cgroups, the shim's state directory.
    pub fn leftovers(&self, id: &str) -> Vec<String> {
        let mut left = Vec::new();
        let listed = |what: &[&str]| self.ctr_ok(what).lines().any(|l| l.trim() == id);
        if listed(&["task", "ls", "-q"]) {
            left.push(format!("task {id}"));
        }
        if listed(&["container", "ls", "-q"]) {
            left.push(format!("container {id}"));
        }
        let snapshots = self.ctr_ok(&["snapshot", "ls"]);
        if snapshots
            .lines()
            .any(|l| l.split_whitespace().next() == Some(id))
        {
            left.push(format!("snapshot {id}"));
        }
        for (pid, argv) in processes() {
            if argv_has(&argv, "-id", id) && argv_has(&argv, "-namespace", &self.namespace) {
                left.push(format!("process {pid}: {}", argv.join(" ")));
            }
        }
        let path = format!("/{}/{id}", self.namespace);
        for target in mount_targets() {
            if target.contains(&path) {
                left.push(format!("mount {target}"));
            }
        }
        for cgroup in cgroup_dirs(&self.namespace) {
            if cgroup.join(id).exists() {
                left.push(format!("cgroup {}", cgroup.join(id).display()));
            }
        }
        let state = Path::new(SHIM_STATE).join(&self.namespace).join(id);
        if state.exists() {
            left.push(format!("shim state {}", state.display()));
        }
        left
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        for id in self
            .ctr(&["task", "ls", "-q"])
            .stdout
            .split(|&b| b == b'\n')
            .map(|l| String::from_utf8_lossy(l).trim().to_string())
            .filter(|l| !l.is_empty())
        {
            let _ = self.ctr(&["task", "kill", "--signal", "SIGKILL", &id]);
            let start = Instant::now();
            while !self.ctr(&["task", "delete", &id]).status.success()
                && start.elapsed() < Duration::from_secs(5)
            {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let containers = self.ctr(&["container", "ls", "-q"]).stdout;
        for id in String::from_utf8_lossy(&containers).lines() {
            let _ = self.ctr(&["container", "delete", id.trim()]);
        }
        stop(&mut self.containerd);
        // A shim outlives containerd by design: ours are those given our socket.
        let socket = self.socket.display().to_string();
        for (pid, argv) in processes() {
            let is_shim = argv
                .first()
                .is_some_and(|arg0| arg0.contains("containerd-shim"));
            if is_shim && argv_has(&argv, "-address", &socket) {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
        }
        let mut mounts: Vec<String> = mount_targets()
            .into_iter()
            .filter(|t| t.starts_with(&self.dir.display().to_string()))
            .collect();
        mounts.sort_by(|a, b| b.cmp(a));
        for target in mounts {
            let _ = Command::new("umount").args(["-l", &target]).status();
        }
        for cgroup in cgroup_dirs(&self.namespace) {
            remove_cgroup(&cgroup);
        }
        let _ = std::fs::remove_dir_all(Path::new(SHIM_STATE).join(&self.namespace));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start_containerd(dir: &Path, socket: &Path) -> Child {
    let config = dir.join("containerd.toml");
    let d = dir.display();
    std::fs::write(
        &config,
        format!(
            "version = 2\nroot = \"{d}/root\"\nstate = \"{d}/state\"\n\
             disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n\
             [grpc]\n  address = \"{s}\"\n[ttrpc]\n  address = \"{s}.ttrpc\"\n\
             [plugins.\"io.containerd.internal.v1.opt\"]\n  path = \"{d}/opt\"\n",
            s = socket.display()
        ),
    )
    .expect("containerd.toml");
    // containerd finds `containerd-shim-spinbench-v1` for the runtime on its PATH.
    let shim_dir = artifact("release/containerd-shim-spinbench-v1")
        .parent()
        .expect("target/release")
        .to_path_buf();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(std::iter::once(shim_dir).chain(std::env::split_paths(&path)))
        .expect("a PATH");
    let mut containerd = Command::new("containerd");
    containerd.arg("--config").arg(&config).env("PATH", path);
    spawn_logged(containerd, &dir.join("containerd.log"))
}

/// Starts `command` tied to the test process ([`crate::process`]), its output in `log`.
fn spawn_logged(mut command: Command, log: &Path) -> Child {
    let file = std::fs::File::create(log).expect("a log file");
    command
        .stdin(Stdio::null())
        .stdout(file.try_clone().expect("a log file"))
        .stderr(file);
    let described = format!("{command:?}");
    crate::process::spawn_tied(command).unwrap_or_else(|e| panic!("cannot start {described}: {e}"))
}

/// SIGTERM, then SIGKILL after five seconds.
fn stop(child: &mut Child) {
    crate::process::stop_group(child, Duration::from_secs(5));
}

/// Stops the shims of nodes whose test process is gone (it died before its
/// `Node` was dropped): containerd starts each shim in a session of its own,
/// so the kernel's parent-death signal does not reach them.
fn sweep_orphans() {
    let prefix = std::env::temp_dir().join("spinbench-e2e-node-");
    let prefix = prefix.display().to_string();
    for (pid, argv) in processes() {
        let is_shim = argv.first().is_some_and(|a| a.contains("containerd-shim"));
        let address = argv
            .windows(2)
            .find(|pair| pair[0] == "-address")
            .map(|pair| pair[1].as_str());
        let owner = address
            .and_then(|a| a.strip_prefix(&prefix))
            .and_then(|rest| rest.split('-').next())
            .and_then(|owner| owner.parse::<u32>().ok());
        let orphaned = owner.is_some_and(|owner| !Path::new(&format!("/proc/{owner}")).exists());
        if is_shim && orphaned {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    }
}

/// Every process's PID and arguments.
fn processes() -> Vec<(u32, Vec<String>)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let raw = std::fs::read(entry.path().join("cmdline")).ok()?;
            let argv = raw
                .split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            Some((pid, argv))
        })
        .collect()
}

/// Whether `argv` has `flag` followed by `value`.
fn argv_has(argv: &[String], flag: &str, value: &str) -> bool {
    argv.windows(2)
        .any(|pair| pair[0] == flag && pair[1] == value)
}

/// The mount points of this mount namespace (mountinfo's fifth field).
fn mount_targets() -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split(' ').nth(4).map(String::from))
        .collect()
}

/// The namespace's cgroup in every hierarchy (cgroup v1: one per controller;
/// v2: the one), where it exists.
fn cgroup_dirs(namespace: &str) -> Vec<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    let mut dirs = vec![root.join(namespace)];
    if let Ok(entries) = std::fs::read_dir(root) {
        dirs.extend(entries.flatten().map(|e| e.path().join(namespace)));
    }
    dirs.into_iter().filter(|d| d.is_dir()).collect()
}

/// Removes a cgroup and the cgroups below it (cgroupfs removes a directory
/// with `rmdir`, children first).
fn remove_cgroup(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                remove_cgroup(&entry.path());
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}
