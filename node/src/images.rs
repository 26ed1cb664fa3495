//! Images pushed to the node's registry from inside its namespace, with the
//! repository's own tools: Spin's OCI artifact (`spinbench registry push`), and
//! one-file images (deploy/native_image.py: the pause image, the static native
//! `hello`), images with files (deploy/files_image.py) and one wasm as `wkg`
//! pushes it (deploy/wasm_package_image.py).

use crate::node::{Node, PAUSE_IMAGE, REGISTRY};
use anyhow::Result;
use std::path::Path;

/// The repository's files the pushes use.
pub struct Repo<'a> {
    /// The repository's root (deploy/'s scripts).
    pub root: &'a Path,
    /// `spinbench` (the runner), which pushes Spin's artifact.
    pub spinbench: &'a Path,
}

impl Repo<'_> {
    /// The pause image, from the static `spinbench-pause`, as the node's config names it.
    pub fn push_pause(&self, node: &Node, pause_binary: &Path) -> Result<String> {
        let name = PAUSE_IMAGE.trim_start_matches(&format!("{REGISTRY}/"));
        self.push_file(node, pause_binary, name)
    }

    /// A one-file image whose entrypoint is `file`; its reference.
    pub fn push_file(&self, node: &Node, file: &Path, name: &str) -> Result<String> {
        self.push_script(node, "native_image.py", file, name)
    }

    /// An image with `manifest` at /spin.toml and the files it names.
    pub fn push_files(&self, node: &Node, manifest: &Path, name: &str) -> Result<String> {
        self.push_script(node, "files_image.py", manifest, name)
    }

    /// One wasm as `wkg oci push` writes it (a wasm config, one `application/wasm` layer).
    pub fn push_wasm_package(&self, node: &Node, wasm: &Path, name: &str) -> Result<String> {
        self.push_script(node, "wasm_package_image.py", wasm, name)
    }

    fn push_script(&self, node: &Node, script: &str, arg: &Path, name: &str) -> Result<String> {
        node.run_ok(
            node.command("python3")
                .arg(self.root.join("deploy").join(script))
                .arg(arg)
                .arg(REGISTRY)
                .arg(name),
        )?;
        Ok(format!("{REGISTRY}/{name}"))
    }

    /// The app of `manifest` as Spin's OCI artifact; its reference.
    pub fn push_artifact(&self, node: &Node, manifest: &Path, name: &str) -> Result<String> {
        let reference = format!("{REGISTRY}/{name}");
        let config = node.dir().join("push-config");
        node.run_ok(
            node.command(self.spinbench)
                .args(["registry", "push", "--insecure", "-f"])
                .arg(manifest)
                .arg(&reference)
                // No one's credentials: the node's registry asks for none.
                .env("DOCKER_CONFIG", &config)
                .env("XDG_CONFIG_HOME", &config),
        )?;
        Ok(reference)
    }
}
