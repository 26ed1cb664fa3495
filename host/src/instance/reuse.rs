//! WASIp3 components (`wasi:http/handler@0.3.0`), served the way `wasmtime serve`
//! and Spin serve them: an instance handles many requests, several at once,
//! before it is dropped. Built on wasmtime-wasi-http's `handler::ProxyHandler`,
//! the worker pool `wasmtime serve` itself uses; this file supplies the stores,
//! the limits and how failures map to statuses.
//!
//! The same limits as for a fresh WASIp2 instance apply: the admission permit
//! is per request (so the cap counts requests, and instances never outnumber
//! it), the memory cap is per store, a request past its deadline gets a `504`,
//! and an instance that traps is dropped, never reused: its requests get a
//! `500`. A request whose client goes away before its response is complete,
//! or whose deadline passes, cannot be cancelled alone (see `tether`): its
//! instance stops taking requests, keeps that request's permit, and is dropped
//! as soon as no other request in it still has a client waiting. An instance
//! holds a pool slot for its whole life, idle too, and gives it up early when
//! an instance of any component needs one (`slots`).

use super::engine::EPOCH_TICK;
use super::flavour::Flavour;
use super::invoke::Failure;
use super::slots::{Slot, Slots};
use super::state::{Limits, RequestState, StoreRecipe, new_reusable_store};
use super::tether::{Abandoned, Ledger, Link, Tether};
use super::{Body, Permit};
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::BodyExt;
use hyper::body::{Body as _, Frame};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::futures::OwnedNotified;
use wasmtime::component::{GuestTaskId, InstancePre};
use wasmtime::{Store, StoreContextMut};
use wasmtime_wasi_http::handler::{
    ExpirationError, HandlerState, Instance, InstantiationError, ProxyHandler, ProxyPre,
    ShouldAccept, TrapOrPanicError, WorkerExpiration, WorkerState, WorkerStatus,
};
use wasmtime_wasi_http::p3::bindings::ServicePre;

/// Requests one WASIp3 instance serves before it is dropped: `wasmtime serve`'s
/// default (`DEFAULT_WASIP3_MAX_INSTANCE_REUSE_COUNT` in wasmtime-cli 48's
/// `commands/serve.rs`), which Spin's WASIp3 executor follows. Bounds how much
/// state (leaks, fragmentation) one guest can accumulate across requests.
pub const MAX_INSTANCE_REUSE: usize = 128;
/// Requests one WASIp3 instance serves at once: `wasmtime serve`'s default
/// (`DEFAULT_WASIP3_MAX_INSTANCE_CONCURRENT_REUSE_COUNT`). Past it, another
/// instance is created.
pub const MAX_INSTANCE_CONCURRENT_REUSE: usize = 16;
/// How long an idle instance is kept for the next request: `wasmtime serve`'s
/// default `--idle-instance-timeout`.
pub const IDLE_INSTANCE_TIMEOUT: Duration = Duration::from_secs(1);

/// How WASIp3 instances are reused: `serve`'s `--max-instance-reuse-count`,
/// `--max-instance-concurrent-reuse-count` and `--idle-instance-timeout`, named
/// as Spin names them (spinframework/spin `crates/trigger-http/src/lib.rs`, `CliArgs`).
#[derive(Debug, Clone, Copy)]
pub struct ReuseLimits {
    pub max_requests: usize,
    pub max_concurrent: usize,
    pub idle_timeout: Duration,
}

impl Default for ReuseLimits {
    fn default() -> Self {
        Self {
            max_requests: MAX_INSTANCE_REUSE,
            max_concurrent: MAX_INSTANCE_CONCURRENT_REUSE,
            idle_timeout: IDLE_INSTANCE_TIMEOUT,
        }
    }
}

/// A manifest component: a WASIp2 one gets a fresh instance per request, a
/// WASIp3 one is served by reused instances.
pub enum Handler {
    Fresh(wasmtime_wasi_http::p2::bindings::ProxyPre<RequestState>),
    Reused(Reused),
    Wagi(super::wagi::Wagi),
}

impl Handler {
    /// `slots`: the pool's slots, which a WASIp3 component's instances take;
    /// `wagi_argv`: a WAGI component's `argv` template.
    pub fn new(
        pre: InstancePre<RequestState>,
        flavour: Flavour,
        recipe: &StoreRecipe,
        reuse: ReuseLimits,
        slots: &Arc<Slots>,
        wagi_argv: Option<&str>,
    ) -> wasmtime::Result<Self> {
        Ok(match flavour {
            Flavour::Wagi => Handler::Wagi(super::wagi::Wagi::new(
                pre,
                wagi_argv.unwrap_or_default().to_string(),
            )?),
            Flavour::P2 => Handler::Fresh(wasmtime_wasi_http::p2::bindings::ProxyPre::new(pre)?),
            Flavour::P3 => Handler::Reused(Reused::new(
                ServicePre::new(pre)?,
                recipe.clone(),
                reuse,
                slots.clone(),
            )),
        })
    }
}

/// The worker pool of one WASIp3 component.
pub struct Reused {
    handler: ProxyHandler<Instantiator>,
    limits: Limits,
}

impl Reused {
    fn new(
        pre: ServicePre<RequestState>,
        recipe: StoreRecipe,
        reuse: ReuseLimits,
        slots: Arc<Slots>,
    ) -> Self {
        let limits = recipe.limits;
        Self {
            handler: ProxyHandler::new(Instantiator {
                pre: ProxyPre::P3(pre),
                recipe,
                reuse,
                slots,
                instances: AtomicU64::new(0),
            }),
            limits,
        }
    }

    /// Instances created so far.
    #[cfg(test)]
    pub fn instances_created(&self) -> u64 {
        self.handler.state().instances.load(Ordering::Relaxed)
    }

    /// Hands `request` to an instance with room for it (creating one if none
    /// has) and waits for the response head. `permit` is held until the
    /// response body is complete, or, if the request is abandoned first (this
    /// future or the body dropped), until its instance is dropped.
    pub async fn handle<B>(
        &self,
        request: Request<B>,
        permit: Option<Permit>,
    ) -> Result<Response<Body>, Failure>
    where
        B: hyper::body::Body<Data = bytes::Bytes> + Send + 'static,
        B::Error: Into<wasmtime_wasi_http::Error>,
    {
        let timeout = self.limits.timeout;
        let method = request.method().clone();
        let request = request.map(|body| body.map_err(Into::into).boxed_unsync());
        let tether = Tether::new(permit);
        // The deadline: past it the client gets a 504 and, the tether dropped,
        // the request counts as abandoned. The worker's own expiration drops
        // the instance if the guest is too busy for that to be noticed.
        let handled = tokio::time::timeout(timeout, self.handler.handle(tether.link(), request));
        let response = match handled.await {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => return Err(failure(error, timeout)),
            Err(_elapsed) => return Err(Failure::Timeout(timeout)),
        };
        let unsent = if sends_no_body(&method, response.status()) {
            Some(0)
        } else {
            super::declared_length(response.headers())
        };
        Ok(response.map(|body| {
            TetheredBody {
                body,
                tether,
                unsent,
            }
            .boxed_unsync()
        }))
    }
}

/// A WASIp3 response body, carrying its request's tether: complete once the
/// body has been read to its end, abandoned if dropped before.
///
/// "Its end" includes the last byte of a declared `Content-Length`: hyper
/// (1.12, `proto/h1/dispatch.rs`, "no more write body allowed") stops polling
/// a body once that many bytes are written and drops it without asking for
/// the end, so a body that had not yet said it ended would otherwise count as
/// abandoned, and every such response would close its instance and keep its
/// permit (issue 10: 53,913 `503`s of 97,921 at 10,000 users). Likewise a
/// response of which hyper sends the head only ([`sends_no_body`]).
struct TetheredBody {
    body: Body,
    tether: Tether,
    /// Bytes of the declared `Content-Length` not yet delivered.
    unsent: Option<u64>,
}

impl hyper::body::Body for TetheredBody {
    type Data = Bytes;
    type Error = wasmtime_wasi_http::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let frame = Pin::new(&mut self.body).poll_frame(cx);
        match &frame {
            Poll::Ready(None) => self.tether.complete(),
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(unsent), Some(data)) = (&mut self.unsent, frame.data_ref()) {
                    *unsent = unsent.saturating_sub(data.len() as u64);
                }
            }
            _ => {}
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

impl Drop for TetheredBody {
    fn drop(&mut self) {
        // hyper stops polling a body that says it has ended, or whose
        // declared length it has written.
        if self.body.is_end_stream() || self.unsent == Some(0) {
            self.tether.complete();
        }
    }
}

/// Whether hyper sends the response's head only, dropping its body unread:
/// the answer to a `HEAD` or a successful `CONNECT`, and a `1xx`, `204` or
/// `304` (hyper 1.12, `proto/h1/role.rs`, `Server::can_have_body`).
fn sends_no_body(method: &http::Method, status: http::StatusCode) -> bool {
    method == http::Method::HEAD
        || method == http::Method::CONNECT && status.is_success()
        || status.is_informational()
        || status == http::StatusCode::NO_CONTENT
        || status == http::StatusCode::NOT_MODIFIED
}

/// Maps `ProxyHandler::handle`'s errors to the same failures as the WASIp2 path.
fn failure(error: wasmtime::Error, timeout: Duration) -> Failure {
    if error.downcast_ref::<ExpirationError>().is_some() {
        return Failure::Timeout(timeout);
    }
    // The type parameter is the worker's request data: a downcast with any
    // other type misses, and a full pool would be a 500.
    if let Some(instantiation) = error.downcast_ref::<InstantiationError<Arc<Link>>>() {
        let cause = &instantiation.error;
        if super::invoke::is_pool_exhausted(cause) {
            return Failure::Overloaded(wasmtime::Error::msg(format!("{cause}")));
        }
        if cause.downcast_ref::<ExpirationError>().is_some() {
            return Failure::Timeout(timeout);
        }
        return Failure::Trapped(wasmtime::Error::msg(format!(
            "instantiation failed: {cause:?}"
        )));
    }
    if error.downcast_ref::<TrapOrPanicError>().is_some() {
        // Another request in the same instance trapped (or the instance hit its
        // deadline): the instance was dropped under this request.
        return Failure::Trapped(error);
    }
    Failure::from_wasmtime(error, timeout)
}

/// Creates the stores and instances of one component's workers.
struct Instantiator {
    pre: ProxyPre<RequestState>,
    recipe: StoreRecipe,
    reuse: ReuseLimits,
    slots: Arc<Slots>,
    instances: AtomicU64,
}

impl HandlerState for Instantiator {
    type StoreData = RequestState;
    type WorkerExpiration = Expiration;
    type WorkerState = Worker;

    async fn instantiate(&self) -> wasmtime::Result<Instance<RequestState, Expiration, Worker>> {
        let slot = self.slots.take().await.map_err(wasmtime::Error::new)?;
        let limits = self.recipe.limits;
        let mut store = new_reusable_store(self.pre_engine(), &self.recipe)?;
        let proxy = tokio::time::timeout(limits.timeout, self.pre.instantiate_async(&mut store))
            .await
            .map_err(|_| wasmtime::Error::new(ExpirationError))??;
        self.instances.fetch_add(1, Ordering::Relaxed);
        let ledger = Arc::new(Ledger::default());
        Ok(Instance {
            store,
            proxy,
            view: <RequestState as wasmtime_wasi_http::WasiHttpView>::http,
            expiration: Expiration {
                request_timeout: limits.timeout + 2 * EPOCH_TICK,
                idle_timeout: self.reuse.idle_timeout,
                sleep: Box::pin(tokio::time::sleep(Duration::MAX / 4)),
                ledger: ledger.clone(),
                slots: self.slots.clone(),
                reclaimed: None,
            },
            state: Worker {
                ledger,
                reuse: self.reuse,
                _slot: slot,
            },
        })
    }
}

impl Instantiator {
    fn pre_engine(&self) -> &wasmtime::Engine {
        match &self.pre {
            ProxyPre::P3(pre) => pre.engine(),
            ProxyPre::P2(pre) => pre.engine(),
        }
    }
}

/// Per-instance policy: how many requests, and which of them were abandoned.
struct Worker {
    ledger: Arc<Ledger>,
    reuse: ReuseLimits,
    /// Given back after the store, when the worker is dropped.
    _slot: Slot,
}

impl WorkerState for Worker {
    type StoreData = RequestState;
    type RequestData = Arc<Link>;

    fn should_accept_request(&self, concurrent: usize, total: usize) -> ShouldAccept {
        if total >= self.reuse.max_requests || self.ledger.is_orphaned() {
            ShouldAccept::Never
        } else if concurrent >= self.reuse.max_concurrent {
            ShouldAccept::No
        } else {
            ShouldAccept::Yes
        }
    }

    /// The request "expires", for the handler, when it is abandoned: the
    /// deadline is `Reused::handle`'s, which abandons it when it passes.
    fn on_request_start(
        &self,
        _store: StoreContextMut<'_, RequestState>,
        link: Arc<Link>,
        _task: GuestTaskId,
    ) -> Abandoned {
        link.start(&self.ledger)
    }

    fn drop(&self, store: Store<RequestState>, result: wasmtime::Result<()>) {
        // A trap or a deadline: the instance goes, with its store and pool slot.
        if let Err(error) = result {
            let message = error.to_string();
            let expired = message == "guest timed out";
            // wasmtime-wasi-http reports "worker panicked" whenever a worker's
            // future is dropped unfinished, which is also what happens to idle
            // workers when the runtime shuts down; only a real panic unwinds.
            let shut_down = message == "worker panicked" && !std::thread::panicking();
            if !expired && !shut_down {
                crate::logger::line(format!("error: WASIp3 instance dropped: {error}"));
            }
        }
        drop(store);
        self.ledger.release();
    }
}

/// Drops an instance idle for its idle timeout or while another instance
/// waits for a pool slot, busy past the request deadline (checked outside the
/// guest's event loop, so it also catches a guest spinning without yielding to
/// its other requests), or left with only abandoned requests.
struct Expiration {
    request_timeout: Duration,
    idle_timeout: Duration,
    sleep: Pin<Box<tokio::time::Sleep>>,
    ledger: Arc<Ledger>,
    slots: Arc<Slots>,
    /// The reclaim signal of the current idle period, keyed by its start (one
    /// sent while the instance was busy is not for it).
    reclaimed: Option<(Instant, Pin<Box<OwnedNotified>>)>,
}

impl WorkerExpiration for Expiration {
    fn poll(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        status: WorkerStatus,
        start: Instant,
    ) -> Poll<()> {
        if self.ledger.doomed(cx) {
            return Poll::Ready(());
        }
        if status == WorkerStatus::Idle && self.poll_reclaimed(cx, start).is_ready() {
            return Poll::Ready(());
        }
        let timeout = match status {
            WorkerStatus::Idle => self.idle_timeout,
            WorkerStatus::Requests | WorkerStatus::PostReturn => self.request_timeout,
        };
        let Some(deadline) = start.checked_add(timeout) else {
            return Poll::Pending;
        };
        let deadline = tokio::time::Instant::from_std(deadline);
        if deadline != self.sleep.deadline() {
            self.sleep.as_mut().reset(deadline);
        }
        self.sleep.as_mut().poll(cx)
    }
}

impl Expiration {
    /// Ready when another instance has asked for a slot during the idle period
    /// that began at `idle_since`.
    fn poll_reclaimed(&mut self, cx: &mut Context<'_>, idle_since: Instant) -> Poll<()> {
        let current = matches!(&self.reclaimed, Some((since, _)) if *since == idle_since);
        if !current {
            self.reclaimed = Some((idle_since, Box::pin(self.slots.reclaimed())));
        }
        match &mut self.reclaimed {
            Some((_, reclaimed)) => reclaimed.as_mut().poll(cx),
            None => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::slots::NoSlot;
    use super::*;

    /// What `ProxyHandler::handle` returns when a worker cannot be created.
    fn instantiation_failed(cause: wasmtime::Error) -> wasmtime::Error {
        let request = Request::new(
            http_body_util::Empty::new()
                .map_err(|e| match e {})
                .boxed_unsync(),
        );
        wasmtime::Error::new(InstantiationError {
            request_data: Arc::new(Link::default()),
            request: std::sync::Mutex::new(request),
            error: Arc::new(cause),
        })
    }

    #[test]
    fn responses_hyper_sends_without_a_body() {
        use http::{Method, StatusCode};
        assert!(sends_no_body(&Method::HEAD, StatusCode::METHOD_NOT_ALLOWED));
        assert!(sends_no_body(&Method::CONNECT, StatusCode::OK));
        assert!(!sends_no_body(&Method::CONNECT, StatusCode::BAD_REQUEST));
        for status in [
            StatusCode::NO_CONTENT,
            StatusCode::NOT_MODIFIED,
            StatusCode::CONTINUE,
        ] {
            assert!(sends_no_body(&Method::GET, status), "{status}");
        }
        for status in [
            StatusCode::OK,
            StatusCode::METHOD_NOT_ALLOWED,
            StatusCode::RESET_CONTENT,
        ] {
            assert!(!sends_no_body(&Method::POST, status), "{status}");
        }
    }

    #[test]
    fn a_pool_without_a_free_slot_is_a_503_not_a_500() {
        let timeout = Duration::from_secs(1);
        let full = failure(
            instantiation_failed(wasmtime::Error::new(NoSlot { live: 5 })),
            timeout,
        );
        assert_eq!(full.status(), 503, "{full:?}");
        let trapped = failure(
            instantiation_failed(wasmtime::Error::msg("start trapped")),
            timeout,
        );
        assert_eq!(trapped.status(), 500, "{trapped:?}");
    }
}
