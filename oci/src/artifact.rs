//! The OCI artifact of a Spin app, as Spin 4.0.2 writes and reads it
//! (spinframework/spin v4.0.2 `crates/oci/src/client.rs`): an OCI image
//! manifest whose layers are
//! 1. each distinct component's wasm (`application/vnd.wasm.content.layer.v1+wasm`),
//!    then each component's files as data layers (`application/vnd.wasm.content.layer.v1+data`),
//!    one per distinct file over 128 bytes (smaller ones are inline in the locked
//!    app and pushed as no layer) — or, past 499 layers or with
//!    `SPIN_OCI_ARCHIVE_LAYERS` set, one gzipped tar per component of all its
//!    files (`application/vnd.wasm.content.bundle.v1.tar+gzip`);
//! 2. last, the locked app (`application/vnd.fermyon.spin.application.v1+config`),
//!    every content in it named by digest;
//!
//! its config an OCI image config (`architecture: wasm`, `os: wasip1`) whose
//! label `com.fermyon.spin.lockedAppDigest` names the locked app's layer, and
//! its annotations the OCI image title, version, authors, description (when
//! not empty) and creation time. Apps pushed by older Spin versions carry the
//! locked app as the config itself; both are read.

use crate::lock::Locked;
use crate::locked::{ContentRef, LockedApp};
use anyhow::{Context, Result, bail};
use oci_client::client::{Config, ImageLayer};
use oci_client::config::{Architecture, ConfigFile, Os};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use std::collections::{BTreeMap, HashMap};

/// The locked app.
pub const LOCKED_APP_MEDIA_TYPE: &str = "application/vnd.fermyon.spin.application.v1+config";
/// A component's wasm.
pub const WASM_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// A wasm pushed by `wkg`, which Spin also reads as wasm.
pub const WKG_WASM_MEDIA_TYPE: &str = "application/wasm";
/// One file of a component's `files`.
pub const DATA_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+data";
/// A gzipped tar of a component's files.
pub const ARCHIVE_MEDIA_TYPE: &str = "application/vnd.wasm.content.bundle.v1.tar+gzip";
/// The config label naming the locked app's layer.
pub const LOCKED_APP_DIGEST_LABEL: &str = "com.fermyon.spin.lockedAppDigest";
/// Content up to this size is inlined into the locked app, not pushed as a layer.
pub const INLINE_MAX: usize = 128;
/// Registries' lowest layer limit (ECR's 500), the locked app's layer included.
const MAX_LAYERS: usize = 500;
/// Set (to anything), archive layers are written whatever the layer count.
const ARCHIVE_LAYERS_ENV: &str = "SPIN_OCI_ARCHIVE_LAYERS";

/// What a push sends: the layers, the config and the manifest naming them.
pub struct Artifact {
    pub layers: Vec<ImageLayer>,
    pub config: Config,
    pub manifest: OciImageManifest,
    /// The locked app pushed as the last layer.
    pub locked: LockedApp,
}

/// Whether archive layers are asked for (`SPIN_OCI_ARCHIVE_LAYERS` set, as for Spin).
pub fn archive_layers_asked() -> bool {
    std::env::var_os(ARCHIVE_LAYERS_ENV).is_some()
}

/// The artifact of a locked manifest, as `spin registry push` assembles it
/// (with its default `--compose`, which leaves a component without
/// dependencies as it is): archive layers if `archive`, or if one layer per
/// file would be too many.
pub fn assemble(locked: &Locked, archive: bool) -> Result<Artifact> {
    let (mut app, mut layers) = layers_of(locked, archive)?;
    if !archive && layers.len() > MAX_LAYERS - 1 {
        (app, layers) = layers_of(locked, true)?;
    }
    let locked_layer = ImageLayer::new(app.to_json()?, LOCKED_APP_MEDIA_TYPE.into(), None);
    let labels = HashMap::from([(
        LOCKED_APP_DIGEST_LABEL.to_string(),
        locked_layer.sha256_digest(),
    )]);
    layers.push(locked_layer);
    let config_file = ConfigFile {
        architecture: Architecture::Wasm,
        os: Os::Other("wasip1".into()),
        config: Some(oci_client::config::Config {
            labels: Some(labels),
            ..Default::default()
        }),
        ..Default::default()
    };
    let config = Config::oci_v1_from_config_file(config_file, None)?;
    let manifest = OciImageManifest::build(&layers, &config, Some(annotations(&app)));
    Ok(Artifact {
        layers,
        config,
        manifest,
        locked: app,
    })
}

/// The locked app with its content named by digest, and the layers holding
/// that content, each once, in Spin's order.
fn layers_of(locked: &Locked, archive: bool) -> Result<(LockedApp, Vec<ImageLayer>)> {
    let mut app = locked.app.clone();
    let mut layers: Vec<ImageLayer> = Vec::new();
    let mut push = |layer: ImageLayer| {
        if !layers.contains(&layer) {
            layers.push(layer);
        }
    };
    for (component, content) in app.components.iter_mut().zip(&locked.content) {
        let wasm = ImageLayer::new(content.wasm.clone(), WASM_MEDIA_TYPE.into(), None);
        component.source.content = content_ref(&wasm);
        push(wasm);
        // Dependencies and middleware pushed uncomposed, each a wasm layer.
        for (name, dependency) in &mut component.dependencies {
            if let Some(bytes) = content.dependencies.get(name) {
                let layer = ImageLayer::new(bytes.clone(), WASM_MEDIA_TYPE.into(), None);
                dependency.source.content = content_ref(&layer);
                push(layer);
            }
        }
        let middleware = component.trigger_dependencies.values_mut().flatten();
        for (dependency, bytes) in middleware.zip(&content.middleware) {
            let layer = ImageLayer::new(bytes.clone(), WASM_MEDIA_TYPE.into(), None);
            dependency.source.content = content_ref(&layer);
            push(layer);
        }
        let mut files = Vec::new();
        for (place, path) in &content.files {
            let bytes =
                std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            let layer = ImageLayer::new(bytes, DATA_MEDIA_TYPE.into(), None);
            let content = content_ref(&layer);
            // Inline content is pushed as no layer, as Spin works around
            // registries that refuse tiny blobs.
            if !archive && content.inline.is_none() {
                push(layer);
            }
            files.push(crate::locked::ContentPath {
                content,
                path: place.clone(),
            });
        }
        if archive && !content.files.is_empty() {
            push(ImageLayer::new(
                crate::archive::tar_gz(&content.files)?,
                ARCHIVE_MEDIA_TYPE.into(),
                None,
            ));
        }
        component.files = files;
    }
    app.metadata.remove("origin");
    Ok((app, layers))
}

/// Spin's `content_ref_for_layer`: the digest, and the bytes too when small.
fn content_ref(layer: &ImageLayer) -> ContentRef {
    ContentRef {
        inline: (layer.data.len() <= INLINE_MAX).then(|| layer.data.to_vec()),
        digest: Some(layer.sha256_digest()),
        source: None,
    }
}

/// Spin's inferred annotations (`all_annotations`, `InferPredefinedAnnotations::All`).
fn annotations(app: &LockedApp) -> BTreeMap<String, String> {
    use oci_client::annotations as keys;
    let mut annotations = BTreeMap::new();
    let authors: Vec<&str> = app
        .metadata
        .get("authors")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str)
        .collect();
    if !authors.is_empty() {
        annotations.insert(
            keys::ORG_OPENCONTAINERS_IMAGE_AUTHORS.into(),
            authors.join(", "),
        );
    }
    for (key, metadata) in [
        (keys::ORG_OPENCONTAINERS_IMAGE_TITLE, "name"),
        (keys::ORG_OPENCONTAINERS_IMAGE_DESCRIPTION, "description"),
        (keys::ORG_OPENCONTAINERS_IMAGE_VERSION, "version"),
    ] {
        if let Some(value) = app.metadata_str(metadata).filter(|v| !v.is_empty()) {
            annotations.insert(key.into(), value.into());
        }
    }
    annotations.insert(
        keys::ORG_OPENCONTAINERS_IMAGE_CREATED.into(),
        chrono::Utc::now().to_rfc3339(),
    );
    annotations
}

/// Where a pulled manifest keeps its locked app: the config (older Spin) or
/// the last layer of the locked app's type (Spin 4).
pub fn locked_app_descriptor(manifest: &OciImageManifest) -> Result<&OciDescriptor> {
    if manifest.config.media_type == LOCKED_APP_MEDIA_TYPE {
        return Ok(&manifest.config);
    }
    if let Some(layer) = manifest
        .layers
        .iter()
        .rev()
        .find(|layer| layer.media_type == LOCKED_APP_MEDIA_TYPE)
    {
        return Ok(layer);
    }
    let types: Vec<&str> = manifest
        .layers
        .iter()
        .map(|layer| layer.media_type.as_str())
        .collect();
    bail!(
        "not a Spin application: no layer of type {LOCKED_APP_MEDIA_TYPE} (config {}, layers [{}])",
        manifest.config.media_type,
        types.join(", ")
    )
}

/// What an artifact's app is made from, as Spin reads it: its locked app, or,
/// with none, its one wasm layer ([`wasm_package_layer`]).
#[derive(Debug, Clone, Copy)]
pub enum AppSource<'a> {
    Locked(&'a OciDescriptor),
    WasmPackage(&'a OciDescriptor),
}

impl<'a> AppSource<'a> {
    /// The blob the app is read from.
    pub fn descriptor(self) -> &'a OciDescriptor {
        match self {
            AppSource::Locked(descriptor) | AppSource::WasmPackage(descriptor) => descriptor,
        }
    }
}

/// The locked app of `manifest`, else its one wasm layer; the locked app's
/// error where it has neither.
pub fn app_source(manifest: &OciImageManifest) -> Result<AppSource<'_>> {
    match locked_app_descriptor(manifest) {
        Ok(descriptor) => Ok(AppSource::Locked(descriptor)),
        Err(error) => wasm_package_layer(manifest)
            .map(AppSource::WasmPackage)
            .ok_or(error),
    }
}

/// The one wasm layer of an artifact that has no locked app (a package
/// pushed by `wkg`, or one wasm pushed as Spin's wasm layer), which Spin runs
/// as a one-component app ([`crate::locked::LockedApp::for_wasm_package`]).
/// Spin asks only that there be one layer; a layer that is not wasm is
/// refused here rather than at the start.
pub fn wasm_package_layer(manifest: &OciImageManifest) -> Option<&OciDescriptor> {
    match manifest.layers.as_slice() {
        [layer] if is_wasm_layer(&layer.media_type) => Some(layer),
        _ => None,
    }
}

/// Whether a layer holds a component's wasm (Spin's type, or `wkg`'s).
pub fn is_wasm_layer(media_type: &str) -> bool {
    media_type == WASM_MEDIA_TYPE || media_type == WKG_WASM_MEDIA_TYPE
}

/// How a pulled layer is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerKind {
    /// Kept as a blob by its digest (wasm, data, the locked app, anything else).
    Blob,
    /// Kept, and each file inside kept by its own digest.
    Archive,
}

pub fn layer_kind(media_type: &str) -> LayerKind {
    if media_type == ARCHIVE_MEDIA_TYPE {
        LayerKind::Archive
    } else {
        LayerKind::Blob
    }
}

#[cfg(test)]
pub(crate) mod tests;
