//! The `spin-*` request headers Spin's HTTP trigger adds before calling a component.

use super::router::{Route, RouteMatch};
use http::{HeaderMap, HeaderName, HeaderValue};
use std::net::SocketAddr;

pub const FULL_URL: HeaderName = HeaderName::from_static("spin-full-url");
pub const PATH_INFO: HeaderName = HeaderName::from_static("spin-path-info");
pub const MATCHED_ROUTE: HeaderName = HeaderName::from_static("spin-matched-route");
pub const BASE_PATH: HeaderName = HeaderName::from_static("spin-base-path");
pub const RAW_COMPONENT_ROUTE: HeaderName = HeaderName::from_static("spin-raw-component-route");
pub const COMPONENT_ROUTE: HeaderName = HeaderName::from_static("spin-component-route");
pub const CLIENT_ADDR: HeaderName = HeaderName::from_static("spin-client-addr");

/// Applications are always mounted at the root, as `spin up` does by default.
const BASE: HeaderValue = HeaderValue::from_static("/");

/// `spin-client-addr`, formatted once per connection rather than per request.
#[derive(Debug, Clone)]
pub struct ClientAddr(HeaderValue);

impl ClientAddr {
    pub fn new(addr: SocketAddr) -> Self {
        Self(HeaderValue::try_from(addr.to_string()).expect("a socket address is header text"))
    }
}

/// Sets the headers for a request to `full_url` matched by `matched`, replacing
/// any value the client sent under the same name (`insert` drops earlier values)
/// so a client cannot spoof what the host vouches for. Values that are not valid
/// header text (a non-ASCII path) are left out rather than failing the request.
pub fn apply(
    headers: &mut HeaderMap,
    matched: &RouteMatch<'_>,
    full_url: &str,
    client: &ClientAddr,
) {
    let route: &Route = matched.route;
    let mut set = |name: HeaderName, value: Option<HeaderValue>| match value {
        Some(value) => {
            headers.insert(name, value);
        }
        None => {
            headers.remove(name);
        }
    };
    set(FULL_URL, HeaderValue::from_str(full_url).ok());
    set(PATH_INFO, HeaderValue::from_str(&matched.path_info).ok());
    set(MATCHED_ROUTE, route.headers.matched.clone());
    set(BASE_PATH, Some(BASE));
    set(RAW_COMPONENT_ROUTE, route.headers.raw.clone());
    set(COMPONENT_ROUTE, route.headers.component_route.clone());
    set(CLIENT_ADDR, Some(client.0.clone()));
    for (name, value) in &matched.captures {
        if let Ok(name) = path_match_header(name) {
            set(name, HeaderValue::from_str(value).ok());
        }
    }
}

/// `spin-path-match-<name>` for a `:name` segment, spelt as Spin spells it:
/// `SPIN_PATH_MATCH_<NAME>` with `_` as `-`, lower case (`:path_end` is
/// `spin-path-match-path-end`).
fn path_match_header(name: &str) -> Result<HeaderName, http::header::InvalidHeaderName> {
    HeaderName::try_from(format!(
        "spin-path-match-{}",
        name.replace('_', "-").to_ascii_lowercase()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::router::Router;
    use crate::manifest::{HttpRoute, RouteTarget};

    fn router() -> Router {
        let trigger = |route: &str, component: &str| HttpRoute {
            route: route.into(),
            target: RouteTarget::Component(component.into()),
        };
        Router::new(
            "/",
            &[
                trigger("/hello", "hello"),
                trigger("/files/...", "files"),
                trigger("/base/:path_segment/:path_end/...", "shape"),
            ],
        )
        .unwrap()
    }

    fn headers_for(path_and_query: &str) -> HeaderMap {
        let router = router();
        let path = path_and_query.split('?').next().unwrap();
        let matched = router.route(path).unwrap();
        let client: SocketAddr = "127.0.0.1:54321".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(CLIENT_ADDR, HeaderValue::from_static("spoofed"));
        let full_url = format!("http://localhost:3000{path_and_query}");
        apply(&mut headers, &matched, &full_url, &ClientAddr::new(client));
        headers
    }

    #[test]
    fn exact_route_headers() {
        let h = headers_for("/hello?name=x");
        assert_eq!(h[FULL_URL], "http://localhost:3000/hello?name=x");
        assert_eq!(h[PATH_INFO], "");
        assert_eq!(h[MATCHED_ROUTE], "/hello");
        assert_eq!(h[BASE_PATH], "/");
        assert_eq!(h[RAW_COMPONENT_ROUTE], "/hello");
        assert_eq!(h[COMPONENT_ROUTE], "/hello");
        assert_eq!(h[CLIENT_ADDR], "127.0.0.1:54321");
        assert_eq!(h.get_all(CLIENT_ADDR).iter().count(), 1);
    }

    #[test]
    fn wildcard_route_headers() {
        let h = headers_for("/files/a/b.txt");
        assert_eq!(h[FULL_URL], "http://localhost:3000/files/a/b.txt");
        assert_eq!(h[PATH_INFO], "/a/b.txt");
        assert_eq!(h[MATCHED_ROUTE], "/files/...");
        assert_eq!(h[RAW_COMPONENT_ROUTE], "/files/...");
        assert_eq!(h[COMPONENT_ROUTE], "/files");
    }

    #[test]
    fn named_segment_headers_as_spins_conformance_suite_expects_them() {
        let h = headers_for("/base/path/end/rest?key=value");
        assert_eq!(h["spin-path-match-path-segment"], "path");
        assert_eq!(h["spin-path-match-path-end"], "end");
        assert_eq!(h[PATH_INFO], "/rest");
        assert_eq!(h[MATCHED_ROUTE], "/base/:path_segment/:path_end/...");
        assert_eq!(h[RAW_COMPONENT_ROUTE], "/base/:path_segment/:path_end/...");
        assert_eq!(h[COMPONENT_ROUTE], "/base/:path_segment/:path_end");
        assert_eq!(h[BASE_PATH], "/");
    }
}
