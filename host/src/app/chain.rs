//! Chained requests (`http://<component>.spin.internal/...`) served in
//! process: the capability (`capabilities::service_chaining`) decided the
//! request is allowed and names a component; here it is served as a client's
//! request to that component is, with the `spin-*` headers Spin gives a
//! chained request (a match on `/...`, spinframework/spin 94a8fc8a
//! `crates/routes/src/lib.rs` `RouteMatch::synthetic`; `crates/trigger-http/src/outbound_http.rs`).
//!
//! A chained request takes an admission permit like any request (waiting in
//! the same bounded queue), so that a component calling itself, or fanning
//! out, holds no more instances than clients could make it hold; past the
//! queue the caller gets the `503` a client would. Its instance has its own
//! deadline, and is dropped with the caller's if the caller is dropped first.

use super::Applications;
use super::serve::serve_component;
use crate::capabilities::outbound_http::{ResponseFuture, SendFuture};
use crate::capabilities::service_chaining::{DOMAIN, Dispatch};
use crate::front::admission::Admission;
use crate::front::body_limit::BodyLimits;
use crate::front::reply;
use crate::front::router::{Route, RouteHeaders, RouteMatch};
use crate::front::spin_headers::{self, ClientAddr};
use crate::manifest::RouteTarget;
use http::uri::{PathAndQuery, Scheme};
use http::{HeaderValue, Request, Uri};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use wasmtime_wasi_http::{Error, WasiBody};

/// The `spin-client-addr` of a chained request, as Spin sets it.
const CHAINED_CLIENT: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);

/// The route a chained request is matched on (Spin's synthetic match).
const CHAINED_ROUTE: &str = "/...";

pub(super) struct Chained {
    apps: Arc<Applications>,
    admission: Arc<Admission>,
    body_limits: BodyLimits,
    client: ClientAddr,
}

impl Chained {
    pub(super) fn new(
        apps: Arc<Applications>,
        admission: Arc<Admission>,
        body_limits: BodyLimits,
    ) -> Self {
        Self {
            apps,
            admission,
            body_limits,
            client: ClientAddr::new(CHAINED_CLIENT),
        }
    }
}

impl Dispatch for Chained {
    fn dispatch(self: Arc<Self>, component: String, request: Request<WasiBody>) -> SendFuture {
        Box::new(async move {
            if !self.apps.current().components.contains_key(&component) {
                // Spin fails the caller too: no HTTP trigger runs that component.
                return Err(Error::InternalError(Some(format!(
                    "{component}.{DOMAIN}: the application has no HTTP component {component:?}"
                ))));
            }
            let response = match self.admission.admit().await {
                Ok(permit) => {
                    let request = chained_request(request, &component, &self.client);
                    // On a task of its own: a WASIp3 caller's call runs inside
                    // its store's event loop, and wasmtime refuses to run the
                    // callee's event loop inside it on the same thread
                    // (`run_concurrent` is not reentrant). Aborted if the
                    // caller is dropped first.
                    let chained = Arc::clone(&self);
                    let mut task = AbortOnDrop(tokio::spawn(async move {
                        let application = chained.apps.current();
                        serve_component(
                            application,
                            chained.body_limits,
                            &component,
                            request,
                            permit,
                        )
                        .await
                    }));
                    (&mut task.0).await.map_err(|error| {
                        Error::InternalError(Some(format!("the chained request failed: {error}")))
                    })?
                }
                Err(refusal) => {
                    reply::to_response(reply::busy(refusal.message(self.admission.limits())))
                }
            };
            let done: ResponseFuture = Box::new(std::future::ready(Ok(())));
            Ok((response, done))
        })
    }
}

/// A task aborted when its handle is dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The synthetic `/...` route of `component`.
fn chained_route(component: &str) -> Route {
    Route {
        raw: CHAINED_ROUTE.into(),
        based: CHAINED_ROUTE.into(),
        wildcard: true,
        target: RouteTarget::Component(component.to_string()),
        headers: RouteHeaders {
            raw: Some(HeaderValue::from_static(CHAINED_ROUTE)),
            matched: Some(HeaderValue::from_static(CHAINED_ROUTE)),
            component_route: Some(HeaderValue::from_static("")),
        },
    }
}

/// `request` as the callee sees it: an absolute `http` URI on the name the
/// caller used, and the `spin-*` headers of a match of its whole path on
/// `/...`, its full URL on `localhost` (the caller's `Host` was dropped).
fn chained_request(
    request: Request<WasiBody>,
    component: &str,
    client: &ClientAddr,
) -> Request<WasiBody> {
    let (mut parts, body) = request.into_parts();
    let path_and_query = parts
        .uri
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    let route = chained_route(component);
    let matched = RouteMatch {
        route: &route,
        path_info: path_and_query.path().to_string(),
        captures: Vec::new(),
    };
    parts.headers.remove(http::header::HOST);
    let full_url = format!("http://localhost{path_and_query}");
    spin_headers::apply(&mut parts.headers, &matched, &full_url, client);
    let mut uri = http::uri::Parts::default();
    uri.scheme = Some(Scheme::HTTP);
    uri.authority = parts.uri.authority().cloned();
    uri.path_and_query = Some(path_and_query);
    if let Ok(uri) = Uri::from_parts(uri) {
        parts.uri = uri;
    }
    Request::from_parts(parts, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[test]
    fn a_chained_request_carries_the_headers_of_a_match_on_the_wildcard() {
        let body = http_body_util::Empty::new()
            .map_err(|never| match never {})
            .boxed_unsync();
        let mut request = Request::new(body);
        *request.uri_mut() = "https://back.spin.internal/a/b?c=d".parse().unwrap();
        request
            .headers_mut()
            .insert("spin-client-addr", HeaderValue::from_static("spoofed"));
        request
            .headers_mut()
            .insert("x-from-caller", HeaderValue::from_static("kept"));
        let request = chained_request(request, "back", &ClientAddr::new(CHAINED_CLIENT));
        assert_eq!(
            request.uri().to_string(),
            "http://back.spin.internal/a/b?c=d"
        );
        let h = request.headers();
        assert_eq!(h["spin-full-url"], "http://localhost/a/b?c=d");
        assert_eq!(h["spin-path-info"], "/a/b");
        assert_eq!(h["spin-matched-route"], "/...");
        assert_eq!(h["spin-raw-component-route"], "/...");
        assert_eq!(h["spin-component-route"], "");
        assert_eq!(h["spin-base-path"], "/");
        assert_eq!(h["spin-client-addr"], "0.0.0.0:0");
        assert_eq!(h["x-from-caller"], "kept");
        assert!(h.get("host").is_none());
    }
}
