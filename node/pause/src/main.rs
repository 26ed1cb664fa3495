//! The pause image's one process, built statically (`make build`) and pushed as a
//! one-file image: what Kubernetes' `pause` is to a pod. containerd's CRI starts it
//! as the pod sandbox's container, the pod's namespaces live as long as it does,
//! and `StopPodSandbox` ends it with SIGKILL. It does nothing else: it starts no
//! child (so it has none to reap) and holds no memory beyond its own stack.

fn main() {
    loop {
        // Parks until unparked, which nothing does; a spurious wake-up parks again.
        std::thread::park();
    }
}
