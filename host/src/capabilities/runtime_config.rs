//! What `spin up --runtime-config-file` and `--state-dir` say, read as Spin
//! reads them (spinframework/spin `crates/runtime-config`, v4.0.2): the state
//! directory (where the default key-value store and SQLite database live:
//! `.spin/` beside the manifest unless given, none if given as empty), and the
//! runtime config file's tables, each capability reading its own
//! (`[key_value_store.<label>]`, `[sqlite_database.<label>]`, ...).

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Spin's state directory, beside the manifest, when none is given.
pub const DEFAULT_STATE_DIR: &str = ".spin";

/// `--state-dir`: the three cases Spin tells apart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum StateDirArg {
    /// Not given: the runtime config file's `state_dir`, else `.spin` beside the manifest.
    #[default]
    Default,
    /// Given as a path.
    Provided(PathBuf),
    /// Given as `""`: no state directory (stores and databases in memory).
    Unset,
}

impl StateDirArg {
    /// `--state-dir VALUE`, as Spin reads it: an empty value unsets.
    pub fn from_flag(value: Option<&str>) -> Self {
        match value {
            None => Self::Default,
            Some("") => Self::Unset,
            Some(path) => Self::Provided(PathBuf::from(path)),
        }
    }
}

/// A parsed runtime config file and where it was read from (its relative
/// paths resolve against that directory).
#[derive(Debug, Clone, Default)]
pub struct RuntimeConfig {
    pub table: toml::Table,
    /// The file's directory; `None` without a file.
    pub dir: Option<PathBuf>,
    /// The resolved state directory, absolute; `None` when unset.
    pub state_dir: Option<PathBuf>,
}

impl RuntimeConfig {
    /// Reads `file` (if any) and resolves the state directory for an app
    /// whose manifest is in `app_dir`.
    pub fn load(file: Option<&Path>, state_dir: &StateDirArg, app_dir: &Path) -> Result<Self> {
        let (table, dir) = match file {
            Some(file) => {
                let text = std::fs::read_to_string(file)
                    .with_context(|| format!("reading runtime config file {}", file.display()))?;
                let table: toml::Table = toml::from_str(&text)
                    .with_context(|| format!("parsing runtime config file {}", file.display()))?;
                (
                    table,
                    Some(absolute(file.parent().unwrap_or(Path::new(".")))?),
                )
            }
            None => (toml::Table::new(), None),
        };
        let mut arg = state_dir.clone();
        if arg == StateDirArg::Default
            && let Some(value) = table.get("state_dir").and_then(toml::Value::as_str)
        {
            arg = StateDirArg::from_flag(Some(value));
        }
        let state_dir = match arg {
            StateDirArg::Provided(path) => Some(absolute(&path)?),
            StateDirArg::Default => Some(absolute(app_dir)?.join(DEFAULT_STATE_DIR)),
            StateDirArg::Unset => None,
        };
        Ok(Self {
            table,
            dir,
            state_dir,
        })
    }

    /// The table `[<section>.<label>]`, if the file has one.
    pub fn entry(&self, section: &str, label: &str) -> Option<&toml::Table> {
        self.table.get(section)?.as_table()?.get(label)?.as_table()
    }

    /// The labels of `[<section>.*]`, in the file's order.
    pub fn labels(&self, section: &str) -> Vec<&str> {
        self.table
            .get(section)
            .and_then(toml::Value::as_table)
            .map(|entries| entries.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// A path the file gives, resolved against the file's directory.
    pub fn resolve(&self, path: &str) -> PathBuf {
        match &self.dir {
            Some(dir) => dir.join(path),
            None => PathBuf::from(path),
        }
    }
}

fn absolute(path: &Path) -> Result<PathBuf> {
    let path = if path.as_os_str().is_empty() {
        Path::new(".")
    } else {
        path
    };
    std::path::absolute(path).with_context(|| format!("resolving {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_dir_is_spin_beside_the_manifest_unless_given() {
        let default = RuntimeConfig::load(None, &StateDirArg::Default, Path::new("/app")).unwrap();
        assert_eq!(default.state_dir, Some(PathBuf::from("/app/.spin")));
        let given = StateDirArg::from_flag(Some("/state"));
        let provided = RuntimeConfig::load(None, &given, Path::new("/app")).unwrap();
        assert_eq!(provided.state_dir, Some(PathBuf::from("/state")));
        let unset = RuntimeConfig::load(None, &StateDirArg::from_flag(Some("")), Path::new("/app"))
            .unwrap();
        assert_eq!(unset.state_dir, None);
    }

    #[test]
    fn the_file_names_its_state_dir_and_its_tables() {
        let dir = std::env::temp_dir().join(format!("spinbench-rc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("runtime-config.toml");
        std::fs::write(
            &file,
            "state_dir = \"/elsewhere\"\n[key_value_store.cache]\ntype = \"spin\"\npath = \"cache.db\"\n",
        )
        .unwrap();
        let config =
            RuntimeConfig::load(Some(&file), &StateDirArg::Default, Path::new("/app")).unwrap();
        assert_eq!(config.state_dir, Some(PathBuf::from("/elsewhere")));
        assert_eq!(config.labels("key_value_store"), ["cache"]);
        let cache = config.entry("key_value_store", "cache").unwrap();
        assert_eq!(cache["type"].as_str(), Some("spin"));
        assert_eq!(config.resolve("cache.db"), dir.join("cache.db"));
        // The flag wins over the file.
        let flag = StateDirArg::from_flag(Some("/flag"));
        let config = RuntimeConfig::load(Some(&file), &flag, Path::new("/app")).unwrap();
        assert_eq!(config.state_dir, Some(PathBuf::from("/flag")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
