//! Opening the files a component's `files` name, each beneath the directory
//! it must stay inside. `cap-std` resolves every path component itself,
//! following a symbolic link only while it stays beneath that directory (the
//! rule wasmtime's preopens apply to guests), so no spelling of a link
//! reaches a file outside. A hard link has no direction to check: a file with
//! more names than the directory holds is also a file outside it, and is
//! refused too. A directory a file must stay inside is itself opened
//! beneath its root (the app's directory, or the operator's files root), so
//! no link on the way to it leads out either.

use anyhow::{Context, Result, bail};
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The directories opened so far, and the hard-linked files met in them.
pub struct Sources {
    /// The directories everything is opened beneath (from the operator).
    roots: Vec<PathBuf>,
    dirs: HashMap<PathBuf, Dir>,
    /// By directory: each multiply-linked file's (device, inode), its link
    /// count and the name it was met under.
    linked: BTreeMap<PathBuf, HashMap<Inode, (u64, PathBuf)>>,
}

/// A file's identity: (device, inode).
type Inode = (u64, u64);

impl Sources {
    pub fn new(roots: Vec<PathBuf>) -> Self {
        Self {
            roots,
            dirs: HashMap::new(),
            linked: BTreeMap::new(),
        }
    }

    /// `within`, opened beneath the root it is in.
    fn open_within(&self, within: &Path) -> Result<Dir> {
        let (root, inner) = self
            .roots
            .iter()
            .filter_map(|root| Some((root, within.strip_prefix(root).ok()?)))
            .max_by_key(|(root, _)| root.as_os_str().len())
            .with_context(|| format!("{} is outside the application", within.display()))?;
        let root_dir = Dir::open_ambient_dir(root, ambient_authority())
            .with_context(|| format!("opening {}", root.display()))?;
        if inner.as_os_str().is_empty() {
            return Ok(root_dir);
        }
        root_dir.open_dir(inner).map_err(|_| {
            anyhow::anyhow!(
                "{} cannot be opened beneath {}: a link on the way leads out of it",
                within.display(),
                root.display()
            )
        })
    }

    /// `source`, opened beneath `within`, if it is a regular file there.
    pub fn open(&mut self, source: &Path, within: &Path) -> Result<std::fs::File> {
        if !self.dirs.contains_key(within) {
            let dir = self.open_within(within)?;
            self.dirs.insert(within.to_path_buf(), dir);
        }
        let dir = &self.dirs[within];
        let relative = source
            .strip_prefix(within)
            .with_context(|| format!("{} is outside {}", source.display(), within.display()))?;
        let file = match dir.open(relative) {
            Ok(file) => file.into_std(),
            Err(_) if leads_outside(source, within) => bail!(link_outside(source, within)),
            Err(error) => {
                return Err(error).with_context(|| format!("opening {}", source.display()));
            }
        };
        let metadata = file
            .metadata()
            .with_context(|| format!("reading {}", source.display()))?;
        if !metadata.is_file() {
            bail!("{} is not a regular file", source.display());
        }
        if metadata.nlink() > 1 {
            self.linked.entry(within.to_path_buf()).or_default().insert(
                (metadata.dev(), metadata.ino()),
                (metadata.nlink(), source.to_path_buf()),
            );
        }
        Ok(file)
    }

    /// Refuses any file met with a hard link whose other names are not all
    /// inside its directory (found by walking it, links not followed).
    pub fn check_hard_links(&self) -> Result<()> {
        for (within, files) in &self.linked {
            let mut names: HashMap<Inode, u64> = HashMap::new();
            for entry in walkdir::WalkDir::new(within).follow_links(false) {
                let Ok(entry) = entry else { continue };
                let Ok(metadata) = entry.metadata() else {
                    continue;
                };
                let key = (metadata.dev(), metadata.ino());
                if metadata.is_file() && files.contains_key(&key) {
                    *names.entry(key).or_default() += 1;
                }
            }
            for (key, (links, source)) in files {
                let inside = names.get(key).copied().unwrap_or(0);
                if inside < *links {
                    bail!(
                        "{} has {links} hard links, {} of them outside {}: spinbench serves no \
                         file that is also reachable from outside the application",
                        source.display(),
                        links - inside,
                        within.display()
                    );
                }
            }
        }
        Ok(())
    }
}

/// Whether `source`, links followed, resolves outside `within` (only to word
/// the refusal: the refusal itself is cap-std's).
fn leads_outside(source: &Path, within: &Path) -> bool {
    match (source.canonicalize(), within.canonicalize()) {
        (Ok(target), Ok(root)) => !target.starts_with(root),
        _ => false,
    }
}

fn link_outside(source: &Path, within: &Path) -> String {
    format!(
        "{} is a link that leads outside {}: spinbench serves no file from outside the \
         application directory",
        source.display(),
        within.display()
    )
}
