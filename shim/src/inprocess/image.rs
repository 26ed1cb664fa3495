//! The container's image read from containerd's content store, as runwasi's
//! library reads it for the container design: the container's image, its
//! manifest (from an index, the `wasi/wasm` one), and the layers of the types the
//! shim reads ([`artifact::LAYER_TYPES`]). Everything read is bounded in size and
//! checked against its digest before use: the store is containerd's, but what it
//! holds came from a registry. The bounds are a pull's (`PullLimits`, from the
//! shim's environment), as for the container design's layers.

use crate::artifact::LAYER_TYPES;
use anyhow::{Context, Result, bail};
use containerd_client::services::v1::containers_client::ContainersClient;
use containerd_client::services::v1::content_client::ContentClient;
use containerd_client::services::v1::images_client::ImagesClient;
use containerd_client::services::v1::{GetContainerRequest, GetImageRequest, ReadContentRequest};
use containerd_client::tonic::Request;
use containerd_client::tonic::transport::Channel;
use containerd_shim_wasm::sandbox::context::WasmLayer;
use oci_spec::image::{Descriptor, ImageIndex, ImageManifest, MediaType};
use sha2::{Digest as _, Sha256};
use spinbench_oci::PullLimits;

/// containerd, for one namespace.
pub struct Store {
    channel: Channel,
    namespace: String,
}

impl Store {
    pub async fn connect(address: &str, namespace: &str) -> Result<Store> {
        let channel = containerd_client::connect(address.trim_start_matches("unix://"))
            .await
            .with_context(|| format!("connecting to containerd at {address}"))?;
        Ok(Store {
            channel,
            namespace: namespace.to_string(),
        })
    }

    fn request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        if let Ok(value) = self.namespace.parse() {
            request.metadata_mut().insert("containerd-namespace", value);
        }
        request
    }

    /// The wasm layers of container `id`'s image (none for an image of files).
    pub async fn wasm_layers(&self, id: &str, limits: &PullLimits) -> Result<Vec<WasmLayer>> {
        let container = ContainersClient::new(self.channel.clone())
            .get(self.request(GetContainerRequest { id: id.into() }))
            .await
            .context("containerd: the container")?
            .into_inner()
            .container
            .context("containerd: no container")?;
        let image = ImagesClient::new(self.channel.clone())
            .get(self.request(GetImageRequest {
                name: container.image.clone(),
            }))
            .await
            .with_context(|| format!("containerd: image {}", container.image))?
            .into_inner()
            .image
            .and_then(|i| i.target)
            .context("containerd: the image has no target")?;
        let manifest = self
            .manifest(&image.media_type, &image.digest, limits.max_manifest)
            .await?;
        let mut layers = Vec::new();
        let mut total: u64 = 0;
        for descriptor in manifest.layers() {
            if !LAYER_TYPES.contains(&descriptor.media_type().to_string().as_str()) {
                continue;
            }
            total = total.saturating_add(descriptor.size());
            if total > limits.max_pull {
                bail!(
                    "the image's wasm layers exceed {} MiB",
                    limits.max_pull >> 20
                );
            }
            let layer = self
                .read(
                    descriptor.digest().as_ref(),
                    descriptor.size(),
                    limits.max_layer,
                )
                .await?;
            layers.push(WasmLayer {
                config: descriptor.clone(),
                precompiled: false,
                layer,
            });
        }
        Ok(layers)
    }

    /// The image manifest at `digest`; from an index, its `wasi/wasm` manifest.
    async fn manifest(&self, media_type: &str, digest: &str, limit: u64) -> Result<ImageManifest> {
        let bytes = self.read(digest, 0, limit).await?;
        if media_type == MediaType::ImageIndex.to_string()
            || media_type == "application/vnd.docker.distribution.manifest.list.v2+json"
        {
            let index: ImageIndex = serde_json::from_slice(&bytes).context("the image's index")?;
            let chosen: &Descriptor = index
                .manifests()
                .iter()
                .find(|m| {
                    m.platform()
                        .as_ref()
                        .is_some_and(|p| p.os().to_string() == "wasi")
                })
                .or_else(|| index.manifests().first())
                .context("the image's index lists no manifest")?;
            let bytes = self
                .read(chosen.digest().as_ref(), chosen.size(), limit)
                .await?;
            return serde_json::from_slice(&bytes).context("the image's manifest");
        }
        serde_json::from_slice(&bytes).context("the image's manifest")
    }

    /// Blob `digest`, of `size` bytes (0: unknown) up to `limit`, checked against
    /// its digest.
    async fn read(&self, digest: &str, size: u64, limit: u64) -> Result<Vec<u8>> {
        if size > limit {
            bail!("{digest}: {size} bytes, over the {limit}-byte bound");
        }
        let mut stream = ContentClient::new(self.channel.clone())
            .read(self.request(ReadContentRequest {
                digest: digest.into(),
                offset: 0,
                size: 0,
            }))
            .await
            .with_context(|| format!("containerd: content {digest}"))?
            .into_inner();
        let mut bytes = Vec::new();
        while let Some(chunk) = stream.message().await? {
            if (bytes.len() + chunk.data.len()) as u64 > limit {
                bail!("{digest}: over the {limit}-byte bound");
            }
            bytes.extend_from_slice(&chunk.data);
        }
        let hex = digest
            .strip_prefix("sha256:")
            .with_context(|| format!("{digest}: not a sha256 digest"))?;
        let actual = Sha256::digest(&bytes);
        if format!("{actual:x}") != hex {
            bail!("{digest}: the content does not match its digest");
        }
        Ok(bytes)
    }
}
