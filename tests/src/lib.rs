//! The end-to-end harness: starts built artifacts (`spinbench serve`, the
//! `<name>-native` binaries) as real processes on loopback ports, talks HTTP to
//! them, and stops them when dropped.
//!
//! The artifacts are built by the test command (`make test`) before `cargo test`
//! runs: building inside a test would contend for cargo's own build lock.

use serde_json::Value;
use std::fs::File;
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub mod apps;
pub mod brokers;
pub mod contract;
pub mod crafted;
#[cfg(feature = "cri")]
pub mod cri;
pub mod database;
pub mod fake_registry;
mod http;
pub mod node;
pub mod parity;
pub mod peak;
pub mod process;
pub mod registry;
pub mod report;
pub mod service;

pub use http::{
    Answer, exchange, get, get_within, header, parse_response, raw_exchange, raw_then_close,
    read_response, send, send_with_headers,
};

/// The function set: the component ids of the repository's benchmark file
/// (spinbench.toml) in spin.toml, each also its route and its `<id>-native`
/// binary's name. The file's components from other apps (its `manifest` key:
/// the same hello in Python and JavaScript) are [`other_apps_hellos`].
pub fn functions() -> &'static [&'static str] {
    static IDS: OnceLock<Vec<&'static str>> = OnceLock::new();
    IDS.get_or_init(|| benchmark_file_ids(false))
}

/// The benchmark file's components from other apps' manifests.
pub fn other_apps_hellos() -> &'static [&'static str] {
    static IDS: OnceLock<Vec<&'static str>> = OnceLock::new();
    IDS.get_or_init(|| benchmark_file_ids(true))
}

fn benchmark_file_ids(other_apps: bool) -> Vec<&'static str> {
    let path = workspace_root().join("spinbench.toml");
    let text = std::fs::read_to_string(&path).expect("spinbench.toml at the repo root");
    let file: toml::Table = toml::from_str(&text).expect("spinbench.toml is TOML");
    file["component"]
        .as_array()
        .expect("[[component]] tables")
        .iter()
        .filter(|c| c.get("manifest").is_some() == other_apps)
        .map(|c| &*c["id"].as_str().expect("a component id").to_string().leak())
        .collect()
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

/// A built file under the workspace's `target/`, or a panic saying how to build it.
pub fn artifact(relative: &str) -> PathBuf {
    let path = workspace_root().join("target").join(relative);
    assert!(
        path.exists(),
        "{} is missing: run `make build` (or `make test`) first",
        path.display()
    );
    path
}

/// Tells a server its address the usual way: `--listen <addr>`.
fn listen_flag(command: &mut Command, addr: SocketAddr) {
    command.arg("--listen").arg(addr.to_string());
}

/// A server process on a loopback port, started tied to the test process in a
/// process group of its own ([`process`]); stopped with its group when dropped.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    log: PathBuf,
}

impl Server {
    /// Starts `program args... --listen 127.0.0.1:0` and waits until it accepts
    /// on the address it announces.
    pub fn start(name: &str, program: &Path, args: &[&str]) -> Server {
        Server::start_configured(name, program, args, listen_flag)
    }

    /// Like [`Server::start`], the address given as Spin gives it in the
    /// environment (`SPIN_HTTP_LISTEN_ADDR`) instead of `--listen`.
    pub fn start_with_listen_env(name: &str, program: &Path, args: &[&str]) -> Server {
        Server::start_configured(name, program, args, |command, addr| {
            command.env("SPIN_HTTP_LISTEN_ADDR", addr.to_string());
        })
    }

    /// Starts `program args...`, `listen` telling it the loopback address to
    /// listen on (port 0: the kernel picks a free one as the server binds, so
    /// nothing can take it in between; the server announces it) and setting
    /// anything else on the command, and waits until it accepts.
    pub fn start_configured(
        name: &str,
        program: &Path,
        args: &[&str],
        listen: impl FnOnce(&mut Command, SocketAddr),
    ) -> Server {
        Server::spawn(name, program, args, listen, false)
    }

    /// With `unread_stderr`, the process's stderr is a pipe that nobody reads
    /// (as under a stalled log collector): once its buffer is full, every write
    /// to it blocks. [`Server::take_stderr`] reads what it holds.
    fn spawn(
        name: &str,
        program: &Path,
        args: &[&str],
        listen: impl FnOnce(&mut Command, SocketAddr),
        unread_stderr: bool,
    ) -> Server {
        let addr = SocketAddr::from(([127, 0, 0, 1], 0));
        let log = log_path(name);
        let mut command = Command::new(program);
        command.args(args);
        listen(&mut command, addr);
        // One open file for both streams: two would each write from offset 0
        // and overwrite each other's lines.
        let output = File::create(&log).expect("log file");
        let stderr = if unread_stderr {
            Stdio::piped()
        } else {
            output.try_clone().expect("log file").into()
        };
        command.stdin(Stdio::null()).stdout(output).stderr(stderr);
        let child = process::spawn_tied(command)
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        let mut server = Server { child, addr, log };
        server.wait_until_accepting(START_LIMIT);
        server
    }

    /// `<name>-native`, built natively in release mode.
    pub fn native(function: &str) -> Server {
        Server::start(
            function,
            &artifact(&format!("release/{function}-native")),
            &[],
        )
    }

    /// `<name>-native` with extra arguments (its limits' flags).
    pub fn native_with(function: &str, args: &[&str]) -> Server {
        Server::start(
            function,
            &artifact(&format!("release/{function}-native")),
            args,
        )
    }

    /// `spinbench serve` over the repo's spin.toml, with its own compiled-code cache.
    pub fn runner(extra_args: &[&str]) -> Server {
        Server::runner_with(&workspace_root().join("spin.toml"), extra_args)
    }

    /// `spinbench serve` over `manifest`, with the e2e compiled-code cache.
    pub fn runner_with(manifest: &Path, extra_args: &[&str]) -> Server {
        let args = runner_args(manifest, extra_args);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Server::start("spinbench", &artifact("release/spinbench"), &args)
    }

    /// Like [`Server::runner_with`], with stderr a pipe nobody reads.
    pub fn runner_with_unread_stderr(manifest: &Path, extra_args: &[&str]) -> Server {
        let args = runner_args(manifest, extra_args);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Server::spawn(
            "spinbench",
            &artifact("release/spinbench"),
            &args,
            listen_flag,
            true,
        )
    }

    /// The unread stderr pipe of a server started with it.
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// Kills the process (and its group) and waits for it.
    pub fn kill(&mut self) {
        process::stop_group(&mut self.child, Duration::ZERO);
    }

    pub fn url(&self, path_and_query: &str) -> String {
        format!("http://{}{}", self.addr, path_and_query)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running.
    pub fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The process's resident set size (`VmRSS` in /proc/<pid>/status), in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("/proc/<pid>/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS line")
    }

    /// Sends SIGTERM and waits up to `limit` for the process to exit; returns how
    /// long it took, or `None` if it was still running (it is then killed on drop).
    pub fn terminate(&mut self, limit: Duration) -> Option<Duration> {
        let start = Instant::now();
        Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("kill -TERM");
        self.wait_for_exit(limit).map(|_| start.elapsed())
    }

    /// Waits up to `limit` for the process to exit on its own; its status, or
    /// `None` if it is still running.
    pub fn wait_for_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// What the server wrote to stdout and stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the server announced its address (where it was given port
    /// 0) and accepts on it.
    fn wait_until_accepting(&mut self, limit: Duration) {
        let start = Instant::now();
        while start.elapsed() < limit {
            if self.addr.port() == 0
                && let Some(addr) = announced_addr(&self.log())
            {
                self.addr = addr;
            }
            if self.addr.port() != 0 && serves_http(self.addr) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "server exited with {status} before accepting:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("server did not accept within {limit:?}:\n{}", self.log());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        process::stop_group(&mut self.child, Duration::ZERO);
    }
}

/// How long a server may take to answer, with a parallel build and the rest
/// of the suite busy on the machine.
pub const START_LIMIT: Duration = service::START_LIMIT;

/// The address a server announced in its output: the first
/// `http://127.0.0.1:<port>` (`Serving http://…`, `serving /hello on http://…`,
/// `wasmtime serve`'s `Serving HTTP on http://…/`).
fn announced_addr(log: &str) -> Option<SocketAddr> {
    const PREFIX: &str = "http://127.0.0.1:";
    let at = log.find(PREFIX)? + PREFIX.len();
    let digits: String = log[at..].chars().take_while(char::is_ascii_digit).collect();
    // A port still being written ends the digits at the log's end: wait for more.
    if at + digits.len() == log.len() {
        return None;
    }
    let port: u16 = digits.parse().ok().filter(|&port| port != 0)?;
    Some(SocketAddr::from(([127, 0, 0, 1], port)))
}

/// Whether an HTTP server accepted a connection on `addr` and closed it
/// cleanly after the client sent nothing. A bare connect is not enough: while
/// another test thread spawns a process, the child holds a copy of every
/// socket the test process had open until its `exec` (a test's own listener,
/// say), and a connect can land in such a copy's backlog and be reset at the
/// `exec`.
fn serves_http(addr: SocketAddr) -> bool {
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    // A server that reads end-of-stream before any request closes without a word.
    if stream.shutdown(std::net::Shutdown::Write).is_err() {
        return false;
    }
    matches!(stream.read(&mut [0; 64]), Ok(0))
}

/// `serve --manifest <manifest> --cache-dir target/e2e-cache <extra_args>`.
pub fn runner_args(manifest: &Path, extra_args: &[&str]) -> Vec<String> {
    let cache = workspace_root().join("target/e2e-cache");
    let mut args = vec![
        "serve".to_string(),
        "--manifest".to_string(),
        manifest.display().to_string(),
        "--cache-dir".to_string(),
        cache.display().to_string(),
    ];
    args.extend(extra_args.iter().map(std::string::ToString::to_string));
    args
}

/// `spinbench serve -f` of the test app `app` (its component `wasm` built by
/// `make build`), with the e2e compiled-code cache, `state_dir` as its state
/// directory and `extra` arguments (a runtime config file, say).
pub fn serve_test_app(app: &str, wasm: &str, state_dir: &Path, extra: &[&str]) -> Server {
    serve_test_app_with_env(app, wasm, state_dir, extra, &[])
}

/// [`serve_test_app`], with `env` in its environment (`SPIN_VARIABLE_<NAME>`, say).
pub fn serve_test_app_with_env(
    app: &str,
    wasm: &str,
    state_dir: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Server {
    let dir = built_app(app, wasm);
    let cache = workspace_root().join("target/e2e-cache");
    let mut args = vec![
        "serve",
        "-f",
        dir.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
        "--state-dir",
        state_dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let label = Path::new(app).file_name().unwrap().to_str().unwrap();
    Server::start_configured(
        label,
        &artifact("release/spinbench"),
        &args,
        |command, addr| {
            listen_flag(command, addr);
            command.envs(env.iter().copied());
        },
    )
}

/// `spinbench serve` of `manifest` on a free port, run until it exits (within a
/// minute): for apps it must refuse at start. `None` if it started serving instead.
pub fn serve_until_exit(manifest: &Path, extra_args: &[&str]) -> Option<(ExitStatus, String)> {
    let mut args = runner_args(manifest, extra_args);
    args.extend(["--listen".to_string(), "127.0.0.1:0".to_string()]);
    run_to_exit(
        &artifact("release/spinbench"),
        &args,
        Duration::from_mins(1),
    )
}

/// Runs `program args...` (stdin closed) until it exits, at most `limit`;
/// returns its exit status and its stdout and stderr, or `None` (after killing
/// it) if it was still running.
pub fn run_to_exit(
    program: &Path,
    args: &[String],
    limit: Duration,
) -> Option<(ExitStatus, String)> {
    let mut command = Command::new(program);
    command.args(args);
    run_command_to_exit(command, None, limit)
}

/// Runs `command` (its stdin `input`, else closed) until it exits, at most
/// `limit`; returns its exit status and its stdout and stderr, or `None`
/// (after killing it) if it was still running.
pub fn run_command_to_exit(
    mut command: Command,
    input: Option<&[u8]>,
    limit: Duration,
) -> Option<(ExitStatus, String)> {
    let output = tempfile::NamedTempFile::new().expect("output file");
    let file = output.reopen().expect("output file");
    command
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(file.try_clone().expect("output file"))
        .stderr(file);
    let described = format!("{command:?}");
    let mut child =
        process::spawn_tied(command).unwrap_or_else(|e| panic!("cannot start {described}: {e}"));
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        let _ = std::io::Write::write_all(&mut stdin, input);
    }
    let start = Instant::now();
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break Some(status);
        }
        if start.elapsed() > limit {
            process::stop_group(&mut child, Duration::ZERO);
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(output.path()).unwrap_or_default();
    status.map(|status| (status, text))
}

/// A fresh log file's path under target/e2e-logs/, named for `name`.
fn log_path(name: &str) -> PathBuf {
    static COUNT: AtomicU32 = AtomicU32::new(0);
    let dir = workspace_root().join("target/e2e-logs");
    std::fs::create_dir_all(&dir).expect("log dir");
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    dir.join(format!("{name}-{}-{n}.log", std::process::id()))
}

/// The app directory `app` (from the workspace root), after checking that
/// `make build` built its component `wasm` (a path inside `app`).
pub fn built_app(app: &str, wasm: &str) -> PathBuf {
    let dir = workspace_root().join(app);
    assert!(
        dir.join(wasm).exists(),
        "{app}/{wasm} is not built: run `make build` first"
    );
    dir
}

/// Whether the tests run as root (containerd and its shims need it).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

/// A copy of the test app `app` (its manifest and its built component `wasm`)
/// in a fresh directory, so that what `compare` writes beside it stays out of the tree.
pub fn built_app_copy(app: &str, wasm: &str) -> tempfile::TempDir {
    let built = built_app(app, wasm);
    let copy = tempfile::tempdir().unwrap();
    std::fs::copy(built.join("spin.toml"), copy.path().join("spin.toml")).unwrap();
    let copied = copy.path().join(wasm);
    std::fs::create_dir_all(copied.parent().unwrap()).unwrap();
    std::fs::copy(built.join(wasm), &copied).unwrap();
    copy
}

/// The full path of `program` if it is on `PATH` (hosts this repository does not
/// build: `spin`, `wasmtime`).
pub fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

impl Server {
    /// Starts `command` as given (its own arguments say where it listens:
    /// `addr`; port 0 where it announces the port it got), with stdout and
    /// stderr in the log, and waits until it accepts.
    pub fn start_command(name: &str, mut command: Command, addr: SocketAddr) -> Server {
        let log = log_path(name);
        // One open file for both streams, as in `Server::spawn`.
        let output = File::create(&log).expect("log file");
        command
            .stdin(Stdio::null())
            .stdout(output.try_clone().expect("log file"))
            .stderr(output);
        let child =
            process::spawn_tied(command).unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let mut server = Server { child, addr, log };
        server.wait_until_accepting(START_LIMIT);
        server
    }

    /// A loopback address for a server that must be told its port before it
    /// starts: leased for the rest of the test process ([`spinbench_ports`]). Where the
    /// server can bind port 0 and announce its address, give it
    /// `127.0.0.1:0` instead.
    pub fn free_addr() -> SocketAddr {
        let port = spinbench_ports::PortLease::new()
            .expect("a loopback port")
            .keep();
        SocketAddr::from(([127, 0, 0, 1], port))
    }
}

/// A server whose process leads its own process group (spawn its command with
/// `process_group(0)`), stopped with the whole group when dropped: `spin up`
/// serves from a `spin trigger http` child, which killing `spin up` alone leaves
/// running.
pub struct GroupServer {
    pub server: Server,
}

impl GroupServer {
    /// The group's id: its leader's pid.
    pub fn pgid(&self) -> u32 {
        self.server.pid()
    }

    /// Whether any process of the group is still alive (`kill -0 -PGID`).
    pub fn group_alive(pgid: u32) -> bool {
        process::group_alive(pgid)
    }
}

impl Drop for GroupServer {
    fn drop(&mut self) {
        process::stop_group(&mut self.server.child, Duration::from_secs(5));
    }
}

/// Runs `spinbench compare` with `args` from the workspace root, its results
/// under target/e2e-results/, and returns its report; panics if it fails.
pub fn compare(args: &[&str], label: &str) -> Value {
    let results =
        workspace_root().join(format!("target/e2e-results/{label}-{}", std::process::id()));
    compare_into(&results, args).0
}

/// Runs `spinbench compare --results-dir results args...` from the workspace
/// root and returns its report and the report's path; panics if it fails.
pub fn compare_into(results: &Path, args: &[&str]) -> (Value, PathBuf) {
    let output = Command::new(artifact("release/spinbench"))
        .current_dir(workspace_root())
        .arg("compare")
        .arg("--results-dir")
        .arg(results)
        .args(args)
        .output()
        .expect("spinbench compare runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "compare failed:\n{stdout}\n{stderr}"
    );
    let line = stdout
        .lines()
        .chain(stderr.lines())
        .find_map(|l| l.trim().strip_prefix("report: "))
        .unwrap_or_else(|| panic!("no `report:` line in:\n{stdout}\n{stderr}"));
    let path = workspace_root().join(line.trim());
    let report = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    (report, path)
}

/// `sha256:<hex>` of `bytes`, as OCI and Spin name content.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(bytes))
}

/// The SHA-256 of `bytes`, in hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    use std::fmt::Write as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .fold(String::new(), |mut hex, b| {
            let _ = write!(hex, "{b:02x}");
            hex
        })
}

/// A scratch folder under target/, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(label: &str) -> Scratch {
        static COUNT: AtomicU32 = AtomicU32::new(0);
        let dir = workspace_root().join(format!(
            "target/e2e-scratch/{label}-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
