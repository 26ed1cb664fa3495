//! The library's precompile hook: when containerd starts a container of a
//! Spin artifact it has not precompiled for this shim, the shim (outside the
//! container) makes the app from the layers and compiles its components into
//! a cache exactly as the host would (`spinbench_host::precompile`), then
//! hands back the locked-app layer as a bundle with that code ([`bundle`]).
//! containerd keeps it beside the image and labels every layer with it, so
//! later starts of the image get the code and compile nothing. The host still
//! checks every cache file against the wasm and its own engine before it maps
//! one, so code that no longer fits is compiled again, never run.
//!
//! Every other layer is handed back as it is: marked as done, none of them is
//! compiled again, and the hook is not called again for the image.
//!
//! The hook runs as root, outside the container: the app is made with the
//! bounds and the boundary a pull has (`artifact::unpack`, `PullLimits` from
//! the shim's environment), in a directory of its own that is removed after.
//! A refused artifact is refused here in one line in the shim's log, and
//! again by the container's start, which then exits saying why.

use crate::artifact::{self, is_locked_app};
use crate::bundle;
use anyhow::Result;
use containerd_shim_wasm::sandbox::context::WasmLayer;
use containerd_shim_wasm::shim::{Compiler, Shim};
use spinbench_host::manifest::Manifest;
use spinbench_oci::PullLimits;
use std::hash::Hash;

pub struct AppCompiler;

impl Compiler for AppCompiler {
    /// The shim's version and source revision: another build is another key,
    /// and its first start of an image compiles again.
    fn cache_key(&self) -> impl Hash {
        let version = crate::sandbox::SpinbenchShim::version();
        (version.version, version.revision)
    }

    async fn compile(&self, layers: &[WasmLayer]) -> Result<Vec<Option<Vec<u8>>>> {
        // Compiling blocks this task for as long as it takes: containerd waits
        // for the container's creation meanwhile in any case.
        compile(layers)
    }
}

fn compile(layers: &[WasmLayer]) -> Result<Vec<Option<Vec<u8>>>> {
    let Some(locked) = layers.iter().find(|layer| is_locked_app(layer)) else {
        // Not a Spin artifact: the container's start says so.
        return Ok(vec![None; layers.len()]);
    };
    let limits = PullLimits::from_env()?;
    if bundle::split(&locked.layer, &limits)?.1.is_empty() {
        let work = tempfile::tempdir()?;
        let app = artifact::unpack(layers, work.path(), &limits)?;
        let cache = work.path().join("cache");
        let compiled = spinbench_host::precompile(&Manifest::load(&app.manifest)?, &cache)?;
        log::info!("precompiled {} components", compiled.len());
        let bundle = bundle::pack(&app.locked_json, &cache)?;
        return Ok(layers
            .iter()
            .map(|layer| {
                Some(if is_locked_app(layer) {
                    bundle.clone()
                } else {
                    layer.layer.clone()
                })
            })
            .collect());
    }
    // Already precompiled (another layer lacked its label): nothing to do.
    Ok(vec![None; layers.len()])
}
