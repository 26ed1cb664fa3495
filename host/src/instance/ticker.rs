//! The thread that advances an engine's epoch every [`EPOCH_TICK`], which is
//! how a running guest yields to the scheduler and is interrupted past its
//! deadline (`state::deadline_store`). It ticks only while a store of the
//! engine lives: an idle host (most of a node's pods, most of the time) wakes
//! no thread 100 times a second. Each store holds a [`Ticking`] for its
//! lifetime; the first one wakes the thread.
//!
//! The thread holds the engine weakly and ends once the engine is dropped
//! (looked at every [`IDLE_CHECK`] while parked).

use super::engine::EPOCH_TICK;
use anyhow::{Context, Result};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use wasmtime::Engine;

/// How often a parked ticker looks whether its engine is gone.
const IDLE_CHECK: Duration = Duration::from_secs(5);

/// One engine's ticker, which hands out [`Ticking`]s.
#[derive(Clone, Debug, Default)]
pub struct EpochTicker(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    woken: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Stores alive now.
    live: usize,
    /// Whether the thread waits for a store (ticks nothing).
    parked: bool,
}

/// Keeps the ticker ticking while held (by a store's state).
#[derive(Debug)]
pub struct Ticking(Arc<Shared>);

impl EpochTicker {
    /// Starts the thread for `engine`, parked until a store lives.
    pub fn spawn(engine: &Engine) -> Result<Self> {
        let weak = engine.weak();
        let alive = weak.clone();
        Self::spawn_with(
            move || weak.upgrade().map(|engine| engine.increment_epoch()),
            move || alive.upgrade().is_some(),
        )
    }

    /// The thread, ticking with `tick` (`None` once there is nothing to tick)
    /// and ending once `alive` says no while parked.
    fn spawn_with(
        tick: impl Fn() -> Option<()> + Send + 'static,
        alive: impl Fn() -> bool + Send + 'static,
    ) -> Result<Self> {
        let ticker = Self::default();
        let shared = ticker.0.clone();
        std::thread::Builder::new()
            .name("epoch-ticker".into())
            .spawn(move || {
                loop {
                    if shared.wait_for_a_store() {
                        std::thread::sleep(EPOCH_TICK);
                        if tick().is_none() {
                            return;
                        }
                    } else if !alive() {
                        return;
                    }
                }
            })
            .context("spawning the epoch ticker thread")?;
        Ok(ticker)
    }

    /// Ticks until the returned value is dropped.
    pub fn ticking(&self) -> Ticking {
        let mut state = self.0.lock();
        state.live += 1;
        if state.live == 1 {
            self.0.woken.notify_one();
        }
        Ticking(self.0.clone())
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `true` once a store lives (at once if one does); `false` after
    /// [`IDLE_CHECK`] with none.
    fn wait_for_a_store(&self) -> bool {
        let mut state = self.lock();
        state.parked = state.live == 0;
        let (mut state, _) = self
            .woken
            .wait_timeout_while(state, IDLE_CHECK, |state| state.live == 0)
            .unwrap_or_else(PoisonError::into_inner);
        state.parked = state.live == 0;
        !state.parked
    }
}

impl Drop for Ticking {
    fn drop(&mut self) {
        self.0.lock().live -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Instant;

    /// Waits (ten seconds at most) until `done` says yes.
    fn until(done: impl Fn() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(start.elapsed() < Duration::from_secs(10), "never happened");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn it_ticks_while_a_store_lives_and_is_parked_otherwise() {
        let ticks = Arc::new(AtomicU64::new(0));
        let counted = ticks.clone();
        let ticker = EpochTicker::spawn_with(
            move || {
                counted.fetch_add(1, Ordering::SeqCst);
                Some(())
            },
            || true,
        )
        .unwrap();
        let parked = || ticker.0.lock().parked;
        until(parked);
        std::thread::sleep(EPOCH_TICK * 5);
        assert_eq!(ticks.load(Ordering::SeqCst), 0, "no store: no tick");
        let (a, b) = (ticker.ticking(), ticker.ticking());
        until(|| ticks.load(Ordering::SeqCst) >= 3);
        drop(a);
        let before = ticks.load(Ordering::SeqCst);
        until(|| ticks.load(Ordering::SeqCst) > before + 2);
        drop(b);
        // Parked again once the last store is gone: the count holds.
        until(parked);
        let parked_at = ticks.load(Ordering::SeqCst);
        std::thread::sleep(EPOCH_TICK * 5);
        assert_eq!(ticks.load(Ordering::SeqCst), parked_at);
        assert!(parked());
    }

    #[test]
    fn the_thread_ends_once_its_engine_is_gone() {
        let ticker = EpochTicker::spawn_with(|| None, || true).unwrap();
        // The ticker, its thread's share and the store's.
        let store = ticker.ticking();
        assert!(Arc::strong_count(&ticker.0) <= 3);
        // Its first tick finds nothing to tick: the thread ends, its share with it.
        until(|| Arc::strong_count(&ticker.0) == 2);
        drop(store);
        assert_eq!(Arc::strong_count(&ticker.0), 1);
    }
}
