//! The one writer of an app directory made from an artifact. Every call is
//! relative to the directory's descriptor (`cap-std`: a path is resolved
//! beneath it, so `..`, an absolute path or a link cannot lead out), every
//! directory is made one segment at a time and refused if that segment is
//! already anything but a directory (a link included), and every file is
//! created new (`O_CREAT|O_EXCL`, which never writes through a link at the
//! final name). Its callers name files by digest or index; this is what
//! holds if one of them ever passed something else.

use super::names::RelativePath;
use anyhow::{Context, Result, bail};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// An app directory being written.
pub struct AppDir {
    dir: Dir,
    path: PathBuf,
}

/// What [`AppDir::place`] found at the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    New,
    /// Something was there already (content named by its digest, placed twice).
    Existing,
}

impl AppDir {
    /// The directory at `path`, which the caller made (empty).
    pub fn open(path: &Path) -> Result<Self> {
        let dir = Dir::open_ambient_dir(path, ambient_authority())
            .with_context(|| format!("opening {}", path.display()))?;
        Ok(Self {
            dir,
            path: path.to_path_buf(),
        })
    }

    /// Makes every directory of `relative` beneath the root, one segment at
    /// a time; a segment that exists must be a directory, not a link.
    pub fn create_dirs(&self, relative: &RelativePath) -> Result<()> {
        let mut walked = PathBuf::new();
        for segment in relative.as_path() {
            walked.push(segment);
            match self.dir.create_dir(&walked) {
                Ok(()) => {}
                Err(error) if error.kind() == ErrorKind::AlreadyExists => {
                    let metadata = self
                        .dir
                        .symlink_metadata(&walked)
                        .with_context(|| self.describe(&walked))?;
                    if !metadata.is_dir() {
                        bail!(
                            "{} is already there and is not a directory",
                            self.describe(&walked)
                        );
                    }
                }
                Err(error) => return Err(error).with_context(|| self.describe(&walked)),
            }
        }
        Ok(())
    }

    /// Creates `relative` (its directories made first) holding `bytes`.
    pub fn write_new(&self, relative: &RelativePath, bytes: &[u8]) -> Result<Placed> {
        let Some(mut file) = self.create_new(relative)? else {
            return Ok(Placed::Existing);
        };
        std::io::Write::write_all(&mut file, bytes).with_context(|| self.describe(relative))?;
        Ok(Placed::New)
    }

    /// Puts the file `name` of `from` at `relative`: hard-linked where it
    /// can be (the same file system), else copied.
    pub fn place(&self, from: &Dir, name: &str, relative: &RelativePath) -> Result<Placed> {
        self.create_parents(relative)?;
        match from.hard_link(name, &self.dir, relative.as_path()) {
            Ok(()) => return Ok(Placed::New),
            Err(error) if error.kind() == ErrorKind::AlreadyExists => return Ok(Placed::Existing),
            Err(_) => {}
        }
        let mut source = from
            .open(name)
            .with_context(|| format!("opening content {name}"))?;
        let Some(mut target) = self.create_new(relative)? else {
            return Ok(Placed::Existing);
        };
        std::io::copy(&mut source, &mut target).with_context(|| self.describe(relative))?;
        Ok(Placed::New)
    }

    /// The directories above `relative`, made beneath the root as
    /// `create_dirs` makes them.
    fn create_parents(&self, relative: &RelativePath) -> Result<()> {
        if let Some(parent) = relative
            .as_path()
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
        {
            let parent = parent.to_str().context("a path that is not UTF-8")?;
            self.create_dirs(&RelativePath::new(parent)?)?;
        }
        Ok(())
    }

    /// A new file at `relative`, or `None` if the name is taken.
    fn create_new(&self, relative: &RelativePath) -> Result<Option<cap_std::fs::File>> {
        self.create_parents(relative)?;
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        match self.dir.open_with(relative.as_path(), &options) {
            Ok(file) => Ok(Some(file)),
            Err(error) if error.kind() == ErrorKind::AlreadyExists => Ok(None),
            Err(error) => Err(error).with_context(|| self.describe(relative)),
        }
    }

    fn describe(&self, relative: impl AsRef<Path>) -> String {
        self.path.join(relative).display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn rel(text: &str) -> RelativePath<'_> {
        RelativePath::new(text).unwrap()
    }

    #[test]
    fn files_land_beneath_the_root_and_nowhere_else() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("app");
        std::fs::create_dir(&root).unwrap();
        let app = AppDir::open(&root).unwrap();
        assert_eq!(app.write_new(&rel("a/b/c.txt"), b"c").unwrap(), Placed::New);
        assert_eq!(std::fs::read(root.join("a/b/c.txt")).unwrap(), b"c");
        // Written twice: the first is kept.
        assert_eq!(
            app.write_new(&rel("a/b/c.txt"), b"x").unwrap(),
            Placed::Existing
        );
        assert_eq!(std::fs::read(root.join("a/b/c.txt")).unwrap(), b"c");
    }

    #[test]
    fn a_link_planted_inside_leads_nowhere() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("app");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        // A directory link and a file link, as an earlier writer might leave.
        symlink(&outside, root.join("dir")).unwrap();
        symlink(outside.join("target.txt"), root.join("file.txt")).unwrap();
        symlink("../outside", root.join("relative")).unwrap();
        let app = AppDir::open(&root).unwrap();
        for (path, why) in [
            ("dir/x.txt", "not a directory"),
            ("relative/x.txt", "not a directory"),
        ] {
            let error = format!("{:#}", app.write_new(&rel(path), b"evil").unwrap_err());
            assert!(error.contains(why), "{path}: {error}");
        }
        // The final name a link: not written through.
        assert_eq!(
            app.write_new(&rel("file.txt"), b"evil").unwrap(),
            Placed::Existing
        );
        let blobs = tempfile::tempdir().unwrap();
        std::fs::write(blobs.path().join("blob"), b"evil").unwrap();
        let from = Dir::open_ambient_dir(blobs.path(), ambient_authority()).unwrap();
        assert!(app.place(&from, "blob", &rel("dir/y.txt")).is_err());
        assert_eq!(
            app.place(&from, "blob", &rel("file.txt")).unwrap(),
            Placed::Existing
        );
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    }
}
