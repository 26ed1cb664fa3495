//! The pool's instance slots, as live instances hold them, when idle instances
//! can hold some.
//!
//! The admission cap counts requests, and stays below the pool's slot count, so
//! with a fresh instance per request the pool never runs out. A WASIp3 instance
//! outlives its requests: kept idle for the next one (`--idle-instance-timeout`),
//! it holds a slot and no permit, and the idle instances of several components
//! could fill the pool and refuse every other component until they time out.
//! So when any component is a WASIp3 one, every instance, of either flavour,
//! takes a slot here for its lifetime, and an instance that finds none free asks
//! the idle ones to go: the pool is then shared by the requests that need it,
//! whichever component they are for.

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::futures::OwnedNotified;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// One live instance's slot, held until its store is dropped.
pub type Slot = OwnedSemaphorePermit;

/// How often a waiting instance asks again: an idle instance that was between
/// two polls of its reclaim signal misses a call, never two.
const ASK_AGAIN: Duration = Duration::from_millis(10);

pub struct Slots {
    free: Arc<Semaphore>,
    reclaim: Arc<Notify>,
    count: usize,
    /// How long an instance waits for a slot: the admission queue's timeout.
    wait: Duration,
}

/// No slot became free within the wait: reported as a `503`, like an exhausted pool.
#[derive(Debug)]
pub struct NoSlot {
    pub live: usize,
}

impl std::fmt::Display for NoSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "all {} instance slots are in use", self.live)
    }
}

impl std::error::Error for NoSlot {}

impl Slots {
    pub fn new(count: usize, wait: Duration) -> Arc<Self> {
        Arc::new(Self {
            free: Arc::new(Semaphore::new(count)),
            reclaim: Arc::new(Notify::new()),
            count,
            wait,
        })
    }

    /// A slot at once if one is free; else idle instances are asked to go and
    /// the first slot freed is taken, waiting at most as long as a queued request.
    pub async fn take(&self) -> Result<Slot, NoSlot> {
        if let Ok(slot) = self.free.clone().try_acquire_owned() {
            return Ok(slot);
        }
        let acquire = self.free.clone().acquire_owned();
        let asking = async {
            loop {
                self.reclaim.notify_waiters();
                tokio::time::sleep(ASK_AGAIN).await;
            }
        };
        let taken = tokio::time::timeout(self.wait, async {
            tokio::select! {
                slot = acquire => slot.ok(),
                () = asking => None,
            }
        });
        match taken.await {
            Ok(Some(slot)) => Ok(slot),
            // The semaphore is never closed.
            Ok(None) | Err(_) => Err(NoSlot { live: self.count }),
        }
    }

    /// Resolves when an instance waits for a slot: an idle instance holding
    /// this goes, giving its slot back.
    pub fn reclaimed(&self) -> OwnedNotified {
        self.reclaim.clone().notified_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_waiting_instance_asks_idle_ones_to_go_and_takes_the_freed_slot() {
        let slots = Slots::new(1, Duration::from_secs(5));
        let held = slots.take().await.expect("a free slot");
        // The idle instance: gives its slot back when asked.
        let reclaimed = slots.reclaimed();
        let idle = tokio::spawn(async move {
            reclaimed.await;
            drop(held);
        });
        let taken = slots.take().await;
        assert!(
            taken.is_ok(),
            "the idle instance's slot was not handed over"
        );
        idle.await.unwrap();
    }

    #[tokio::test]
    async fn no_slot_is_reported_when_none_is_given_back() {
        let slots = Slots::new(1, Duration::from_millis(50));
        let _busy = slots.take().await.expect("a free slot");
        let refused = slots.take().await;
        assert_eq!(refused.map(drop).unwrap_err().live, 1);
    }
}
