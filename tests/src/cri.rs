//! The node through CRI for the deploy tests (tests/tests/cri.rs): a
//! `spinbench_node::Node` (containerd with its CRI plugin in a network namespace
//! of its own, CNI's bridge, a registry inside) started with this workspace's
//! builds, the pause image pushed, and what the machine lacks for it.

use crate::{artifact, is_root, node, on_path, process, workspace_root};
use spinbench_node::config::ShimScope;
use spinbench_node::images::Repo;
use spinbench_node::{Node, NodeOptions};
use std::path::{Path, PathBuf};

/// What a CRI node needs beyond the `ctr` node's (`e2e::node::missing`).
pub fn missing() -> Vec<String> {
    let mut missing = node::missing();
    for tool in ["ip", "nsenter"] {
        if on_path(tool).is_none() {
            missing.push(format!("{tool} (Debian: iproute2, util-linux)"));
        }
    }
    for plugin in ["bridge", "host-local", "loopback"] {
        let path = Path::new(spinbench_node::config::CNI_BIN_DIR).join(plugin);
        if !path.is_file() {
            missing.push(format!(
                "{} (Debian: containernetworking-plugins, deploy/install-node.sh)",
                path.display()
            ));
        }
    }
    if !pause_binary().is_file() {
        missing.push(format!("{} (make build)", pause_binary().display()));
    }
    if !is_root() && !missing.iter().any(|m| m == "root") {
        missing.push("root".into());
    }
    missing
}

/// The static pause binary `make build` builds beside the static `hello-native`.
pub fn pause_binary() -> PathBuf {
    workspace_root()
        .join("target")
        .join(host_triple())
        .join("release/spinbench-pause")
}

/// The static native `hello` (a one-file image for the runc pods).
pub fn native_hello() -> PathBuf {
    workspace_root()
        .join("target")
        .join(host_triple())
        .join("release/hello-native")
}

fn host_triple() -> String {
    let output = std::process::Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc -vV");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc names its host")
        .to_string()
}

/// A started node with the pause image in its registry.
pub fn start_node() -> Node {
    start_node_with(ShimScope::Pod)
}

/// A started node whose in-process shim serves pods in `scope`.
pub fn start_node_with(shim_scope: ShimScope) -> Node {
    let shim = artifact("release/containerd-shim-spinbench-v1");
    let node = Node::start(&NodeOptions {
        shim_dir: shim.parent().expect("target/release").to_path_buf(),
        parent_dir: std::env::temp_dir(),
        shim_scope,
        spawn: process::spawn_tied,
    })
    .unwrap_or_else(|e| panic!("{e:#}"));
    repo()
        .push_pause(&node, &pause_binary())
        .unwrap_or_else(|e| panic!("{e:#}"));
    node
}

/// The repository's tools for pushing images.
pub fn repo() -> Repo<'static> {
    static SPINBENCH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    Repo {
        root: ROOT.get_or_init(workspace_root),
        spinbench: SPINBENCH.get_or_init(|| artifact("release/spinbench")),
    }
}
