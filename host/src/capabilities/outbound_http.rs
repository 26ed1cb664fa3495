//! Outgoing `wasi:http` requests (WASIp2's `outgoing-handler`, WASIp3's
//! `client`: wasmtime-wasi-http 48 sends both through one hook), allowed
//! exactly as the component's `allowed_outbound_hosts` allow them and
//! otherwise answered with `HTTP-request-denied`, as Spin answers them
//! (spinframework/spin v4.0.2 `crates/factor-outbound-http/src/wasi.rs`,
//! `prepare_request`). An allowed request is sent by wasmtime-wasi-http's own
//! client, one HTTP/1.1 connection per request, TLS with the webpki roots for
//! `https`. It follows no redirects: a `3xx` goes back to the guest, and a
//! request the guest then makes to the new location is checked again.
//!
//! A request without an authority, or to `self.alt`, is a request to the app
//! itself; allowed by a `self` entry, it goes where Spin sends it: to the
//! address `serve` listens on (Spin's `SelfRequestOrigin`, set per request in
//! `crates/trigger-http/src/server.rs`), over loopback HTTP, through the same
//! router, admission and limits as any client's request. Where nothing
//! listens (the in-process API), it is refused with `HTTP-request-URI-invalid`,
//! Spin's answer when it has no origin.
//!
//! The authority is read once ([`super::dial`]): the URI's host as the
//! allow-list reads it (`url`'s host parser: `0x7f.1` is 127.0.0.1) and its
//! port are the [`Destination`] checked, and the request is sent with that
//! destination written back as its authority, so the client resolves and
//! dials exactly what was checked (wasmtime-wasi-http's client takes an
//! authority, not addresses: a name is looked up there). An authority with
//! user information, or a port that is not one (`:65536`), is
//! `HTTP-request-URI-invalid`: the URI parser and the client would read it
//! apart.

//! A request to `http://<component>.spin.internal/...`, once the list allows
//! it, goes to that component in process (`service_chaining`).

use super::connection_limits::ConnectionLimit;
use super::dial::Destination;
use super::outbound_hosts::AllowedHosts;
use super::service_chaining::{self, Chain};
use http_body_util::BodyExt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::OnceLock;
use url::Host;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

/// What the hook returns: the response and a future driving its connection.
pub type ResponseFuture = Box<dyn Future<Output = Result<(), Error>> + Send>;
pub type SendFuture =
    Box<dyn Future<Output = Result<(http::Response<WasiBody>, ResponseFuture), Error>> + Send>;

/// Where an allowed request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The host the guest named, as the allow-list read and allowed it.
    Named(Destination),
    /// The application itself.
    App,
    /// A component of the application, by service chaining.
    Component(String),
}

/// The address requests to the application itself are sent to, once `serve`
/// listens; shared by every component of the application.
#[derive(Debug, Default)]
pub struct SelfOrigin(OnceLock<SocketAddr>);

impl SelfOrigin {
    /// Records where `serve` listens: an unspecified address (`0.0.0.0`,
    /// `[::]`) is reached through its family's loopback, on the same port.
    pub fn set(&self, listening: SocketAddr) {
        let ip = match listening.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        // One listener per application: a second call changes nothing.
        let _ = self.0.set(SocketAddr::new(ip, listening.port()));
    }

    pub fn get(&self) -> Option<SocketAddr> {
        self.0.get().copied()
    }
}

/// The decision for one request: where it goes, or the error the guest gets.
pub fn check(allowed: &AllowedHosts, uri: &http::Uri) -> Result<Target, Error> {
    let authority = uri.authority().map(http::uri::Authority::host);
    if matches!(authority, None | Some("" | "self.alt")) {
        return if allowed.allows_self(&["http", "https"]) {
            Ok(Target::App)
        } else {
            Err(Error::HttpRequestDenied)
        };
    }
    let Some(authority) = uri.authority() else {
        return Err(Error::HttpRequestUriInvalid);
    };
    // wasmtime-wasi-http set a scheme (`https` when the guest gave none).
    let scheme = uri.scheme_str().unwrap_or("https");
    let port = port_of(authority)?
        .or_else(|| super::outbound_hosts::well_known_port(scheme))
        .ok_or(Error::HttpRequestDenied)?;
    let host = Host::parse(authority.host()).map_err(|_| Error::HttpRequestDenied)?;
    if !allowed.allows(scheme, &host, Some(port)) {
        return Err(Error::HttpRequestDenied);
    }
    // The component is read from the host as checked, not from the URI again.
    Ok(match service_chaining::target(&host) {
        Some(component) => Target::Component(component.to_string()),
        None => Target::Named(Destination { host, port }),
    })
}

/// The port an authority names, `None` for none (or an empty one); an
/// authority with user information, or a port that is no `u16`, is invalid:
/// `http`'s reader skips both, the client's would not.
fn port_of(authority: &http::uri::Authority) -> Result<Option<u16>, Error> {
    let text = authority.as_str();
    if text.contains('@') {
        return Err(Error::HttpRequestUriInvalid);
    }
    match text[authority.host().len()..].strip_prefix(':') {
        None | Some("") => Ok(None),
        Some(_) => authority
            .port_u16()
            .map(Some)
            .ok_or(Error::HttpRequestUriInvalid),
    }
}

/// `request` sent to `destination`: its authority is the checked one,
/// written out (the `host` header the guest's authority set is kept).
pub fn to_destination(
    destination: &Destination,
    request: &mut http::Request<WasiBody>,
) -> Result<(), Error> {
    let mut parts = request.uri().clone().into_parts();
    parts.authority = Some(
        destination
            .to_string()
            .parse()
            .map_err(|_| Error::HttpRequestUriInvalid)?,
    );
    *request.uri_mut() = http::Uri::from_parts(parts).map_err(|_| Error::HttpRequestUriInvalid)?;
    Ok(())
}

/// `request` addressed to the application at `origin`: plain HTTP to the
/// listener, the guest's path and query kept, `host` naming the listener.
pub fn to_app(origin: SocketAddr, request: &mut http::Request<WasiBody>) -> Result<(), Error> {
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", http::uri::PathAndQuery::as_str);
    *request.uri_mut() = http::Uri::builder()
        .scheme(http::uri::Scheme::HTTP)
        .authority(origin.to_string())
        .path_and_query(path)
        .build()
        .map_err(|_| Error::HttpRequestUriInvalid)?;
    let host = http::HeaderValue::from_str(&origin.to_string())
        .map_err(|_| Error::HttpRequestUriInvalid)?;
    request.headers_mut().insert(http::header::HOST, host);
    Ok(())
}

/// How long a connection may take when the guest sets no connect timeout
/// (wasmtime-wasi-http's default); waiting for a permit counts in it.
const DEFAULT_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_mins(10);

/// Sends `request` if `allowed` allows it; to the application itself at
/// `origin` for an allowed request to `self`, and through `chain` for one to
/// a component. A connection holds a permit of `limit` while it is open.
pub fn send(
    allowed: &AllowedHosts,
    origin: Option<SocketAddr>,
    chain: &Chain,
    limit: &ConnectionLimit,
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
) -> SendFuture {
    let decision = match check(allowed, request.uri()) {
        Ok(Target::Component(component)) => return chain.send(&component, request),
        Ok(Target::Named(destination)) => to_destination(&destination, &mut request),
        Ok(Target::App) => origin
            .ok_or(Error::HttpRequestUriInvalid)
            .and_then(|origin| to_app(origin, &mut request)),
        Err(error) => Err(error),
    };
    let limit = limit.clone();
    Box::new(async move {
        decision?;
        let wait = options
            .and_then(|o| o.connect_timeout)
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        let permit = limit.acquire(wait).await?;
        let (response, connection) =
            wasmtime_wasi_http::default_send_request(request, options).await?;
        let connection = async move {
            let outcome = connection.await;
            drop(permit);
            outcome
        };
        Ok((
            response.map(BodyExt::boxed_unsync),
            Box::new(connection) as ResponseFuture,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(allowed: &[&str], uri: &str) -> Result<Target, Error> {
        check(&AllowedHosts::of(allowed), &uri.parse().unwrap())
    }

    fn denied(result: &Result<Target, Error>) -> bool {
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
        for uri in ["http://self.alt/x", "/x"] {
            let target = check(&AllowedHosts::of(&["http://self"]), &uri.parse().unwrap());
            assert!(matches!(target, Ok(Target::App)), "{uri}");
        }
        assert!(matches!(
            decide(&["https://example.com"], "https://example.com/"),
            Ok(Target::Named(_))
        ));
    }

    /// URIs as a guest may spell them, each sent as `http::Uri` reads it.
    const SPELLINGS: &[&str] = &[
        "http://127.0.0.1:7002/",
        "http://127.0.0.1:7001@127.0.0.1:7002/",
        "http://u:p@127.0.0.1:7001/",
        "http://127.0.0.1:07001/",
        "http://127.0.0.1:+7001/",
        "http://127.0.0.1:65536/",
        "http://127.0.0.1:7001:7002/",
        "http://127.0.0.1:/",
        "http://[::ffff:127.0.0.1]:7001/",
        "http://[::ffff:7f00:1]:7001/",
        "http://[::1]:7001/",
        "http://127.0.0.1.:7001/",
        "http://0x7f.1:7001/",
        "http://0177.0.0.1:7001/",
        "http://2130706433:7001/",
        "http://127.1:7001/",
        "http://%31%32%37.0.0.1:7001/",
        "http://localhost:7001/",
        "http://LOCALHOST:7001/",
        "http://localhost.:7001/",
        "http://127.0.0.2:7001/",
        "HTTP://127.0.0.1:7001/",
        "https://127.0.0.1:7001/",
        "ftp://127.0.0.1:7001/",
        "http://127.0.0.1:7001/?host=127.0.0.1:7002",
        "http://self.alt:7002/",
    ];

    #[test]
    fn every_spelling_is_refused_or_sent_to_the_granted_host_as_checked() {
        for list in [
            &["http://127.0.0.1:7001"][..],
            &["*://127.0.0.1:7001", "*://localhost:7001"],
        ] {
            let allowed = AllowedHosts::of(list);
            for spelling in SPELLINGS {
                let Ok(uri) = spelling.parse::<http::Uri>() else {
                    continue;
                };
                let Ok(Target::Named(destination)) = check(&allowed, &uri) else {
                    continue;
                };
                let context = format!("{spelling} under {list:?}");
                assert!(
                    crate::capabilities::hostile_addresses::is_granted(&destination),
                    "{context}: {destination}"
                );
                // What the client dials is the authority it is handed: the checked one.
                let mut sent = request(spelling);
                to_destination(&destination, &mut sent).unwrap();
                let authority = sent.uri().authority().unwrap().as_str().to_string();
                assert_eq!(authority, destination.to_string(), "{context}");
                assert_eq!(
                    sent.uri().path_and_query(),
                    uri.path_and_query(),
                    "{context}"
                );
            }
        }
    }

    #[test]
    fn authorities_the_uri_parser_and_the_client_read_apart_are_invalid() {
        let allowed = &["http://127.0.0.1:7001", "http://127.0.0.1:80"];
        for uri in [
            "http://u:p@127.0.0.1:7001/",
            "http://127.0.0.1:7001@127.0.0.1:7002/",
            "http://127.0.0.1:65536/",
        ] {
            assert!(
                matches!(decide(allowed, uri), Err(Error::HttpRequestUriInvalid)),
                "{uri}: {:?}",
                decide(allowed, uri)
            );
        }
        // Other spellings of the granted host go out as the host itself.
        for uri in [
            "http://0x7f.1:7001/",
            "http://127.0.0.1.:07001/",
            "http://2130706433:7001/",
        ] {
            let Ok(Target::Named(destination)) = decide(allowed, uri) else {
                panic!("{uri}");
            };
            let mut sent = request(uri);
            to_destination(&destination, &mut sent).unwrap();
            assert_eq!(sent.uri().to_string(), "http://127.0.0.1:7001/", "{uri}");
        }
    }

    #[test]
    fn chained_requests_are_allowed_as_any_host_and_then_go_to_their_component() {
        let ids = ["back".to_string(), "front".to_string()];
        let chained = |list: &[&str], uri: &str| {
            let entries: Vec<String> = list.iter().map(ToString::to_string).collect();
            let allowed = AllowedHosts::parse(&entries, &[])
                .unwrap()
                .expand_service_chaining(&ids);
            check(&allowed, &uri.parse().unwrap())
        };
        let to_back = |result: Result<Target, Error>| matches!(result, Ok(Target::Component(c)) if c == "back");
        assert!(to_back(chained(
            &["http://back.spin.internal"],
            "http://back.spin.internal/x"
        )));
        assert!(to_back(chained(
            &["http://*.spin.internal"],
            "http://back.spin.internal/"
        )));
        assert!(to_back(chained(
            &["*://*:*"],
            "http://back.spin.internal:80/"
        )));
        // Another component, another scheme, a name that is no component.
        for (list, uri) in [
            (
                &["http://back.spin.internal"][..],
                "http://front.spin.internal/",
            ),
            (
                &["http://back.spin.internal"],
                "https://back.spin.internal/",
            ),
            (&["http://*.spin.internal"], "http://nobody.spin.internal/"),
            (&["http://*.spin.internal"], "http://a.back.spin.internal/"),
            (&[], "http://back.spin.internal/"),
        ] {
            assert!(denied(&chained(list, uri)), "{list:?} {uri}");
        }
    }

    fn request(uri: &str) -> http::Request<WasiBody> {
        let body = http_body_util::Empty::new()
            .map_err(|never| match never {})
            .boxed_unsync();
        let mut request = http::Request::new(body);
        *request.uri_mut() = uri.parse().unwrap();
        request
    }

    #[test]
    fn a_request_to_the_app_goes_to_the_listener_with_its_path_and_query() {
        let origin = SelfOrigin::default();
        assert_eq!(origin.get(), None);
        origin.set("0.0.0.0:3000".parse().unwrap());
        origin.set("127.0.0.1:9".parse().unwrap());
        let origin = origin.get().unwrap();
        assert_eq!(origin, "127.0.0.1:3000".parse().unwrap());
        for (uri, sent) in [
            ("http://self.alt/a/b?c=d", "http://127.0.0.1:3000/a/b?c=d"),
            ("https://self.alt", "http://127.0.0.1:3000/"),
        ] {
            let mut request = request(uri);
            to_app(origin, &mut request).unwrap();
            assert_eq!(request.uri().to_string(), sent);
            assert_eq!(request.headers()["host"], "127.0.0.1:3000");
        }
        let v6 = SelfOrigin::default();
        v6.set("[::]:8080".parse().unwrap());
        assert_eq!(v6.get(), Some("[::1]:8080".parse().unwrap()));
    }

    #[tokio::test]
    async fn without_a_listener_a_request_to_the_app_is_an_invalid_uri() {
        let allowed = AllowedHosts::of(&["http://self"]);
        let sent = Box::into_pin(send(
            &allowed,
            None,
            &Chain::default(),
            &ConnectionLimit::default(),
            request("http://self.alt/x"),
            None,
        ))
        .await;
        assert!(matches!(sent, Err(Error::HttpRequestUriInvalid)));
    }
}
