//! The node's own network namespace: what a node's host network is to its pods.
//! containerd, the registry and CNI's bridge live in it, so pods get addresses on
//! a bridge that exists only there, and every request to a pod is sent from inside
//! it ([`NetNs::run`]). Nothing of the node is reachable from the machine's own
//! network, and nothing it does can reach anything beyond the machine.

use anyhow::{Context, Result, bail};
use std::ffi::OsStr;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A named network namespace (`ip netns add`), deleted when dropped.
pub struct NetNs {
    name: String,
    path: PathBuf,
}

impl NetNs {
    /// Creates namespace `name` with its loopback up.
    pub fn create(name: &str) -> Result<NetNs> {
        ip(&["netns", "add", name])?;
        let netns = NetNs {
            name: name.to_string(),
            path: Path::new("/run/netns").join(name),
        };
        ip(&["-n", name, "link", "set", "lo", "up"])?;
        Ok(netns)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `program` run inside the namespace (`nsenter --net`): only the network
    /// namespace changes, not the mounts (`ip netns exec` would remount /sys and
    /// hide the cgroup hierarchies containerd needs).
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new("nsenter");
        command
            .arg(format!("--net={}", self.path.display()))
            .arg("--")
            .arg(program);
        command
    }

    /// Runs `f` on a thread of its own that has joined the namespace: the
    /// sockets it opens are the namespace's. Other threads stay where they are.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T> {
        enter_and_run(&self.path, f)
    }
}

/// Runs `f` on a new thread inside the network namespace at `path`.
pub fn enter_and_run<T: Send>(path: &Path, f: impl FnOnce() -> T + Send) -> Result<T> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    std::thread::scope(|scope| {
        scope
            .spawn(move || -> Result<T> {
                nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET)
                    .context("setns into the node's network namespace")?;
                Ok(f())
            })
            .join()
            .unwrap_or_else(|_| bail!("a thread in the node's network namespace panicked"))
    })
}

impl Drop for NetNs {
    fn drop(&mut self) {
        let _ = ip(&["netns", "delete", &self.name]);
    }
}

fn ip(args: &[&str]) -> Result<()> {
    let output = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("running `ip` (Debian: iproute2)")?;
    if !output.status.success() {
        bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}
