//! tests/apps/parity and single-wasm images under the shim, in containers on
//! a real containerd (`e2e::node`, as tests/tests/deploy.rs runs them): the
//! app as Spin's artifact answers everything it answers from a directory
//! (chaining, dependencies, its Redis subscribers against a
//! `redis-server` on loopback); `SPIN_COMPONENTS_TO_RETAIN` keeps the
//! components named and refuses a broken chain at start; Spin 4.1's
//! middleware runs in front of its route as from a directory; an artifact of one
//! wasm and no locked app (Spin's wasm layer) runs as a one-component app
//! (`wkg`'s `application/wasm` image runs through CRI: tests/tests/cri).
//! Skipped, saying what is missing, where the machine cannot run the node.

use e2e::get;
use e2e::node::{self, Node};
use e2e::parity::{answers_everything, app, middleware};
use e2e::registry::hello_app;
use serde_json::Value;

fn node_can_run(test: &str) -> bool {
    let missing = node::missing();
    if !missing.is_empty() {
        eprintln!("skipped: {test} needs {}", missing.join(", "));
    }
    missing.is_empty()
}

#[test]
fn the_parity_app_answers_everything_in_a_container_and_keeps_what_it_is_told() {
    if !node_can_run("the parity app in a container") {
        return;
    }
    let node = Node::start();
    let image = node.push_artifact_and_pull(&app().join("spin.toml"), "parity:artifact");
    let redis = e2e::brokers::redis();
    let address = redis
        .as_ref()
        .map(|r| format!("SPIN_VARIABLE_REDIS_ADDRESS={}", e2e::parity::redis_url(r)));
    let mut env = vec![];
    match &address {
        Some(address) => env.extend(["--env", address.as_str()]),
        None => env.extend([
            "--env",
            "SPIN_COMPONENTS_TO_RETAIN=front,back,secret,strict",
        ]),
    }
    let container = node.run("parity", &image, &env);
    answers_everything(&container.url(""), redis.as_ref());
    drop(container);
    // Only front and back: the others are not served.
    let kept = node.run(
        "parity-kept",
        &image,
        &["--env", "SPIN_COMPONENTS_TO_RETAIN=front,back"],
    );
    assert_eq!(get(&kept.url("/front/hello")).text(), "hello from front");
    assert_eq!(get(&kept.url("/strict/hello")).status, 404);
    drop(kept);
    // back chains to front: back alone stops the start, with Spin's words.
    let (status, log) = node.run_to_exit(
        "parity-broken",
        &image,
        &["--env", "SPIN_COMPONENTS_TO_RETAIN=back"],
    );
    assert!(!status.success(), "{log}");
    assert!(
        log.contains(
            "Selected component 'back' cannot use service chaining to unselected component"
        ),
        "{log}"
    );
}

#[test]
fn a_single_wasm_image_runs_as_a_one_component_app() {
    if !node_can_run("a single-wasm image") {
        return;
    }
    let node = Node::start();
    // Spin's artifact of hello without its locked app: one wasm layer.
    node.push_artifact_and_pull(
        &hello_app(&node.scratch("hello-app"), "single"),
        "single:artifact",
    );
    let (status, body) = node
        .registry
        .get("/v2/single/manifests/artifact", true)
        .expect("the registry answers");
    assert_eq!(status, 200);
    let mut manifest: Value = serde_json::from_slice(&body).unwrap();
    manifest["layers"]
        .as_array_mut()
        .unwrap()
        .retain(|l| l["mediaType"] == "application/vnd.wasm.content.layer.v1+wasm");
    let media_type = "application/vnd.oci.image.manifest.v1+json";
    node.registry.put_manifest(
        "single",
        "wasm-only",
        media_type,
        manifest.to_string().as_bytes(),
    );
    // What `wkg oci push` writes (a wasm config) `ctr run` cannot run: it reads
    // only OCI and Docker image configs. tests/tests/cri runs it as a pod
    // (`a_wkg_wasm_image_runs_as_a_one_component_pod`), as the kubelet would.
    let image = node.pull("single:wasm-only", true);
    let container = node.run("wasm-only", &image, &[]);
    let answer = get(&container.url("/hello"));
    assert_eq!(
        (answer.status, answer.text().as_str()),
        (200, "Hello, World!")
    );
}

#[test]
fn middleware_runs_in_a_container_as_from_the_directory() {
    if !node_can_run("middleware in a container") {
        return;
    }
    // The parity app's Redis subscribers need a server; the middleware's
    // copies of `back` have ids the push makes, so nothing is left out.
    let Some(redis) = e2e::brokers::redis() else {
        eprintln!("skipped: middleware in a container needs redis-server");
        return;
    };
    let node = Node::start();
    let dir = node.scratch("parity-middleware");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = middleware::manifest(&dir, false);
    let image = node.push_artifact_and_pull(&manifest, "parity-middleware:artifact");
    let address = format!(
        "SPIN_VARIABLE_REDIS_ADDRESS={}",
        e2e::parity::redis_url(&redis)
    );
    let container = node.run("parity-middleware", &image, &["--env", &address]);
    middleware::runs_in_front_of_its_route(&container.url(""));
    middleware::reaches_only_what_it_inherits(&container.url(""));
}
