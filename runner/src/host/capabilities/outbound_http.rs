//! Outgoing `wasi:http` requests (WASIp2's `outgoing-handler`, WASIp3's
//! `client`: wasmtime-wasi-http 48 sends both through one hook), allowed
//! exactly as the component's `allowed_outbound_hosts` allow them and
//! otherwise answered with `HTTP-request-denied`, as Spin answers them
//! (spinframework/spin `crates/factor-outbound-http/src/wasi.rs`,
//! `prepare_request`). An allowed request is sent by wasmtime-wasi-http's own
//! client, one HTTP/1.1 connection per request, TLS with the webpki roots for
//! `https`. It follows no redirects: a `3xx` goes back to the guest, and a
//! request the guest then makes to the new location is checked again.
//!
//! A request without an authority, or to `self.alt`, is a request to the app
//! itself; Spin sends those to its own listener. Here the list is checked the
//! same way, and an allowed one is refused with `HTTP-request-URI-invalid`,
//! Spin's answer when it knows no origin to send them to.

use super::outbound_hosts::AllowedHosts;
use http_body_util::BodyExt;
use url::Host;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

/// What the hook returns: the response and a future driving its connection.
pub type ResponseFuture = Box<dyn Future<Output = Result<(), Error>> + Send>;
pub type SendFuture =
    Box<dyn Future<Output = Result<(http::Response<WasiBody>, ResponseFuture), Error>> + Send>;

/// The decision for one request: `Ok` to send it, or the error the guest gets.
pub fn check(allowed: &AllowedHosts, uri: &http::Uri) -> Result<(), Error> {
    let authority = uri.authority().map(http::uri::Authority::host);
    if matches!(authority, None | Some("" | "self.alt")) {
        return Err(if allowed.allows_self(&["http", "https"]) {
            Error::HttpRequestUriInvalid
        } else {
            Error::HttpRequestDenied
        });
    }
    // wasmtime-wasi-http set a scheme (`https` when the guest gave none).
    let scheme = uri.scheme_str().unwrap_or("https");
    let port = uri.port_u16();
    let allowed = authority
        .and_then(|host| Host::parse(host).ok())
        .is_some_and(|host| allowed.allows(scheme, &host, port));
    if allowed {
        Ok(())
    } else {
        Err(Error::HttpRequestDenied)
    }
}

/// Sends `request` if `allowed` allows it.
pub fn send(
    allowed: &AllowedHosts,
    request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
) -> SendFuture {
    let decision = check(allowed, request.uri());
    Box::new(async move {
        decision?;
        let (response, connection) =
            wasmtime_wasi_http::default_send_request(request, options).await?;
        Ok((
            response.map(BodyExt::boxed_unsync),
            Box::new(connection) as ResponseFuture,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(allowed: &[&str], uri: &str) -> Result<(), Error> {
        check(&AllowedHosts::of(allowed), &uri.parse().unwrap())
    }

    fn denied(result: &Result<(), Error>) -> bool {
        matches!(result, Err(Error::HttpRequestDenied))
    }

    #[test]
    fn requests_are_allowed_exactly_per_the_list() {
        let list = &["http://localhost:8080", "https://*.example.com"];
        assert!(decide(list, "http://localhost:8080/path?q").is_ok());
        assert!(decide(list, "https://api.example.com/").is_ok());
        assert!(decide(list, "https://api.example.com:443/").is_ok());
        // An unlisted host, an unlisted port, another scheme.
        assert!(denied(&decide(list, "http://evil.com:8080/")));
        assert!(denied(&decide(list, "http://localhost:8081/")));
        assert!(denied(&decide(list, "https://localhost:8080/")));
        assert!(denied(&decide(list, "https://api.example.com:8443/")));
        // An address for the listed name, or a name for a listed address.
        assert!(denied(&decide(list, "http://127.0.0.1:8080/")));
        assert!(denied(&decide(list, "http://[::1]:8080/")));
        assert!(denied(&decide(
            &["http://127.0.0.1:80"],
            "http://localhost/"
        )));
        assert!(denied(&decide(&[], "http://localhost:8080/")));
    }

    #[test]
    fn requests_to_the_app_itself_need_self() {
        assert!(denied(&decide(&["https://example.com"], "/x")));
        assert!(denied(&decide(
            &["https://example.com"],
            "http://self.alt/x"
        )));
        assert!(matches!(
            decide(&["http://self"], "http://self.alt/x"),
            Err(Error::HttpRequestUriInvalid)
        ));
    }
}
