//! Starting and stopping the serving processes being compared, on free loopback
//! ports. Every host runs in a process group of its own, owned by a [`Server`]
//! guard that stops the whole group on drop, and on Ctrl-C (`group`); a host
//! that is not installed or not built is reported as skipped, never replaced
//! by another.

use super::group::Group;
use super::host_log::Output;
use super::http::{self, Request};
use super::{Function, Paths};
use crate::benchfile::CommandLine;
use anyhow::{Context, Result, bail};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take from exec to its first `200` (an empty cache
/// compiles every component first).
pub const START_TIMEOUT: Duration = Duration::from_mins(1);

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
    /// `wasmtime serve -Scli`, one component per process, with its defaults.
    WasmtimeServe,
    /// `wasmtime serve -Scli` with Spin's pool settings ([`SPIN_POOL`]): the
    /// strongest configuration of it a user could pick.
    WasmtimeServeTuned,
    /// A host run from a command line given to `compare` (`--command-host`).
    Command(&'static CommandHost),
}

/// `wasmtime serve`'s `-O` options for the pool Spin configures: Spin's
/// defaults (spin-core `Config::default`, crates/core/src/lib.rs of
/// spinframework/spin at commit 181b7d8: 1,000
/// component instances, memories and stacks, 2 tables and 4 core instances
/// per instance; 2 MiB of linear memory and 512 KiB of table kept resident
/// when a slot is reused), under the option names of wasmtime-cli 48.0.8
/// (wasmtime-cli-flags `OptimizeOptions`).
pub const SPIN_POOL: &str = "pooling-allocator=y,pooling-memory-keep-resident=2097152,\
     pooling-table-keep-resident=524288,pooling-total-component-instances=1000,\
     pooling-total-core-instances=4000,pooling-total-memories=1000,pooling-total-tables=2000,\
     pooling-total-stacks=1000";

impl HostKind {
    /// The built-in hosts (command hosts are named by the user).
    pub const ALL: [HostKind; 6] = [
        HostKind::Native,
        HostKind::Wasm,
        HostKind::WasmP3,
        HostKind::Spin,
        HostKind::WasmtimeServe,
        HostKind::WasmtimeServeTuned,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HostKind::Native => "native",
            HostKind::Wasm => "wasm",
            HostKind::WasmP3 => "wasm-p3",
            HostKind::Spin => "spin",
            HostKind::WasmtimeServe => "wasmtime-serve",
            HostKind::WasmtimeServeTuned => "wasmtime-serve-tuned",
            HostKind::Command(host) => &host.name,
        }
    }

    pub fn parse(name: &str) -> Option<HostKind> {
        HostKind::ALL.into_iter().find(|h| h.name() == name)
    }
}

/// A host given as a command line (`--command-host NAME=COMMAND`): split at
/// spaces (no quoting), with `{native}`, `{wasm}`, `{manifest}` and `{addr}`
/// replaced for each function by its native binary, its component, a Spin
/// manifest of it alone, and the loopback address to listen on.
#[derive(Debug, PartialEq, Eq)]
pub struct CommandHost {
    pub name: String,
    pub words: Vec<String>,
}

impl CommandHost {
    /// Parses `NAME=COMMAND`; the host lives as long as the run (a host kind
    /// is a `Copy` value naming it), so it is leaked, once per `compare`.
    pub fn parse(spec: &str) -> Result<&'static CommandHost, String> {
        let (name, command) = spec
            .split_once('=')
            .ok_or_else(|| format!("--command-host {spec:?}: expected NAME=COMMAND"))?;
        let words: Vec<String> = command.split_whitespace().map(String::from).collect();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(format!(
                "--command-host name {name:?}: use lowercase letters, digits and '-'"
            ));
        }
        if HostKind::parse(name).is_some() || crate::report::is_baseline(name) {
            return Err(format!(
                "--command-host name {name:?} is taken (built-in hosts and native* baselines)"
            ));
        }
        if words.is_empty() {
            return Err(format!("--command-host {name}: empty command"));
        }
        Ok(Box::leak(Box::new(CommandHost {
            name: name.to_string(),
            words,
        })))
    }

    fn command(
        &self,
        paths: &Paths,
        function: &Function,
        addr: SocketAddr,
    ) -> Result<Command, String> {
        let path_of = |placeholder: &str| -> Result<String, String> {
            let path = match placeholder {
                "{native}" => existing(&function.native()?.command.program)?,
                "{wasm}" => existing(&function.wasm)?,
                _ => function_manifest(paths, function)?,
            };
            // Absolute, as the command may run elsewhere and its processes are
            // told apart by their command lines.
            let path =
                std::path::absolute(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(path.display().to_string())
        };
        let mut words = Vec::with_capacity(self.words.len());
        for word in &self.words {
            let mut word = word.replace("{addr}", &addr.to_string());
            for placeholder in ["{native}", "{wasm}", "{manifest}"] {
                if word.contains(placeholder) {
                    word = word.replace(placeholder, &path_of(placeholder)?);
                }
            }
            words.push(word);
        }
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..]);
        Ok(cmd)
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
            pass_runtime_config(&mut cmd, paths);
            cmd
        }
        HostKind::WasmtimeServe | HostKind::WasmtimeServeTuned => {
            let wasm = existing(&function.wasm)?;
            let mut cmd = Command::new(on_path("wasmtime")?);
            cmd.args(["serve", "-Scli", "--addr", &listen]);
            if kind == HostKind::WasmtimeServeTuned {
                cmd.args(["-O", SPIN_POOL]);
            }
            cmd.arg(wasm);
            return Ok(cmd);
        }
        HostKind::Command(host) => return host.command(paths, function, addr),
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

/// A free port on 127.0.0.1 for one host, held until the lease is dropped
/// (after the host is stopped): [`spinbench_ports`].
pub fn free_addr() -> Result<spinbench_ports::PortLease> {
    Ok(spinbench_ports::PortLease::new()?)
}

/// A host that exited before it answered once: it cannot serve this component
/// (`wasmtime serve` refuses one that imports Spin's interfaces), which the
/// measurements report as skipped with what it said, not as a host that broke.
#[derive(Debug)]
pub struct NeverServed {
    status: String,
    /// Its error line (or last line) on stderr.
    said: String,
}

impl std::fmt::Display for NeverServed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exited ({}) before answering", self.status)?;
        if !self.said.is_empty() {
            write!(f, ": {}", self.said)?;
        }
        Ok(())
    }
}

impl std::error::Error for NeverServed {}

#[cfg(test)]
impl NeverServed {
    pub fn for_test(status: &str, said: &str) -> NeverServed {
        NeverServed {
            status: status.into(),
            said: said.into(),
        }
    }
}

/// A running host process, in a process group of its own with everything it
/// starts; the group is stopped on drop (`group`).
pub struct Server {
    group: Group,
    pub addr: SocketAddr,
    /// Its stdout and stderr, in the run's host log.
    pub output: Output,
}

impl Server {
    /// The host's own process, the root of its process tree.
    pub fn pid(&self) -> u32 {
        self.group.pid()
    }

    /// Execs `cmd` and returns once `probe` answers `200`, with the time that took.
    pub fn start(
        mut cmd: Command,
        addr: SocketAddr,
        probe: &Request,
        label: &str,
    ) -> Result<(Server, Duration)> {
        let (output, log) = Output::for_host(label, &cmd)?;
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let started = Instant::now();
        let group = Group::spawn(&mut cmd).with_context(|| format!("starting {label}: {cmd:?}"))?;
        let server = Server {
            group,
            addr,
            output,
        };
        server.wait_ready(probe, started).with_context(|| {
            format!(
                "{label} did not become ready; its output: {}",
                server.output.describe()
            )
        })?;
        Ok((server, started.elapsed()))
    }

    /// Polls with the probe request until a `200`; fails fast if the process exits.
    fn wait_ready(&self, probe: &Request, started: Instant) -> Result<()> {
        while started.elapsed() < START_TIMEOUT {
            if let Some(status) = self.group.exited() {
                return Err(NeverServed {
                    status: status.clone(),
                    said: self.output.last_line(),
                }
                .into());
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

    /// Whether the host still serves after a scenario that hit a limit: its
    /// process is alive and the probe gets a `200` within `within`. `Err` says
    /// how it broke.
    pub fn still_serves(&self, probe: &Request, within: Duration) -> Result<(), String> {
        let started = Instant::now();
        let mut last = String::new();
        while started.elapsed() < within {
            if let Some(status) = self.group.exited() {
                return Err(format!("the host exited ({status})"));
            }
            match http::call(self.addr, probe, Duration::from_secs(5)) {
                Ok((200, _)) => return Ok(()),
                Ok((status, _)) => last = format!("answered {status} to the probe"),
                Err(e) => last = format!("{e:#}"),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!(
            "the host stopped answering: no 200 to {} {} within {within:?} after the load ({last})",
            probe.method, probe.target
        ))
    }
}

/// `spinbench serve --manifest <manifest>` with the run's compiled-code cache setting.
fn runner_serving(paths: &Paths, manifest: &Path, cache: &Cache) -> Result<Command, String> {
    let mut cmd = Command::new(existing(&paths.runner)?);
    cmd.args(["serve", "--manifest"]).arg(manifest);
    match cache {
        Cache::Dir(dir) => cmd.arg("--cache-dir").arg(dir),
        Cache::Off => cmd.arg("--no-cache"),
    };
    pass_runtime_config(&mut cmd, paths);
    cmd.args(paths.limits.serve_flags());
    Ok(cmd)
}

/// The benchmark file's runtime config, to a host that reads Spin's
/// (`spin up` and `spinbench serve` take the same flag).
fn pass_runtime_config(cmd: &mut Command, paths: &Paths) {
    if let Some(file) = &paths.runtime_config {
        cmd.arg("--runtime-config-file").arg(file);
    }
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
        HostKind::Wasm | HostKind::WasmP3 if users > 1024 => {
            if kind == HostKind::Wasm {
                check_map_count(pool)?;
            }
            cmd.args(["--max-concurrent", &cap.to_string()]);
            cmd.args(["--max-instances", &pool.to_string()]);
            // One connection per user, and its default never below that.
            let connections = (users + 1024).max(spinbench_host::DEFAULT_MAX_CONNECTIONS);
            cmd.args(["--max-connections", &connections.to_string()]);
        }
        HostKind::WasmtimeServe | HostKind::WasmtimeServeTuned if users > 100 => {
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
        // Below those loads (and natively) every host's defaults hold.
        HostKind::Native
        | HostKind::Wasm
        | HostKind::WasmP3
        | HostKind::WasmtimeServe
        | HostKind::WasmtimeServeTuned
        | HostKind::Spin
        | HostKind::Command(_) => {}
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
