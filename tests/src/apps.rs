//! Apps the deploy tests run, as a container (`deploy.rs`) or a pod (`cri.rs`).

use crate::{artifact, workspace_root};
use std::path::{Path, PathBuf};

/// The function set's manifest, its components built (by `make build`).
pub fn built_function_set() -> PathBuf {
    for wasm in [
        "hello",
        "hello_sdk",
        "echo",
        "cpu",
        "io",
        "suntimes",
        "sha1_blocks",
    ] {
        artifact(&format!("wasm32-wasip2/release/{wasm}.wasm"));
    }
    workspace_root().join("spin.toml")
}

/// A one-component app in `dir` (made if need be): spin.toml named `name`
/// with `trigger`, and `wasm` as its component `hello`; the manifest's path.
pub fn one_component_app(dir: &Path, name: &str, trigger: &str, wasm: &[u8]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("spin.toml"),
        format!(
            "spin_manifest_version = 2\n[application]\nname = \"{name}\"\n{trigger}\
             [component.hello]\nsource = \"hello.wasm\"\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("hello.wasm"), wasm).unwrap();
    dir.join("spin.toml")
}
