//! Local service chaining: a component's outgoing request to
//! `http://<component>.spin.internal/...` goes to that component of the same
//! application, in process and without a socket, as Spin does it
//! (spinframework/spin main at 94a8fc8a, the 4.1 code: `crates/trigger-http/src/outbound_http.rs`,
//! `crates/outbound-networking-config/src/allowed_hosts.rs`; served the same in
//! 4.1 to 4.3 by their release notes):
//!
//! - the request is allowed only as any other outbound request is: by the
//!   caller's `allowed_outbound_hosts` (`http://back.spin.internal`), where
//!   `*.spin.internal` stands for each component of the app by name, so a name
//!   that is not a component is denied as an unlisted host is;
//! - the target is the first label of a host `<label>.spin.internal` (any
//!   port); other names under `spin.internal` are ordinary hosts, which no
//!   resolver knows;
//! - the callee sees the `spin-*` headers of a match on `/...`: the whole path
//!   as `spin-path-info`, `spin-client-addr` `0.0.0.0:0`, and `spin-full-url`
//!   on `localhost` (Spin drops the request's `Host` before dispatch).
//!
//! What dispatches the request (the application, its routes' executors, its
//! admission and limits) lives in `app`; this module only names it through
//! [`Dispatch`], which the application sets once it is built.

use super::outbound_http::SendFuture;
use std::sync::{Arc, OnceLock, Weak};
use wasmtime_wasi_http::{Error, WasiBody};

/// The domain whose first-level names are the application's components.
pub const DOMAIN: &str = "spin.internal";

/// `<label>.spin.internal`: the component a request's host (as the
/// allow-list read it) addresses, as Spin's `parse_service_chaining_target`
/// reads it (any port; exactly one label).
pub fn target(host: &url::Host) -> Option<&str> {
    let url::Host::Domain(domain) = host else {
        return None;
    };
    let (label, rest) = domain.split_once('.')?;
    (rest == DOMAIN && !label.is_empty()).then_some(label)
}

/// Whether an allow-list host names the chaining domain (`*.spin.internal` or
/// `<x>.spin.internal`): what selective deployment checks.
pub fn host_target(host: &str) -> Option<&str> {
    let (label, rest) = host.split_once('.')?;
    (rest == DOMAIN).then_some(label)
}

/// What sends a chained request to a component of the application.
pub trait Dispatch: Send + Sync {
    /// Serves `request` on component `component`, as the application serves
    /// its routes (a fresh or reused instance, its limits and deadline).
    fn dispatch(self: Arc<Self>, component: String, request: http::Request<WasiBody>)
    -> SendFuture;
}

/// The application's dispatcher, set once the application is built. Held
/// weakly: the application owns the contexts that own this.
#[derive(Default)]
pub struct Chain(OnceLock<Weak<dyn Dispatch>>);

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "Chain(set)"
        } else {
            "Chain(unset)"
        })
    }
}

impl Chain {
    /// Sets the dispatcher; a second call changes nothing (one application).
    pub fn set(&self, dispatch: &Arc<dyn Dispatch>) {
        let _ = self.0.set(Arc::downgrade(dispatch));
    }

    /// Sends `request` to `component`: an error the guest sees as
    /// `internal-error` where no application is there to serve it.
    pub fn send(&self, component: &str, mut request: http::Request<WasiBody>) -> SendFuture {
        // Spin drops the `Host` header before any outbound dispatch.
        request.headers_mut().remove(http::header::HOST);
        match self.0.get().and_then(Weak::upgrade) {
            Some(dispatch) => dispatch.dispatch(component.to_string(), request),
            None => Box::new(std::future::ready(Err(Error::InternalError(Some(
                format!("no application to chain to {component}.{DOMAIN}"),
            ))))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(uri: &str) -> Option<String> {
        let uri: http::Uri = uri.parse().unwrap();
        let host = url::Host::parse(uri.host()?).ok()?;
        target(&host).map(str::to_string)
    }

    #[test]
    fn the_target_is_the_one_label_under_spin_internal() {
        assert_eq!(of("http://back.spin.internal/x?y").as_deref(), Some("back"));
        assert_eq!(
            of("https://back.spin.internal:8080/").as_deref(),
            Some("back")
        );
        for other in [
            "http://a.b.spin.internal/",
            "http://spin.internal/",
            "http://back.spin.internal.example.com/",
            "http://back.spin.internals/",
            "http://example.com/",
            "/relative",
        ] {
            assert_eq!(of(other), None, "{other}");
        }
    }

    #[test]
    fn allow_list_hosts_name_their_target() {
        assert_eq!(host_target("back.spin.internal"), Some("back"));
        assert_eq!(host_target("*.spin.internal"), Some("*"));
        assert_eq!(host_target("back.example.com"), None);
    }

    #[tokio::test]
    async fn without_an_application_a_chained_request_is_an_internal_error() {
        use http_body_util::BodyExt;
        let body = http_body_util::Empty::new()
            .map_err(|never| match never {})
            .boxed_unsync();
        let sent = Box::into_pin(Chain::default().send("back", http::Request::new(body))).await;
        assert!(
            matches!(sent, Err(Error::InternalError(Some(m))) if m.contains("back.spin.internal"))
        );
    }
}
