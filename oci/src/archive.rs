//! Spin's archive layers (`application/vnd.wasm.content.bundle.v1.tar+gzip`):
//! a component's files in one gzipped tar, written when an app would need
//! more layers than registries take (spinframework/spin v4.0.2
//! `crates/oci/src/utils.rs`, `archive`, and `client.rs`,
//! `unpack_archive_layer`). The locked app still names each file by its
//! digest, so a pull keeps each file inside by its own digest.

use crate::store::Store;
use anyhow::{Context, Result};
use spinbench_host::manifest::Digest;
use std::io::{Read as _, Write as _};
use std::path::PathBuf;

/// A gzipped tar of `files`, each at its place.
pub fn tar_gz(files: &[(String, PathBuf)]) -> Result<Vec<u8>> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    for (place, path) in files {
        tar.append_path_with_name(path, place)
            .with_context(|| format!("archiving {}", path.display()))?;
    }
    let mut gz = tar.into_inner()?;
    gz.flush()?;
    Ok(gz.finish()?)
}

/// Keeps every regular file of the gzipped tar `bytes` in `store`, by its
/// digest (where it lands in the tar does not matter: the locked app places it).
pub fn unpack_into(bytes: &[u8], store: &Store) -> Result<()> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    for entry in archive.entries()? {
        let mut entry = entry?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let mut content = Vec::new();
        entry.read_to_end(&mut content)?;
        let digest = Digest::of(&content);
        if !store.has(digest) {
            store.write(digest, &content)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archived_files_are_kept_by_their_own_digests() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.txt");
        std::fs::write(&a, b"alpha").unwrap();
        let b = dir.path().join("b.bin");
        std::fs::write(&b, vec![7u8; 4096]).unwrap();
        let bytes = tar_gz(&[("x/a.txt".into(), a), ("b.bin".into(), b)]).unwrap();
        let store = Store::open(&dir.path().join("store")).unwrap();
        unpack_into(&bytes, &store).unwrap();
        assert_eq!(store.read(Digest::of(b"alpha")).unwrap(), b"alpha");
        assert_eq!(store.read(Digest::of(&[7u8; 4096])).unwrap().len(), 4096);
    }
}
