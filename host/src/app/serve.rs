//! A request served on one component: a fresh instance, a reused WASIp3
//! one or a WAGI run, each holding its admission permit (and a pool slot
//! where idle WASIp3 instances share the pool), the body held to its limits.

use super::Body;
use super::load::{Application, Loaded};
use crate::front::admission::Permit;
use crate::front::body_limit::{BodyFault, BodyLimits, FaultCell, GuardedBody};
use crate::front::reply;
use crate::instance::invoke::{self, Failure, Holds};
use crate::instance::reuse::Handler;
use crate::instance::slots::{Slot, Slots};
use crate::instance::state::RequestState;
use crate::instance::wagi::Wagi;
use crate::logger;
use bytes::Bytes;
use http::{Request, Response};
use std::sync::Arc;

/// Serves `request` (its `spin-*` headers set) on `component` of
/// `application`, holding `permit`: a client's request or a chained one. The
/// body is held to `body_limits`; a guest that saw its body fail gets its
/// answer replaced by the host's (413 or 408).
pub(super) async fn serve_component<B>(
    application: &Application,
    body_limits: BodyLimits,
    component: &str,
    request: Request<B>,
    permit: Permit,
) -> Response<Body>
where
    B: hyper::body::Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: Into<wasmtime_wasi_http::Error>,
{
    let max_size = body_limits.max_size;
    let fault = FaultCell::default();
    let request = request.map(|body| GuardedBody::new(body, body_limits, fault.clone()));
    let Some(loaded) = application.components.get(component) else {
        return reply::to_response(reply::server_error(
            500,
            format!("no HTTP component {component:?} in the application"),
        ));
    };
    let response = match &loaded.handler {
        Handler::Fresh(pre) => {
            let slots = application.shared_slots.as_ref();
            fresh(pre, request, loaded, slots, permit).await
        }
        Handler::Reused(reused) => reused.handle(request, Some(permit)).await,
        Handler::Wagi(wagi) => {
            let slots = application.shared_slots.as_ref();
            wagi_run(wagi, request, loaded, slots, permit).await
        }
    };
    let response =
        response.unwrap_or_else(|failure| reply::to_response(failure_reply(component, &failure)));
    // The guest saw a failed body read and answered as it saw fit (a 400 for
    // ours); the client deserves to know what went wrong. The guest's
    // response, and with it a WASIp2 instance, is dropped here.
    let fault_reply = match fault.get() {
        None => return response,
        Some(BodyFault::TooLarge) => glue::ApiError::body_too_large(max_size),
        Some(BodyFault::Stalled) => glue::ApiError::new(
            408,
            format!(
                "request body: no data received for {:?}; send the body without pauses",
                body_limits.read_timeout
            ),
        ),
        Some(BodyFault::Overdue) => glue::ApiError::new(
            408,
            format!(
                "request body: not complete within {:?} of the request; send it faster",
                body_limits.total_timeout
            ),
        ),
    };
    reply::to_response(fault_reply.to_reply())
}

/// Serves `request` on a fresh instance, which holds `permit` and, when
/// idle WASIp3 instances share the pool, a slot of it.
async fn fresh<B>(
    pre: &wasmtime_wasi_http::p2::bindings::ProxyPre<RequestState>,
    request: Request<B>,
    loaded: &Loaded,
    slots: Option<&Arc<Slots>>,
    permit: Permit,
) -> Result<Response<Body>, Failure>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<wasmtime_wasi_http::Error>,
{
    let slot = take_slot(slots).await?;
    let invocation = invoke::instantiate(pre, request, &loaded.recipe).await?;
    invoke::respond(invocation, Holds::new(permit, slot)).await
}

/// Runs a WAGI program on `request`; like a fresh instance, it holds
/// `permit` and, when idle WASIp3 instances share the pool, a slot, until
/// its (buffered) response is ready.
async fn wagi_run<B>(
    wagi: &Wagi,
    request: Request<B>,
    loaded: &Loaded,
    slots: Option<&Arc<Slots>>,
    permit: Permit,
) -> Result<Response<Body>, Failure>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
{
    let slot = take_slot(slots).await?;
    let response = wagi.handle(request, &loaded.recipe).await;
    drop((permit, slot));
    response
}

/// A slot of the pool, when idle WASIp3 instances share it (`slots`): what a
/// fresh instance or a WAGI run holds while it lives.
pub(super) async fn take_slot(slots: Option<&Arc<Slots>>) -> Result<Option<Slot>, Failure> {
    match slots {
        None => Ok(None),
        Some(slots) => slots
            .take()
            .await
            .map(Some)
            .map_err(|none| Failure::Overloaded(wasmtime::Error::new(none))),
    }
}

/// Logs the failure as one stderr line, through the log queue so that a stalled
/// stderr cannot block the request (a guest's own panic message is already
/// logged above it; timeouts are expected under load tests, so only the
/// response says so) and builds the JSON error reply.
pub(super) fn failure_reply(component: &str, failure: &Failure) -> glue::Reply {
    let message = failure.message(component);
    if let Failure::Overloaded(_) = failure {
        // Only if the pool runs out despite the admission cap; as busy as a 503 from it.
        return reply::busy(message);
    }
    if !matches!(failure, Failure::Timeout(_)) {
        match failure.cause() {
            Some(cause) => logger::line(format!("error: {message}: {cause}")),
            None => logger::line(format!("error: {message}")),
        }
    }
    reply::server_error(failure.status(), message)
}
