//! Compiled components cached on disk, so a restart loads native code instead of
//! recompiling (compiling all six components takes seconds; loading, milliseconds).

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use wasmtime::Engine;
use wasmtime::component::Component;

/// How a component got its native code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Compiled,
    LoadedFromCache,
}

/// A component ready to instantiate, and what getting it cost.
pub struct Loaded {
    pub component: Component,
    pub origin: Origin,
    pub elapsed: Duration,
}

/// `$XDG_CACHE_HOME/spinbench`, else `~/.cache/spinbench`; `None` if neither is known.
pub fn default_dir() -> Option<PathBuf> {
    let nonempty = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    nonempty("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| nonempty("HOME").map(|home| Path::new(&home).join(".cache")))
        .map(|dir| dir.join("spinbench"))
}

/// Loads the component `wasm` (read from `wasm_path`), from `cache_dir` when it
/// holds code compiled from the same bytes by a compatible engine, else by
/// compiling (and storing it).
pub fn load(
    engine: &Engine,
    wasm: &[u8],
    wasm_path: &Path,
    cache_dir: Option<&Path>,
) -> Result<Loaded> {
    let start = Instant::now();
    let Some(dir) = cache_dir else {
        let component = compile(engine, wasm, wasm_path)?;
        return Ok(loaded(component, Origin::Compiled, start));
    };
    let cached = dir.join(format!("{}.cwasm", cache_key(engine, wasm)));
    if cached.exists() {
        match deserialize(engine, &cached) {
            Ok(component) => return Ok(loaded(component, Origin::LoadedFromCache, start)),
            // A truncated or foreign file: recompile and overwrite it.
            Err(error) => eprintln!("warning: ignoring cached {}: {error:#}", cached.display()),
        }
    }
    let component = compile(engine, wasm, wasm_path)?;
    if let Err(error) = store(&component, dir, &cached) {
        eprintln!("warning: not caching {}: {error:#}", wasm_path.display());
    }
    Ok(loaded(component, Origin::Compiled, start))
}

fn loaded(component: Component, origin: Origin, start: Instant) -> Loaded {
    Loaded {
        component,
        origin,
        elapsed: start.elapsed(),
    }
}

fn compile(engine: &Engine, wasm: &[u8], wasm_path: &Path) -> Result<Component> {
    Component::new(engine, wasm)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("compiling component {}", wasm_path.display()))
}

fn deserialize(engine: &Engine, cached: &Path) -> Result<Component> {
    // SAFETY: `deserialize_file` trusts the file to be wasmtime output, as it maps
    // it as executable code. Files in the cache dir named `<sha256>.cwasm` are
    // only ever written by `store` below, from `Component::serialize` of this
    // same engine configuration (the key covers the engine's compatibility
    // hash), and they appear only through an atomic rename of a complete file.
    // wasmtime additionally checks the header and rejects incompatible files.
    unsafe { Component::deserialize_file(engine, cached) }.map_err(anyhow::Error::from)
}

/// Writes atomically: a temp file in the same directory, then a rename, so a
/// concurrent reader sees either no file or a complete one.
fn store(component: &Component, dir: &Path, cached: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let bytes = component.serialize().map_err(anyhow::Error::from)?;
    let temp = cached.with_extension(format!("cwasm.tmp{}", std::process::id()));
    std::fs::write(&temp, bytes).with_context(|| format!("writing {}", temp.display()))?;
    std::fs::rename(&temp, cached).with_context(|| format!("renaming to {}", cached.display()))
}

/// Hex SHA-256 of the wasm bytes and of the engine's compatibility hash (wasmtime
/// version, target, and the settings that change generated code).
fn cache_key(engine: &Engine, wasm: &[u8]) -> String {
    let mut hasher = Sha256Hasher(Sha256::new());
    hasher.0.update(wasm);
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hasher
        .0
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Feeds `std::hash::Hash` output into SHA-256 (the engine's hash is only `impl Hash`).
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// Unused: `Hash` impls only call `write*`; the digest is read from `.0`.
    fn finish(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_depends_on_the_bytes_and_is_stable() {
        let engine = Engine::default();
        let a = cache_key(&engine, b"one");
        assert_eq!(a, cache_key(&engine, b"one"));
        assert_ne!(a, cache_key(&engine, b"two"));
        assert_eq!(a.len(), 64);
    }
}
