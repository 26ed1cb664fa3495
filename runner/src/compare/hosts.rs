//! Starting and stopping the serving processes being compared, on free loopback
//! ports. Every child is owned by a [`Server`] guard that kills it on drop, and
//! registered so that Ctrl-C kills it too; a host that is not installed or not
//! built is reported as skipped, never replaced by another.

use super::http::{self, Request};
use super::{Function, Paths};
use crate::benchfile::CommandLine;
use anyhow::{Context, Result, bail};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a server may take from exec to its first `200` (an empty cache
/// compiles every component first).
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostKind {
    /// `<name>-native`: one tokio/hyper server process per function.
    Native,
    /// `spinbench serve`: the components on wasmtime, a fresh instance per request.
    Wasm,
    /// `spinbench serve` of the WASIp3 flavour: instances reused (up to 128
    /// requests, 16 at once), as `wasmtime serve` and Spin serve WASIp3.
    WasmP3,
    /// Real Spin: `spin up`.
    Spin,
    /// `wasmtime serve -Scli`, one component per process.
    WasmtimeServe,
}

impl HostKind {
    pub const ALL: [HostKind; 5] = [
        HostKind::Native,
        HostKind::Wasm,
        HostKind::WasmP3,
        HostKind::Spin,
        HostKind::WasmtimeServe,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HostKind::Native => "native",
            HostKind::Wasm => "wasm",
            HostKind::WasmP3 => "wasm-p3",
            HostKind::Spin => "spin",
            HostKind::WasmtimeServe => "wasmtime-serve",
        }
    }

    pub fn parse(name: &str) -> Option<HostKind> {
        HostKind::ALL.into_iter().find(|h| h.name() == name)
    }
}

/// Where the runner keeps compiled code for a start.
#[derive(Debug, Clone)]
pub enum Cache {
    /// A cache directory shared by the run's starts (warm after the first).
    Dir(PathBuf),
    /// No cache: every start compiles.
    Off,
}

/// A command that starts a host serving `function`, or why it cannot be run here.
pub fn command(
    kind: HostKind,
    function: &Function,
    paths: &Paths,
    cache: &Cache,
    addr: SocketAddr,
) -> Result<Command, String> {
    let listen = addr.to_string();
    let mut cmd = match kind {
        HostKind::Native => return native_command(&function.native()?.command, addr),
        HostKind::Wasm => runner_serving(paths, &function_manifest(paths, function)?, cache)?,
        HostKind::WasmP3 => runner_serving(paths, &p3_function_manifest(paths, function)?, cache)?,
        HostKind::Spin => {
            let mut cmd = Command::new(on_path("spin")?);
            cmd.args(["up", "-f"])
                .arg(function_manifest(paths, function)?);
            cmd
        }
        HostKind::WasmtimeServe => {
            let wasm = existing(&function.wasm)?;
            let mut cmd = Command::new(on_path("wasmtime")?);
            cmd.args(["serve", "-Scli", "--addr", &listen]).arg(wasm);
            return Ok(cmd);
        }
    };
    cmd.arg("--listen").arg(&listen);
    Ok(cmd)
}

/// A native command line of the benchmark file, its program checked first.
pub fn native_command(line: &CommandLine, addr: SocketAddr) -> Result<Command, String> {
    if line.program.components().count() > 1 {
        existing(&line.program)?;
    } else {
        on_path(&line.program.to_string_lossy())?;
    }
    Ok(line.command(addr))
}

fn function_manifest(paths: &Paths, function: &Function) -> Result<PathBuf, String> {
    paths
        .function_manifest(function)
        .map_err(|e| format!("{e:#}"))
}

/// The one-function manifest of `function`'s WASIp3 build.
pub fn p3_function_manifest(paths: &Paths, function: &Function) -> Result<PathBuf, String> {
    paths
        .p3_function_manifest(function)
        .map_err(|e| format!("{e:#}"))
}

fn existing(path: &Path) -> Result<PathBuf, String> {
    if path.is_file() {
        Ok(path.to_path_buf())
    } else {
        Err(format!("{} not found (build it first)", path.display()))
    }
}

/// The full path of `program` if it is on PATH.
pub fn on_path(program: &str) -> Result<PathBuf, String> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("`{program}` not on PATH"))
}

/// A free port on 127.0.0.1 (the OS's pick; the small race until the child binds
/// it is accepted: loopback ports are not contended here).
pub fn free_addr() -> Result<SocketAddr> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?)
}

/// A running host process; killed and reaped on drop.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    pub log: PathBuf,
}

impl Server {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Execs `cmd` and returns once `probe` answers `200`, with the time that took.
    pub fn start(
        mut cmd: Command,
        addr: SocketAddr,
        probe: &Request,
        label: &str,
    ) -> Result<(Server, Duration)> {
        let log = log_path(label)?;
        let stderr =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        let started = Instant::now();
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {label}: {cmd:?}"))?;
        register(child.id());
        let mut server = Server { child, addr, log };
        server.wait_ready(probe, started).with_context(|| {
            format!(
                "{label} did not become ready; its log: {}",
                server.log.display()
            )
        })?;
        Ok((server, started.elapsed()))
    }

    /// Polls with the probe request until a `200`; fails fast if the process exits.
    fn wait_ready(&mut self, probe: &Request, started: Instant) -> Result<()> {
        while started.elapsed() < START_TIMEOUT {
            if let Some(status) = self.child.try_wait()? {
                bail!("exited with {status} before answering");
            }
            match http::call(self.addr, probe, Duration::from_secs(10)) {
                Ok((200, _)) => return Ok(()),
                Ok((status, _)) => bail!(
                    "answered {status} to the probe {} {}",
                    probe.method,
                    probe.target
                ),
                // Not listening yet: connection refused costs microseconds, so poll tightly.
                Err(_) => std::thread::sleep(Duration::from_micros(200)),
            }
        }
        bail!("no 200 within {START_TIMEOUT:?}")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        unregister(self.child.id());
    }
}

fn log_dir() -> PathBuf {
    std::env::temp_dir().join(format!("spinbench-logs-{}", std::process::id()))
}

/// Removes the children's stderr logs (kept when a run fails, for its error message).
pub fn remove_logs() {
    let _ = std::fs::remove_dir_all(log_dir());
}

fn log_path(label: &str) -> Result<PathBuf> {
    let dir = log_dir();
    std::fs::create_dir_all(&dir)?;
    Ok(dir.join(format!("{}.log", label.replace(['/', ' '], "_"))))
}

/// PIDs of live children, for the Ctrl-C handler (Drop guards do not run on a signal).
static CHILDREN: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn register(pid: u32) {
    CHILDREN.lock().unwrap_or_else(|e| e.into_inner()).push(pid);
}

fn unregister(pid: u32) {
    CHILDREN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|p| *p != pid);
}

/// Kills every registered child (SIGKILL via kill(1): no libc needed for this one call).
pub fn kill_all_children() {
    let pids = std::mem::take(&mut *CHILDREN.lock().unwrap_or_else(|e| e.into_inner()));
    for chunk in pids.chunks(500) {
        let _ = Command::new("kill")
            .arg("-KILL")
            .args(chunk.iter().map(u32::to_string))
            .stderr(Stdio::null())
            .status();
    }
}

/// Kills children on Ctrl-C, then exits (130, as shells report SIGINT).
pub fn kill_children_on_ctrl_c(runtime: &tokio::runtime::Runtime) {
    runtime.spawn(async {
        if tokio::signal::ctrl_c().await.is_ok() {
            kill_all_children();
            eprintln!("\ninterrupted: child processes stopped");
            std::process::exit(130);
        }
    });
}

/// `spinbench serve --manifest <manifest>` with the run's compiled-code cache setting.
fn runner_serving(paths: &Paths, manifest: &Path, cache: &Cache) -> Result<Command, String> {
    let mut cmd = Command::new(existing(&paths.runner)?);
    cmd.args(["serve", "--manifest"]).arg(manifest);
    match cache {
        Cache::Dir(dir) => cmd.arg("--cache-dir").arg(dir),
        Cache::Off => cmd.arg("--no-cache"),
    };
    Ok(cmd)
}

/// Memory mappings one pool slot of a fresh-instance host costs (measured in
/// `/proc/PID/maps` of the runner): 2 from the start (the slot's fiber stack and
/// its guard page), 4 more once an instance has used it (its linear memory's
/// accessible part split from the reserved rest, its two tables), kept while the
/// slot stays warm.
const MAPS_PER_SLOT: usize = 6;
/// The runner's mappings besides the pool's (code, heap, thread stacks), rounded up.
const MAPS_BESIDES_POOL: usize = 2_000;

/// Lets a host serve `users` requests at once where its defaults would refuse
/// some (the 10,000-user io scenario; `wasmtime serve` already at 1,000), or
/// says why it cannot here.
///
/// - The runner admits 1,024 requests at once from a pool of 1,100 slots: past
///   1,024 users it gets an admission cap 2.5 % above `users` and a pool 1 %
///   above that. The pool is kept that tight because of the kernel's limit on
///   a process's mappings (`vm.max_map_count`, 65,530 by default): at 6 per
///   used slot, 10,000 live instances need ~62,000 (measured 62,193 with 10,353
///   slots; with 11,275 slots a run reached 63,693 and the runner aborted on a
///   failed allocation). WASIp3 reuse needs fewer instances (16 requests each),
///   but its admission cap counts requests, so it gets the same flags.
/// - `wasmtime serve` takes at most 1,000 connections and 1,000 requests at
///   once, and its pool's 1,000 core instances hold 300 to 350 live `io`
///   instances (measured: 300 users get only `200`s, 350 mostly `500`s,
///   "maximum concurrent limit of 1000 for core instances reached"). Past 100
///   users it gets the runner's pool shape (Spin's factors: per instance 1
///   memory, 2 tables, 1 stack, 4 core instances).
/// - `spin up` sizes its pool from `SPIN_*` environment variables (spin-core's
///   engine config; 1,000 instances, 4,000 core instances by default). Not
///   exercised here: `spin` is not installed on the machine this was written on.
pub fn allow_concurrency(cmd: &mut Command, kind: HostKind, users: usize) -> Result<(), String> {
    let cap = (users + users / 40).max(1024);
    let pool = (cap + cap / 100).max(1100);
    match kind {
        HostKind::Native => {}
        HostKind::Wasm | HostKind::WasmP3 if users > 1024 => {
            if kind == HostKind::Wasm {
                check_map_count(pool)?;
            }
            cmd.args(["--max-concurrent", &cap.to_string()]);
            cmd.args(["--max-instances", &pool.to_string()]);
        }
        HostKind::WasmtimeServe if users > 100 => {
            check_map_count(pool)?;
            cmd.args(["--max-concurrent-connections", &cap.to_string()]);
            cmd.args(["--max-concurrent-requests", &cap.to_string()]);
            cmd.arg("-O").arg(format!(
                "pooling-total-component-instances={pool},pooling-total-core-instances={},\
                 pooling-total-memories={pool},pooling-total-tables={},pooling-total-stacks={pool}",
                4 * pool,
                2 * pool
            ));
        }
        HostKind::Spin if users > 100 => {
            for (var, n) in [
                ("SPIN_MAX_INSTANCE_COUNT", pool),
                ("SPIN_WASMTIME_INSTANCE_COUNT", pool),
                ("SPIN_WASMTIME_TOTAL_MEMORIES", pool),
                ("SPIN_WASMTIME_TOTAL_TABLES", 2 * pool),
                ("SPIN_WASMTIME_TOTAL_STACKS", pool),
                ("SPIN_WASMTIME_TOTAL_CORE_INSTANCES", 4 * pool),
            ] {
                cmd.env(var, n.to_string());
            }
        }
        HostKind::Wasm | HostKind::WasmP3 | HostKind::WasmtimeServe | HostKind::Spin => {}
    }
    Ok(())
}

/// Whether the kernel lets one process map a fresh-instance pool of `slots`, all used.
fn check_map_count(slots: usize) -> Result<(), String> {
    let needed = MAPS_PER_SLOT * slots + MAPS_BESIDES_POOL;
    let path = "/proc/sys/vm/max_map_count";
    let limit: usize = std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| format!("cannot read {path}"))?;
    if limit < needed {
        return Err(format!(
            "a pool of {slots} fresh instances needs ~{needed} memory mappings, vm.max_map_count is {limit} (sysctl vm.max_map_count={})",
            needed.next_power_of_two()
        ));
    }
    Ok(())
}
