//! WASIp3 components (`wasi:http/handler@0.3.0`), served the way `wasmtime serve`
//! and Spin serve them: an instance handles many requests, several at once,
//! before it is dropped. Built on wasmtime-wasi-http's `handler::ProxyHandler`,
//! the worker pool `wasmtime serve` itself uses; this file supplies the stores,
//! the limits and how failures map to statuses.
//!
//! The same limits as for a fresh WASIp2 instance apply: the admission permit
//! is per request (so the cap counts requests, and instances never outnumber
//! it), the memory cap is per store, a request past its deadline gets a `504`
//! and its instance stops taking requests and is dropped once its other
//! requests have finished (or at once if the guest is busy past the deadline),
//! and an instance that traps is dropped, never reused: its requests get a
//! `500`.

use super::admission::Permit;
use super::engine::EPOCH_TICK;
use super::flavour::Flavour;
use super::invoke::{Failure, Limits};
use super::reply::Body;
use super::state::{RequestState, new_reusable_store};
use http::{Request, Response};
use http_body_util::BodyExt;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
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

/// A manifest component: a WASIp2 one gets a fresh instance per request, a
/// WASIp3 one is served by reused instances.
pub enum Handler {
    Fresh(wasmtime_wasi_http::p2::bindings::ProxyPre<RequestState>),
    Reused(Reused),
}

impl Handler {
    pub fn new(
        pre: InstancePre<RequestState>,
        flavour: Flavour,
        limits: Limits,
    ) -> wasmtime::Result<Self> {
        Ok(match flavour {
            Flavour::P2 => Handler::Fresh(wasmtime_wasi_http::p2::bindings::ProxyPre::new(pre)?),
            Flavour::P3 => Handler::Reused(Reused::new(ServicePre::new(pre)?, limits)),
        })
    }
}

/// The worker pool of one WASIp3 component.
pub struct Reused {
    handler: ProxyHandler<Instantiator>,
    limits: Limits,
}

impl Reused {
    fn new(pre: ServicePre<RequestState>, limits: Limits) -> Self {
        Self {
            handler: ProxyHandler::new(Instantiator {
                pre: ProxyPre::P3(pre),
                limits,
                instances: AtomicU64::new(0),
            }),
            limits,
        }
    }

    /// Instances created so far (diagnostics and tests).
    #[allow(dead_code, reason = "diagnostics and tests")]
    pub fn instances_created(&self) -> u64 {
        self.handler.state().instances.load(Ordering::Relaxed)
    }

    /// Hands `request` to an instance with room for it (creating one if none
    /// has) and waits for the response head. `permit` is held until the
    /// response body is done or dropped.
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
        let request = request.map(|body| body.map_err(Into::into).boxed_unsync());
        // Our own deadline, so the client gets a 504 even when the guest is too
        // busy for the handler's per-request expiration to run (the worker's
        // own expiration, just after it, then drops the instance).
        let response = match tokio::time::timeout(timeout, self.handler.handle((), request)).await {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => return Err(failure(error, timeout)),
            Err(_elapsed) => return Err(Failure::Timeout(timeout)),
        };
        Ok(match permit {
            None => response,
            Some(permit) => response.map(|body| {
                body.map_frame(move |frame| {
                    let _held = &permit;
                    frame
                })
                .boxed_unsync()
            }),
        })
    }
}

/// Maps `ProxyHandler::handle`'s errors to the same failures as the WASIp2 path.
fn failure(error: wasmtime::Error, timeout: Duration) -> Failure {
    if error.downcast_ref::<ExpirationError>().is_some() {
        return Failure::Timeout(timeout);
    }
    if let Some(instantiation) = error.downcast_ref::<InstantiationError<()>>() {
        let cause = &instantiation.error;
        if cause
            .downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
            .is_some()
        {
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
    limits: Limits,
    instances: AtomicU64,
}

impl HandlerState for Instantiator {
    type StoreData = RequestState;
    type WorkerExpiration = Expiration;
    type WorkerState = Worker;

    async fn instantiate(&self) -> wasmtime::Result<Instance<RequestState, Expiration, Worker>> {
        let mut store = new_reusable_store(self.pre_engine(), &self.limits);
        let proxy =
            tokio::time::timeout(self.limits.timeout, self.pre.instantiate_async(&mut store))
                .await
                .map_err(|_| wasmtime::Error::new(ExpirationError))??;
        self.instances.fetch_add(1, Ordering::Relaxed);
        Ok(Instance {
            store,
            proxy,
            view: <RequestState as wasmtime_wasi_http::WasiHttpView>::http,
            expiration: Expiration {
                request_timeout: self.limits.timeout + 2 * EPOCH_TICK,
                sleep: Box::pin(tokio::time::sleep(Duration::MAX / 4)),
            },
            state: Worker {
                request_timeout: self.limits.timeout,
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

/// Per-instance policy: how many requests, and the per-request deadline.
struct Worker {
    request_timeout: Duration,
}

impl WorkerState for Worker {
    type StoreData = RequestState;
    type RequestData = ();

    fn should_accept_request(&self, concurrent: usize, total: usize) -> ShouldAccept {
        if total >= MAX_INSTANCE_REUSE {
            ShouldAccept::Never
        } else if concurrent >= MAX_INSTANCE_CONCURRENT_REUSE {
            ShouldAccept::No
        } else {
            ShouldAccept::Yes
        }
    }

    fn on_request_start(
        &self,
        _store: StoreContextMut<'_, RequestState>,
        _data: (),
        _task: GuestTaskId,
    ) -> Pin<Box<dyn Future<Output = ()> + 'static + Send + Sync>> {
        Box::pin(tokio::time::sleep(self.request_timeout))
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
                super::logger::line(format!("error: WASIp3 instance dropped: {error}"));
            }
        }
        drop(store);
    }
}

/// Drops an instance idle for [`IDLE_INSTANCE_TIMEOUT`], or busy past the
/// request deadline (checked outside the guest's event loop, so it also
/// catches a guest spinning without yielding to its other requests).
struct Expiration {
    request_timeout: Duration,
    sleep: Pin<Box<tokio::time::Sleep>>,
}

impl WorkerExpiration for Expiration {
    fn poll(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        status: WorkerStatus,
        start: Instant,
    ) -> Poll<()> {
        let timeout = match status {
            WorkerStatus::Idle => IDLE_INSTANCE_TIMEOUT,
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
