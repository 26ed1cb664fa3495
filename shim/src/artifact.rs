//! Spin's OCI artifact as containerd-shim-wasm hands it over: the layers of
//! the types the shim names ([`LAYER_TYPES`]) read from containerd's content
//! store, each with its descriptor. They are kept by digest in a store of the
//! layout spinbench's registry code reads (`spinbench_oci::store`), archive
//! layers unpacked into it, and the locked app made an app directory with the
//! code that makes one of a pull (`spinbench_oci::unlock`), so that an app
//! runs the same from `spinbench serve -f <reference>` and from a node.
//!
//! The locked app's layer may come back from the precompile hook
//! ([`crate::precompile`]) as a bundle with the app's compiled code; then that
//! code goes to the compiled-code cache the host loads from.
//!
//! The same bounds as a pull's apply ([`PullLimits`], from the shim's
//! environment: containerd's, which reaches its shims): each layer must be
//! the size its descriptor gives and within `SPINBENCH_MAX_LAYER_SIZE`, the
//! locked app within `SPINBENCH_MAX_MANIFEST_SIZE`, archive layers inflate
//! under the archive bounds, all of it within `SPINBENCH_MAX_PULL_SIZE` and
//! `SPINBENCH_PULL_TIMEOUT`. containerd-shim-wasm 1.0.1 has already read each
//! layer whole into memory from containerd's content store by then
//! (`containerd/client.rs`, `read_content`), as much as containerd pulled:
//! that read is the library's, and is not bounded here.

use crate::bundle;
use anyhow::{Context, Result};
use containerd_shim_wasm::sandbox::context::WasmLayer;
use spinbench_host::manifest::Digest;
use spinbench_oci::artifact::{
    ARCHIVE_MEDIA_TYPE, DATA_MEDIA_TYPE, LOCKED_APP_MEDIA_TYPE, LayerKind, WASM_MEDIA_TYPE,
    WKG_WASM_MEDIA_TYPE, is_wasm_layer, layer_kind,
};
use spinbench_oci::boundary::{Budget, PullLimits};
use spinbench_oci::locked::LockedApp;
use spinbench_oci::store::Store;
use spinbench_oci::{archive, unlock};
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// The layer types the shim reads: those of Spin 4's artifact.
pub const LAYER_TYPES: &[&str] = &[
    WASM_MEDIA_TYPE,
    WKG_WASM_MEDIA_TYPE,
    DATA_MEDIA_TYPE,
    ARCHIVE_MEDIA_TYPE,
    LOCKED_APP_MEDIA_TYPE,
];

/// An app directory made from an artifact's layers.
pub struct Unpacked {
    /// Its `spin.toml`.
    pub manifest: PathBuf,
    /// The locked app's own bytes, as pushed.
    pub locked_json: Vec<u8>,
    /// The compiled code that came with it, if any.
    pub cache_dir: Option<PathBuf>,
}

/// A layer as containerd's content store gave it is the size its descriptor
/// gives (the locked app, also when it came back in a precompiled bundle),
/// within the layer bound, and charged to the unpack's budget.
fn check_size(
    layer: &WasmLayer,
    content: &[u8],
    limits: &PullLimits,
    budget: &Budget,
) -> Result<()> {
    let declared = layer.config.size();
    let size = content.len() as u64;
    if size != declared {
        anyhow::bail!("it is {size} bytes, not the {declared} its descriptor gives");
    }
    limits.check_layer_bytes(layer.config.digest().as_ref(), size)?;
    budget.charge(size)
}

pub fn is_locked_app(layer: &WasmLayer) -> bool {
    layer.config.media_type().to_string() == LOCKED_APP_MEDIA_TYPE
}

/// Makes the app of `layers` under `root`, within `limits`: `store/` (the
/// layers by digest), `app/` (the app directory), `cache/` (compiled code,
/// when it came along).
pub fn unpack(layers: &[WasmLayer], root: &Path, limits: &PullLimits) -> Result<Unpacked> {
    let store = Store::open(&root.join("store"))?;
    let budget = Budget::for_pull(limits);
    let mut locked = None;
    let mut cache_dir = None;
    for layer in layers {
        budget.check_time()?;
        let media_type = layer.config.media_type().to_string();
        let digest = Digest::parse(layer.config.digest().as_ref())?;
        let is_locked_app = media_type == LOCKED_APP_MEDIA_TYPE;
        let (content, compiled) = if is_locked_app {
            bundle::split(&layer.layer, limits)?
        } else {
            (Cow::Borrowed(layer.layer.as_slice()), Vec::new())
        };
        check_size(layer, &content, limits, &budget)
            .with_context(|| format!("layer {digest} ({media_type})"))?;
        if is_locked_app {
            limits.check_document("the locked app", content.len() as u64)?;
        }
        if !compiled.is_empty() {
            let dir = root.join("cache");
            bundle::write_files(&compiled, &dir)?;
            cache_dir = Some(dir);
        }
        if is_locked_app {
            // The last one is the app, as Spin reads it.
            locked = Some(content.to_vec());
        }
        let kept = store
            .write(digest, &content)
            .with_context(|| format!("layer {digest} ({media_type})"))?;
        if layer_kind(&media_type) == LayerKind::Archive {
            archive::unpack_into(&kept, &store, limits, &budget)
                .with_context(|| format!("unpacking archive layer {digest}"))?;
        }
    }
    let (app, locked_json) = match locked {
        Some(json) => (
            LockedApp::from_json(&json).context("not a Spin app: its locked app does not parse")?,
            json,
        ),
        // One wasm and no locked app (`wkg oci push`): a one-component app, as Spin runs it.
        None => match layers {
            [layer] if is_wasm_layer(layer.config.media_type().as_ref()) => {
                let app = LockedApp::for_wasm_package(layer.config.digest().as_ref());
                let json = app.to_json()?;
                (app, json)
            }
            _ => anyhow::bail!(
                "not a Spin app: the image's wasm layers come without a locked app ({LOCKED_APP_MEDIA_TYPE}), and it is not a single wasm"
            ),
        },
    };
    let dir = root.join("app");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    unlock::write_app(&app, &store, &dir)?;
    Ok(Unpacked {
        manifest: dir.join(unlock::MANIFEST_FILE),
        locked_json,
        cache_dir,
    })
}
