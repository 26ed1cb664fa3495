//! The kubelet's path: pods through containerd's CRI (containerd 1.7's CRI
//! plugin, `e2e::cri`), in the kubelet's order of calls, under the runtime handler
//! `spinbench` (RuntimeClass `handler: spinbench`, runtime
//! `io.containerd.spinbench.v1`) and `runc`, each pod in its own network namespace
//! with an IP from Debian's CNI plugins (bridge, host-local, loopback), reached at
//! that IP as a Service would reach it. Each test has a node of its own: its own
//! containerd root, state and socket, network namespace, subnet and registry,
//! torn down however the test ends. inprocess.rs runs the same calls on the
//! in-process design (handler `spinbench-inprocess`), per pod and per node.
//!
//! Built with the `cri` feature (make turns it on where the shim builds); where
//! the machine cannot run a node each test says "skipped" with what is missing.
//! `.ci/run` installs all of it.

#[cfg(not(feature = "cri"))]
#[test]
fn cri_tests_need_the_cri_feature() {
    eprintln!(
        "skipped: the CRI tests are built with `--features e2e/cri` (make does where protoc is)"
    );
}

#[cfg(feature = "cri")]
#[path = "cri/pods.rs"]
mod pods;

#[cfg(feature = "cri")]
#[path = "cri/spec.rs"]
mod spec;

#[cfg(feature = "cri")]
#[path = "cri/inprocess.rs"]
mod inprocess;
