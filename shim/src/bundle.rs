//! The precompiled form of an artifact's locked-app layer, which the
//! precompile hook returns and containerd keeps beside the original: a tar
//! holding the locked app as pushed (`locked-app.json`) and the host's
//! compiled-code cache files for its components (`cache/<file>`). A locked
//! app is JSON, which starts with `{`; a tar never does.
//!
//! The code rides on the locked app's layer, not on each wasm layer, because
//! it depends on the whole app: the engine's settings follow every component
//! (one WASIp3 component turns on the async ABI for all).

use anyhow::{Context, Result, bail};
use spinbench_oci::PullLimits;
use std::borrow::Cow;
use std::fs::{DirBuilder, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

const LOCKED_APP: &str = "locked-app.json";
const CACHE: &str = "cache/";

/// A compiled-code file: its name in the cache and its bytes.
pub type CacheFile = (String, Vec<u8>);

/// The bundle of `locked_json` and every file of `cache_dir`.
pub fn pack(locked_json: &[u8], cache_dir: &Path) -> Result<Vec<u8>> {
    let mut tar = tar::Builder::new(Vec::new());
    append(&mut tar, LOCKED_APP, locked_json)?;
    let mut names: Vec<_> = std::fs::read_dir(cache_dir)
        .with_context(|| format!("reading {}", cache_dir.display()))?
        .map(|entry| entry.map(|e| e.file_name()))
        .collect::<std::io::Result<_>>()?;
    names.sort();
    for name in names {
        let name = name.to_string_lossy().into_owned();
        let bytes = std::fs::read(cache_dir.join(&name))?;
        append(&mut tar, &format!("{CACHE}{name}"), &bytes)?;
    }
    Ok(tar.into_inner()?)
}

fn append(tar: &mut tar::Builder<Vec<u8>>, path: &str, bytes: &[u8]) -> Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes.len() as u64);
    header.set_mode(0o600);
    header.set_cksum();
    tar.append_data(&mut header, path, bytes)
        .with_context(|| format!("bundling {path}"))
}

/// The locked app of a layer and the compiled code that came with it (none
/// when the layer is the locked app itself); the locked app no larger than
/// `--max-manifest-size`, each code file than `--max-layer-size`.
pub fn split<'a>(layer: &'a [u8], limits: &PullLimits) -> Result<(Cow<'a, [u8]>, Vec<CacheFile>)> {
    if layer.trim_ascii_start().starts_with(b"{") {
        return Ok((Cow::Borrowed(layer), Vec::new()));
    }
    let mut locked = None;
    let mut files = Vec::new();
    let mut archive = tar::Archive::new(layer);
    for entry in archive
        .entries()
        .context("reading the precompiled bundle")?
    {
        let mut entry = entry?;
        let path = entry.path()?.to_string_lossy().into_owned();
        if path == LOCKED_APP {
            limits.check_document("the locked app", entry.size())?;
        } else {
            limits.check_layer_bytes(&path, entry.size())?;
        }
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes)?;
        match path.strip_prefix(CACHE) {
            _ if path == LOCKED_APP => locked = Some(bytes),
            // One plain file name: nothing lands outside the cache.
            Some(name) if !name.is_empty() && !name.contains('/') && name != ".." => {
                files.push((name.to_string(), bytes));
            }
            _ => bail!("unexpected {path:?} in the precompiled bundle"),
        }
    }
    let locked = locked.context("the precompiled bundle has no locked app")?;
    Ok((Cow::Owned(locked), files))
}

/// Writes `files` into `dir`, private to this user as the host's cache
/// requires (directory 0700, files 0600).
pub fn write_files(files: &[CacheFile], dir: &Path) -> Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    for (name, bytes) in files {
        let path = dir.join(name);
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .and_then(|mut file| file.write_all(bytes))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_gives_back_the_locked_app_and_the_cache() {
        let cache = tempfile::tempdir().unwrap();
        std::fs::write(cache.path().join("a.cwasm"), b"code a").unwrap();
        std::fs::write(cache.path().join("b.cwasm"), b"code b").unwrap();
        let json = br#"{"spin_lock_version":1}"#;
        let bundle = pack(json, cache.path()).unwrap();
        let (locked, files) = split(&bundle, &PullLimits::default()).unwrap();
        assert_eq!(&*locked, json);
        assert_eq!(
            files,
            vec![
                ("a.cwasm".to_string(), b"code a".to_vec()),
                ("b.cwasm".to_string(), b"code b".to_vec())
            ]
        );
        let out = tempfile::tempdir().unwrap();
        write_files(&files, &out.path().join("cache")).unwrap();
        assert_eq!(
            std::fs::read(out.path().join("cache/b.cwasm")).unwrap(),
            b"code b"
        );
    }

    #[test]
    fn a_plain_locked_app_has_no_code() {
        let (locked, files) = split(b"  {\"x\": 1}", &PullLimits::default()).unwrap();
        assert_eq!(&*locked, b"  {\"x\": 1}");
        assert!(files.is_empty());
    }

    #[test]
    fn a_bundle_path_outside_the_cache_is_refused() {
        let mut tar = tar::Builder::new(Vec::new());
        append(&mut tar, LOCKED_APP, b"{}").unwrap();
        append(&mut tar, "cache/nested/x.cwasm", b"no").unwrap();
        let error = split(&tar.into_inner().unwrap(), &PullLimits::default()).unwrap_err();
        assert!(error.to_string().contains("unexpected"), "{error}");
    }
}
