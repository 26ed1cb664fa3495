//! Where an app served in the shim's own process runs, from its container's
//! OCI spec: the pod's network namespace (the app's threads join it, so that
//! it listens, and its components connect, from the pod's network), and, when
//! the shim serves one pod, the container's cgroup with the container's
//! resources (the shim process joins it, so the pod is charged for what it
//! uses and held to its limits, as with a container process).

use anyhow::{Context, Result};
use libcgroups::common::{
    AnyCgroupManager, CgroupConfig, CgroupManager, ControllerOpt, create_cgroup_manager,
};
use nix::unistd::Pid;
use oci_spec::runtime::{LinuxNamespaceType, LinuxResources, Spec};
use std::fs::File;
use std::path::{Path, PathBuf};

/// The pod's network namespace in `spec`, if it has one of its own.
pub fn network_namespace(spec: &Spec) -> Option<PathBuf> {
    spec.linux()
        .as_ref()?
        .namespaces()
        .as_ref()?
        .iter()
        .find(|ns| ns.typ() == LinuxNamespaceType::Network)?
        .path()
        .clone()
}

/// Moves the calling thread into the network namespace at `path`: sockets it
/// opens from then on, and threads it starts, are the namespace's.
pub fn enter_network_namespace(path: &Path) -> Result<()> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET)
        .with_context(|| format!("joining the pod's network namespace {}", path.display()))
}

/// The container's memory limit in `spec`, in bytes.
pub fn memory_limit(spec: &Spec) -> Option<u64> {
    let limit = spec
        .linux()
        .as_ref()?
        .resources()
        .as_ref()?
        .memory()
        .as_ref()?
        .limit()?;
    u64::try_from(limit).ok().filter(|&bytes| bytes > 0)
}

/// The shim process in a container's cgroup; [`Joined::leave`] puts it in the
/// cgroup's parent (the pod's) and removes the container's.
pub struct Joined {
    container: AnyCgroupManager,
    parent: PathBuf,
}

/// Moves this process into the container's cgroup (`linux.cgroupsPath`) with
/// the container's resources; `None` when the spec names no cgroup.
pub fn join_cgroup(spec: &Spec, id: &str) -> Result<Option<Joined>> {
    let Some(linux) = spec.linux().as_ref() else {
        return Ok(None);
    };
    let Some(path) = linux.cgroups_path().clone() else {
        return Ok(None);
    };
    let manager = manager(&path, id)?;
    let resources = linux
        .resources()
        .clone()
        .unwrap_or_else(LinuxResources::default);
    // Joining creates the cgroup (libcgroups makes its directories there).
    manager
        .add_task(Pid::this())
        .with_context(|| format!("joining the container's cgroup {}", path.display()))?;
    manager
        .apply(&ControllerOpt {
            resources: &resources,
            disable_oom_killer: false,
            oom_score_adj: None,
            freezer_state: None,
        })
        .with_context(|| format!("applying the container's resources to {}", path.display()))?;
    let parent = path
        .parent()
        .map_or_else(|| PathBuf::from("/"), Path::to_path_buf);
    Ok(Some(Joined {
        container: manager,
        parent,
    }))
}

impl Joined {
    /// Moves this process to the pod's cgroup and removes the container's.
    pub fn leave(self, id: &str) -> Result<()> {
        manager(&self.parent, id)?
            .add_task(Pid::this())
            .context("moving back to the pod's cgroup")?;
        self.container
            .remove()
            .context("removing the container's cgroup")
    }
}

fn manager(path: &Path, id: &str) -> Result<AnyCgroupManager> {
    create_cgroup_manager(CgroupConfig {
        cgroup_path: path.to_path_buf(),
        systemd_cgroup: false,
        container_name: id.to_string(),
    })
    .with_context(|| format!("the cgroup {}", path.display()))
}
