//! A Kubernetes node on this machine, driven the way the kubelet drives one:
//! containerd with its CRI plugin in a network namespace of its own, pods
//! networked by Debian's CNI plugins, the runtime handlers `spinbench`
//! (spinbench's shim) and `runc`, pods made through CRI's calls in the kubelet's
//! order. The deploy tests (tests/tests/cri.rs) and the density run
//! (`spinbench-node density`, deploy/density.sh) are built on it.

pub mod config;
pub mod cri;
pub mod density;
mod http;
pub mod images;
pub mod measure;
pub mod netns;
pub mod node;
pub mod pod;
pub mod procs;
pub mod report;

pub use k8s_cri;
pub use node::{Node, NodeOptions};
pub use pod::{Pod, PodSpec};
