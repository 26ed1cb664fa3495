//! The content-addressed store pulled artifacts are kept in, laid out as an
//! OCI image layout's blobs (and containerd's content store) are:
//! `blobs/sha256/<hex>`, each file written whole to a temporary file beside it,
//! checked against its digest, then renamed into place, so a reader never sees
//! part of one, and checked again whenever it is read. Apps made runnable from
//! a manifest are kept under `apps/sha256-<hex>/` (of the manifest's digest),
//! each built in a temporary directory and renamed into place whole.

use anyhow::{Context, Result, bail};
use spinbench_host::manifest::Digest;
use std::fs::DirBuilder;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// A store at a directory (created private, 0700, where missing).
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    pub fn open(root: &Path) -> Result<Self> {
        for dir in [root.join("blobs/sha256"), root.join("apps")] {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)
                .with_context(|| format!("creating {}", dir.display()))?;
        }
        Ok(Self {
            root: root.to_path_buf(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where blob `digest` is (or would be) kept.
    pub fn blob_path(&self, digest: Digest) -> PathBuf {
        self.root.join("blobs/sha256").join(digest.hex())
    }

    /// Whether blob `digest` is kept (not checked: [`Store::read`] checks).
    pub fn has(&self, digest: Digest) -> bool {
        self.blob_path(digest).is_file()
    }

    /// Blob `digest`, checked against it; a kept file that no longer matches
    /// is removed, so that the next pull fetches it again.
    pub fn read(&self, digest: Digest) -> Result<Vec<u8>> {
        let path = self.blob_path(digest);
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let actual = Digest::of(&bytes);
        if actual != digest {
            let _ = std::fs::remove_file(&path);
            bail!(
                "{} does not match its digest (it is {actual}); removed, pull again",
                path.display()
            );
        }
        Ok(bytes)
    }

    /// Keeps `bytes` as blob `digest`, refusing bytes of another digest.
    pub fn write(&self, digest: Digest, bytes: &[u8]) -> Result<PathBuf> {
        let actual = Digest::of(bytes);
        if actual != digest {
            bail!("content digest mismatch: expected {digest}, received {actual}");
        }
        let path = self.blob_path(digest);
        let dir = path.parent().expect("blobs/sha256");
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        std::io::Write::write_all(&mut file, bytes)?;
        file.persist(&path)
            .with_context(|| format!("keeping {}", path.display()))?;
        Ok(path)
    }

    /// Where the app made from manifest `digest` is kept.
    pub fn app_dir(&self, digest: Digest) -> PathBuf {
        self.root
            .join("apps")
            .join(format!("sha256-{}", digest.hex()))
    }

    /// A directory to build an app in, beside where apps are kept; removed
    /// when dropped unless [`Store::publish`]ed.
    pub fn staging_dir(&self) -> Result<tempfile::TempDir> {
        Ok(tempfile::Builder::new()
            .prefix(".staging-")
            .tempdir_in(self.root.join("apps"))?)
    }

    /// Renames `staged` to `target` whole. If another pull put it there
    /// first, that one is kept (both are made from the same digests).
    pub fn publish(staged: tempfile::TempDir, target: &Path) -> Result<()> {
        let staged = staged.keep();
        match std::fs::rename(&staged, target) {
            Ok(()) => Ok(()),
            Err(_) if target.join(crate::unlock::MANIFEST_FILE).is_file() => {
                let _ = std::fs::remove_dir_all(&staged);
                Ok(())
            }
            Err(error) => {
                let _ = std::fs::remove_dir_all(&staged);
                Err(error).with_context(|| format!("keeping {}", target.display()))
            }
        }
    }
}

/// Where blobs are read from when an app is made runnable: this store, or
/// (for the containerd shim) another content store of the same layout.
pub trait Blobs {
    /// The file holding blob `digest`, checked against it.
    fn checked_path(&self, digest: Digest) -> Result<PathBuf>;
}

impl Blobs for Store {
    fn checked_path(&self, digest: Digest) -> Result<PathBuf> {
        if !self.has(digest) {
            bail!("cannot find content {digest}: the artifact has no such layer");
        }
        self.read(digest)?;
        Ok(self.blob_path(digest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blob_is_kept_only_under_its_own_digest_and_checked_when_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let digest = Digest::of(b"wasm");
        let error = store.write(digest, b"other").unwrap_err().to_string();
        assert!(error.contains("digest mismatch"), "{error}");
        assert!(!store.has(digest));
        store.write(digest, b"wasm").unwrap();
        assert_eq!(store.read(digest).unwrap(), b"wasm");
        // Changed on disk: refused and removed.
        std::fs::write(store.blob_path(digest), b"tampered").unwrap();
        let error = store.read(digest).unwrap_err().to_string();
        assert!(error.contains("does not match its digest"), "{error}");
        assert!(!store.has(digest));
        // No temporary file is left beside the blobs.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("blobs/sha256"))
            .unwrap()
            .collect();
        assert!(names.is_empty(), "{names:?}");
    }

    #[test]
    fn an_app_is_published_whole_and_a_second_publish_keeps_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let target = store.app_dir(Digest::of(b"manifest"));
        for body in ["first", "second"] {
            let staged = store.staging_dir().unwrap();
            std::fs::write(staged.path().join(crate::unlock::MANIFEST_FILE), body).unwrap();
            Store::publish(staged, &target).unwrap();
        }
        let kept = std::fs::read_to_string(target.join(crate::unlock::MANIFEST_FILE)).unwrap();
        assert_eq!(kept, "first");
        let entries = std::fs::read_dir(dir.path().join("apps")).unwrap().count();
        assert_eq!(entries, 1, "staging directories are removed");
    }
}
