//! tests/apps/parity through a registry (Debian's `docker-registry` on
//! loopback): `spinbench registry push` writes it as Spin 4.1 writes an app
//! whose dependencies stay uncomposed (`spin registry push --compose=false`:
//! each dependency a wasm layer, named in the locked app) and
//! `serve -f <reference>` answers everything the directory does;
//! `registry pull -o -c` keeps the components named; a single wasm pushed
//! as `wkg oci push` pushes one runs as a one-component app, as under Spin;
//! Spin 4.1's HTTP middleware, locked uncomposed, runs as from the directory.
//! Skipped (with a line saying so) where `docker-registry` is missing.

use e2e::parity::{answers_everything, app, middleware};
use e2e::registry::Registry;
use e2e::{Scratch, Server, artifact, get, run_command_to_exit};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// `spinbench args...` with the registry's credentials (a Docker config in
/// `scratch`), to its end: success and output.
fn spinbench(registry: &Registry, scratch: &Scratch, args: &[&str]) -> (bool, String) {
    let mut command = Command::new(artifact("release/spinbench"));
    command
        .args(args)
        .env("DOCKER_CONFIG", registry.docker_config(&scratch.0))
        .env("XDG_CONFIG_HOME", scratch.path("config"));
    let (status, output) = run_command_to_exit(command, None, Duration::from_mins(3))
        .unwrap_or_else(|| panic!("spinbench {args:?} ran over three minutes"));
    (status.success(), output)
}

/// `serve -f <reference>` with `extra` flags and `env`.
fn serve(
    registry: &Registry,
    scratch: &Scratch,
    reference: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Server {
    let cache = scratch.path("cache");
    let mut args = vec![
        "serve",
        "-f",
        reference,
        "--insecure",
        "--cache-dir",
        cache.to_str().unwrap(),
        "--state-dir",
        "",
    ];
    args.extend_from_slice(extra);
    let docker = registry.docker_config(&scratch.0);
    let config = scratch.path("config");
    Server::start_configured(
        "parity-registry",
        &artifact("release/spinbench"),
        &args,
        |command, addr| {
            command
                .arg("--listen")
                .arg(addr.to_string())
                .env("DOCKER_CONFIG", &docker)
                .env("XDG_CONFIG_HOME", &config)
                .envs(env.iter().copied());
        },
    )
}

/// `spinbench registry push` of the app at `app` (a directory or manifest)
/// to `reference`, which must succeed.
fn push(registry: &Registry, scratch: &Scratch, app: &Path, reference: &str) {
    let (ok, output) = spinbench(
        registry,
        scratch,
        &[
            "registry",
            "push",
            "--insecure",
            "-f",
            app.to_str().unwrap(),
            reference,
        ],
    );
    assert!(ok, "{output}");
}

/// The locked app of `repository:tag`.
fn locked_app(registry: &Registry, repository: &str, tag: &str) -> Value {
    let get_json = |path: &str| -> Value {
        let (status, body) = registry.get(path, true).expect("the registry answers");
        assert_eq!(status, 200, "{path}");
        serde_json::from_slice(&body).unwrap()
    };
    let manifest = get_json(&format!("/v2/{repository}/manifests/{tag}"));
    let locked = manifest["layers"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    get_json(&format!(
        "/v2/{repository}/blobs/{}",
        locked["digest"].as_str().unwrap()
    ))
}

#[test]
fn the_parity_app_pushed_and_served_by_reference_answers_everything() {
    let Some(registry) = Registry::shared() else {
        return;
    };
    let scratch = Scratch::new("parity-registry");
    let reference = registry.reference("parity:1");
    let app = app();
    push(registry, &scratch, &app, &reference);
    // Spin 4.1's locked app: the dependency uncomposed, each host
    // requirement named.
    let locked = locked_app(registry, "parity", "1");
    let component = |id: &str| -> Value {
        locked["components"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no component {id}: {locked}"))
            .clone()
    };
    let front = component("front");
    let greet = &front["dependencies"]["spinbench:parity/greet"];
    assert_eq!(
        greet["inherit"],
        serde_json::json!({ "Some": ["environment"] })
    );
    assert!(
        greet["source"]["digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(
        front["host_requirements"]["local_service_chaining"],
        "required"
    );
    assert!(
        locked["must_understand"]
            .as_array()
            .unwrap()
            .contains(&"component_host_requirements".into())
    );

    let redis = e2e::brokers::redis();
    let address = redis.as_ref().map(e2e::parity::redis_url);
    let (extra, env): (Vec<&str>, Vec<(&str, &str)>) = match &address {
        Some(address) => (
            vec![],
            vec![("SPIN_VARIABLE_REDIS_ADDRESS", address.as_str())],
        ),
        None => (vec!["-c", "front,back,secret,strict"], vec![]),
    };
    let server = serve(registry, &scratch, &reference, &extra, &env);
    answers_everything(&server.url(""), redis.as_ref());
    drop(server);
    pull_keeps_the_named_components(registry, &scratch, &reference);
}

/// `registry pull -o -c`: only the components named, and one that chains to
/// a component left out refused.
fn pull_keeps_the_named_components(registry: &Registry, scratch: &Scratch, reference: &str) {
    let dir = scratch.path("pulled");
    let (ok, output) = spinbench(
        registry,
        scratch,
        &[
            "registry",
            "pull",
            "--insecure",
            "--cache-dir",
            scratch.path("cache").to_str().unwrap(),
            "-o",
            dir.to_str().unwrap(),
            "-c",
            "front,back",
            reference,
        ],
    );
    assert!(ok, "{output}");
    let pulled = std::fs::read_to_string(dir.join("spin.toml")).unwrap();
    let kept = spinbench_host_ids(&pulled);
    assert_eq!(kept, ["back", "front"], "{pulled}");
    let (ok, output) = spinbench(
        registry,
        scratch,
        &[
            "registry",
            "pull",
            "--insecure",
            "--cache-dir",
            scratch.path("cache").to_str().unwrap(),
            "-o",
            scratch.path("refused").to_str().unwrap(),
            "-c",
            "back",
            reference,
        ],
    );
    assert!(!ok);
    assert!(
        output.contains("cannot use service chaining to unselected component"),
        "{output}"
    );
}

/// The component ids of a manifest's text.
fn spinbench_host_ids(text: &str) -> Vec<String> {
    let doc: toml::Table = toml::from_str(text).unwrap();
    doc["component"]
        .as_table()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[test]
fn a_single_wasm_pushed_as_wkg_pushes_it_runs_as_a_one_component_app() {
    let Some(registry) = Registry::shared() else {
        return;
    };
    let scratch = Scratch::new("parity-wkg");
    let wasm = std::fs::read(artifact("wasm32-wasip2/release/hello.wasm")).unwrap();
    // What `wkg oci push` writes (the `oci-wasm` crate's Wasm OCI artifact):
    // a wasm config and the component as the one `application/wasm` layer.
    let layer = registry.put_blob("wkg/hello", &wasm);
    let config = br#"{"created":"2026-12-04T00:00:00Z","architecture":"wasm","os":"wasip2","layerDigests":[],"component":{"exports":[],"imports":[]}}"#;
    let config_digest = registry.put_blob("wkg/hello", config);
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": { "mediaType": "application/vnd.wasm.config.v0+json", "digest": config_digest, "size": config.len() },
        "layers": [{ "mediaType": "application/wasm", "digest": layer, "size": wasm.len() }],
    });
    registry.put_manifest(
        "wkg/hello",
        "1",
        "application/vnd.oci.image.manifest.v1+json",
        manifest.to_string().as_bytes(),
    );
    let server = serve(
        registry,
        &scratch,
        &registry.reference("wkg/hello:1"),
        &[],
        &[],
    );
    let answer = get(&server.url("/hello"));
    assert_eq!(
        (answer.status, answer.text().as_str()),
        (200, "Hello, World!")
    );
    // One component on every path, as Spin's `from_wasm_file` routes it.
    assert!(
        server.log().contains("inline-component1"),
        "{}",
        server.log()
    );
}

#[test]
fn middleware_pushed_and_served_by_reference_runs_as_from_the_directory() {
    let Some(registry) = Registry::shared() else {
        return;
    };
    let scratch = Scratch::new("parity-middleware");
    let dir = scratch.path("app");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = middleware::manifest(&dir, false);
    let reference = registry.reference("parity-middleware:1");
    push(registry, &scratch, &manifest, &reference);
    // Locked as Spin 4.1 locks it: each trigger's middleware on a copy of
    // `back` of its own, uncomposed, with the `middleware` host requirement.
    let locked = locked_app(registry, "parity-middleware", "1");
    let copies: Vec<&Value> = locked["components"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["trigger_dependencies"]["middleware"].is_array())
        .collect();
    assert_eq!(copies.len(), 2, "{locked}");
    let mut retained = vec!["front".to_string(), "back".to_string()];
    for copy in copies {
        let id = copy["id"].as_str().unwrap();
        assert!(id.starts_with("back-for-"), "{locked}");
        assert_eq!(copy["host_requirements"]["middleware"], "required");
        retained.push(id.to_string());
    }
    let retained = retained.join(",");
    let server = serve(registry, &scratch, &reference, &["-c", &retained], &[]);
    middleware::runs_in_front_of_its_route(&server.url(""));
    middleware::reaches_only_what_it_inherits(&server.url(""));
}
