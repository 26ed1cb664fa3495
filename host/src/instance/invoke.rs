//! One request against one component: a fresh store and instance, the guest's
//! `wasi:http/incoming-handler.handle`, and how its failures map to statuses.

use super::slots::Slot;
use super::state::{RequestState, StoreRecipe, new_store};
use super::{Body, Permit};
use bytes::Bytes;
use http::{Request, Response};
use hyper::body::{Body as _, Frame};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use wasmtime::Trap;
use wasmtime_wasi_http::WasiHttpView;
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::bindings::http::types::{ErrorCode, Scheme};

/// The guest's handler call; owns the store, so the store (and with it the
/// response channel) is dropped as soon as the call ends.
pub type GuestCall = Pin<Box<dyn Future<Output = Result<(), Failure>> + Send>>;

/// What the response channel yields: the guest's response head and streaming body.
pub type ResponseReceiver = oneshot::Receiver<Result<Response<Body>, ErrorCode>>;

/// An instantiated component with a request handed to it, not yet running.
pub struct Invocation {
    pub instantiate: Duration,
    pub call: GuestCall,
    pub response: ResponseReceiver,
}

/// What a live WASIp2 instance holds until its call ends: its request's
/// admission permit and, when idle WASIp3 instances share the pool, its slot.
/// Held only to be dropped with the instance.
pub struct Holds {
    _permit: Permit,
    _slot: Option<Slot>,
}

impl Holds {
    pub fn new(permit: Permit, slot: Option<Slot>) -> Self {
        Self {
            _permit: permit,
            _slot: slot,
        }
    }
}

/// Why a request got no response from its component.
#[derive(Debug)]
pub enum Failure {
    /// The deadline passed (guest interrupted, or parked in a host wait too long).
    Timeout(Duration),
    /// The guest trapped (a Rust panic is an `unreachable` trap) or a host call failed.
    Trapped(wasmtime::Error),
    /// The guest passed an error code to `response-outparam.set`.
    GuestError(ErrorCode),
    /// The guest returned without setting a response.
    NoResponse,
    /// The pooling allocator had no free slot (the admission cap should prevent it).
    Overloaded(wasmtime::Error),
}

impl Failure {
    pub fn status(&self) -> u16 {
        match self {
            Failure::Timeout(_) => 504,
            Failure::Overloaded(_) => 503,
            _ => 500,
        }
    }

    /// The sentence sent to the client; details go to stderr only.
    pub fn message(&self, component: &str) -> String {
        match self {
            Failure::Timeout(limit) => {
                format!("component {component:?} did not respond within {limit:?}")
            }
            Failure::Trapped(error) => match error.downcast_ref::<Trap>() {
                Some(trap) => format!("component {component:?} trapped: {trap}"),
                None => format!("component {component:?} failed"),
            },
            Failure::GuestError(code) => format!("component {component:?} failed: {code:?}"),
            Failure::NoResponse => format!("component {component:?} sent no response"),
            Failure::Overloaded(error) => {
                format!(
                    "server busy: no instance of {component:?} available ({error}); retry later"
                )
            }
        }
    }

    /// What the log adds to [`Failure::message`]: the host's error when a host
    /// call failed (a resource limit, say), which the client is not told.
    pub fn cause(&self) -> Option<String> {
        match self {
            Failure::Trapped(error) if error.downcast_ref::<Trap>().is_none() => {
                Some(format!("{error:#}"))
            }
            _ => None,
        }
    }

    pub(super) fn from_wasmtime(error: wasmtime::Error, limit: Duration) -> Self {
        if is_pool_exhausted(&error) {
            return Failure::Overloaded(error);
        }
        match error.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => Failure::Timeout(limit),
            _ => Failure::Trapped(error),
        }
    }
}

/// Whether `error` says the pool had no slot for a new instance: wasmtime's
/// pool, or [`super::slots`] when idle WASIp3 instances would not give one up.
pub(super) fn is_pool_exhausted(error: &wasmtime::Error) -> bool {
    error
        .downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
        .is_some()
        || error.downcast_ref::<super::slots::NoSlot>().is_some()
}

/// Creates a store, instantiates the component into it and hands it `request`.
/// The deadline (the recipe's `limits.timeout`) starts now and covers
/// instantiation and the call.
pub async fn instantiate<B>(
    pre: &ProxyPre<RequestState>,
    request: Request<B>,
    recipe: &StoreRecipe,
) -> Result<Invocation, Failure>
where
    B: hyper::body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<wasmtime_wasi_http::Error>,
{
    let start = Instant::now();
    let limits = recipe.limits;
    let deadline = tokio::time::Instant::from_std(start + limits.timeout);
    let mut store = new_store(pre.engine(), recipe).map_err(Failure::Trapped)?;
    let proxy = pre
        .instantiate_async(&mut store)
        .await
        .map_err(|e| Failure::from_wasmtime(e, limits.timeout))?;
    let instantiate = start.elapsed();

    let (sender, response) = oneshot::channel();
    let resources = (|| -> wasmtime::Result<_> {
        let mut http = store.data_mut().http();
        Ok((
            http.new_incoming_request(Scheme::Http, request)?,
            http.new_response_outparam(sender)?,
        ))
    })();
    let (request, outparam) = resources.map_err(Failure::Trapped)?;

    let call = Box::pin(async move {
        let handle = proxy
            .wasi_http_incoming_handler()
            .call_handle(&mut store, request, outparam);
        match tokio::time::timeout_at(deadline, handle).await {
            Ok(result) => result.map_err(|e| Failure::from_wasmtime(e, limits.timeout)),
            Err(_elapsed) => Err(Failure::Timeout(limits.timeout)),
        }
    });
    Ok(Invocation {
        instantiate,
        call,
        response,
    })
}

/// Drives the guest's call until it sends its response head, and returns the
/// response with the call and `holds` inside its body: the guest runs on as
/// the body is read, and dropping the response (the client went away, or
/// stopped reading) drops the instance and its permit with it. No task is
/// spawned unless the guest outlives a completely sent response.
pub async fn respond(invocation: Invocation, holds: Holds) -> Result<Response<Body>, Failure> {
    let Invocation {
        mut call,
        mut response,
        ..
    } = invocation;
    // The head is only ever sent from inside the guest's call (`response-outparam.set`
    // is a host call the guest makes, and the channel closes when the call drops its
    // store), so it is looked for after each poll of the call, without registering a
    // waker: that waker would be this same task, and a task woken during its own poll
    // is requeued as a yield, which wakes the other worker, one `futex` and one
    // context switch per request (docs/performance.md, "The self-wake").
    let progress = std::future::poll_fn(|cx| {
        let outcome = call.as_mut().poll(cx);
        match (response.try_recv(), outcome) {
            (Ok(head), outcome) => Poll::Ready(Progress::Head(head, outcome.is_pending())),
            (Err(_), Poll::Ready(outcome)) => Poll::Ready(Progress::Ended(outcome)),
            // Nothing sent yet, or the guest dropped its outparam: the call goes on.
            (Err(_), Poll::Pending) => Poll::Pending,
        }
    })
    .await;
    match progress {
        // The call ended with its head sent: nothing left to drive.
        Progress::Head(Ok(head), false) => Ok(head),
        Progress::Head(Ok(head), true) => Ok(head.map(|body| {
            use http_body_util::BodyExt;
            GuestBody {
                body,
                call: Some((call, holds)),
                ended: false,
            }
            .boxed_unsync()
        })),
        Progress::Head(Err(code), _) => Err(Failure::GuestError(code)),
        Progress::Ended(outcome) => Err(outcome.err().unwrap_or(Failure::NoResponse)),
    }
}

/// How far [`respond`]'s loop got: the guest's head (and whether its call is still
/// running), or its call's end without one.
enum Progress {
    Head(Result<Response<Body>, ErrorCode>, bool),
    Ended(Result<(), Failure>),
}

/// A WASIp2 guest's response body, with the guest's call (and its instance's
/// permit) until the call ends.
struct GuestBody {
    body: Body,
    call: Option<(GuestCall, Holds)>,
    /// The body was read to its end.
    ended: bool,
}

impl hyper::body::Body for GuestBody {
    type Data = Bytes;
    type Error = wasmtime_wasi_http::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        // Run the guest first, so that it can fill the body it is writing.
        if let Some((call, _)) = &mut self.call
            && call.as_mut().poll(cx).is_ready()
        {
            // A trap mid-body ends the body with an error for the client; the
            // response head already went out, so there is nothing else to tell.
            self.call = None;
        }
        let frame = Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(None) = frame {
            self.ended = true;
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

impl Drop for GuestBody {
    fn drop(&mut self) {
        let Some((call, holds)) = self.call.take() else {
            return;
        };
        // Sent in full: the guest may finish what it does after its response
        // (bounded by the request deadline, which its call carries). Otherwise
        // the client is gone or stopped reading, and the instance goes now.
        if (self.ended || self.body.is_end_stream())
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                let _ = call.await;
                drop(holds);
            });
        }
    }
}
