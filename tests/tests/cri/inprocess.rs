//! The in-process design through CRI (handler `spinbench-inprocess`, runtime
//! `io.containerd.spinbench-inprocess.v1`): a pod's app served on threads of its
//! shim, no container process, no pause process; with `SPINBENCH_SHIM_SCOPE=node`
//! one shim process serves every pod of the node. Same calls, same contract as the
//! container design (pods.rs), and a teardown that ends.

use super::pods::{node_can_run, ready, run};
use e2e::Server;
use e2e::apps::built_function_set;
use e2e::contract::cases;
use e2e::cri::{repo, start_node_with};
use spinbench_node::config::{INPROCESS_HANDLER, ShimScope};
use spinbench_node::k8s_cri::v1::ContainerState;
use spinbench_node::{Node, Pod, PodSpec, procs};
use std::time::{Duration, Instant};

/// A wasm pod of `image` on the in-process handler, listening on port 80.
fn inprocess_pod(name: &str, image: &str) -> PodSpec {
    PodSpec {
        handler: INPROCESS_HANDLER.into(),
        ..super::pods::wasm_pod(name, image)
    }
}

/// Stops and removes `pods` in the kubelet's order, each within a bound: a
/// task whose exit containerd never sees would hang here.
fn tear_down(node: &Node, pods: &[&Pod]) {
    let start = Instant::now();
    for pod in pods {
        pod.stop(node.cri(), 30).unwrap();
        pod.remove(node.cri()).unwrap();
    }
    let took = start.elapsed();
    assert!(took < Duration::from_secs(20), "teardown took {took:?}");
    let listed = node.cri().list_pod_sandboxes().unwrap();
    for pod in pods {
        assert!(
            listed.iter().all(|sandbox| sandbox.id != pod.sandbox),
            "{} still listed",
            pod.name
        );
    }
}

/// The node's shim processes, waiting (10 s at most) for exiting ones to go.
fn shims_settled(node: &Node, expected: usize) -> Vec<procs::Process> {
    let socket = node.socket().display().to_string();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let shims = procs::shims_of(&socket);
        if shims.len() == expected || Instant::now() > deadline {
            return shims;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_in_process_design_serves_the_function_set_in_its_shim_and_tears_down() {
    if !node_can_run("the in-process design as a pod") {
        return;
    }
    let node = start_node_with(ShimScope::Pod);
    let image = repo()
        .push_artifact(&node, &built_function_set(), "spinbench:artifact")
        .unwrap();
    let pod = run(&node, &inprocess_pod("functions", &image));
    let sandbox = node.cri().pod_sandbox_status(&pod.sandbox).unwrap();
    assert_eq!(sandbox.runtime_handler, INPROCESS_HANDLER);
    ready(&node, &pod, "/.well-known/spin/health");

    // The same answers as the host on loopback.
    let runner = Server::runner(&[]);
    let base = pod.url(80, "");
    for case in cases() {
        let from_pod = node.netns().run(|| case.send_to(&base)).unwrap();
        assert_eq!(
            from_pod,
            case.send_to(&runner.url("")),
            "{}",
            case.describe()
        );
    }

    // The pod is its shim and the library's zygote: no container process, no
    // pause process.
    let shims = shims_settled(&node, 2);
    assert_eq!(shims.len(), 2, "{shims:?}");
    // The host's lines are still the container's log, where the kubelet reads them.
    let log = std::fs::read_to_string(pod.log_path()).unwrap();
    assert!(log.contains("Available Routes:"), "{log}");

    // SIGTERM: the in-flight request finishes, the task exits 0.
    let slow_url = pod.url(80, "/io?ms=1500");
    let slow = std::thread::scope(|scope| {
        let slow = scope.spawn(|| node.get_within(&slow_url, Duration::from_secs(20)));
        std::thread::sleep(Duration::from_millis(300));
        node.cri().stop_container(&pod.container, 30).unwrap();
        slow.join().unwrap()
    });
    assert_eq!(slow.unwrap().0, 200, "the in-flight request finished");
    let status = node.cri().container_status(&pod.container).unwrap();
    assert_eq!(status.state(), ContainerState::ContainerExited);
    assert_eq!(status.exit_code, 0, "{status:?}");

    tear_down(&node, &[&pod]);
    assert!(node.cri().list_pod_sandboxes().unwrap().is_empty());
    let left = shims_settled(&node, 0);
    assert!(left.is_empty(), "shims left: {left:?}");
}

#[test]
fn one_shim_serves_every_pod_of_the_node_and_each_pod_stops_alone() {
    if !node_can_run("the node-wide in-process shim") {
        return;
    }
    let node = start_node_with(ShimScope::Node);
    let image = repo()
        .push_artifact(&node, &built_function_set(), "spinbench:artifact")
        .unwrap();
    let pods: Vec<Pod> = ["a", "b", "c"]
        .iter()
        .map(|name| run(&node, &inprocess_pod(name, &image)))
        .collect();
    for pod in &pods {
        ready(&node, pod, "/hello");
    }
    let mut ips: Vec<_> = pods.iter().map(|p| p.ip.clone()).collect();
    ips.dedup();
    assert_eq!(ips.len(), 3, "each pod its own IP: {ips:?}");
    // One shim (and its zygote) for the three pods.
    let shims = shims_settled(&node, 2);
    assert_eq!(shims.len(), 2, "{shims:?}");

    // Stopping one pod leaves the others serving from the same process.
    tear_down(&node, &[&pods[0]]);
    let (status, body) = node
        .get(&pods[0].url(80, "/hello"))
        .unwrap_or((0, String::new()));
    assert_ne!(status, 200, "a removed pod still answers: {body}");
    for pod in &pods[1..] {
        let (status, body) = node.get(&pod.url(80, "/hello")).unwrap();
        assert_eq!((status, body.as_str()), (200, "Hello, World!"));
    }
    assert_eq!(shims_settled(&node, 2).len(), 2);

    tear_down(&node, &[&pods[1], &pods[2]]);
    assert!(node.cri().list_pod_sandboxes().unwrap().is_empty());
    let left = shims_settled(&node, 0);
    assert!(left.is_empty(), "shims left: {left:?}");
}
