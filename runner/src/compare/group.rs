//! The processes a comparison starts, each in a process group of its own, so
//! that stopping one stops everything it started too: `spin up` serves from a
//! `spin trigger http` child that outlives a parent killed alone. A group is
//! stopped with SIGTERM, a short grace, then SIGKILL, when its [`Group`] is
//! dropped (success, or a failure unwinding through it) and, on Ctrl-C or
//! SIGTERM to `spinbench`, by [`stop_all_on_signal`] (drop guards do not run
//! then). A descendant that leaves the group (`setsid`) is not followed; no
//! host compared here does.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a group gets between SIGTERM and SIGKILL: long enough for a
/// server to close its listener, short enough that a host draining held
/// requests does not stall the run.
const GRACE: Duration = Duration::from_millis(500);

/// A child process leading its own process group; the group is stopped on drop.
pub struct Group {
    child: Child,
}

impl Group {
    /// Spawns `cmd` as the leader of a new process group.
    pub fn spawn(cmd: &mut Command) -> io::Result<Group> {
        let child = cmd.process_group(0).spawn()?;
        let group = Group { child };
        register(group.pid());
        Ok(group)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How the leader exited, if it has (without reaping it: while it is a
    /// zombie its pid, the group's id, cannot be reused).
    pub fn exited(&self) -> Option<String> {
        exit_status(self.pid())
    }

    /// Stops the whole group: SIGTERM, up to [`GRACE`] for the leader to exit,
    /// SIGKILL for whatever is left of the group, then reaps the leader.
    fn stop(&mut self) {
        let pgid = self.pid();
        signal_group(pgid, libc::SIGTERM);
        let deadline = Instant::now() + GRACE;
        while exit_status(pgid).is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Also when the leader exited in time: its children may not have.
        signal_group(pgid, libc::SIGKILL);
        let _ = self.child.wait();
        unregister(pgid);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `cmd` to completion in its own process group (stopped on Ctrl-C like
/// the hosts), collecting its output.
pub fn output(cmd: &mut Command) -> io::Result<Output> {
    let child = cmd
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let pgid = child.id();
    register(pgid);
    let output = child.wait_with_output();
    unregister(pgid);
    output
}

#[allow(
    unsafe_code,
    reason = "kill(2) through libc; sound as the SAFETY comment says"
)]
fn signal_group(pgid: u32, signal: libc::c_int) {
    // SAFETY: kill(2) has no memory-safety preconditions; a negative pid
    // addresses the process group. ESRCH (the group is gone) is fine.
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return; // not a pid: there is no such group
    };
    unsafe {
        libc::kill(-pgid, signal);
    }
}

/// The exit of child `pid` if it has exited, without reaping it (`WNOWAIT`).
#[allow(
    unsafe_code,
    reason = "waitid(2) through libc; sound as the SAFETY comments say"
)]
fn exit_status(pid: u32) -> Option<String> {
    // SAFETY: waitid writes into the zeroed siginfo_t we own; WNOHANG keeps it
    // from blocking, WNOWAIT leaves the child to be reaped by its `Child`.
    let info = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &raw mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        if r != 0 {
            return Some("already reaped".into());
        }
        info
    };
    // SAFETY: waitid filled a SIGCHLD siginfo (or left it zeroed: no exit yet).
    let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
    (pid != 0).then(|| match info.si_code {
        libc::CLD_EXITED => format!("exit status: {status}"),
        _ => format!("signal: {status}"),
    })
}

/// Process groups alive now, for the signal handler.
static GROUPS: Mutex<Groups> = Mutex::new(Groups {
    live: Vec::new(),
    stopping: false,
});

struct Groups {
    live: Vec<u32>,
    /// Set once the signal handler has stopped everything: a group spawned
    /// after that (by a measurement still running) is stopped at once.
    stopping: bool,
}

fn groups() -> std::sync::MutexGuard<'static, Groups> {
    GROUPS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn register(pgid: u32) {
    let mut groups = groups();
    if groups.stopping {
        signal_group(pgid, libc::SIGKILL);
    } else {
        groups.live.push(pgid);
    }
}

fn unregister(pgid: u32) {
    groups().live.retain(|p| *p != pgid);
}

/// Stops every live group (SIGTERM, grace, SIGKILL) and refuses new ones.
pub fn stop_all() {
    let live = {
        let mut groups = groups();
        groups.stopping = true;
        std::mem::take(&mut groups.live)
    };
    for &pgid in &live {
        signal_group(pgid, libc::SIGTERM);
    }
    let deadline = Instant::now() + GRACE;
    while Instant::now() < deadline && live.iter().any(|&p| exit_status(p).is_none()) {
        std::thread::sleep(Duration::from_millis(5));
    }
    for &pgid in &live {
        signal_group(pgid, libc::SIGKILL);
    }
}

/// On Ctrl-C (SIGINT) or SIGTERM: stops every group, then exits as shells
/// report a death by that signal (130, 143).
pub fn stop_all_on_signal(runtime: &tokio::runtime::Runtime) {
    runtime.spawn(async {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut interrupt), Ok(mut terminate)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            super::host_log::to_terminal(
                "warning: no signal handler: Ctrl-C would leave the hosts running",
            );
            return;
        };
        let code = tokio::select! {
            _ = interrupt.recv() => 130,
            _ = terminate.recv() => 143,
        };
        stop_all();
        // To the terminal: the run's stderr is its host log.
        super::host_log::to_terminal("\ninterrupted: every process this run started was stopped");
        std::process::exit(code);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: u32) -> bool {
        // A zombie (reparented, not yet reaped) is not running.
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    }

    /// A leader that forks a worker and waits for it (as `spin up` does): both
    /// are gone once the group is dropped, the worker too although only the
    /// leader was ours. Killing the leader alone would leave the worker running.
    #[test]
    fn dropping_a_group_stops_the_children_of_its_leader() {
        let mut cmd = Command::new("sh");
        // The worker ignores SIGTERM: only the SIGKILL after the grace stops it.
        cmd.args([
            "-c",
            "sh -c 'trap \"\" TERM; exec sleep 60' & echo $!; wait",
        ]);
        cmd.stdout(std::process::Stdio::piped());
        let mut group = Group::spawn(&mut cmd).unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(group.child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let worker: u32 = line.trim().parse().unwrap();
        let leader = group.pid();
        assert!(alive(worker) && alive(leader) && group.exited().is_none());
        let started = Instant::now();
        drop(group);
        let deadline = Instant::now() + Duration::from_secs(5);
        while alive(worker) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!alive(worker), "worker {worker} left running");
        assert!(!alive(leader));
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(!groups().live.contains(&leader));
    }

    #[test]
    fn exit_is_seen_without_reaping() {
        let group = Group::spawn(&mut Command::new("true")).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while group.exited().is_none() {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(group.exited().as_deref(), Some("exit status: 0"));
        // Still a zombie of ours: the pid (the group's id) is not free for reuse.
        assert!(std::fs::metadata(format!("/proc/{}", group.pid())).is_ok());
    }

    #[test]
    fn output_is_collected() {
        let out = output(Command::new("sh").args(["-c", "echo out; echo err >&2"])).unwrap();
        assert_eq!(
            (&out.stdout[..], &out.stderr[..]),
            (&b"out\n"[..], &b"err\n"[..])
        );
        assert!(out.status.success());
    }
}
