//! The artifact pinned to what Spin 4.0.2 writes (spinframework/spin v4.0.2
//! `crates/oci/src/client.rs`, `push_locked_core`, `assemble_layers`,
//! `content_ref_for_layer`, `all_annotations`; `crates/loader/src/local.rs`
//! for the locked app): media types, the config and its label, the layers'
//! order and deduplication, inline content, the annotations.

use super::*;
use crate::lock;
use serde_json::{Value, json};
use std::path::Path;

/// A core module of about `size` bytes (a custom section of `fill` bytes),
/// valid enough for Spin's check before a push.
pub fn module(fill: u8, size: usize) -> Vec<u8> {
    let mut wasm = b"\0asm\x01\0\0\0".to_vec();
    let payload = 1 + 3 + size;
    wasm.push(0);
    let mut length = payload;
    loop {
        let byte = (length & 0x7f) as u8;
        length >>= 7;
        wasm.push(if length == 0 { byte } else { byte | 0x80 });
        if length == 0 {
            break;
        }
    }
    wasm.push(3);
    wasm.extend_from_slice(b"pad");
    wasm.extend(std::iter::repeat_n(fill, size));
    wasm
}

/// An app of three components: `a` and `b` share one wasm, `a` has files
/// (one small, one large, one excluded), `c` is not triggered.
pub fn write_app(dir: &Path) {
    std::fs::write(dir.join("shared.wasm"), module(1, 300)).unwrap();
    std::fs::write(dir.join("other.wasm"), module(2, 300)).unwrap();
    std::fs::create_dir_all(dir.join("static/sub")).unwrap();
    std::fs::write(dir.join("static/small.txt"), "small").unwrap();
    std::fs::write(dir.join("static/sub/large.bin"), vec![9u8; 1000]).unwrap();
    std::fs::write(dir.join("static/skip.tmp"), "skipped").unwrap();
    std::fs::write(
        dir.join("spin.toml"),
        r#"spin_manifest_version = 2
[application]
name = "pinned"
version = "1.2.3"
authors = ["A <a@example.com>", "B"]
[application.trigger.http]
base = "/base"
[variables]
greeting = { default = "hi" }
token = { required = true, secret = true }
[[trigger.http]]
route = "/a/..."
component = "a"
[[trigger.http]]
id = "named"
route = "/b"
component = "b"
executor = { type = "wagi", argv = "${SCRIPT_NAME}" }
[[trigger.http]]
route = "/static"
static_response = { status_code = 201, body = "made" }
[component.a]
source = "shared.wasm"
description = "A"
files = [{ source = "static", destination = "/www" }]
exclude_files = ["**/*.tmp"]
allowed_outbound_hosts = ["https://example.com"]
allowed_http_hosts = ["api.example.com:8080"]
key_value_stores = ["default"]
sqlite_databases = ["default"]
environment = { MODE = "test" }
variables = { message = "{{ greeting }}" }
[component.a.build]
command = "make a"
watch = ["src/**/*.rs"]
[component.b]
source = "shared.wasm"
[component.c]
source = "other.wasm"
"#,
    )
    .unwrap();
}

fn assembled(archive: bool) -> (Artifact, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    write_app(dir.path());
    let locked = lock::lock(&dir.path().join("spin.toml"), None).unwrap();
    (assemble(&locked, archive).unwrap(), dir)
}

/// The media types of the manifest's layers, in order.
fn layer_types(artifact: &Artifact) -> Vec<&str> {
    artifact
        .manifest
        .layers
        .iter()
        .map(|l| l.media_type.as_str())
        .collect()
}

fn digest(bytes: &[u8]) -> String {
    spinbench_host::manifest::Digest::of(bytes).to_string()
}

#[test]
fn the_layers_are_each_distinct_wasm_then_large_files_then_the_locked_app() {
    let (artifact, _dir) = assembled(false);
    let types = layer_types(&artifact);
    assert_eq!(
        types,
        [
            "application/vnd.wasm.content.layer.v1+wasm",
            "application/vnd.wasm.content.layer.v1+data",
            "application/vnd.wasm.content.layer.v1+wasm",
            "application/vnd.fermyon.spin.application.v1+config",
        ]
    );
    assert_eq!(artifact.manifest.layers[0].digest, digest(&module(1, 300)));
    assert_eq!(artifact.manifest.layers[1].digest, digest(&[9u8; 1000]));
    assert_eq!(artifact.manifest.layers[2].digest, digest(&module(2, 300)));
    // Each layer's descriptor is its data's digest and size, without annotations.
    for (layer, descriptor) in artifact.layers.iter().zip(&artifact.manifest.layers) {
        assert_eq!(descriptor.digest, digest(&layer.data));
        assert_eq!(descriptor.size, i64::try_from(layer.data.len()).unwrap());
        assert!(descriptor.annotations.is_none());
    }
    assert_eq!(artifact.manifest.schema_version, 2);
}

#[test]
fn the_config_is_an_oci_image_config_labelled_with_the_locked_app_digest() {
    let (artifact, _dir) = assembled(false);
    assert_eq!(
        artifact.manifest.config.media_type,
        "application/vnd.oci.image.config.v1+json"
    );
    assert_eq!(
        artifact.manifest.config.digest,
        digest(&artifact.config.data)
    );
    let config: Value = serde_json::from_slice(&artifact.config.data).unwrap();
    assert_eq!(config["architecture"], "wasm");
    assert_eq!(config["os"], "wasip1");
    let locked = artifact.manifest.layers.last().unwrap();
    assert_eq!(
        config["config"]["Labels"],
        json!({ "com.fermyon.spin.lockedAppDigest": locked.digest })
    );
    assert_eq!(
        config["rootfs"],
        json!({ "type": "layers", "diff_ids": [] })
    );
}

#[test]
fn the_annotations_are_spins_inferred_ones() {
    let (artifact, _dir) = assembled(false);
    let annotations = artifact.manifest.annotations.unwrap();
    assert_eq!(annotations["org.opencontainers.image.title"], "pinned");
    assert_eq!(annotations["org.opencontainers.image.version"], "1.2.3");
    assert_eq!(
        annotations["org.opencontainers.image.authors"],
        "A <a@example.com>, B"
    );
    // An empty description is no annotation.
    assert!(!annotations.contains_key("org.opencontainers.image.description"));
    let created = &annotations["org.opencontainers.image.created"];
    assert!(
        chrono::DateTime::parse_from_rfc3339(created).is_ok(),
        "{created}"
    );
    assert_eq!(annotations.len(), 4);
}

#[test]
fn the_locked_app_names_content_by_digest_and_inlines_small_files() {
    let (artifact, _dir) = assembled(false);
    let bytes = &artifact.layers.last().unwrap().data;
    let app: Value = serde_json::from_slice(bytes).unwrap();
    assert_eq!(app["spin_lock_version"], 0);
    assert_eq!(
        app["metadata"],
        json!({
            "name": "pinned",
            "version": "1.2.3",
            "authors": ["A <a@example.com>", "B"],
            "triggers": { "http": { "base": "/base" } },
            "trigger": { "type": "http", "base": "/base" },
        })
    );
    assert_eq!(
        app["variables"],
        json!({ "greeting": { "default": "hi" }, "token": { "secret": true } })
    );
    let triggers = app["triggers"].as_array().unwrap();
    assert_eq!(
        triggers[0],
        json!({ "id": "a-http-trigger", "trigger_type": "http",
                "trigger_config": { "route": "/a/...", "component": "a" } })
    );
    assert_eq!(triggers[1]["id"], "named");
    assert_eq!(
        triggers[1]["trigger_config"]["executor"],
        json!({ "type": "wagi", "argv": "${SCRIPT_NAME}" })
    );
    assert_eq!(triggers[2]["id"], "http-trigger1");
    let a = &app["components"][0];
    assert_eq!(a["id"], "a");
    assert_eq!(
        a["source"],
        json!({ "content_type": "application/wasm", "digest": digest(&module(1, 300)) })
    );
    assert_eq!(
        a["metadata"],
        json!({
            "description": "A",
            "allowed_outbound_hosts": ["https://example.com", "http://api.example.com:8080", "https://api.example.com:8080"],
            "key_value_stores": ["default"],
            "databases": ["default"],
            "build": { "command": "make a", "watch": ["src/**/*.rs"] },
        })
    );
    assert_eq!(a["env"], json!({ "MODE": "test" }));
    assert_eq!(a["config"], json!({ "message": "{{ greeting }}" }));
    assert_eq!(
        a["files"],
        json!([
            { "inline": "c21hbGw", "digest": digest(b"small"), "path": "www/small.txt" },
            { "digest": digest(&[9u8; 1000]), "path": "www/sub/large.bin" },
        ])
    );
    let ids: Vec<&str> = app["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert!(app["metadata"].get("origin").is_none());
}

#[test]
fn archive_layers_hold_each_components_files_in_one_tar_gz() {
    let (artifact, _dir) = assembled(true);
    let types = layer_types(&artifact);
    assert_eq!(
        types,
        [
            WASM_MEDIA_TYPE,
            ARCHIVE_MEDIA_TYPE,
            WASM_MEDIA_TYPE,
            LOCKED_APP_MEDIA_TYPE
        ]
    );
    // The locked app still names each file by its digest.
    let app: Value = serde_json::from_slice(&artifact.layers.last().unwrap().data).unwrap();
    assert_eq!(
        app["components"][0]["files"][1]["digest"],
        digest(&[9u8; 1000])
    );
}

#[test]
fn a_pulled_manifest_keeps_its_locked_app_in_a_layer_or_in_the_config() {
    let (artifact, _dir) = assembled(false);
    let found = locked_app_descriptor(&artifact.manifest).unwrap();
    assert_eq!(found.media_type, LOCKED_APP_MEDIA_TYPE);
    let mut older = artifact.manifest.clone();
    older.layers.pop();
    older.config.media_type = LOCKED_APP_MEDIA_TYPE.into();
    assert_eq!(
        locked_app_descriptor(&older).unwrap().digest,
        older.config.digest
    );
    let mut image = artifact.manifest;
    image.layers.pop();
    let error = locked_app_descriptor(&image).unwrap_err().to_string();
    assert!(error.starts_with("not a Spin application"), "{error}");
}
