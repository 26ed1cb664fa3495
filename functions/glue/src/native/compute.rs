//! Where CPU-bound handlers run ([`crate::Endpoint::cpu_bound`]): on tokio's
//! blocking pool, so that a busy wait cannot hold one of the few
//! async workers that accept connections and answer every other request.

use crate::ApiError;
use tokio::sync::Semaphore;

/// Computations running at once; the runtime's blocking pool is sized to match, so a
/// started computation never waits for a thread. The rest wait (asynchronously, within
/// their request's deadline) for a slot.
pub const SLOTS: usize = 512;

pub struct ComputePool {
    slots: Semaphore,
}

impl ComputePool {
    pub fn new() -> Self {
        Self {
            slots: Semaphore::new(SLOTS),
        }
    }

    /// Waits for a free slot, then runs `work` on the blocking pool and waits for
    /// its result (a `500` if it panicked: a handler bug, not the client's). The
    /// slot is held until `work` returns, even if its request has been answered
    /// (or has timed out) meanwhile: a computation cannot be interrupted, and the
    /// bound is on computations, not on requests.
    pub async fn run<T, F>(&'static self, work: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let slot = self
            .slots
            .acquire()
            .await
            .expect("the semaphore is never closed");
        tokio::task::spawn_blocking(move || {
            let _slot = slot;
            work()
        })
        .await
        .map_err(|error| ApiError::new(500, format!("the handler failed: {error}")))
    }
}
