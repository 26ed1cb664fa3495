//! The content-addressed store pulled artifacts are kept in, laid out as an
//! OCI image layout's blobs (and containerd's content store) are:
//! `blobs/sha256/<hex>`, each file streamed to a temporary file beside it
//! (counted against a limit and hashed as it is written, never buffered
//! whole: [`BlobWriter`]), checked against its digest, then renamed into
//! place, so a reader never sees part of one, and checked again whenever it
//! is read. Apps made runnable from
//! a manifest are kept under `apps/sha256-<hex>/` (of the manifest's digest),
//! each built in a temporary directory and renamed into place whole.

use anyhow::{Context, Result, bail};
use spinbench_host::manifest::Digest;
use spinbench_host::manifest::digest::Hasher;
use std::fs::DirBuilder;
use std::io::Read as _;
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

    /// Blob `digest` read whole (a manifest or a locked app, which are
    /// parsed whole): refused past `max` bytes before it is read, and checked
    /// against its digest; a kept file that no longer matches is removed, so
    /// that the next pull fetches it again.
    pub fn read(&self, digest: Digest, max: u64) -> Result<Vec<u8>> {
        let path = self.blob_path(digest);
        let file =
            std::fs::File::open(&path).with_context(|| format!("reading {}", path.display()))?;
        let size = file.metadata()?.len();
        if size > max {
            bail!("{digest} is {size} bytes, past {max}");
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        file.take(max.saturating_add(1))
            .read_to_end(&mut bytes)
            .with_context(|| format!("reading {}", path.display()))?;
        self.matches(digest, Digest::of(&bytes))?;
        Ok(bytes)
    }

    /// Checks kept blob `digest` against its digest, hashing it as it is
    /// read (a blob may be large); removed if it no longer matches.
    pub fn verify(&self, digest: Digest) -> Result<()> {
        let path = self.blob_path(digest);
        let mut file =
            std::fs::File::open(&path).with_context(|| format!("reading {}", path.display()))?;
        let mut hasher = Hasher::default();
        std::io::copy(&mut file, &mut hasher)
            .with_context(|| format!("reading {}", path.display()))?;
        self.matches(digest, hasher.finish())
    }

    fn matches(&self, digest: Digest, actual: Digest) -> Result<()> {
        if actual != digest {
            let path = self.blob_path(digest);
            let _ = std::fs::remove_file(&path);
            bail!(
                "{} does not match its digest (it is {actual}); removed, pull again",
                path.display()
            );
        }
        Ok(())
    }

    /// Keeps `bytes` (already in memory) as blob `digest`, refusing bytes of
    /// another digest.
    pub fn write(&self, digest: Digest, bytes: &[u8]) -> Result<PathBuf> {
        let mut writer = self.writer(bytes.len() as u64, String::new())?;
        writer.write(bytes)?;
        writer.keep_as(digest)
    }

    /// A new blob streamed in, refused past `limit` bytes with `refusal`.
    pub fn writer(&self, limit: u64, refusal: String) -> Result<BlobWriter> {
        let dir = self.root.join("blobs/sha256");
        Ok(BlobWriter {
            file: tempfile::NamedTempFile::new_in(&dir)
                .with_context(|| format!("writing in {}", dir.display()))?,
            hasher: Hasher::default(),
            written: 0,
            limit,
            refusal,
            store: self.clone(),
        })
    }

    /// The blobs' directory, for placing blobs beneath an app's (`cap-std`).
    pub fn blobs_dir(&self) -> Result<cap_std::fs::Dir> {
        let dir = self.root.join("blobs/sha256");
        cap_std::fs::Dir::open_ambient_dir(&dir, cap_std::ambient_authority())
            .with_context(|| format!("opening {}", dir.display()))
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

/// A blob being written: counted against its limit and hashed as each
/// chunk arrives, kept (renamed into place) only once whole and checked.
pub struct BlobWriter {
    file: tempfile::NamedTempFile,
    hasher: Hasher,
    written: u64,
    limit: u64,
    refusal: String,
    store: Store,
}

impl BlobWriter {
    /// Appends `bytes`, refusing them past the limit (nothing is kept then).
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.written = self.written.saturating_add(bytes.len() as u64);
        if self.written > self.limit {
            bail!("{}", self.refusal);
        }
        self.hasher.update(bytes);
        std::io::Write::write_all(&mut self.file, bytes).context("writing a blob")?;
        Ok(())
    }

    pub fn written(&self) -> u64 {
        self.written
    }

    /// Keeps it as blob `expected`, refusing other content.
    pub fn keep_as(self, expected: Digest) -> Result<PathBuf> {
        let actual = self.hasher.clone().finish();
        if actual != expected {
            bail!("the content does not match its digest ({expected}; it is {actual})");
        }
        self.persist(expected)
    }

    /// Keeps it under its own digest (a file inside an archive layer).
    pub fn keep(self) -> Result<Digest> {
        let digest = self.hasher.clone().finish();
        self.persist(digest)?;
        Ok(digest)
    }

    fn persist(self, digest: Digest) -> Result<PathBuf> {
        let path = self.store.blob_path(digest);
        self.file
            .persist(&path)
            .with_context(|| format!("keeping {}", path.display()))?;
        Ok(path)
    }
}

impl std::io::Write for BlobWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        BlobWriter::write(self, bytes).map_err(std::io::Error::other)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Where blobs are read from when an app is made runnable: this store, or
/// (for the containerd shim) another content store of the same layout.
pub trait Blobs {
    /// Checks that blob `digest` is kept and matches its digest.
    fn check(&self, digest: Digest) -> Result<()>;
    /// The directory blobs are kept in, each named by its digest's hex.
    fn dir(&self) -> Result<cap_std::fs::Dir>;
}

impl Blobs for Store {
    fn check(&self, digest: Digest) -> Result<()> {
        if !self.has(digest) {
            bail!("cannot find content {digest}: the artifact has no such layer");
        }
        self.verify(digest)
    }

    fn dir(&self) -> Result<cap_std::fs::Dir> {
        self.blobs_dir()
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
        assert!(error.contains("does not match its digest"), "{error}");
        assert!(!store.has(digest));
        store.write(digest, b"wasm").unwrap();
        assert_eq!(store.read(digest, 4).unwrap(), b"wasm");
        let error = store.read(digest, 3).unwrap_err().to_string();
        assert!(error.contains("past 3"), "{error}");
        store.verify(digest).unwrap();
        // Changed on disk: refused and removed.
        std::fs::write(store.blob_path(digest), b"tampered").unwrap();
        let error = store.verify(digest).unwrap_err().to_string();
        assert!(error.contains("does not match its digest"), "{error}");
        assert!(!store.has(digest));
        // No temporary file is left beside the blobs.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("blobs/sha256"))
            .unwrap()
            .collect();
        assert!(names.is_empty(), "{names:?}");
    }

    #[test]
    fn a_streamed_blob_stops_at_its_limit_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut writer = store.writer(5, "too long".into()).unwrap();
        writer.write(b"abc").unwrap();
        let error = writer.write(b"def").unwrap_err().to_string();
        assert_eq!(error, "too long");
        drop(writer);
        let mut writer = store.writer(6, "too long".into()).unwrap();
        writer.write(b"abc").unwrap();
        writer.write(b"def").unwrap();
        assert_eq!(writer.keep().unwrap(), Digest::of(b"abcdef"));
        let names: Vec<_> = std::fs::read_dir(dir.path().join("blobs/sha256"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [Digest::of(b"abcdef").hex().as_str()]);
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
