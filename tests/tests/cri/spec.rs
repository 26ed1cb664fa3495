//! What a pod spec sets reaches the host through CRI: environment variables
//! become Spin variables, the memory limit sizes the pool, the CPU limit is the
//! container's CFS quota, a hostname is the pod's own, probes answer; and bad
//! images and refused apps surface in the container's CRI status.

use super::pods::{node_can_run, ready, run, wasm_pod};
use e2e::apps::one_component_app;
use e2e::cri::{repo, start_node};
use e2e::registry::hello_app;
use e2e::{artifact, workspace_root};
use spinbench_node::k8s_cri::v1::ContainerState;
use spinbench_node::{Node, Pod, PodSpec, procs};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The container's cgroup in the hierarchy of `controller` (cgroup v1), or the
/// unified one (v2).
fn container_cgroup(pod: &Pod, controller: &str) -> PathBuf {
    let relative = format!("{}/{}", pod.cgroup.trim_start_matches('/'), pod.container);
    let v1 = Path::new("/sys/fs/cgroup").join(controller).join(&relative);
    if v1.is_dir() {
        return v1;
    }
    procs::cgroup_dirs(&relative)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no cgroup {relative}"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .to_string()
}

#[test]
fn what_a_pod_spec_sets_reaches_the_host() {
    if !node_can_run("a pod spec's settings") {
        return;
    }
    artifact("wasm32-wasip2/release/template_hello.wasm");
    let node = start_node();
    let image = repo()
        .push_artifact(
            &node,
            &workspace_root().join("tests/template-app/spin.toml"),
            "template:artifact",
        )
        .unwrap();
    let mut spec = wasm_pod("spec", &image);
    // A SpinApp's `variables` (the operator sets SPIN_VARIABLE_<NAME>),
    // `resources.limits` (memory 256Mi, cpu 500m) and a hostname.
    spec.env.push((
        "SPIN_VARIABLE_GREETING".into(),
        "Hello from the pod spec".into(),
    ));
    spec.memory_limit = Some(256 << 20);
    spec.cpu_quota = Some((50_000, 100_000));
    spec.hostname = Some("spin-pod".into());
    let pod = run(&node, &spec);
    // Readiness, then liveness: the same probe, answered again.
    ready(&node, &pod, "/.well-known/spin/health");
    let (status, _) = node.get(&pod.url(80, "/.well-known/spin/health")).unwrap();
    assert_eq!(status, 200);

    let (status, body) = node.get(&pod.url(80, "/")).unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Hello from the pod spec"), "{body}");

    // The limit the kubelet sets sizes the pool: (256 - 48) / (16 + 2) slots.
    let log = std::fs::read_to_string(pod.log_path()).unwrap();
    assert!(
        log.contains(
            "memory limit 256 MiB: up to 11 instances of at most 16 MiB linear memory, 10 served at once"
        ),
        "{log}"
    );
    // The container's cgroup has the limits, and the app's process is in it.
    let memory = container_cgroup(&pod, "memory");
    let cpu = container_cgroup(&pod, "cpu");
    if memory.join("memory.limit_in_bytes").exists() {
        assert_eq!(read(&memory.join("memory.limit_in_bytes")), "268435456");
        assert_eq!(read(&cpu.join("cpu.cfs_quota_us")), "50000");
        assert_eq!(read(&cpu.join("cpu.cfs_period_us")), "100000");
    } else {
        assert_eq!(read(&memory.join("memory.max")), "268435456");
        assert_eq!(read(&cpu.join("cpu.max")), "50000 100000");
    }
    assert!(!read(&memory.join("cgroup.procs")).is_empty());
    pod.stop(node.cri(), 30).unwrap();
    pod.remove(node.cri()).unwrap();
}

/// A one-component app directory with `trigger` and `wasm` as its component.
fn app_dir(node: &Node, name: &str, trigger: &str, wasm: &[u8]) -> PathBuf {
    one_component_app(&node.dir().join("apps").join(name), name, trigger, wasm)
}

/// Pods the shim must refuse, each with what its reason must say.
fn bad_pods(node: &Node, hello: &str) -> Vec<(PodSpec, &'static str)> {
    let wasm = std::fs::read(artifact("wasm32-wasip2/release/hello.wasm")).unwrap();
    let notes = node.dir().join("notes.txt");
    std::fs::write(&notes, "not an app\n").unwrap();
    let not_spin = repo().push_file(node, &notes, "notes:1").unwrap();
    let redis = app_dir(
        node,
        "redis",
        "[[trigger.redis]]\nchannel = \"messages\"\ncomponent = \"hello\"\n",
        &wasm,
    );
    let redis = repo().push_files(node, &redis, "redis:1").unwrap();
    let http = "[[trigger.http]]\nroute = \"/hello\"\ncomponent = \"hello\"\n";
    let junk = app_dir(node, "junk", http, b"not wasm");
    let junk = repo().push_files(node, &junk, "junk:1").unwrap();
    let mut small = wasm_pod("small", hello);
    small.memory_limit = Some(64 << 20);
    vec![
        (wasm_pod("not-spin", &not_spin), "not a Spin app"),
        // A Redis trigger with no server to subscribe to.
        (
            wasm_pod("refused", &redis),
            "redis trigger of component \"hello\" has no address",
        ),
        (wasm_pod("junk", &junk), "is not a component"),
        (small, "memory limit (64 MiB)"),
    ]
}

#[test]
fn bad_images_and_refused_apps_surface_as_the_containers_exit_reason() {
    if !node_can_run("refused pods") {
        return;
    }
    let node = start_node();
    let hello = repo()
        .push_artifact(
            &node,
            &hello_app(&node.dir().join("hello"), "cri"),
            "hello:artifact",
        )
        .unwrap();
    let good = run(&node, &wasm_pod("good", &hello));
    ready(&node, &good, "/hello");
    for (spec, reason) in bad_pods(&node, &hello) {
        let pod = node.run_pod(&spec).unwrap();
        let status = pod
            .wait_for_exit(node.cri(), Duration::from_mins(1))
            .unwrap();
        assert_eq!(
            status.state(),
            ContainerState::ContainerExited,
            "{}: {status:?}",
            spec.name
        );
        assert_ne!(status.exit_code, 0, "{}: {status:?}", spec.name);
        // What `kubectl describe` shows: the runtime's message, and the
        // termination message file the kubelet mounted.
        let termination = std::fs::read_to_string(&pod.termination_log).unwrap_or_default();
        let reported = format!("{} {termination}", status.message);
        assert!(
            reported.contains(reason),
            "{}: no {reason:?} in the status ({status:?}) or termination message ({termination:?})",
            spec.name
        );
        let log = std::fs::read_to_string(pod.log_path()).unwrap_or_default();
        assert!(log.contains("Error: "), "{}: {log}", spec.name);
        pod.stop(node.cri(), 30).unwrap();
        pod.remove(node.cri()).unwrap();
        // containerd and the good pod carry on.
        node.cri().version().unwrap();
        let (status, _) = node.get(&good.url(80, "/hello")).unwrap();
        assert_eq!(status, 200, "after {}", spec.name);
    }
}
