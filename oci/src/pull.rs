//! A pull: the manifest a reference names, every blob it needs (fetched
//! only where the store lacks it, each checked against its digest), and the
//! app made runnable from its locked app, kept under the manifest's digest.
//! A second pull of the same artifact downloads no blob; a failed one leaves
//! no app behind, only whole, checked blobs. A pull is bounded by its
//! [`PullLimits`]: the sizes of what it reads and writes, and its deadline.

use crate::boundary::limits::timed_out;
use crate::boundary::{Budget, PullLimits};
use crate::client::{Downloaded, Registry, block_on};
use crate::locked::LockedApp;
use crate::store::Store;
use crate::unlock::{self, MANIFEST_FILE};
use crate::{Options, artifact};
use anyhow::{Context, Result, bail};
use oci_client::manifest::OciImageManifest;
use spinbench_host::manifest::Digest;
use std::path::{Path, PathBuf};

/// A pulled app, ready to serve.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// Its directory: `spin.toml`, `wasm/`, `files/`.
    pub app_dir: PathBuf,
    /// The manifest's digest.
    pub digest: Digest,
    pub downloaded: Downloaded,
}

impl Pulled {
    pub fn manifest_path(&self) -> PathBuf {
        self.app_dir.join(MANIFEST_FILE)
    }
}

/// Pulls `reference` into the store and returns its app, kept there.
pub fn pull(reference: &str, options: &Options) -> Result<Pulled> {
    let store = Store::open(&options.store)?;
    let registry = Registry::new(reference, options.insecure)?;
    let limits = options.limits;
    let budget = Budget::for_pull(&limits);
    block_on(async {
        tokio::time::timeout(
            limits.timeout,
            pull_with(&registry, &store, &limits, &budget),
        )
        .await
        .map_err(|_| anyhow::anyhow!("{}: {}", registry.reference(), timed_out(limits.timeout)))?
    })
}

/// The pull itself, which [`pull`] bounds in time.
async fn pull_with(
    registry: &Registry,
    store: &Store,
    limits: &PullLimits,
    budget: &Budget,
) -> Result<Pulled> {
    let (manifest, digest) = registry.manifest(store, limits).await?;
    let app_dir = store.app_dir(digest);
    if app_dir.join(MANIFEST_FILE).is_file() {
        if blobs_intact(&manifest, store) {
            return Ok(Pulled {
                app_dir,
                digest,
                downloaded: Downloaded::default(),
            });
        }
        // A blob changed on disk (and was removed): make the app again.
        std::fs::remove_dir_all(&app_dir)
            .with_context(|| format!("removing {}", app_dir.display()))?;
    }
    let downloaded = registry
        .fetch_blobs(&manifest, store, limits, budget)
        .await?;
    budget.check_time()?;
    let locked = locked_app(&manifest, store, limits)
        .with_context(|| format!("{}", registry.reference()))?;
    let staged = store.staging_dir()?;
    unlock::write_app(&locked, store, staged.path())
        .with_context(|| format!("{}", registry.reference()))?;
    Store::publish(staged, &app_dir)?;
    Ok(Pulled {
        app_dir,
        digest,
        downloaded,
    })
}

/// Pulls `reference` and writes its app into `dir` (created; an existing
/// one must be empty), which then holds everything it needs.
pub fn pull_into(reference: &str, options: &Options, dir: &Path) -> Result<Pulled> {
    if dir.exists() && std::fs::read_dir(dir)?.next().is_some() {
        bail!("{} is not empty", dir.display());
    }
    let pulled = pull(reference, options)?;
    let store = Store::open(&options.store)?;
    let manifest: OciImageManifest =
        serde_json::from_slice(&store.read(pulled.digest, options.limits.max_manifest)?)?;
    let locked = locked_app(&manifest, &store, &options.limits)?;
    let parent = std::path::absolute(dir)?
        .parent()
        .context("no parent directory")?
        .to_path_buf();
    std::fs::create_dir_all(&parent)?;
    let staged = tempfile::Builder::new()
        .prefix(".spinbench-pull-")
        .tempdir_in(&parent)?;
    unlock::write_app(&locked, &store, staged.path())?;
    let _ = std::fs::remove_dir(dir);
    std::fs::rename(staged.keep(), dir).with_context(|| format!("writing {}", dir.display()))?;
    Ok(Pulled {
        app_dir: dir.to_path_buf(),
        ..pulled
    })
}

/// The locked app a manifest carries, read from the store (parsed whole,
/// so no larger than `--max-manifest-size`); for a single wasm without one,
/// the one-component app Spin runs it as.
fn locked_app(
    manifest: &OciImageManifest,
    store: &Store,
    limits: &PullLimits,
) -> Result<LockedApp> {
    let descriptor = match artifact::app_source(manifest)? {
        artifact::AppSource::Locked(descriptor) => descriptor,
        artifact::AppSource::WasmPackage(layer) => {
            return Ok(LockedApp::for_wasm_package(&layer.digest));
        }
    };
    let bytes = store
        .read(Digest::parse(&descriptor.digest)?, limits.max_manifest)
        .context("the locked app")?;
    LockedApp::from_json(&bytes).context("not a Spin application: its locked app does not parse")
}

/// Whether every blob the manifest names is kept and still matches its
/// digest (a kept app's wasm and files are links to them).
fn blobs_intact(manifest: &OciImageManifest, store: &Store) -> bool {
    std::iter::once(&manifest.config)
        .chain(&manifest.layers)
        .filter(|d| d.media_type != oci_client::manifest::IMAGE_CONFIG_MEDIA_TYPE)
        .all(|descriptor| {
            Digest::parse(&descriptor.digest).is_ok_and(|digest| store.verify(digest).is_ok())
        })
}
