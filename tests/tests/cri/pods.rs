//! Pods through CRI: the function set on spinbench's shim and the native `hello`
//! on runc, in the kubelet's order of calls, reached at their pod IPs.

use e2e::apps::built_function_set;
use e2e::contract::cases;
use e2e::cri::{missing, native_hello, repo, start_node};
use e2e::{Server, artifact};
use spinbench_node::config::{RUNC_HANDLER, SPINBENCH_HANDLER};
use spinbench_node::k8s_cri::v1::ContainerState;
use spinbench_node::{Node, Pod, PodSpec, procs};
use std::time::{Duration, Instant};

/// Whether this machine can run a CRI node; says why not if it cannot.
pub fn node_can_run(test: &str) -> bool {
    let missing = missing();
    if !missing.is_empty() {
        eprintln!("skipped: {test} needs {}", missing.join(", "));
    }
    missing.is_empty()
}

/// A wasm pod of `image` on the `spinbench` handler, listening on port 80 of the
/// pod's own network (the Spin shim's default, set as SpinKube's operator sets it).
pub fn wasm_pod(name: &str, image: &str) -> PodSpec {
    PodSpec {
        name: name.into(),
        handler: SPINBENCH_HANDLER.into(),
        image: image.into(),
        command: vec!["/".into()],
        env: vec![("SPIN_HTTP_LISTEN_ADDR".into(), "0.0.0.0:80".into())],
        ..PodSpec::default()
    }
}

/// Runs `spec`, which must start, or fails with containerd's last lines.
pub fn run(node: &Node, spec: &PodSpec) -> Pod {
    let pod = node
        .run_pod(spec)
        .unwrap_or_else(|e| panic!("{e:#}\n{}", node.log_tail("containerd.log", 30)));
    if let Some(error) = &pod.start_error {
        let log = std::fs::read_to_string(pod.log_path()).unwrap_or_default();
        panic!(
            "{error}\npod log:\n{log}\n{}",
            node.log_tail("containerd.log", 30)
        );
    }
    pod
}

/// Waits (a minute at most) for `path` at the pod's port 80 to answer `200`.
pub fn ready(node: &Node, pod: &Pod, path: &str) -> Duration {
    node.wait_for_200(&pod.url(80, path), Duration::from_mins(1))
        .unwrap_or_else(|e| {
            let log = std::fs::read_to_string(pod.log_path()).unwrap_or_default();
            panic!(
                "{e:#}\npod log:\n{log}\n{}",
                node.log_tail("containerd.log", 30)
            )
        })
}

/// Whether every line of a CRI log is `<RFC 3339 time> <stdout|stderr> <F|P> <text>`.
fn cri_log_lines(log: &str) -> Vec<String> {
    log.lines()
        .map(|line| {
            let mut fields = line.splitn(4, ' ');
            let (time, stream, tag) = (fields.next(), fields.next(), fields.next());
            let time_ok = time.is_some_and(|t| t.len() >= 20 && t.as_bytes()[10] == b'T');
            assert!(
                time_ok
                    && matches!(stream, Some("stdout" | "stderr"))
                    && matches!(tag, Some("F" | "P")),
                "not CRI's log format: {line:?}"
            );
            fields.next().unwrap_or_default().to_string()
        })
        .collect()
}

#[test]
fn the_function_set_runs_as_a_pod_through_cri_and_stops_within_its_grace() {
    if !node_can_run("the function set as a pod") {
        return;
    }
    let node = start_node();
    let image = repo()
        .push_artifact(&node, &built_function_set(), "spinbench:artifact")
        .unwrap();
    // RunPodSandbox (handler `spinbench`), PullImage, CreateContainer, StartContainer.
    let pod = run(&node, &wasm_pod("functions", &image));
    let status = node.cri().container_status(&pod.container).unwrap();
    assert_eq!(
        status.state(),
        ContainerState::ContainerRunning,
        "{status:?}"
    );
    let sandbox = node.cri().pod_sandbox_status(&pod.sandbox).unwrap();
    assert_eq!(sandbox.runtime_handler, SPINBENCH_HANDLER);
    assert!(pod.ip.starts_with("10."), "a pod IP from CNI: {:?}", pod.ip);
    // The readiness probe a Deployment would set.
    ready(&node, &pod, "/.well-known/spin/health");

    // The same host through a pod and on loopback: the same answer to every case.
    let runner = Server::runner(&[]);
    let base = pod.url(80, "");
    for case in cases() {
        let from_pod = node.netns().run(|| case.send_to(&base)).unwrap();
        assert_eq!(from_pod.status, case.expect, "{}", case.describe());
        assert_eq!(
            from_pod,
            case.send_to(&runner.url("")),
            "{}",
            case.describe()
        );
    }

    // A container pod beside it: the static native hello on runc, its own IP.
    let native_image = repo()
        .push_file(&node, &native_hello(), "hello:native")
        .unwrap();
    let native = run(
        &node,
        &PodSpec {
            name: "native".into(),
            handler: RUNC_HANDLER.into(),
            image: native_image,
            args: vec!["--listen".into(), "0.0.0.0:80".into()],
            ..PodSpec::default()
        },
    );
    ready(&node, &native, "/hello");
    assert_ne!(native.ip, pod.ip);

    // The host's lines are the container's log, in CRI's format, where the
    // kubelet (`kubectl logs`) reads them.
    let log = std::fs::read_to_string(pod.log_path()).unwrap();
    let lines = cri_log_lines(&log);
    assert!(
        lines.iter().any(|l| l.contains("Available Routes:")),
        "{log}"
    );

    // StopContainer with the pod's grace (30 s): an in-flight request finishes,
    // then the container exits 0, well within the grace.
    let slow_url = pod.url(80, "/io?ms=1500");
    let (slow, stopped) = std::thread::scope(|scope| {
        let slow = scope.spawn(|| node.get_within(&slow_url, Duration::from_secs(20)));
        std::thread::sleep(Duration::from_millis(300));
        let start = Instant::now();
        node.cri().stop_container(&pod.container, 30).unwrap();
        (slow.join().unwrap(), start.elapsed())
    });
    assert_eq!(slow.unwrap().0, 200, "the in-flight request finished");
    assert!(stopped < Duration::from_secs(10), "{stopped:?}");
    let status = node.cri().container_status(&pod.container).unwrap();
    assert_eq!(status.state(), ContainerState::ContainerExited);
    assert_eq!(status.exit_code, 0, "{status:?}");

    // StopPodSandbox, RemovePodSandbox: nothing of either pod is left.
    for pod in [&pod, &native] {
        pod.stop(node.cri(), 30).unwrap();
        pod.remove(node.cri()).unwrap();
    }
    assert!(node.cri().list_pod_sandboxes().unwrap().is_empty());
    let socket = node.socket().display().to_string();
    let shims = procs::shims_of(&socket);
    assert!(shims.is_empty(), "shims left: {shims:?}");
    for pod in [&pod, &native] {
        let cgroups = procs::cgroup_dirs(pod.cgroup.trim_start_matches('/'));
        let with_tasks: Vec<_> = cgroups
            .iter()
            .filter(|dir| {
                std::fs::read_to_string(dir.join("cgroup.procs"))
                    .is_ok_and(|procs| !procs.trim().is_empty())
            })
            .collect();
        assert!(with_tasks.is_empty(), "{with_tasks:?}");
    }
}

#[test]
fn a_wkg_wasm_image_runs_as_a_one_component_pod() {
    if !node_can_run("a wkg image as a pod") {
        return;
    }
    let node = start_node();
    // What `wkg oci push` writes: a wasm config and one `application/wasm`
    // layer. `ctr run` refuses its config; the kubelet's path takes it.
    let image = repo()
        .push_wasm_package(
            &node,
            &artifact("wasm32-wasip2/release/hello.wasm"),
            "wkg:1",
        )
        .unwrap();
    let pod = run(&node, &wasm_pod("wkg", &image));
    // Spin's one-component app of a lone wasm: every path goes to it.
    ready(&node, &pod, "/hello");
    let (status, body) = node.get(&pod.url(80, "/any/path")).unwrap();
    assert_eq!((status, body.as_str()), (200, "Hello, World!"));
    pod.stop(node.cri(), 30).unwrap();
    pod.remove(node.cri()).unwrap();
}
