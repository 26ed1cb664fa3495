//! The node's processes as /proc shows them, and what is left of a node on the
//! machine: shims (they outlive containerd by design), mounts, cgroups.

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

/// A process: its PID, parent and arguments.
#[derive(Clone, Debug)]
pub struct Process {
    pub pid: u32,
    pub ppid: u32,
    pub argv: Vec<String>,
}

/// Every process on the machine.
pub fn all() -> Vec<Process> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // The fields after the command name, which may hold spaces and parens.
            let rest = &stat[stat.rfind(')')? + 2..];
            let ppid = rest.split(' ').nth(1)?.parse().ok()?;
            let raw = std::fs::read(entry.path().join("cmdline")).ok()?;
            let argv = raw
                .split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            Some(Process { pid, ppid, argv })
        })
        .collect()
}

/// Whether `argv` has `flag` followed by `value`.
pub fn argv_has(argv: &[String], flag: &str, value: &str) -> bool {
    argv.windows(2)
        .any(|pair| pair[0] == flag && pair[1] == value)
}

/// The containerd shims given containerd's socket `socket`.
pub fn shims_of(socket: &str) -> Vec<Process> {
    all()
        .into_iter()
        .filter(|p| {
            p.argv
                .first()
                .is_some_and(|a| a.contains("containerd-shim"))
                && argv_has(&p.argv, "-address", socket)
        })
        .collect()
}

/// `roots` and every process below them.
pub fn with_descendants(roots: &[u32], table: &[Process]) -> Vec<u32> {
    let mut tree: Vec<u32> = roots.to_vec();
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(table.iter().filter(|p| p.ppid == parent).map(|p| p.pid));
        i += 1;
    }
    tree.sort_unstable();
    tree.dedup();
    tree
}

/// SIGTERM, then SIGKILL after five seconds; reaped.
pub fn stop(child: &mut Child) {
    signal(child.id(), "TERM");
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// SIGKILL to `pid`.
pub fn kill(pid: u32) {
    signal(pid, "KILL");
}

fn signal(pid: u32, name: &str) {
    let _ = std::process::Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status();
}

/// Unmounts everything mounted under `dir`, deepest first.
pub fn unmount_under(dir: &Path) {
    let prefix = format!("{}/", dir.display());
    let mut targets: Vec<String> = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split(' ').nth(4).map(String::from))
        .filter(|t| t.starts_with(&prefix))
        .collect();
    targets.sort_by(|a, b| b.cmp(a));
    for target in targets {
        let _ = std::process::Command::new("umount")
            .args(["-l", &target])
            .status();
    }
}

/// The cgroup `name` (relative to each hierarchy's root: every v1 controller's,
/// or v2's) where it exists.
pub fn cgroup_dirs(name: &str) -> Vec<std::path::PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    let mut dirs = vec![root.join(name)];
    if let Ok(entries) = std::fs::read_dir(root) {
        dirs.extend(entries.flatten().map(|e| e.path().join(name)));
    }
    dirs.into_iter().filter(|d| d.is_dir()).collect()
}

/// Removes cgroup `name` and the cgroups below it in every hierarchy.
pub fn remove_cgroups(name: &str) {
    for dir in cgroup_dirs(name) {
        remove_cgroup(&dir);
    }
}

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
