//! One SQLite connection opened lazily and used from tokio's blocking pool:
//! what key-value stores and SQLite databases both stand on.

use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// Where a database lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// No state directory, or no `path` in the runtime config: gone at exit.
    Memory,
    File(PathBuf),
}

/// One SQLite connection, opened (its directory created) at its first use and
/// then reused; `setup` runs once on it after opening.
pub struct LazyConnection {
    location: Location,
    setup: fn(&rusqlite::Connection) -> rusqlite::Result<()>,
    connection: Mutex<Option<rusqlite::Connection>>,
}

impl LazyConnection {
    pub fn new(
        location: Location,
        setup: fn(&rusqlite::Connection) -> rusqlite::Result<()>,
    ) -> Self {
        Self {
            location,
            setup,
            connection: Mutex::new(None),
        }
    }

    #[cfg(test)]
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Runs `work` on the connection on tokio's blocking pool.
    pub async fn run<R: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce(&rusqlite::Connection) -> R + Send + 'static,
    ) -> Result<R, String> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.run_blocking(work))
            .await
            .map_err(|error| format!("SQLite task failed: {error}"))?
    }

    fn run_blocking<R>(&self, work: impl FnOnce(&rusqlite::Connection) -> R) -> Result<R, String> {
        // A panic while holding the lock leaves a usable connection: SQLite's
        // own state is transactional.
        let mut slot = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(self.open().map_err(|error| format!("{error:#}"))?);
        }
        Ok(work(slot.as_ref().expect("opened above")))
    }

    fn open(&self) -> Result<rusqlite::Connection> {
        let connection = match &self.location {
            Location::Memory => rusqlite::Connection::open_in_memory()?,
            Location::File(path) => {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .with_context(|| format!("creating {}", parent.display()))?;
                }
                rusqlite::Connection::open(path)
                    .with_context(|| format!("opening {}", path.display()))?
            }
        };
        (self.setup)(&connection)?;
        Ok(connection)
    }
}
