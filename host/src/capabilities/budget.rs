//! What one instance (one store: a WASIp2 request, or a reused WASIp3
//! instance and all its requests) may hold on the host through its
//! capabilities, each under a ceiling the operator chose (docs/limits.md):
//!
//! - the SQLite heap of all its connections together (databases, their page
//!   caches and temporary storage, statements; and what its key-value calls
//!   allocate), counted by SQLite's own allocator (`sqlite::heap`);
//! - its open SQLite connections;
//! - the bytes the host holds for its calls: arguments of calls in flight
//!   (a WASIp3 guest may have many at once) and results not yet read (the
//!   rows of a stream it has not drained);
//! - its sockets.
//!
//! One budget is made per store and shared by every host call of it.

use super::quota::{Quota, Share};
use std::sync::Arc;

const MIB: usize = 1 << 20;

/// The ceilings of one instance's [`InstanceBudget`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetLimits {
    /// Bytes of SQLite heap, all its connections together.
    pub sqlite_memory: usize,
    /// SQLite connections open at once.
    pub sqlite_connections: usize,
    /// Bytes of arguments and results the host holds for its calls.
    pub held_bytes: usize,
    /// Sockets open at once (`wasi:sockets`).
    pub sockets: usize,
}

impl Default for BudgetLimits {
    /// SQLite's heap: what one connection had before, now for all of them
    /// (two of the largest value a statement may build, so one can be built
    /// and copied); 32 connections (a WASIp3 instance serves 16 requests at
    /// once); held bytes: the largest query result Spin returns (its
    /// `MAX_HOST_BUFFERED_BYTES`), so nothing Spin serves is refused; 16
    /// sockets (1,024 instances at once: 16,384, the connection cap's order).
    fn default() -> Self {
        Self {
            sqlite_memory: 256 * MIB,
            sqlite_connections: 32,
            held_bytes: 128 * MIB,
            sockets: 16,
        }
    }
}

/// What one instance holds now, against its [`BudgetLimits`].
#[derive(Debug)]
pub struct InstanceBudget {
    /// SQLite's heap, charged by its allocator while this instance's work runs.
    pub sqlite_heap: Arc<Quota>,
    sqlite_connections: Arc<Quota>,
    held: Arc<Quota>,
    sockets: Arc<Quota>,
}

impl InstanceBudget {
    pub fn new(limits: BudgetLimits) -> Arc<Self> {
        Arc::new(Self {
            sqlite_heap: Quota::new(limits.sqlite_memory),
            sqlite_connections: Quota::new(limits.sqlite_connections),
            held: Quota::new(limits.held_bytes),
            sockets: Quota::new(limits.sockets),
        })
    }

    /// One more SQLite connection, or why not.
    pub fn sqlite_connection(&self) -> Result<Share, String> {
        self.sqlite_connections.take(1).ok_or_else(|| {
            format!(
                "this instance has {} SQLite connections open, the most it may \
                 (--max-sqlite-connections)",
                self.sqlite_connections.limit()
            )
        })
    }

    /// `bytes` held for a call (its arguments, its results), or why not.
    pub fn hold(&self, bytes: usize) -> Result<Share, String> {
        self.held
            .take(bytes)
            .ok_or_else(|| held_error(&self.held, bytes))
    }

    /// `share` grown by `bytes` (a result read row by row), or why not.
    pub fn hold_more(share: &mut Share, bytes: usize) -> Result<(), String> {
        if share.grow(bytes) {
            Ok(())
        } else {
            Err(held_error(share.quota(), bytes))
        }
    }

    /// Counts one more socket; `false` at the ceiling.
    pub fn open_socket(&self) -> bool {
        self.sockets.reserve(1)
    }

    /// Gives back a socket counted by [`InstanceBudget::open_socket`].
    pub fn close_socket(&self) {
        self.sockets.release(1);
    }

    /// Sockets open now.
    pub fn sockets_used(&self) -> usize {
        self.sockets.used()
    }
}

fn held_error(quota: &Quota, bytes: usize) -> String {
    format!(
        "the host would hold more than {} MiB for this instance's calls (--max-held-memory): \
         {} MiB held, {bytes} bytes more asked",
        quota.limit() / MIB,
        quota.used() / MIB
    )
}
