//! A CRI client, as the kubelet is one: runtime.v1's RuntimeService and
//! ImageService over containerd's unix socket. Every call is blocking and bounded
//! in time, so that a stuck containerd fails a test instead of hanging it.

use anyhow::{Context, Result, anyhow};
use k8s_cri::v1::image_service_client::ImageServiceClient;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use k8s_cri::v1::{
    Container, ContainerConfig, ContainerStatus, ContainerStatusRequest, CreateContainerRequest,
    ImageSpec, ListContainersRequest, ListPodSandboxRequest, PodSandbox, PodSandboxConfig,
    PodSandboxStatus, PodSandboxStatusRequest, PullImageRequest, RemoveContainerRequest,
    RemovePodSandboxRequest, RunPodSandboxRequest, StartContainerRequest, StatusRequest,
    StopContainerRequest, StopPodSandboxRequest, VersionRequest,
};
use std::future::Future;
use std::path::Path;
use std::time::Duration;
use tonic::transport::Channel;

/// What one call may take at most (a pull of the function set included).
const CALL_LIMIT: Duration = Duration::from_mins(3);

pub struct Cri {
    runtime: tokio::runtime::Runtime,
    service: RuntimeServiceClient<Channel>,
    images: ImageServiceClient<Channel>,
}

impl Cri {
    /// Connects to the CRI socket (containerd's gRPC socket).
    pub fn connect(socket: &Path) -> Result<Cri> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let channel = runtime
            .block_on(containerd_client::connect(socket))
            .with_context(|| format!("connecting to {}", socket.display()))?;
        Ok(Cri {
            runtime,
            service: RuntimeServiceClient::new(channel.clone()),
            images: ImageServiceClient::new(channel),
        })
    }

    fn call<T>(
        &self,
        what: &str,
        call: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    ) -> Result<T> {
        self.runtime
            .block_on(async { tokio::time::timeout(CALL_LIMIT, call).await })
            .map_err(|_| anyhow!("CRI {what}: no answer within {CALL_LIMIT:?}"))?
            .map(tonic::Response::into_inner)
            .map_err(|status| anyhow!("CRI {what}: {}", status.message()))
    }

    /// The runtime's name and version (`Version`).
    pub fn version(&self) -> Result<String> {
        let v = self.call(
            "Version",
            self.service.clone().version(VersionRequest::default()),
        )?;
        Ok(format!("{} {}", v.runtime_name, v.runtime_version))
    }

    /// Whether the runtime and its network are ready (`Status`), and if not, why.
    pub fn ready(&self) -> Result<std::result::Result<(), String>> {
        let status = self.call(
            "Status",
            self.service
                .clone()
                .status(StatusRequest { verbose: false }),
        )?;
        let conditions = status.status.map(|s| s.conditions).unwrap_or_default();
        let not_ready: Vec<String> = ["RuntimeReady", "NetworkReady"]
            .iter()
            .filter(|kind| !conditions.iter().any(|c| c.r#type == **kind && c.status))
            .map(|kind| {
                let reason = conditions
                    .iter()
                    .find(|c| c.r#type == *kind)
                    .map(|c| format!("{}: {}", c.reason, c.message))
                    .unwrap_or_default();
                format!("{kind} false ({reason})")
            })
            .collect();
        Ok(if not_ready.is_empty() {
            Ok(())
        } else {
            Err(not_ready.join("; "))
        })
    }

    /// `PullImage`; the image's reference as the runtime keeps it.
    pub fn pull_image(&self, image: &str, sandbox: &PodSandboxConfig) -> Result<String> {
        let request = PullImageRequest {
            image: Some(image_spec(image)),
            auth: None,
            sandbox_config: Some(sandbox.clone()),
        };
        Ok(self
            .call("PullImage", self.images.clone().pull_image(request))?
            .image_ref)
    }

    /// `RunPodSandbox` with the runtime handler (a RuntimeClass's `handler`).
    pub fn run_pod_sandbox(&self, config: &PodSandboxConfig, handler: &str) -> Result<String> {
        let request = RunPodSandboxRequest {
            config: Some(config.clone()),
            runtime_handler: handler.to_string(),
        };
        Ok(self
            .call(
                "RunPodSandbox",
                self.service.clone().run_pod_sandbox(request),
            )?
            .pod_sandbox_id)
    }

    pub fn create_container(
        &self,
        sandbox: &str,
        config: &ContainerConfig,
        sandbox_config: &PodSandboxConfig,
    ) -> Result<String> {
        let request = CreateContainerRequest {
            pod_sandbox_id: sandbox.to_string(),
            config: Some(config.clone()),
            sandbox_config: Some(sandbox_config.clone()),
        };
        Ok(self
            .call(
                "CreateContainer",
                self.service.clone().create_container(request),
            )?
            .container_id)
    }

    pub fn start_container(&self, container: &str) -> Result<()> {
        let request = StartContainerRequest {
            container_id: container.to_string(),
        };
        self.call(
            "StartContainer",
            self.service.clone().start_container(request),
        )?;
        Ok(())
    }

    pub fn container_status(&self, container: &str) -> Result<ContainerStatus> {
        let request = ContainerStatusRequest {
            container_id: container.to_string(),
            verbose: false,
        };
        self.call(
            "ContainerStatus",
            self.service.clone().container_status(request),
        )?
        .status
        .context("ContainerStatus without a status")
    }

    pub fn pod_sandbox_status(&self, sandbox: &str) -> Result<PodSandboxStatus> {
        let request = PodSandboxStatusRequest {
            pod_sandbox_id: sandbox.to_string(),
            verbose: false,
        };
        self.call(
            "PodSandboxStatus",
            self.service.clone().pod_sandbox_status(request),
        )?
        .status
        .context("PodSandboxStatus without a status")
    }

    pub fn list_pod_sandboxes(&self) -> Result<Vec<PodSandbox>> {
        Ok(self
            .call(
                "ListPodSandbox",
                self.service
                    .clone()
                    .list_pod_sandbox(ListPodSandboxRequest { filter: None }),
            )?
            .items)
    }

    pub fn list_containers(&self) -> Result<Vec<Container>> {
        Ok(self
            .call(
                "ListContainers",
                self.service
                    .clone()
                    .list_containers(ListContainersRequest { filter: None }),
            )?
            .containers)
    }

    /// Every sandbox's and container's id.
    pub fn ids(&self) -> Vec<String> {
        let sandboxes = self.list_pod_sandboxes().unwrap_or_default();
        let containers = self.list_containers().unwrap_or_default();
        sandboxes
            .into_iter()
            .map(|s| s.id)
            .chain(containers.into_iter().map(|c| c.id))
            .collect()
    }

    /// `StopContainer`: SIGTERM (or the image's stop signal), SIGKILL after
    /// `grace_s` seconds.
    pub fn stop_container(&self, container: &str, grace_s: i64) -> Result<()> {
        let request = StopContainerRequest {
            container_id: container.to_string(),
            timeout: grace_s,
        };
        self.call(
            "StopContainer",
            self.service.clone().stop_container(request),
        )?;
        Ok(())
    }

    pub fn remove_container(&self, container: &str) -> Result<()> {
        let request = RemoveContainerRequest {
            container_id: container.to_string(),
        };
        self.call(
            "RemoveContainer",
            self.service.clone().remove_container(request),
        )?;
        Ok(())
    }

    pub fn stop_pod_sandbox(&self, sandbox: &str) -> Result<()> {
        let request = StopPodSandboxRequest {
            pod_sandbox_id: sandbox.to_string(),
        };
        self.call(
            "StopPodSandbox",
            self.service.clone().stop_pod_sandbox(request),
        )?;
        Ok(())
    }

    pub fn remove_pod_sandbox(&self, sandbox: &str) -> Result<()> {
        let request = RemovePodSandboxRequest {
            pod_sandbox_id: sandbox.to_string(),
        };
        self.call(
            "RemovePodSandbox",
            self.service.clone().remove_pod_sandbox(request),
        )?;
        Ok(())
    }
}

pub fn image_spec(image: &str) -> ImageSpec {
    ImageSpec {
        image: image.to_string(),
        ..ImageSpec::default()
    }
}
