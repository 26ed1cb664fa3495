//! `files` and `exclude_files`: the files a component reads, placed as Spin
//! 4.0.2 places them with its default strategy (spinframework/spin v4.0.2,
//! `crates/loader/src/local.rs`, `FilesMountStrategy::Copy`, and
//! `crates/factor-wasi/src/spin.rs`): at start, each `files` entry is resolved
//! against the manifest's directory and what it names is copied into a
//! private temporary directory; every store of the component then preopens
//! that directory at `/`, read-only (Spin's `DirPerms::READ`/`FilePerms::READ`:
//! it mounts read-only unless `--allow-transient-write`).
//!
//! Spin's rules, each a case of this module's tests:
//! - `"dir/file.txt"`, an existing file: at `/dir/file.txt`.
//! - `"dir"`, an existing directory: each file under it at
//!   `/dir/<its path from the manifest's directory>`, so `dir/a.txt` is at
//!   `/dir/dir/a.txt`. That is what v4.0.2's `copy_glob_or_path` does (it joins
//!   the destination to the pattern, then to the path from the app root), and
//!   what `spin up` serves, so it is done here too.
//! - a glob (`"static/**/*"`): each file matched, at its path from the
//!   manifest's directory. A glob matching nothing is not an error; a plain
//!   path that does not exist is.
//! - `{ source, destination }`: a directory's files under `destination`, or
//!   one file at `destination` (which must name a file, not `/`).
//! - `exclude_files` (globs against paths from the manifest's directory) drop
//!   files found through a glob or a directory, not a file named alone.
//! - a file outside the manifest's directory is refused with Spin's message.
//!   Spin checks the joined path as written, so under `spin up` a
//!   `{ source = "../sibling" }` directory is mounted, and so is
//!   `{ source = "../../../etc" }`: any directory of the host. Here the app's
//!   directory is the boundary: a source is resolved (its `..` taken away)
//!   before it is checked, and one that leaves the app is refused, unless the
//!   operator names a directory it may also come from (`--files-root`, for
//!   Spin's `../sibling` layout; docs/security.md). A pattern through `..`
//!   (which Spin copies outside the component's root, where the guest cannot
//!   see it) and a destination through `..` are refused too.
//!
//! Links are followed only where they stay inside: each file is opened
//! beneath its directory with `cap-std` (the rule wasmtime's preopens apply),
//! so a symbolic link that leads out of the application is refused at start,
//! and so is a file with a hard link outside it (`sources`). The copy holds
//! plain files, mounted read-only: a component can create no link at all.
//!
//! Per request the cost is one `openat` of the copy's root (wasmtime-wasi's
//! `preopened_dir`, as Spin pays it); nothing is walked. A component without
//! `files` pays nothing.

use crate::manifest::component::FilesMount;
use anyhow::{Context, Result, anyhow, bail};
use glob::Pattern;
use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

/// Where the guest finds its files: Spin mounts the copy at the root.
const GUEST_ROOT: &str = "/";

/// One step of building the copy, paths relative to its root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A directory that exists even if nothing is copied into it (Spin
    /// creates each directory mount's destination).
    Dir(PathBuf),
    File {
        source: PathBuf,
        /// The directory `source` must stay inside, links followed: the
        /// application's, or (with `--files-root`) a placed directory's from
        /// outside it, itself opened beneath the files root.
        within: PathBuf,
        destination: PathBuf,
    },
}

/// A component's files, copied: removed when the application stops.
#[derive(Debug)]
pub struct Mount {
    root: tempfile::TempDir,
}

impl Mount {
    /// The copy of what `files` names in `app_dir` (the manifest's
    /// directory), or `None` for a component without `files`. A source
    /// outside `app_dir` is refused unless it is inside `files_root`.
    pub fn for_component(
        app_dir: &Path,
        files: &[FilesMount],
        exclude_files: &[String],
        files_root: Option<&Path>,
    ) -> Result<Option<Self>> {
        if files.is_empty() {
            return Ok(None);
        }
        let boundary = Boundary::new(app_dir, files_root)?;
        let entries = resolve(&boundary, files, exclude_files)?;
        Self::copy(&entries, &boundary).map(Some)
    }

    fn copy(entries: &[Entry], boundary: &Boundary) -> Result<Self> {
        let root = tempfile::Builder::new()
            .prefix("spinbench-files-")
            .tempdir()
            .context("creating a directory for the component's files")?;
        let mut sources = Sources::new(boundary.roots());
        for entry in entries {
            match entry {
                Entry::Dir(dir) => create_dir(&root.path().join(dir))?,
                Entry::File {
                    source,
                    within,
                    destination,
                } => {
                    let mut file = sources.open(source, within)?;
                    let destination = root.path().join(destination);
                    if let Some(parent) = destination.parent() {
                        create_dir(parent)?;
                    }
                    let mut copy = std::fs::File::create(&destination)
                        .with_context(|| format!("creating {}", destination.display()))?;
                    std::io::copy(&mut file, &mut copy)
                        .with_context(|| format!("copying {}", source.display()))?;
                }
            }
        }
        sources.check_hard_links()?;
        Ok(Self { root })
    }

    /// Adds the copy to one store's WASI context, read-only at `/`.
    pub fn preopen(&self, wasi: &mut WasiCtxBuilder) -> wasmtime::Result<()> {
        wasi.preopened_dir(self.root.path(), GUEST_ROOT, FsPerms::ReadOnly)?;
        Ok(())
    }

    #[cfg(test)]
    pub fn root(&self) -> &Path {
        self.root.path()
    }
}

fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

/// Where a component's `files` may come from: its app's directory and, if
/// the operator names one, a files root; both absolute, without `..`.
#[derive(Debug, Clone)]
pub struct Boundary {
    app_dir: PathBuf,
    files_root: Option<PathBuf>,
}

impl Boundary {
    pub fn new(app_dir: &Path, files_root: Option<&Path>) -> Result<Self> {
        let absolute = |dir: &Path| {
            std::path::absolute(dir)
                .map(|dir| lexical(&dir))
                .with_context(|| format!("resolving {}", dir.display()))
        };
        Ok(Self {
            app_dir: absolute(app_dir)?,
            files_root: files_root.map(absolute).transpose()?,
        })
    }

    /// The directory `path` (absolute, without `..`) is inside, if any.
    fn root_of(&self, path: &Path) -> Option<&Path> {
        std::iter::once(&self.app_dir)
            .chain(&self.files_root)
            .find(|root| path.starts_with(root))
            .map(PathBuf::as_path)
    }

    fn roots(&self) -> Vec<PathBuf> {
        std::iter::once(&self.app_dir)
            .chain(&self.files_root)
            .cloned()
            .collect()
    }
}

/// What to copy for `files` within `boundary`, in manifest order.
pub fn resolve(
    boundary: &Boundary,
    files: &[FilesMount],
    exclude_files: &[String],
) -> Result<Vec<Entry>> {
    let exclude = exclude_files
        .iter()
        .map(|pattern| {
            Pattern::new(pattern)
                .with_context(|| format!("Invalid exclude_files glob pattern {pattern:?}"))
        })
        .collect::<Result<Vec<_>>>()?;
    let resolver = Resolver {
        app_dir: &boundary.app_dir,
        boundary,
        exclude: &exclude,
    };
    let mut entries = Vec::new();
    for mount in files {
        match mount {
            FilesMount::Pattern(pattern) => resolver.pattern(pattern, &mut entries)?,
            FilesMount::Placement {
                source,
                destination,
            } => resolver.placement(source, destination, &mut entries)?,
        }
    }
    Ok(entries)
}

struct Resolver<'a> {
    app_dir: &'a Path,
    boundary: &'a Boundary,
    exclude: &'a [Pattern],
}

impl Resolver<'_> {
    /// A `files` string: a file, a directory, or a glob.
    fn pattern(&self, pattern: &str, entries: &mut Vec<Entry>) -> Result<()> {
        const HOW: &str = "use the source-destination form, or a glob pattern ending in **/*";
        if pattern == ".." || pattern.ends_with("/..") {
            bail!("A file pattern can't end in a parent directory path (..) ({pattern:?}): {HOW}");
        }
        if pattern == "." || pattern.ends_with("/.") {
            bail!("A file pattern can't end in a current directory path (.) ({pattern:?}): {HOW}");
        }
        let path = self.app_dir.join(pattern);
        if path.exists() {
            let destination = PathBuf::from(pattern);
            if path.is_dir() {
                // Spin's destination: the pattern, then the path from the app root.
                self.glob(&under(&path), self.app_dir, &destination, entries)
            } else {
                self.file(&path, &destination, pattern, entries)
            }
        } else if Pattern::escape(pattern) != pattern {
            let glob = if Path::new(pattern).is_absolute() {
                pattern.to_string()
            } else {
                format!("{}/{pattern}", escaped(self.app_dir))
            };
            self.glob(&glob, self.app_dir, Path::new(""), entries)
        } else {
            bail!("{pattern:?} does not exist and doesn't appear to be a glob pattern")
        }
    }

    /// A `{ source, destination }` entry: a directory's files, or one file.
    fn placement(&self, source: &str, destination: &str, entries: &mut Vec<Entry>) -> Result<()> {
        let path = lexical(&self.app_dir.join(source));
        if self.boundary.root_of(&path).is_none() {
            bail!(outside(source));
        }
        let metadata = std::fs::metadata(&path).map_err(|e| {
            if e.kind() == ErrorKind::NotFound {
                anyhow!("File or directory {source:?} does not exist")
            } else {
                anyhow!("invalid file mount source {source:?}: {e}")
            }
        })?;
        let target = Path::new(destination.trim_start_matches('/'));
        if metadata.is_dir() {
            self.glob(&under(&path), &path, target, entries)
        } else if destination.ends_with(['/', '.']) || destination.is_empty() {
            bail!("{destination:?} is not a valid destination file name (for the file {source:?})")
        } else {
            self.file(&path, target, source, entries)
        }
    }

    /// One file named alone (never excluded, as in Spin).
    fn file(
        &self,
        path: &Path,
        destination: &Path,
        named: &str,
        entries: &mut Vec<Entry>,
    ) -> Result<()> {
        let path = lexical(path);
        let Some(root) = self.boundary.root_of(&path) else {
            bail!(outside(named));
        };
        if !in_root(destination) {
            bail!(outside(named));
        }
        entries.push(Entry::File {
            within: root.to_path_buf(),
            source: path,
            destination: destination.to_path_buf(),
        });
        Ok(())
    }

    /// Each file `pattern` matches, at `destination` joined to its path from
    /// `prefix`, unless `exclude_files` drops it.
    fn glob(
        &self,
        pattern: &str,
        prefix: &Path,
        destination: &Path,
        entries: &mut Vec<Entry>,
    ) -> Result<()> {
        let paths = glob::glob(pattern)
            .with_context(|| format!("Failed to resolve glob pattern {pattern:?}"))?;
        if !in_root(destination) {
            bail!(outside(pattern));
        }
        entries.push(Entry::Dir(destination.to_path_buf()));
        for path in paths {
            let path = path.with_context(|| format!("resolving the glob pattern {pattern:?}"))?;
            if !path.is_file() {
                continue;
            }
            let Some(from_app) = self.path_from_app(&path, prefix) else {
                bail!(outside(pattern));
            };
            if self.exclude.iter().any(|e| e.matches_path(&from_app)) {
                continue;
            }
            let relative = path.strip_prefix(prefix).unwrap_or(&from_app);
            let target = destination.join(relative);
            if !in_root(&target) {
                bail!(outside(pattern));
            }
            entries.push(Entry::File {
                source: path,
                within: self.within(prefix),
                destination: target,
            });
        }
        Ok(())
    }
}

impl Resolver<'_> {
    /// The directory a file found under `prefix` must stay inside: the
    /// application's, unless `prefix` is a placed directory from outside it.
    fn within(&self, prefix: &Path) -> PathBuf {
        match prefix.strip_prefix(self.app_dir) {
            Ok(inner) if in_root(inner) => self.app_dir.to_path_buf(),
            _ => prefix.to_path_buf(),
        }
    }

    /// A file's path from the application's directory (what `exclude_files`
    /// matches): found under `prefix`, a placed directory inside the
    /// boundary, it is `../<sibling>/...` when the files root allowed that.
    fn path_from_app(&self, path: &Path, prefix: &Path) -> Option<PathBuf> {
        if let Ok(inner) = path.strip_prefix(self.app_dir) {
            return Some(inner.to_path_buf());
        }
        let prefix = lexical(prefix);
        self.boundary.root_of(&prefix)?;
        let inner = path.strip_prefix(&prefix).ok()?;
        let shared = self
            .app_dir
            .components()
            .zip(prefix.components())
            .take_while(|(a, b)| a == b)
            .count();
        let up = self.app_dir.components().count() - shared;
        let mut relative: PathBuf = std::iter::repeat_n(Component::ParentDir, up).collect();
        relative.extend(prefix.components().skip(shared));
        Some(relative.join(inner))
    }
}

/// Spin's refusal of a file outside the application directory, with the
/// operator's way to allow a directory beside it.
fn outside(named: &str) -> String {
    format!(
        "{named} cannot be mapped because it is outside the application directory. Files must be within the application directory (an operator can allow one more directory with --files-root)."
    )
}

/// `path` (absolute) with `.` and `..` taken away by their names, as the
/// manifest wrote them: what is checked against the boundary is then the
/// path opened (beneath its root, with `cap-std`, so a link cannot lead
/// out either).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Whether a path relative to the copy's root stays inside it.
fn in_root(path: &Path) -> bool {
    path.components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// `dir` as a glob prefix: its own characters matched literally.
fn escaped(dir: &Path) -> String {
    Pattern::escape(&dir.to_string_lossy())
}

/// The glob of every file under `dir`.
fn under(dir: &Path) -> String {
    format!("{}/**/*", escaped(dir))
}

mod sources;
use sources::Sources;

#[cfg(test)]
mod tests;
