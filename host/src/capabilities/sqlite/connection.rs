//! One SQLite connection opened lazily and used from the SQLite threads
//! ([`executor`](super::executor)): what key-value stores and SQLite
//! databases both stand on. Every connection is confined
//! ([`sandbox`](super::sandbox)); what SQLite allocates while a piece of work
//! runs is charged to the heap budget of the instance that asked for it
//! ([`heap`](super::heap)); every piece of work on it stops when the future
//! waiting for it is dropped (its request timed out, its client went away,
//! its instance was dropped), through SQLite's progress handler.

use super::executor::Executor;
use super::heap;
use super::sandbox::{self, Attach};
use crate::capabilities::quota::Quota;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The most one instance's SQLite heap may hold by default: two of the
/// largest value a statement may produce, so that one such value can be
/// built and copied.
pub const MAX_HEAP_BYTES: usize = 2 * super::MAX_RESULT_BYTES;

/// Closing a connection that gives back more than this asks the allocator to
/// return its free pages to the kernel: SQLite's pages are small blocks that
/// otherwise stay in the allocator's arenas after the connection is gone (48
/// in-memory databases left 7.4 GiB resident after their request).
const TRIM_AFTER: usize = 16 << 20;

/// How many SQLite virtual-machine steps run between two looks at whether
/// the work was given up: a few microseconds' worth.
const PROGRESS_STEPS: i32 = 10_000;

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
    attach: Attach,
    setup: fn(&rusqlite::Connection) -> rusqlite::Result<()>,
    executor: Arc<Executor>,
    connection: Mutex<Option<rusqlite::Connection>>,
}

impl LazyConnection {
    pub fn new(
        location: Location,
        attach: Attach,
        setup: fn(&rusqlite::Connection) -> rusqlite::Result<()>,
        executor: Arc<Executor>,
    ) -> Self {
        Self {
            location,
            attach,
            setup,
            executor,
            connection: Mutex::new(None),
        }
    }

    #[cfg(test)]
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Runs `work` on the connection on the SQLite threads, what SQLite
    /// allocates meanwhile charged to `heap`. Dropping the returned future
    /// before it completes interrupts the work.
    pub async fn run<R: Send + 'static>(
        self: &Arc<Self>,
        heap: &Arc<Quota>,
        work: impl FnOnce(&rusqlite::Connection) -> R + Send + 'static,
    ) -> Result<R, String> {
        let given_up = GivenUp::default();
        let flag = given_up.0.clone();
        let (this, heap) = (self.clone(), heap.clone());
        let outcome = self
            .executor
            .run(move || this.run_blocking(&heap, &flag, work))
            .await;
        given_up.disarm();
        outcome?
    }

    fn run_blocking<R>(
        &self,
        heap: &Arc<Quota>,
        given_up: &Arc<AtomicBool>,
        work: impl FnOnce(&rusqlite::Connection) -> R,
    ) -> Result<R, String> {
        // A panic while holding the lock leaves a usable connection: SQLite's
        // own state is transactional.
        let mut slot = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if given_up.load(Ordering::Relaxed) {
            return Err("interrupted".into());
        }
        let _charging = heap::charged_to(heap);
        if slot.is_none() {
            *slot = Some(self.open().map_err(|error| format!("{error:#}"))?);
        }
        let connection = slot.as_ref().expect("opened above");
        let flag = given_up.clone();
        connection
            .progress_handler(PROGRESS_STEPS, Some(move || flag.load(Ordering::Relaxed)))
            .map_err(|error| error.to_string())?;
        let result = work(connection);
        connection
            .progress_handler(0, None::<fn() -> bool>)
            .map_err(|error| error.to_string())?;
        Ok(result)
    }

    fn open(&self) -> Result<rusqlite::Connection> {
        heap::install().map_err(anyhow::Error::msg)?;
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
        sandbox::confine(&connection, self.attach)?;
        (self.setup)(&connection)?;
        Ok(connection)
    }
}

impl Drop for LazyConnection {
    fn drop(&mut self) {
        let connection = self
            .connection
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(connection) = connection {
            let before = heap::allocated();
            drop(connection);
            if before.saturating_sub(heap::allocated()) > TRIM_AFTER {
                heap::return_free_pages();
            }
        }
    }
}

/// Set when the future waiting for a piece of work is dropped unfinished.
#[derive(Default)]
struct GivenUp(Arc<AtomicBool>, bool);

impl GivenUp {
    fn disarm(mut self) {
        self.1 = true;
    }
}

impl Drop for GivenUp {
    fn drop(&mut self) {
        if !self.1 {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}
