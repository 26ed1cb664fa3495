//! A service a test starts and talks to over loopback (PostgreSQL, MariaDB,
//! Redis, Mosquitto, docker-registry), started so that no other test or
//! process can get in its way:
//!
//! - in a directory of its own (a fresh temporary directory), on a port
//!   leased for it ([`crate::ports`]); a service that still finds its port
//!   taken (by something outside the suite) is started again on another;
//! - ready only once it answers the question its `ready` check asks it (a
//!   query, a PING, an HTTP request): an open port is not a ready service;
//! - its own log under target/e2e-logs/, named (with its last lines) in the
//!   panic when it does not start;
//! - stopped with everything it forked when the [`Service`] is dropped,
//!   without a panic of its own, and killed by the kernel if the test process
//!   dies first ([`crate::process`]).

use crate::process::{spawn_tied, stop_group};
use spinbench_ports::PortLease;
use std::fs::File;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a service may take to answer, the machine busy with a parallel
/// build and the rest of the suite.
pub const START_LIMIT: Duration = Duration::from_mins(3);
/// Starts on fresh ports before a service that cannot bind is given up on.
const ATTEMPTS: usize = 4;

/// How to start one service and how to ask it whether it serves.
pub struct Recipe<'a> {
    /// A short name for its log and its messages: `postgres`, `redis`.
    pub name: &'a str,
    /// The service's command, given its port and its directory.
    pub command: &'a dyn Fn(u16, &Path) -> Command,
    /// Asks the running service whether it serves, given its port and directory.
    pub ready: &'a dyn Fn(u16, &Path) -> bool,
}

/// A running service; stopped when dropped.
pub struct Service {
    pub name: String,
    pub port: u16,
    /// Its directory (data, config, sockets): the caller's, removed after it stops.
    dir: tempfile::TempDir,
    log: PathBuf,
    child: Child,
    _lease: PortLease,
}

impl Service {
    /// Starts `recipe` in `dir` (prepared by the caller: a data directory, a
    /// config) and waits until it answers; panics, naming its log, if it does not.
    pub fn start(recipe: &Recipe, mut dir: tempfile::TempDir) -> Service {
        for _ in 0..ATTEMPTS {
            let lease = PortLease::new().expect("a loopback port");
            let log = log_path(recipe.name, lease.port);
            let output = File::create(&log).expect("a service log");
            let mut command = (recipe.command)(lease.port, dir.path());
            command
                .stdin(Stdio::null())
                .stdout(output.try_clone().expect("a service log"))
                .stderr(output);
            let child =
                spawn_tied(command).unwrap_or_else(|e| panic!("cannot start {}: {e}", recipe.name));
            let mut service = Service {
                name: recipe.name.to_string(),
                port: lease.port,
                dir,
                log,
                child,
                _lease: lease,
            };
            match service.wait_until_ready(recipe.ready) {
                Ok(()) => return service,
                Err(Exit::PortTaken) => {
                    dir = service.into_dir();
                }
                Err(Exit::Other(why)) => panic!("{}", service.failure(&why)),
            }
        }
        panic!(
            "{}: its port was taken {ATTEMPTS} times in a row (bind failed on each)",
            recipe.name
        );
    }

    /// Its process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// What it wrote to its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_until_ready(&mut self, ready: &dyn Fn(u16, &Path) -> bool) -> Result<(), Exit> {
        let start = Instant::now();
        loop {
            if ready(self.port, self.dir.path()) {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                let log = self.log();
                return Err(if mentions_port_taken(&log) {
                    Exit::PortTaken
                } else {
                    Exit::Other(format!("exited with {status} before it answered"))
                });
            }
            if start.elapsed() > START_LIMIT {
                return Err(Exit::Other(format!(
                    "did not answer within {START_LIMIT:?}"
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The panic message of a service that did not start: its log's path and tail.
    fn failure(&mut self, why: &str) -> String {
        stop_group(&mut self.child, Duration::from_secs(5));
        let log = self.log();
        let tail: Vec<&str> = log.lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!(
            "{} on 127.0.0.1:{} {why}; its log is {}, ending:\n{}",
            self.name,
            self.port,
            self.log.display(),
            tail.join("\n")
        )
    }

    /// Stops it and hands back its directory (for a start on another port).
    fn into_dir(mut self) -> tempfile::TempDir {
        stop_group(&mut self.child, Duration::from_secs(5));
        let placeholder = tempfile::tempdir().expect("a temporary directory");
        std::mem::replace(&mut self.dir, placeholder)
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        stop_group(&mut self.child, Duration::from_secs(10));
    }
}

enum Exit {
    /// It could not bind its port: something outside the suite holds it.
    PortTaken,
    Other(String),
}

/// Whether a service's log says its address was in use (each says it in its words).
fn mentions_port_taken(log: &str) -> bool {
    let log = log.to_ascii_lowercase();
    ["address already in use", "address in use", "eaddrinuse"]
        .iter()
        .any(|words| log.contains(words))
}

fn log_path(name: &str, port: u16) -> PathBuf {
    let dir = crate::workspace_root().join("target/e2e-logs");
    std::fs::create_dir_all(&dir).expect("the log directory");
    dir.join(format!("{name}-{}-{port}.log", std::process::id()))
}

/// The uid and gid of system user `name` (a database server's own user), from
/// /etc/passwd.
pub fn system_user(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.first() == Some(&name) && fields.len() > 3)
            .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))?
    })
}

/// A connection to a service on `127.0.0.1:port`, with one-second connect and
/// two-second read timeouts, for readiness questions in the service's protocol.
pub fn dial(port: u16) -> Option<TcpStream> {
    let stream = TcpStream::connect_timeout(
        &SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_secs(1),
    )
    .ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    Some(stream)
}
