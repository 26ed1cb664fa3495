//! Compiled components cached on disk, so a restart loads native code instead of
//! recompiling (compiling all six components takes seconds; loading, milliseconds).
//!
//! Loading a cached file runs it as native code, so nothing is loaded that this
//! runner's user did not write for exactly this wasm and engine:
//! - the directory is created private (0700) and not used at all (everything is
//!   compiled, with one warning) unless it is owned by the runner's effective
//!   user and not writable by group or others;
//! - a file is used only if it is a regular file owned by that user and not
//!   writable by group or others;
//! - each file is wasmtime's code followed by a trailer naming the SHA-256 of
//!   the wasm it was compiled from, of the engine's compatibility hash, and of
//!   the code; the trailer is checked before the code is read, the code's hash
//!   before it is loaded, and what wasmtime maps is the file that was checked
//!   (through its open descriptor, never by reopening the path, which could be
//!   swapped in between). Mapping the file, rather than loading a copy of its
//!   bytes, lets wasmtime map the code and memory images from it: `suntimes`
//!   loaded in 2.0 ms from bytes after a 2.4 ms read, 0.4 ms from the file;
//! - files are written to an exclusive temporary file (`O_EXCL`, mode 0600) and
//!   renamed into place;
//! - a file that fails any check is recompiled and replaced, never run.

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use std::fs::{DirBuilder, File};
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
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

/// A cache directory that passed the ownership and mode checks.
#[derive(Debug)]
pub struct CacheDir(PathBuf);

impl CacheDir {
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Creates `dir` (mode 0700) if needed and checks it; on failure, warns once
    /// on stderr and returns `None`, so every component is compiled.
    pub fn open(dir: &Path) -> Option<Self> {
        match private_dir(dir) {
            Ok(()) => Some(Self(dir.to_path_buf())),
            Err(error) => {
                crate::err_line!(
                    "warning: not using the compiled-code cache {}: {error:#}; compiling every component",
                    dir.display()
                );
                None
            }
        }
    }
}

fn private_dir(dir: &Path) -> Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    // Follows a symlink: what is checked is the directory files land in.
    let meta = std::fs::metadata(dir).with_context(|| format!("reading {}", dir.display()))?;
    if !meta.is_dir() {
        bail!("not a directory");
    }
    owned_and_private(&meta)
}

/// Owned by the runner's effective user, and writable by no one else.
fn owned_and_private(meta: &std::fs::Metadata) -> Result<()> {
    let euid = euid();
    if meta.uid() != euid {
        bail!(
            "owned by uid {}, not by the runner's uid {euid}",
            meta.uid()
        );
    }
    if meta.mode() & 0o022 != 0 {
        bail!(
            "writable by group or others (mode {:o})",
            meta.mode() & 0o7777
        );
    }
    Ok(())
}

/// The runner's effective user id.
#[allow(unsafe_code, reason = "geteuid(2) through libc; see SAFETY")]
fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Loads the component `wasm` (read from `wasm_path`), from `cache` when it
/// holds code verified to be compiled from these bytes by a compatible engine,
/// else by compiling (and storing it).
pub fn load(
    engine: &Engine,
    wasm: &[u8],
    wasm_path: &Path,
    cache: Option<&CacheDir>,
) -> Result<Loaded> {
    let start = Instant::now();
    let Some(CacheDir(dir)) = cache else {
        let component = compile(engine, wasm, wasm_path)?;
        return Ok(loaded(component, Origin::Compiled, start));
    };
    let expected = Trailer::expected(engine, wasm);
    let cached = dir.join(format!("{}.cwasm", expected.file_stem()));
    match open_verified(&cached, &expected) {
        Ok(Some(file)) => match deserialize(engine, &file) {
            Ok(component) => return Ok(loaded(component, Origin::LoadedFromCache, start)),
            Err(error) => warn_unusable(&cached, &error),
        },
        Ok(None) => {}
        Err(error) => warn_unusable(&cached, &error),
    }
    let component = compile(engine, wasm, wasm_path)?;
    if let Err(error) = store(&component, &expected, dir, &cached) {
        crate::err_line!("warning: not caching {}: {error:#}", wasm_path.display());
    }
    Ok(loaded(component, Origin::Compiled, start))
}

fn warn_unusable(cached: &Path, error: &anyhow::Error) {
    crate::err_line!(
        "warning: recompiling: cached {} is not usable ({error:#}); it will be replaced",
        cached.display()
    );
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

#[allow(
    unsafe_code,
    reason = "wasmtime runs the bytes as native code; sound only for verified wasmtime output, see SAFETY"
)]
fn deserialize(engine: &Engine, file: &File) -> Result<Component> {
    // The open file itself, not the path it was opened at.
    let path = format!("/proc/self/fd/{}", file.as_raw_fd());
    // SAFETY: `deserialize_file` trusts the file to be wasmtime output, as it
    // runs it as native code. `file` is the one `open_verified` checked: owned
    // by this user and writable by no one else, in a directory only this user
    // can write, which only `store` below writes (from `Component::serialize`
    // of this engine), with a trailer naming this wasm and this engine and the
    // SHA-256 of the code before it. Only a process of this same user could
    // change it after the check, and such a process can already do whatever
    // the runner can. wasmtime checks its own header and rejects incompatible
    // code, and ignores the trailer after its ELF image.
    unsafe { Component::deserialize_file(engine, path) }.map_err(anyhow::Error::from)
}

/// `cached`, open, if the file exists and passes every check; `Ok(None)` if
/// there is no such file.
fn open_verified(cached: &Path, expected: &Trailer) -> Result<Option<File>> {
    let file = match File::open(cached) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error.into()),
    };
    // Checked on the open file, so it is the file that will be read and mapped.
    let meta = file.metadata()?;
    if !meta.is_file() {
        bail!("not a regular file");
    }
    owned_and_private(&meta)?;
    let Some(code_len) = meta.len().checked_sub(Trailer::LEN as u64) else {
        bail!("truncated: no trailer");
    };
    let mut raw = [0; Trailer::LEN];
    file.read_exact_at(&mut raw, code_len)
        .context("reading the trailer")?;
    let trailer = Trailer::parse(&raw)?;
    trailer.matches(expected)?;
    if trailer.code_len != code_len {
        bail!(
            "{code_len} bytes of code where the trailer says {}",
            trailer.code_len
        );
    }
    if sha256_of_prefix(&file, code_len)? != trailer.code {
        bail!("the code does not match its hash");
    }
    Ok(Some(file))
}

/// SHA-256 of the first `len` bytes of `file`, read in large chunks (no copy of
/// the whole code is kept: wasmtime maps the file itself).
fn sha256_of_prefix(file: &File, len: u64) -> Result<[u8; 32]> {
    let mut hasher = Sha256::new();
    let mut code = std::io::BufReader::with_capacity(256 * 1024, file.take(len));
    let read = std::io::copy(&mut code, &mut hasher).context("reading the code")?;
    if read != len {
        bail!("the code ended early");
    }
    Ok(hasher.finalize().into())
}

/// Writes code and trailer to an exclusive temporary file, then renames it over
/// `cached`: readers see no file, the old one or the complete new one.
fn store(component: &Component, expected: &Trailer, dir: &Path, cached: &Path) -> Result<()> {
    let code = component.serialize().map_err(anyhow::Error::from)?;
    let trailer = Trailer {
        code: sha256(&code),
        code_len: code.len() as u64,
        ..*expected
    };
    let mut temp = tempfile::Builder::new()
        .prefix(".cwasm-")
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    temp.write_all(&code)
        .and_then(|()| temp.write_all(&trailer.to_bytes()))
        .context("writing the temporary file")?;
    temp.persist(cached)
        .with_context(|| format!("renaming to {}", cached.display()))?;
    Ok(())
}

/// What a cache file says about itself, in a trailer after its code (so that
/// the file maps as wasmtime wrote it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Trailer {
    /// SHA-256 of the wasm the code was compiled from.
    wasm: [u8; 32],
    /// SHA-256 of the engine's compatibility hash (wasmtime version, target, and
    /// the settings that change generated code).
    engine: [u8; 32],
    /// SHA-256 of the code before the trailer.
    code: [u8; 32],
    code_len: u64,
}

impl Trailer {
    /// Names the format; a new layout gets a new magic (version 1 had the
    /// header before the code: such a file fails the check and is replaced).
    const MAGIC: &[u8; 16] = b"spinbench-cwasm2";
    const LEN: usize = 16 + 32 * 3 + 8;

    /// The trailer a file for `wasm` on `engine` must have (code fields unset).
    fn expected(engine: &Engine, wasm: &[u8]) -> Self {
        let mut hasher = Sha256Hasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Self {
            wasm: sha256(wasm),
            engine: hasher.0.finalize().into(),
            code: [0; 32],
            code_len: 0,
        }
    }

    /// The file name: one per (wasm, engine) pair.
    fn file_stem(&self) -> String {
        use std::fmt::Write as _;
        let mut hasher = Sha256::new();
        hasher.update(self.wasm);
        hasher.update(self.engine);
        hasher
            .finalize()
            .iter()
            .fold(String::new(), |mut hex, byte| {
                let _ = write!(hex, "{byte:02x}");
                hex
            })
    }

    fn matches(&self, expected: &Trailer) -> Result<()> {
        if self.wasm != expected.wasm {
            bail!("compiled from other wasm");
        }
        if self.engine != expected.engine {
            bail!("compiled by an incompatible engine");
        }
        Ok(())
    }

    fn to_bytes(self) -> [u8; Self::LEN] {
        let mut out = [0; Self::LEN];
        let fields: [&[u8]; 5] = [
            Self::MAGIC,
            &self.wasm,
            &self.engine,
            &self.code,
            &self.code_len.to_le_bytes(),
        ];
        let mut at = 0;
        for field in fields {
            out[at..at + field.len()].copy_from_slice(field);
            at += field.len();
        }
        out
    }

    fn parse(raw: &[u8; Self::LEN]) -> Result<Self> {
        let (magic, rest) = raw.split_at(16);
        if magic != Self::MAGIC {
            bail!("not a spinbench cache file");
        }
        let field = |at: usize| -> [u8; 32] { rest[at..at + 32].try_into().expect("32 bytes") };
        Ok(Self {
            wasm: field(0),
            engine: field(32),
            code: field(64),
            code_len: u64::from_le_bytes(rest[96..104].try_into().expect("8 bytes")),
        })
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
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
mod tests;
