//! The in-process API, for measuring without HTTP in between (`compare`).

use super::serve::failure_reply;
use super::{ComponentLoad, Host, with_spin_headers};
use crate::front::reply;
use crate::front::router::RouteMatch;
use crate::instance::Body;
use crate::instance::invoke::{self, Failure, Invocation};
use crate::instance::reuse::Handler;
use anyhow::{Context, Result};
use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use std::time::{Duration, Instant};

/// A complete response from [`Host::handle_timed`], with where the time went.
#[derive(Debug, Clone)]
pub struct TimedResponse {
    pub status: StatusCode,
    /// Read by tests only: what compare measures is the status, body and times.
    #[cfg(test)]
    pub headers: HeaderMap,
    pub body: Bytes,
    /// Creating the store and instantiating the component (the cold-start cost).
    pub instantiate: Duration,
    /// From calling the guest's handler until the full body was received.
    pub handle: Duration,
}

impl TimedResponse {
    /// `collected`: the status, headers and body of the response.
    fn new(
        (status, headers, body): (StatusCode, HeaderMap, Bytes),
        instantiate: Duration,
        handle: Duration,
    ) -> Self {
        #[cfg(not(test))]
        drop(headers);
        Self {
            status,
            #[cfg(test)]
            headers,
            body,
            instantiate,
            handle,
        }
    }
}

impl Host {
    /// How each triggered component was made ready (compiled or loaded from
    /// cache), in id order.
    pub fn loads(&self) -> Vec<ComponentLoad> {
        self.application()
            .components
            .values()
            .map(|loaded| loaded.load.clone())
            .collect()
    }

    /// Runs `request` on a fresh instance of `component`, bypassing routing, and
    /// returns the complete response with its time split into instantiation and
    /// handling. The request sees the same `spin-*` headers as under `serve` (for
    /// the component's first route, client `127.0.0.1:0`). Guest failures are
    /// responses (500, 504 with a JSON body), as a client would see them; `Err` is
    /// only for an unknown component id.
    ///
    /// Needs a tokio runtime with timers (any flavor).
    pub async fn handle_timed(
        &self,
        component: &str,
        request: Request<Bytes>,
    ) -> Result<TimedResponse> {
        let loaded = self
            .application()
            .components
            .get(component)
            .with_context(|| format!("no triggered component {component:?} in the manifest"))?;
        let route = self
            .router
            .route_of(component)
            .with_context(|| format!("component {component:?} has no route"))?;
        let matched = match self.router.route(request.uri().path()) {
            Some(m) if m.route.component() == Some(component) => m,
            _ => RouteMatch {
                route,
                path_info: String::new(),
                captures: Vec::new(),
            },
        };
        let request = with_spin_headers(request.map(full_body), &matched, &self.in_process_client);
        let pre = match &loaded.handler {
            Handler::Fresh(pre) => pre,
            // A reused instance has no instantiation of its own to time: all of
            // it counts as handling (the first request on a new instance pays
            // for instantiating it).
            Handler::Reused(reused) => {
                let start = Instant::now();
                let outcome = match reused.handle(request, None).await {
                    Ok(response) => collect(response).await,
                    Err(failure) => Err(failure),
                };
                let handle = start.elapsed();
                return Ok(match outcome {
                    Ok(collected) => TimedResponse::new(collected, Duration::ZERO, handle),
                    Err(failure) => Self::failed_timed(component, &failure, Duration::ZERO, handle),
                });
            }
            // A WAGI program's instantiation and run are one step here: all
            // of it counts as handling.
            Handler::Wagi(wagi) => {
                let start = Instant::now();
                let outcome = match wagi.handle(request, &loaded.recipe).await {
                    Ok(response) => collect(response).await,
                    Err(failure) => Err(failure),
                };
                let handle = start.elapsed();
                return Ok(match outcome {
                    Ok(collected) => TimedResponse::new(collected, Duration::ZERO, handle),
                    Err(failure) => Self::failed_timed(component, &failure, Duration::ZERO, handle),
                });
            }
        };
        match invoke::instantiate(pre, request, &loaded.recipe).await {
            Ok(invocation) => Ok(self.complete_timed(component, invocation).await),
            Err(failure) => Ok(Self::failed_timed(
                component,
                &failure,
                Duration::ZERO,
                Duration::ZERO,
            )),
        }
    }

    async fn complete_timed(&self, component: &str, invocation: Invocation) -> TimedResponse {
        let Invocation {
            instantiate,
            call,
            response,
        } = invocation;
        let start = Instant::now();
        let receive = async {
            let response = response.await.ok()?;
            Some(match response {
                Ok(response) => collect(response).await,
                Err(code) => Err(Failure::GuestError(code)),
            })
        };
        let (called, received) = tokio::join!(call, receive);
        let handle = start.elapsed();
        match (received, called) {
            (Some(Ok(collected)), _) => TimedResponse::new(collected, instantiate, handle),
            // A guest that traps mid-body reports both; its trap says more.
            (_, Err(failure)) | (Some(Err(failure)), Ok(())) => {
                Self::failed_timed(component, &failure, instantiate, handle)
            }
            (None, Ok(())) => {
                Self::failed_timed(component, &Failure::NoResponse, instantiate, handle)
            }
        }
    }

    fn failed_timed(
        component: &str,
        failure: &Failure,
        instantiate: Duration,
        handle: Duration,
    ) -> TimedResponse {
        let reply = failure_reply(component, failure);
        let body = Bytes::from(reply.body.clone());
        let (parts, _) = reply::to_response(reply).into_parts();
        TimedResponse::new((parts.status, parts.headers, body), instantiate, handle)
    }
}

pub(super) fn full_body(
    bytes: Bytes,
) -> http_body_util::combinators::UnsyncBoxBody<Bytes, wasmtime_wasi_http::Error> {
    Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}

async fn collect(response: Response<Body>) -> Result<(StatusCode, HeaderMap, Bytes), Failure> {
    let (parts, body) = response.into_parts();
    let body = body.collect().await.map_err(|e| {
        Failure::Trapped(wasmtime::Error::msg(format!("response body failed: {e}")))
    })?;
    Ok((parts.status, parts.headers, body.to_bytes()))
}
