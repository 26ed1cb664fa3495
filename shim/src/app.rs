//! Where the app comes from in the container: an image that carries
//! `/spin.toml` and the files it names (the Spin shim's file source:
//! spinframework/containerd-shim-spin v0.24.0, `src/source.rs`), or Spin's OCI
//! artifact, whose layers the library hands over.

use crate::artifact;
use anyhow::{Result, bail};
use containerd_shim_wasm::sandbox::context::{Source, WasmLayer};
use std::path::{Path, PathBuf};

/// The manifest an image with files carries, at the root as the Spin shim reads it.
const MANIFEST_FILE: &str = "spin.toml";
/// Where an artifact's app is made, in the container's own (writable) root.
const ARTIFACT_ROOT: &str = ".spinbench";
/// A runtime config file, where the Spin shim looks for one.
const RUNTIME_CONFIG_FILE: &str = "/runtime-config.toml";

/// The app ready for the host.
pub struct App {
    pub manifest: PathBuf,
    /// Where its compiled code is, when the image came with it.
    pub cache_dir: Option<PathBuf>,
}

/// The app of `source`, inside the container: the image's own `/spin.toml`,
/// or the artifact's layers written out as an app directory.
pub fn materialize(source: &Source<'_>) -> Result<App> {
    match source {
        Source::File(_) => materialize_in(Path::new("/"), &[]),
        Source::Oci(layers) => materialize_in(Path::new("/"), layers),
    }
}

/// The app of a container whose root filesystem is `rootfs`: the artifact's
/// `layers` written out under it, or, with none, the image's own `spin.toml`.
pub fn materialize_in(rootfs: &Path, layers: &[WasmLayer]) -> Result<App> {
    if layers.is_empty() {
        let manifest = rootfs.join(MANIFEST_FILE);
        if !manifest.is_file() {
            bail!(
                "not a Spin app: the image has no /{MANIFEST_FILE}, and no layers of Spin's OCI artifact reached the shim (for an artifact: the shim's log in containerd's says why)"
            );
        }
        return Ok(App {
            manifest,
            cache_dir: None,
        });
    }
    let limits = spinbench_oci::PullLimits::from_env()?;
    let unpacked = artifact::unpack(layers, &rootfs.join(ARTIFACT_ROOT), &limits)?;
    Ok(App {
        manifest: unpacked.manifest,
        cache_dir: unpacked.cache_dir,
    })
}

/// `/runtime-config.toml` when the image has one.
pub fn runtime_config_file() -> Option<PathBuf> {
    Path::new(RUNTIME_CONFIG_FILE)
        .is_file()
        .then(|| RUNTIME_CONFIG_FILE.into())
}
