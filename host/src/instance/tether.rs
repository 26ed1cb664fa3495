//! Keeps a WASIp3 request's admission permit exactly as long as guest work for
//! it may exist in its reused instance.
//!
//! wasmtime 48 cannot cancel one guest task in an instance that runs several
//! (wasmtime issue #11833, cited in wasmtime-wasi-http 48's `handler.rs`), so a
//! request whose client went away (or whose deadline passed) before its
//! response was complete leaves an orphan task behind. Its permit then moves
//! from the request to the instance's [`Ledger`]: the instance takes no more
//! requests, is dropped as soon as none of its requests still has a client
//! waiting, and the orphans' permits go back when its store is dropped. A
//! request that completes normally gives its permit back with its response body.
//!
//! A [`Tether`] is the request's side (held by `Reused::handle`, then by the
//! response body), a [`Link`] what the worker that runs the request gets.

use super::Permit;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Waker};
use tokio::sync::Notify;

/// What one instance knows about the requests it runs.
#[derive(Default)]
pub struct Ledger {
    /// Requests started here whose client side is still live.
    live: AtomicUsize,
    /// Whether a request here was abandoned: its task may still run.
    orphaned: AtomicBool,
    orphans: Mutex<Orphans>,
    /// The worker's task, woken when the instance may have to go.
    waker: Mutex<Option<Waker>>,
}

#[derive(Default)]
struct Orphans {
    permits: Vec<Permit>,
    /// The store is gone: a permit arriving now has no guest work left to cover.
    released: bool,
}

impl Ledger {
    /// Whether a request here was abandoned (the instance takes no more).
    pub fn is_orphaned(&self) -> bool {
        self.orphaned.load(Ordering::SeqCst)
    }

    /// Whether the instance should be dropped now: an abandoned task lingers
    /// and no request still has a client waiting. Wakes `cx` when that changes.
    pub fn doomed(&self, cx: &Context<'_>) -> bool {
        {
            let mut waker = lock(&self.waker);
            if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *waker = Some(cx.waker().clone());
            }
        }
        self.is_orphaned() && self.live.load(Ordering::SeqCst) == 0
    }

    /// The instance's store was dropped: the orphans' permits go back.
    pub fn release(&self) {
        let permits = {
            let mut orphans = lock(&self.orphans);
            orphans.released = true;
            std::mem::take(&mut orphans.permits)
        };
        drop(permits);
    }

    fn adopt(&self, permit: Option<Permit>) {
        self.orphaned.store(true, Ordering::SeqCst);
        {
            let mut orphans = lock(&self.orphans);
            if let (Some(permit), false) = (permit, orphans.released) {
                orphans.permits.push(permit);
            }
        }
        self.wake();
    }

    fn end_live(&self) {
        if self.live.fetch_sub(1, Ordering::SeqCst) == 1 && self.is_orphaned() {
            self.wake();
        }
    }

    fn wake(&self) {
        if let Some(waker) = lock(&self.waker).as_ref() {
            waker.wake_by_ref();
        }
    }
}

/// Set once a worker has started the request.
const STARTED: u8 = 1;
/// Set once the request's side is done (completed or abandoned).
const LET_GO: u8 = 2;

/// A request as the worker running it sees it (`WorkerState::RequestData`).
#[derive(Default)]
pub struct Link {
    state: AtomicU8,
    /// An abandoned request's permit, until the worker adopts it.
    permit: Mutex<Option<Permit>>,
    ledger: OnceLock<Arc<Ledger>>,
    abandoned: Notify,
}

/// Resolves when the request is abandoned; the worker then treats it as expired.
pub type Abandoned = Pin<Box<dyn Future<Output = ()> + Send + Sync>>;

impl Link {
    /// The worker owning `ledger` starts the request.
    pub fn start(self: Arc<Self>, ledger: &Arc<Ledger>) -> Abandoned {
        let _ = self.ledger.set(ledger.clone());
        ledger.live.fetch_add(1, Ordering::SeqCst);
        if self.state.fetch_or(STARTED, Ordering::SeqCst) & LET_GO != 0 {
            // Abandoned while it waited for an instance: its task is orphaned
            // from its first instruction.
            ledger.adopt(lock(&self.permit).take());
            ledger.end_live();
            return Box::pin(std::future::ready(()));
        }
        Box::pin(async move { self.abandoned.notified().await })
    }
}

/// A request's side of its [`Link`], holding its permit; dropped without
/// [`Tether::complete`], the request counts as abandoned.
pub struct Tether {
    link: Arc<Link>,
    permit: Option<Permit>,
    complete: bool,
}

impl Tether {
    pub fn new(permit: Option<Permit>) -> Self {
        Self {
            link: Arc::default(),
            permit,
            complete: false,
        }
    }

    pub fn link(&self) -> Arc<Link> {
        self.link.clone()
    }

    /// The response was delivered in full: no guest work is left behind.
    pub fn complete(&mut self) {
        self.complete = true;
    }
}

impl Drop for Tether {
    fn drop(&mut self) {
        let link = &self.link;
        if self.complete {
            if link.state.fetch_or(LET_GO, Ordering::SeqCst) & STARTED != 0
                && let Some(ledger) = link.ledger.get()
            {
                ledger.end_live();
            }
            return;
        }
        // Put the permit where the worker finds it before saying it is let go:
        // whichever side comes second hands it to the ledger.
        *lock(&link.permit) = self.permit.take();
        if link.state.fetch_or(LET_GO, Ordering::SeqCst) & STARTED != 0
            && let Some(ledger) = link.ledger.get()
        {
            ledger.adopt(lock(&link.permit).take());
            ledger.end_live();
        }
        link.abandoned.notify_one();
    }
}

/// A poisoned lock only means another thread panicked while holding it; the
/// data (permits, a waker) is still consistent.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::admission::{Admission, AdmissionLimits};
    use std::task::Waker;

    fn admission() -> Admission {
        Admission::new(AdmissionLimits {
            max_concurrent: 4,
            max_queued: 0,
            ..AdmissionLimits::default()
        })
    }

    fn cx() -> Context<'static> {
        Context::from_waker(Waker::noop())
    }

    #[tokio::test]
    async fn a_completed_request_gives_its_permit_back_and_dooms_nothing() {
        let admission = admission();
        let ledger = Arc::new(Ledger::default());
        let mut tether = Tether::new(Some(admission.admit().await.unwrap()));
        let _abandoned = tether.link().start(&ledger);
        assert_eq!(admission.in_use(), 1);
        tether.complete();
        drop(tether);
        assert_eq!(admission.in_use(), 0);
        assert!(!ledger.doomed(&cx()));
    }

    #[tokio::test]
    async fn an_abandoned_request_keeps_its_permit_until_the_instance_goes() {
        let admission = admission();
        let ledger = Arc::new(Ledger::default());
        let other = Tether::new(Some(admission.admit().await.unwrap()));
        let _other_abandoned = other.link().start(&ledger);
        let tether = Tether::new(Some(admission.admit().await.unwrap()));
        let abandoned = tether.link().start(&ledger);
        drop(tether);
        abandoned.await;
        assert_eq!(admission.in_use(), 2, "the orphan keeps its permit");
        assert!(ledger.is_orphaned());
        assert!(!ledger.doomed(&cx()), "another client still waits here");
        drop(other);
        assert!(ledger.doomed(&cx()));
        ledger.release();
        assert_eq!(admission.in_use(), 0);
    }

    #[tokio::test]
    async fn a_request_abandoned_before_it_started_is_orphaned_when_it_starts() {
        let admission = admission();
        let ledger = Arc::new(Ledger::default());
        let tether = Tether::new(Some(admission.admit().await.unwrap()));
        let link = tether.link();
        drop(tether);
        assert_eq!(
            admission.in_use(),
            1,
            "queued: the permit waits in the link"
        );
        link.start(&ledger).await;
        assert!(ledger.doomed(&cx()));
        ledger.release();
        assert_eq!(admission.in_use(), 0);
    }

    #[tokio::test]
    async fn a_permit_arriving_after_the_instance_went_is_given_back() {
        let admission = admission();
        let ledger = Arc::new(Ledger::default());
        let tether = Tether::new(Some(admission.admit().await.unwrap()));
        let _abandoned = tether.link().start(&ledger);
        ledger.release();
        drop(tether);
        assert_eq!(admission.in_use(), 0);
    }
}
