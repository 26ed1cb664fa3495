//! Hostile Spin artifacts for the boundary tests: a real app pushed with
//! `spinbench registry push` to the test registry ([`crate::registry`]), then
//! copies of it under other tags whose locked app was changed by hand and
//! which carry extra layers (archives with links, archives that inflate to
//! gigabytes), as anyone able to push to a registry could write them. The
//! config and the manifest are rewritten to name the changed locked app, so
//! each copy is a well-formed artifact whose only fault is its content.

use crate::registry::{self, Registry};
use crate::{artifact, run_command_to_exit, sha256_digest};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Spin's media types (spinframework/spin v4.0.2 `crates/oci/src/client.rs`).
pub const LOCKED_APP: &str = "application/vnd.fermyon.spin.application.v1+config";
pub const ARCHIVE: &str = "application/vnd.wasm.content.bundle.v1.tar+gzip";
const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const CONFIG: &str = "application/vnd.oci.image.config.v1+json";
const LOCKED_APP_LABEL: &str = "com.fermyon.spin.lockedAppDigest";

/// A pushed app whose copies can be changed.
pub struct Base {
    pub registry: &'static Registry,
    pub repository: String,
    manifest: Value,
    config: Value,
    pub locked: Value,
}

impl Base {
    /// `registry::hello_app` (written under `dir`) pushed to `repository:base`
    /// with `spinbench registry push`, its manifest, config and locked app read back.
    pub fn push(registry: &'static Registry, dir: &Path, repository: &str) -> Base {
        let manifest_path = registry::hello_app(&dir.join("app"), repository);
        let reference = registry.reference(&format!("{repository}:base"));
        let mut push = Command::new(artifact("release/spinbench"));
        push.args(["registry", "push", "--insecure", "-f"])
            .arg(&manifest_path)
            .arg(&reference)
            .env("DOCKER_CONFIG", registry.docker_config(dir))
            .env("XDG_CONFIG_HOME", dir.join("config-home"));
        let (status, output) = run_command_to_exit(push, None, Duration::from_mins(2))
            .expect("spinbench registry push ends");
        assert!(status.success(), "push {reference}: {output}");
        let manifest = json_at(registry, &format!("/v2/{repository}/manifests/base"));
        let blob = |descriptor: &Value| {
            json_at(
                registry,
                &format!(
                    "/v2/{repository}/blobs/{}",
                    descriptor["digest"].as_str().unwrap()
                ),
            )
        };
        let config = blob(&manifest["config"]);
        let locked = blob(manifest["layers"].as_array().unwrap().last().unwrap());
        Base {
            registry,
            repository: repository.to_string(),
            manifest,
            config,
            locked,
        }
    }

    /// The app's one component's wasm digest.
    pub fn wasm_digest(&self) -> String {
        self.locked["components"][0]["source"]["digest"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Pushes a copy as `repository:tag` whose locked app is `locked`, with
    /// `extra` layers (media type, bytes) before it; returns its reference.
    pub fn variant(&self, tag: &str, locked: &Value, extra: &[(&str, Vec<u8>)]) -> String {
        let repository = &self.repository;
        let locked_bytes = serde_json::to_vec(locked).unwrap();
        let locked_digest = self.registry.put_blob(repository, &locked_bytes);
        let mut layers: Vec<Value> = self.manifest["layers"].as_array().unwrap().clone();
        layers.pop();
        for (media_type, bytes) in extra {
            let digest = self.registry.put_blob(repository, bytes);
            layers.push(json!({ "mediaType": media_type, "digest": digest, "size": bytes.len() }));
        }
        layers.push(json!({
            "mediaType": LOCKED_APP, "digest": locked_digest, "size": locked_bytes.len()
        }));
        let mut config = self.config.clone();
        config["config"]["Labels"][LOCKED_APP_LABEL] = locked_digest.into();
        let config_bytes = serde_json::to_vec(&config).unwrap();
        let config_digest = self.registry.put_blob(repository, &config_bytes);
        let mut manifest = self.manifest.clone();
        manifest["config"] =
            json!({ "mediaType": CONFIG, "digest": config_digest, "size": config_bytes.len() });
        manifest["layers"] = Value::Array(layers);
        self.registry.put_manifest(
            repository,
            tag,
            MANIFEST,
            &serde_json::to_vec(&manifest).unwrap(),
        );
        self.registry.reference(&format!("{repository}:{tag}"))
    }
}

fn json_at(registry: &Registry, path: &str) -> Value {
    let (status, body) = registry.get(path, true).expect("the registry answers");
    assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

/// One entry of a crafted archive.
pub enum Entry<'a> {
    File {
        path: &'a str,
        bytes: &'a [u8],
    },
    /// `size` zero bytes, streamed (a few KiB of archive for gigabytes).
    Zeros {
        path: &'a str,
        size: u64,
    },
    Symlink {
        path: &'a str,
        target: &'a str,
    },
    HardLink {
        path: &'a str,
        target: &'a str,
    },
}

/// A gzipped tar of `entries`, written as Spin's archive layers are, except
/// for what the entries themselves say.
pub fn tar_gz(entries: &[Entry<'_>]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let mut tar = tar::Builder::new(gz);
    for entry in entries {
        let mut header = tar::Header::new_gnu();
        header.set_mode(0o644);
        match entry {
            Entry::File { path, bytes } => {
                header.set_size(bytes.len() as u64);
                header.set_cksum();
                tar.append_data(&mut header, path, *bytes).unwrap();
            }
            Entry::Zeros { path, size } => {
                header.set_size(*size);
                header.set_cksum();
                let zeros = std::io::Read::take(std::io::repeat(0), *size);
                tar.append_data(&mut header, path, zeros).unwrap();
            }
            Entry::Symlink { path, target } | Entry::HardLink { path, target } => {
                let kind = if matches!(entry, Entry::Symlink { .. }) {
                    tar::EntryType::Symlink
                } else {
                    tar::EntryType::Link
                };
                header.set_entry_type(kind);
                header.set_size(0);
                tar.append_link(&mut header, path, target).unwrap();
            }
        }
    }
    tar.into_inner().unwrap().finish().unwrap()
}

/// A locked app's file entry naming content by digest.
pub fn file_by_digest(path: &str, bytes: &[u8]) -> Value {
    json!({ "digest": sha256_digest(bytes), "path": path })
}

/// A locked app's file entry with its content inline (base64 without padding).
pub fn file_inline(path: &str, bytes: &[u8]) -> Value {
    use base64::Engine as _;
    json!({
        "inline": base64::engine::general_purpose::STANDARD_NO_PAD.encode(bytes),
        "path": path,
    })
}
