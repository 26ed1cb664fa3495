//! A pod as the kubelet makes one through CRI: what a pod spec says becomes a
//! `PodSandboxConfig` and a `ContainerConfig` ([`PodSpec`]), then the calls in the
//! kubelet's order: `RunPodSandbox` with the runtime handler (a RuntimeClass's),
//! `PullImage`, `CreateContainer`, `StartContainer`, and the statuses; at the end
//! `StopContainer`, `StopPodSandbox`, `RemovePodSandbox`.

use crate::cri::{Cri, image_spec};
use anyhow::{Context, Result};
use k8s_cri::v1::{
    ContainerConfig, ContainerMetadata, ContainerState, ContainerStatus, KeyValue,
    LinuxContainerConfig, LinuxContainerResources, LinuxPodSandboxConfig,
    LinuxSandboxSecurityContext, Mount, NamespaceMode, NamespaceOption, PodSandboxConfig,
    PodSandboxMetadata,
};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The pods' Kubernetes namespace.
const NAMESPACE: &str = "spinbench";
/// Where the kubelet mounts a container's termination message file.
pub const TERMINATION_LOG: &str = "/dev/termination-log";

/// What a pod spec sets, for one pod of one container.
#[derive(Clone, Debug, Default)]
pub struct PodSpec {
    /// The pod's name (unique on the node).
    pub name: String,
    /// The runtime handler: the RuntimeClass's `handler`.
    pub handler: String,
    pub image: String,
    /// The container's `command` and `args` (its image's when empty).
    pub command: Vec<String>,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// `resources.limits.memory`, in bytes.
    pub memory_limit: Option<i64>,
    /// `resources.limits.cpu` as the kubelet passes it: a CFS quota per period (µs).
    pub cpu_quota: Option<(i64, i64)>,
    /// `spec.hostname`.
    pub hostname: Option<String>,
}

/// A pod that runs: its sandbox, its container and its IP on the pods' network.
#[derive(Clone, Debug)]
pub struct Pod {
    pub name: String,
    pub sandbox: String,
    pub container: String,
    pub ip: String,
    /// The pod's log directory; the container's log is `<name>/0.log` in it.
    pub log_dir: PathBuf,
    /// The host file the kubelet would mount at [`TERMINATION_LOG`].
    pub termination_log: PathBuf,
    /// The pod's cgroup (`cgroup_parent`), relative to a hierarchy's root.
    pub cgroup: String,
    /// Why `StartContainer` failed, if it did (the pod is then kept, as the
    /// kubelet keeps it, to read its status).
    pub start_error: Option<String>,
}

/// Where a node keeps its pods' logs and cgroups.
pub struct PodPlace<'a> {
    pub log_root: &'a Path,
    /// The cgroup every pod's cgroup is made under, e.g. `/spinbench-<label>`.
    pub cgroup_root: &'a str,
}

impl PodSpec {
    fn sandbox_config(&self, place: &PodPlace) -> (PodSandboxConfig, PathBuf, String) {
        let uid = format!("uid-{}", self.name);
        // The kubelet's: /var/log/pods/<namespace>_<name>_<uid>.
        let log_dir = place
            .log_root
            .join(format!("{NAMESPACE}_{}_{uid}", self.name));
        let cgroup = format!("{}/pod-{}", place.cgroup_root, self.name);
        let config = PodSandboxConfig {
            metadata: Some(PodSandboxMetadata {
                name: self.name.clone(),
                uid,
                namespace: NAMESPACE.into(),
                attempt: 0,
            }),
            hostname: self.hostname.clone().unwrap_or_default(),
            log_directory: log_dir.display().to_string(),
            linux: Some(LinuxPodSandboxConfig {
                cgroup_parent: cgroup.clone(),
                security_context: Some(LinuxSandboxSecurityContext {
                    // The kubelet's defaults: the pod's own network and IPC, a PID
                    // namespace per container.
                    namespace_options: Some(NamespaceOption {
                        network: NamespaceMode::Pod.into(),
                        pid: NamespaceMode::Container.into(),
                        ipc: NamespaceMode::Pod.into(),
                        ..NamespaceOption::default()
                    }),
                    ..LinuxSandboxSecurityContext::default()
                }),
                ..LinuxPodSandboxConfig::default()
            }),
            ..PodSandboxConfig::default()
        };
        (config, log_dir, cgroup)
    }

    fn container_config(&self, termination_log: &Path) -> ContainerConfig {
        let (cpu_quota, cpu_period) = self.cpu_quota.unwrap_or_default();
        ContainerConfig {
            metadata: Some(ContainerMetadata {
                name: self.name.clone(),
                attempt: 0,
            }),
            image: Some(image_spec(&self.image)),
            command: self.command.clone(),
            args: self.args.clone(),
            envs: self
                .env
                .iter()
                .map(|(key, value)| KeyValue {
                    key: key.clone(),
                    value: value.clone(),
                })
                .collect(),
            // The kubelet's terminationMessagePath: a host file at /dev/termination-log.
            mounts: vec![Mount {
                container_path: TERMINATION_LOG.into(),
                host_path: termination_log.display().to_string(),
                ..Mount::default()
            }],
            log_path: format!("{}/0.log", self.name),
            linux: Some(LinuxContainerConfig {
                resources: Some(LinuxContainerResources {
                    memory_limit_in_bytes: self.memory_limit.unwrap_or_default(),
                    cpu_quota,
                    cpu_period,
                    ..LinuxContainerResources::default()
                }),
                security_context: None,
            }),
            ..ContainerConfig::default()
        }
    }
}

impl Pod {
    /// Runs `spec` in the kubelet's order; returns once the container is started
    /// (not yet answering: see the node's probes), or once `StartContainer`
    /// failed ([`Pod::start_error`]).
    pub fn run(cri: &Cri, spec: &PodSpec, place: &PodPlace) -> Result<Pod> {
        let (sandbox_config, log_dir, cgroup) = spec.sandbox_config(place);
        let what = |step: &str| format!("pod {}: {step}", spec.name);
        let sandbox = cri
            .run_pod_sandbox(&sandbox_config, &spec.handler)
            .with_context(|| what("RunPodSandbox"))?;
        cri.pull_image(&spec.image, &sandbox_config)
            .with_context(|| what("PullImage"))?;
        let termination_log = log_dir.join(format!("{}.termination-log", spec.name));
        std::fs::create_dir_all(&log_dir)?;
        std::fs::write(&termination_log, b"")?;
        let container = cri
            .create_container(
                &sandbox,
                &spec.container_config(&termination_log),
                &sandbox_config,
            )
            .with_context(|| what("CreateContainer"))?;
        let start_error = cri
            .start_container(&container)
            .err()
            .map(|e| format!("{e:#}"));
        let ip = cri
            .pod_sandbox_status(&sandbox)
            .with_context(|| what("PodSandboxStatus"))?
            .network
            .map(|n| n.ip)
            .unwrap_or_default();
        Ok(Pod {
            name: spec.name.clone(),
            sandbox,
            container,
            ip,
            log_dir,
            termination_log,
            cgroup,
            start_error,
        })
    }

    /// The container's log as CRI writes it (`kubectl logs` reads this file).
    pub fn log_path(&self) -> PathBuf {
        self.log_dir.join(&self.name).join("0.log")
    }

    /// `http://<pod IP>:<port><path>`.
    pub fn url(&self, port: u16, path: &str) -> String {
        format!("http://{}:{port}{path}", self.ip)
    }

    /// The container's status once it has exited (within `limit`).
    pub fn wait_for_exit(&self, cri: &Cri, limit: Duration) -> Result<ContainerStatus> {
        let start = Instant::now();
        loop {
            let status = cri.container_status(&self.container)?;
            if status.state() == ContainerState::ContainerExited || start.elapsed() > limit {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `StopContainer` with the pod's grace period, then `StopPodSandbox`.
    pub fn stop(&self, cri: &Cri, grace_s: i64) -> Result<()> {
        cri.stop_container(&self.container, grace_s)?;
        cri.stop_pod_sandbox(&self.sandbox)
    }

    /// `RemovePodSandbox` (which removes its containers).
    pub fn remove(&self, cri: &Cri) -> Result<()> {
        cri.remove_pod_sandbox(&self.sandbox)
    }
}
