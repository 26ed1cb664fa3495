//! The `spin-*` request headers Spin's HTTP trigger adds before calling a component.

use super::router::RouteMatch;
use http::{HeaderMap, HeaderName, HeaderValue};
use std::net::SocketAddr;

pub const FULL_URL: &str = "spin-full-url";
pub const PATH_INFO: &str = "spin-path-info";
pub const MATCHED_ROUTE: &str = "spin-matched-route";
pub const BASE_PATH: &str = "spin-base-path";
pub const RAW_COMPONENT_ROUTE: &str = "spin-raw-component-route";
pub const COMPONENT_ROUTE: &str = "spin-component-route";
pub const CLIENT_ADDR: &str = "spin-client-addr";

/// Applications are always mounted at the root, as `spin up` does by default.
const BASE: &str = "/";

/// Header values for a request to `path_and_query` (from `authority`) matched by `matched`.
pub fn compute(
    matched: &RouteMatch<'_>,
    authority: &str,
    path_and_query: &str,
    client: SocketAddr,
) -> Vec<(&'static str, String)> {
    let route = matched.route;
    vec![
        (FULL_URL, format!("http://{authority}{path_and_query}")),
        (PATH_INFO, matched.path_info.clone()),
        (MATCHED_ROUTE, route.raw.clone()),
        (BASE_PATH, BASE.to_string()),
        (RAW_COMPONENT_ROUTE, route.raw.clone()),
        (COMPONENT_ROUTE, route.component_route().to_string()),
        (CLIENT_ADDR, client.to_string()),
    ]
}

/// Sets the headers, replacing any value the client sent under the same name so a
/// client cannot spoof what the host vouches for. Values that are not valid header
/// text (a non-ASCII path) are left out rather than failing the request.
pub fn apply(headers: &mut HeaderMap, values: Vec<(&'static str, String)>) {
    for (name, value) in values {
        let name = HeaderName::from_static(name);
        headers.remove(&name);
        if let Ok(value) = HeaderValue::try_from(value) {
            headers.insert(name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::router::Router;
    use crate::manifest::HttpTrigger;

    fn router() -> Router {
        let trigger = |route: &str, component: &str| HttpTrigger {
            route: route.into(),
            component: component.into(),
        };
        Router::new(&[trigger("/hello", "hello"), trigger("/files/...", "files")]).unwrap()
    }

    fn headers_for(path_and_query: &str) -> HeaderMap {
        let router = router();
        let path = path_and_query.split('?').next().unwrap();
        let matched = router.route(path).unwrap();
        let client: SocketAddr = "127.0.0.1:54321".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(CLIENT_ADDR, HeaderValue::from_static("spoofed"));
        apply(
            &mut headers,
            compute(&matched, "localhost:3000", path_and_query, client),
        );
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
}
