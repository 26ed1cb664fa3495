//! Back-pressure: a cap on concurrently live component instances, with a short,
//! bounded queue in front of it.
//!
//! A request takes a permit before its instance is created and gives it back
//! when the guest's call has ended (its store, and so its pool slot, dropped).
//! When every permit is out, up to `max_queued` requests wait, each at most
//! `queue_timeout`; the rest, and those whose wait runs out, get `503` with
//! `Retry-After`. The cap stays below the pooling allocator's slot count, so
//! running out of slots is not how overload shows.
//!
//! The fast path is one atomic `try_acquire`; only a request that has to wait
//! arms a timer.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

/// The admission settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionLimits {
    /// Instances live at once; must be below the pool's `max_instances`.
    pub max_concurrent: usize,
    /// Requests that may wait for an instance at once; beyond, `503` at once.
    pub max_queued: usize,
    /// How long a queued request waits before it gets a `503`.
    pub queue_timeout: Duration,
}

impl Default for AdmissionLimits {
    /// 1024 instances: enough for compare's 1000 parked `/io` users; at the
    /// default 16 MiB per-instance memory cap that bounds guest memory to 16 GiB,
    /// which leaves a 24 GiB machine room for the host. As many may queue, for 1 s.
    fn default() -> Self {
        Self {
            max_concurrent: 1024,
            max_queued: 1024,
            queue_timeout: Duration::from_secs(1),
        }
    }
}

/// Why a request was not admitted; both are `503`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `max_queued` requests were already waiting.
    QueueFull,
    /// No instance became free within `queue_timeout`.
    TimedOut,
}

pub struct Admission {
    permits: Arc<Semaphore>,
    waiting: AtomicUsize,
    limits: AdmissionLimits,
    /// Permits not yet handed to the semaphore: while the pool is prepared in
    /// the background, only as many instances as the starting pool holds may
    /// live at once (the rest queue as overload does); [`Admission::open_fully`]
    /// adds these once the full pool is ready.
    held_back: AtomicUsize,
}

/// Held for as long as one instance lives.
pub use crate::instance::Permit;

impl Admission {
    pub fn new(limits: AdmissionLimits) -> Self {
        Self::starting_with(limits, limits.max_concurrent)
    }

    /// Admission that lets only `permits` instances live at once until
    /// [`Admission::open_fully`].
    pub fn starting_with(limits: AdmissionLimits, permits: usize) -> Self {
        let permits = permits.clamp(1, limits.max_concurrent.max(1));
        Self {
            permits: Arc::new(Semaphore::new(permits)),
            waiting: AtomicUsize::new(0),
            limits,
            held_back: AtomicUsize::new(limits.max_concurrent.saturating_sub(permits)),
        }
    }

    /// Lets `max_concurrent` instances live at once from now on.
    pub fn open_fully(&self) {
        let held_back = self.held_back.swap(0, Ordering::AcqRel);
        if held_back > 0 {
            self.permits.add_permits(held_back);
        }
    }

    pub fn limits(&self) -> AdmissionLimits {
        self.limits
    }

    /// A permit at once if one is free, else after a bounded wait, else a refusal.
    pub async fn admit(&self) -> Result<Permit, Refusal> {
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            return Ok(permit);
        }
        // Reserve a place in the queue, or refuse if it is full.
        let queued = self
            .waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.limits.max_queued).then_some(n + 1)
            });
        if queued.is_err() {
            return Err(Refusal::QueueFull);
        }
        let _place = QueuePlace(&self.waiting);
        match tokio::time::timeout(
            self.limits.queue_timeout,
            self.permits.clone().acquire_owned(),
        )
        .await
        {
            Ok(Ok(permit)) => Ok(permit),
            // The semaphore is never closed; treat it like a timeout all the same.
            Ok(Err(_)) | Err(_) => Err(Refusal::TimedOut),
        }
    }

    /// Permits currently handed out.
    #[cfg(test)]
    pub fn in_use(&self) -> usize {
        self.limits.max_concurrent
            - self.held_back.load(Ordering::Acquire)
            - self.permits.available_permits()
    }
}

/// Gives the queue place back however the wait ends (also when the request is dropped).
struct QueuePlace<'a>(&'a AtomicUsize);

impl Drop for QueuePlace<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Refusal {
    pub fn message(self, limits: AdmissionLimits) -> String {
        match self {
            Refusal::QueueFull => format!(
                "server busy: {} requests running and {} waiting; retry later",
                limits.max_concurrent, limits.max_queued
            ),
            Refusal::TimedOut => format!(
                "server busy: no instance became free within {:?}; retry later",
                limits.queue_timeout
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_concurrent: usize, max_queued: usize, ms: u64) -> AdmissionLimits {
        AdmissionLimits {
            max_concurrent,
            max_queued,
            queue_timeout: Duration::from_millis(ms),
        }
    }

    #[tokio::test]
    async fn a_start_with_fewer_permits_queues_the_rest_until_opened_fully() {
        let admission = Arc::new(Admission::starting_with(limits(3, 4, 5_000), 1));
        let _a = admission.admit().await.unwrap();
        // The starting pool is full: the next two wait in the queue...
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let admission = admission.clone();
                tokio::spawn(async move { admission.admit().await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(admission.in_use(), 1);
        // ...until the full pool is ready: both are then admitted, and the cap
        // is the configured one.
        admission.open_fully();
        let mut permits = Vec::new();
        for waiter in waiters {
            permits.push(waiter.await.unwrap().unwrap());
        }
        assert_eq!(admission.in_use(), 3);
        admission.open_fully();
        assert_eq!(admission.in_use(), 3);
        // A fourth waits: the cap is the configured 3, not 3 plus the held-back.
        assert!(
            tokio::time::timeout(Duration::from_millis(50), admission.admit())
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn admits_up_to_the_cap_then_queues_then_refuses() {
        let admission = Arc::new(Admission::new(limits(2, 1, 200)));
        let a = admission.admit().await.unwrap();
        let _b = admission.admit().await.unwrap();
        assert_eq!(admission.in_use(), 2);
        // One may wait; it gets the permit freed within its timeout.
        let waiter = {
            let admission = admission.clone();
            tokio::spawn(async move { admission.admit().await.map(drop) })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        // The queue is full: refused at once.
        assert_eq!(admission.admit().await.unwrap_err(), Refusal::QueueFull);
        drop(a);
        assert_eq!(waiter.await.unwrap(), Ok(()));
        // Nobody frees a permit now: the wait times out.
        let _c = admission.admit().await.unwrap();
        let start = std::time::Instant::now();
        assert_eq!(admission.admit().await.unwrap_err(), Refusal::TimedOut);
        assert!(start.elapsed() >= Duration::from_millis(200));
        assert_eq!(admission.waiting.load(Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn a_dropped_waiter_gives_its_place_back() {
        let admission = Admission::new(limits(1, 1, 10_000));
        let _held = admission.admit().await.unwrap();
        let wait = admission.admit();
        let _ = tokio::time::timeout(Duration::from_millis(20), wait).await;
        assert_eq!(admission.waiting.load(Ordering::Acquire), 0);
    }
}
