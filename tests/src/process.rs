//! Processes a test starts, tied to the test process: each leads a process
//! group of its own (so everything it forks is stopped with it) and is killed
//! by the kernel if the test process dies first, however it dies (a second
//! panic that aborts, a timeout's SIGKILL), so that no server outlives the
//! suite.
//!
//! The kernel's parent-death signal fires when the *thread* that forked the
//! child ends, not the process, and every libtest test runs on a thread of its
//! own; a service shared by a test binary's tests outlives the test that
//! started it. So every tied child is forked by one thread that lives as long
//! as the process.

use rustix::process::{Pid, Signal};
use std::process::{Child, Command};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

type Spawn = (Command, Sender<std::io::Result<Child>>);

/// Starts `command` in a process group of its own, tied to the test process.
pub fn spawn_tied(mut command: Command) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt as _;
    let test_process = rustix::process::getpid();
    command.process_group(0);
    // SAFETY: runs in the child between fork and exec, and calls only prctl(2)
    // and getppid(2), both async-signal-safe, allocating nothing.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
            // The test process may have died between fork and prctl.
            if rustix::process::getppid() != Some(test_process) {
                return Err(std::io::Error::other("the test process is gone"));
            }
            Ok(())
        });
    }
    let (reply, answer) = channel();
    spawner()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .send((command, reply))
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?
}

/// The thread that forks every tied child: it never ends.
fn spawner() -> &'static Mutex<Sender<Spawn>> {
    static SPAWNER: OnceLock<Mutex<Sender<Spawn>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (sender, requests) = channel::<Spawn>();
        std::thread::Builder::new()
            .name("e2e-spawner".into())
            .spawn(move || {
                for (mut command, reply) in requests {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("the spawner thread starts");
        Mutex::new(sender)
    })
}

/// Stops the process group `child` leads: SIGTERM, up to `grace` for the
/// leader to exit, then SIGKILL to the whole group; reaps the leader. Never
/// panics (it runs in `Drop`, maybe while a test unwinds).
pub fn stop_group(child: &mut Child, grace: Duration) {
    let Some(group) = i32::try_from(child.id()).ok().and_then(Pid::from_raw) else {
        return;
    };
    if matches!(child.try_wait(), Ok(None)) {
        let _ = rustix::process::kill_process_group(group, Signal::TERM);
        let start = Instant::now();
        while start.elapsed() < grace && matches!(child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    // What the leader forked may still run after it exited.
    let _ = rustix::process::kill_process_group(group, Signal::KILL);
    let _ = child.kill();
    let _ = child.wait();
}

/// Whether any process of group `pgid` is alive.
pub fn group_alive(pgid: u32) -> bool {
    i32::try_from(pgid)
        .ok()
        .and_then(Pid::from_raw)
        .is_some_and(|group| rustix::process::test_kill_process_group(group).is_ok())
}
