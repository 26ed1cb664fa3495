//! Spin apps as OCI artifacts, as Spin 4.0.2 pushes, pulls and runs them
//! (`spin registry push`, `spin registry pull`, `spin up -f <reference>`;
//! spinframework/spin `crates/oci`): the library behind `spinbench registry`
//! and `serve`/`compare -f <reference>`, and the one the containerd shim reads
//! the same artifact with.
//!
//! - [`locked`]: Spin's locked app, the application an artifact carries;
//! - [`lock`]: a manifest on disk locked, as Spin locks it before a push;
//! - [`artifact`]: the layers, config and manifest of the artifact (media
//!   types, annotations, data and archive layers), and where a pulled one
//!   keeps its locked app; [`archive`]: its archive layers;
//! - [`store`]: the content-addressed store pulls land in (every blob checked
//!   against its digest, nothing visible until whole);
//! - [`unlock`]: a locked app made an app directory the host serves (a
//!   manifest, the wasm and files by digest), every name checked and
//!   everything written beneath the directory ([`boundary`]);
//! - [`client`]: the registry, through the `oci-client` crate; [`auth`]:
//!   credentials as Spin finds them; [`reference`]: references parsed.

// Every line leaves whole, in one write (`lines`): never `println!`/`eprintln!`.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod archive;
pub mod artifact;
pub mod auth;
pub mod boundary;
pub mod client;
mod fetch;
pub mod lock;
pub mod locked;
pub mod pull;
pub mod reference;
pub mod store;
pub mod unlock;

pub use boundary::PullLimits;
pub use client::Downloaded;
pub use pull::{Pulled, pull, pull_into};

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// How to reach a registry, and where pulled artifacts are kept.
#[derive(Debug, Clone)]
pub struct Options {
    /// Plain HTTP instead of HTTPS (Spin's `--insecure`), for a registry on loopback.
    pub insecure: bool,
    /// The content-addressed store's directory.
    pub store: PathBuf,
    /// Where `source = { url }` components are kept when pushing an app that has them.
    pub cache_dir: Option<PathBuf>,
    /// What a pull may hold: sizes and a deadline.
    pub limits: PullLimits,
}

impl Options {
    /// The store under a cache directory: `<cache_dir>/registry`.
    pub fn store_under(cache_dir: &Path) -> PathBuf {
        cache_dir.join("registry")
    }
}

/// What a push sent.
#[derive(Debug, Clone)]
pub struct Pushed {
    pub digest: String,
    pub layers: usize,
    pub bytes: u64,
}

/// Pushes the app of the manifest at `manifest` to `reference`, as `spin
/// registry push` does.
pub fn push(manifest: &Path, reference: &str, options: &Options) -> Result<Pushed> {
    let locked = lock::lock(manifest, options.cache_dir.as_deref())
        .with_context(|| format!("locking {}", manifest.display()))?;
    let artifact = artifact::assemble(&locked, artifact::archive_layers_asked())?;
    let registry = client::Registry::new(reference, options.insecure)?;
    let digest = client::block_on(registry.push(&artifact))?;
    Ok(Pushed {
        digest,
        layers: artifact.layers.len(),
        bytes: artifact.layers.iter().map(|l| l.data.len() as u64).sum(),
    })
}

/// Checks `user` and `password` against `server`, then keeps them in
/// [`auth::login_file`] for later pushes and pulls.
pub fn login(server: &str, user: &str, password: &str, insecure: bool) -> Result<PathBuf> {
    let server = auth::server_key(server);
    let registry = client::Registry::with_credentials(&server, user, password, insecure)?;
    client::block_on(registry.check_credentials())?;
    let path =
        auth::login_file().context("no configuration directory (set XDG_CONFIG_HOME or HOME)")?;
    let mut file = auth::AuthFile::load(&path).unwrap_or_default();
    file.insert(&server, user, password);
    file.save(&path)?;
    Ok(path)
}

/// Whether `text` looks like an OCI reference rather than a path, by Spin's
/// rule (spinframework/spin v4.0.2 `crates/oci/src/lib.rs`,
/// `is_probably_oci_reference`), asked only of something that is not a file:
/// it parses as one, and names a tag other than an implied `latest`, or a
/// registry of its own (not Docker Hub, which the parser assumes for
/// `dir/spin.toml`).
pub fn is_probably_reference(text: &str) -> bool {
    let Ok(reference) = reference::parse(text) else {
        return false;
    };
    if reference.tag() != Some("latest") || text.ends_with(":latest") {
        return true;
    }
    !reference.registry().contains("docker") || text.contains("docker")
}

#[cfg(test)]
mod tests {
    #[test]
    fn references_are_told_from_paths_as_spin_tells_them() {
        for reference in [
            "127.0.0.1:5000/spinbench:0.1.0",
            "ghcr.io/me/app:1.0",
            "ghcr.io/me/app",
            "ghcr.io/me/app@sha256:0123456789012345678901234567890123456789012345678901234567890123",
            "me/app:latest",
        ] {
            assert!(super::is_probably_reference(reference), "{reference}");
        }
        for path in ["spin.toml", "tests/template-app", "my-app", "Spin.toml"] {
            assert!(!super::is_probably_reference(path), "{path}");
        }
    }
}
