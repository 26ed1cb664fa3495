//! The files a node needs, as text: containerd's config with its CRI plugin and the
//! two runtime handlers, the CNI network (Debian's `containernetworking-plugins`:
//! bridge with host-local addresses; containerd adds loopback itself), and the
//! registry's host entry that lets CRI pull over plain HTTP.

use std::path::Path;

/// The runtime handler a RuntimeClass `handler: spinbench` names.
pub const SPINBENCH_HANDLER: &str = "spinbench";
/// Its runtime: containerd runs `containerd-shim-spinbench-v1` for it.
pub const SPINBENCH_RUNTIME: &str = "io.containerd.spinbench.v1";
/// The in-process design of spinbench's shim (one process per pod, or per
/// node with `SPINBENCH_SHIM_SCOPE=node` in containerd's environment).
pub const INPROCESS_HANDLER: &str = "spinbench-inprocess";
pub const INPROCESS_RUNTIME: &str = "io.containerd.spinbench-inprocess.v1";
/// Which pods one process of the in-process shim serves: its own pod's
/// containers (containerd starts a shim per pod, the default), or every pod of
/// the node. containerd's environment carries it to the shims
/// (`SPINBENCH_SHIM_SCOPE`, read by shim/src/inprocess).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShimScope {
    #[default]
    Pod,
    Node,
}

impl ShimScope {
    pub const ENV: &str = "SPINBENCH_SHIM_SCOPE";

    pub fn env_value(self) -> &'static str {
        match self {
            ShimScope::Pod => "pod",
            ShimScope::Node => "node",
        }
    }
}

/// The handler of container pods (runc), the default one.
pub const RUNC_HANDLER: &str = "runc";
/// Where Debian's `containernetworking-plugins` installs the plugins.
pub const CNI_BIN_DIR: &str = "/usr/lib/cni";

/// What differs from one node to another.
pub struct NodeConfig<'a> {
    /// The node's directory: root, state, sockets, configs, logs.
    pub dir: &'a Path,
    /// The pod sandbox image (`sandbox_image`: the pause image).
    pub pause_image: &'a str,
    /// The registry's `host:port`, pulled from over plain HTTP.
    pub registry: &'a str,
    /// The CNI network's name, its bridge's and the pods' subnet.
    pub network: &'a str,
    pub bridge: &'a str,
    pub subnet: &'a str,
}

impl NodeConfig<'_> {
    pub fn socket(&self) -> std::path::PathBuf {
        self.dir.join("containerd.sock")
    }

    /// containerd 1.7's config (version 2) with its CRI plugin. On this machine
    /// root lacks CAP_SYS_RESOURCE, so CRI may not lower a container's OOM score
    /// below its own (`restrict_oom_score_adj`). Pods' network namespaces are
    /// mounted under containerd's state, runc keeps its state under the node's.
    pub fn containerd_toml(&self) -> String {
        let d = self.dir.display();
        let cri = "plugins.\"io.containerd.grpc.v1.cri\"";
        format!(
            r#"version = 2
root = "{d}/root"
state = "{d}/state"
[grpc]
  address = "{socket}"
[ttrpc]
  address = "{socket}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{d}/opt"
[{cri}]
  sandbox_image = "{pause}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_cdi = false
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [{cri}.cni]
    bin_dir = "{CNI_BIN_DIR}"
    conf_dir = "{d}/cni"
    max_conf_num = 1
  [{cri}.containerd]
    default_runtime_name = "{RUNC_HANDLER}"
    [{cri}.containerd.runtimes.{RUNC_HANDLER}]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.{RUNC_HANDLER}.options]
        Root = "{d}/runc"
    [{cri}.containerd.runtimes.{SPINBENCH_HANDLER}]
      runtime_type = "{SPINBENCH_RUNTIME}"
    [{cri}.containerd.runtimes.{INPROCESS_HANDLER}]
      runtime_type = "{INPROCESS_RUNTIME}"
  [{cri}.registry]
    config_path = "{d}/certs.d"
"#,
            socket = self.socket().display(),
            pause = self.pause_image,
        )
    }

    /// The pods' network: a bridge in the node's namespace that is the pods'
    /// gateway, addresses from host-local (its state in the node's directory),
    /// no masquerading (the pods reach nothing beyond the node).
    pub fn cni_conflist(&self) -> String {
        serde_json::json!({
            "cniVersion": "1.0.0",
            "name": self.network,
            "plugins": [{
                "type": "bridge",
                "bridge": self.bridge,
                "isGateway": true,
                "ipMasq": false,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{ "subnet": self.subnet }]],
                    "dataDir": self.dir.join("cni-ipam").display().to_string(),
                },
            }],
        })
        .to_string()
    }

    /// `certs.d/<registry>/hosts.toml`: the registry over plain HTTP.
    pub fn registry_hosts_toml(&self) -> String {
        format!(
            "server = \"http://{r}\"\n[host.\"http://{r}\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
            r = self.registry
        )
    }

    /// The registry's own config: storage under the node, loopback only.
    pub fn registry_yml(&self) -> String {
        format!(
            "version: 0.1\nlog: {{ level: warn }}\nstorage: {{ filesystem: {{ rootdirectory: {} }} }}\nhttp: {{ addr: {} }}\n",
            self.dir.join("registry").display(),
            self.registry
        )
    }

    /// Writes every file under the node's directory.
    pub fn write(&self) -> std::io::Result<()> {
        std::fs::create_dir_all(self.dir.join("cni"))?;
        std::fs::write(self.dir.join("containerd.toml"), self.containerd_toml())?;
        std::fs::write(
            self.dir
                .join("cni")
                .join(format!("10-{}.conflist", self.network)),
            self.cni_conflist(),
        )?;
        // containerd looks a registry up by `host:port` as the directory name.
        let hosts = self.dir.join("certs.d").join(self.registry);
        std::fs::create_dir_all(&hosts)?;
        std::fs::write(hosts.join("hosts.toml"), self.registry_hosts_toml())?;
        std::fs::write(self.dir.join("registry.yml"), self.registry_yml())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path) -> NodeConfig<'_> {
        NodeConfig {
            dir,
            pause_image: "127.0.0.1:5000/pause:1",
            registry: "127.0.0.1:5000",
            network: "spinbench-1",
            bridge: "sb1",
            subnet: "10.99.0.0/16",
        }
    }

    #[test]
    fn containerd_gets_both_handlers_and_the_restricted_oom_score() {
        let text = config(Path::new("/tmp/n")).containerd_toml();
        let doc: toml::Table = toml::from_str(&text).expect("valid TOML");
        let cri = &doc["plugins"]["io.containerd.grpc.v1.cri"];
        assert_eq!(cri["restrict_oom_score_adj"].as_bool(), Some(true));
        let runtimes = &cri["containerd"]["runtimes"];
        assert_eq!(
            runtimes["spinbench"]["runtime_type"].as_str(),
            Some("io.containerd.spinbench.v1")
        );
        assert_eq!(
            runtimes["runc"]["runtime_type"].as_str(),
            Some("io.containerd.runc.v2")
        );
        assert_eq!(doc["root"].as_str(), Some("/tmp/n/root"));
    }

    #[test]
    fn the_network_is_a_bridge_with_host_local_addresses() {
        let list: serde_json::Value =
            serde_json::from_str(&config(Path::new("/tmp/n")).cni_conflist()).unwrap();
        let bridge = &list["plugins"][0];
        assert_eq!(bridge["type"], "bridge");
        assert_eq!(bridge["ipMasq"], false);
        assert_eq!(bridge["ipam"]["type"], "host-local");
        assert_eq!(bridge["ipam"]["ranges"][0][0]["subnet"], "10.99.0.0/16");
        assert_eq!(bridge["ipam"]["dataDir"], "/tmp/n/cni-ipam");
    }
}
