//! Routing like Spin's HTTP trigger: exact routes and trailing wildcards
//! (`/foo/...`), the most specific match winning.

use crate::manifest::HttpRoute;
use anyhow::{Result, bail};
use http::HeaderValue;

/// The suffix that makes a route a prefix match.
const WILDCARD: &str = "/...";

/// One `[[trigger.http]]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The route as written in the manifest (`/hello`, `/static/...`).
    pub raw: String,
    pub pattern: RoutePattern,
    /// Id of the component that serves it.
    pub component: String,
    /// Its `spin-*` header values, built once.
    pub headers: RouteHeaders,
}

/// The `spin-*` header values that depend only on the route (`spin_headers` sets
/// them), built once when the router is rather than per request. `None` where the
/// route is not valid header text (non-ASCII): the header is left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteHeaders {
    /// `spin-matched-route` and `spin-raw-component-route`: the route as written.
    pub raw: Option<HeaderValue>,
    /// `spin-component-route`: the route without its wildcard.
    pub component_route: Option<HeaderValue>,
}

impl RouteHeaders {
    fn new(raw: &str, component_route: &str) -> Self {
        Self {
            raw: HeaderValue::from_str(raw).ok(),
            component_route: HeaderValue::from_str(component_route).ok(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoutePattern {
    /// Matches this path only.
    Exact(String),
    /// Matches this path and everything under it; `""` (from `/...`) matches every path.
    Prefix(String),
}

impl RoutePattern {
    /// The route without its wildcard (`spin-component-route`): `/static` for
    /// `/static/...`.
    pub fn path(&self) -> &str {
        match self {
            RoutePattern::Exact(path) | RoutePattern::Prefix(path) => path,
        }
    }
}

/// A request path resolved to its route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteMatch<'a> {
    pub route: &'a Route,
    /// The part of the path after the route's prefix (`spin-path-info`): `""` for
    /// exact routes and for a wildcard route's own prefix.
    pub path_info: String,
}

impl Route {
    fn parse(trigger: &HttpRoute) -> Result<Self> {
        let raw = trigger.route.clone();
        if !raw.starts_with('/') {
            bail!("route {raw:?} does not start with '/'");
        }
        let pattern = match raw.strip_suffix(WILDCARD) {
            Some(prefix) => RoutePattern::Prefix(prefix.to_string()),
            None if raw.contains("...") => {
                bail!("route {raw:?}: '...' is only allowed as a trailing '/...'")
            }
            None => RoutePattern::Exact(raw.clone()),
        };
        let headers = RouteHeaders::new(&raw, pattern.path());
        Ok(Self {
            raw,
            pattern,
            component: trigger.component.clone(),
            headers,
        })
    }

    /// `Some(path_info)` when the route serves `path`.
    fn path_info(&self, path: &str) -> Option<String> {
        match &self.pattern {
            RoutePattern::Exact(exact) => (path == exact).then(String::new),
            RoutePattern::Prefix(prefix) => {
                let rest = path.strip_prefix(prefix.as_str())?;
                (rest.is_empty() || rest.starts_with('/')).then(|| rest.to_string())
            }
        }
    }

    /// Higher is more specific: any exact route beats any wildcard; longer prefixes beat shorter.
    fn specificity(&self) -> (bool, usize) {
        match &self.pattern {
            RoutePattern::Exact(path) => (true, path.len()),
            RoutePattern::Prefix(prefix) => (false, prefix.len()),
        }
    }
}

/// All routes of a manifest.
#[derive(Debug, Clone)]
pub struct Router {
    routes: Vec<Route>,
}

impl Router {
    /// Fails on a malformed route or on two triggers claiming the same route.
    pub fn new(triggers: &[HttpRoute]) -> Result<Self> {
        let mut routes: Vec<Route> = Vec::with_capacity(triggers.len());
        for trigger in triggers {
            let route = Route::parse(trigger)?;
            if let Some(other) = routes.iter().find(|r| r.pattern == route.pattern) {
                bail!(
                    "route {:?} is claimed by both {:?} and {:?}",
                    route.raw,
                    other.component,
                    route.component
                );
            }
            routes.push(route);
        }
        Ok(Self { routes })
    }

    /// The most specific route serving `path` (a path without query), if any.
    pub fn route(&self, path: &str) -> Option<RouteMatch<'_>> {
        self.routes
            .iter()
            .filter_map(|route| Some((route, route.path_info(path)?)))
            .max_by_key(|(route, _)| route.specificity())
            .map(|(route, path_info)| RouteMatch { route, path_info })
    }

    /// Every route, in manifest order.
    pub fn routes(&self) -> impl Iterator<Item = &Route> {
        self.routes.iter()
    }

    /// The first route a component serves (what the in-process API reports it under).
    pub fn route_of(&self, component: &str) -> Option<&Route> {
        self.routes.iter().find(|r| r.component == component)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router(routes: &[(&str, &str)]) -> Router {
        let triggers: Vec<HttpRoute> = routes
            .iter()
            .map(|(route, component)| HttpRoute {
                route: route.to_string(),
                component: component.to_string(),
            })
            .collect();
        Router::new(&triggers).unwrap()
    }

    fn resolve<'a>(router: &'a Router, path: &str) -> Option<(&'a str, String)> {
        router
            .route(path)
            .map(|m| (m.route.component.as_str(), m.path_info))
    }

    #[test]
    fn exact_routes_match_only_their_path() {
        let r = router(&[("/hello", "hello")]);
        assert_eq!(resolve(&r, "/hello"), Some(("hello", String::new())));
        assert_eq!(resolve(&r, "/hello/x"), None);
        assert_eq!(resolve(&r, "/hellox"), None);
        assert_eq!(resolve(&r, "/"), None);
    }

    #[test]
    fn wildcards_match_their_prefix_and_below() {
        let r = router(&[("/static/...", "files")]);
        assert_eq!(resolve(&r, "/static"), Some(("files", String::new())));
        assert_eq!(
            resolve(&r, "/static/a/b.css"),
            Some(("files", "/a/b.css".into()))
        );
        assert_eq!(resolve(&r, "/staticx"), None);
    }

    #[test]
    fn most_specific_route_wins() {
        let r = router(&[
            ("/...", "fallback"),
            ("/api/...", "api"),
            ("/api/v1/...", "v1"),
            ("/api/v1/health", "health"),
        ]);
        assert_eq!(resolve(&r, "/nope"), Some(("fallback", "/nope".into())));
        assert_eq!(resolve(&r, "/api/x"), Some(("api", "/x".into())));
        assert_eq!(resolve(&r, "/api/v1/x"), Some(("v1", "/x".into())));
        assert_eq!(
            resolve(&r, "/api/v1/health"),
            Some(("health", String::new()))
        );
    }

    #[test]
    fn exact_beats_wildcard_on_the_same_path() {
        let r = router(&[("/a/...", "wild"), ("/a", "exact")]);
        assert_eq!(resolve(&r, "/a"), Some(("exact", String::new())));
        assert_eq!(resolve(&r, "/a/b"), Some(("wild", "/b".into())));
    }

    #[test]
    fn component_route_drops_the_wildcard() {
        let r = router(&[
            ("/static/...", "files"),
            ("/...", "all"),
            ("/hello", "hello"),
        ]);
        let routes: Vec<&str> = ["files", "all", "hello"]
            .iter()
            .map(|c| r.route_of(c).unwrap().pattern.path())
            .collect();
        assert_eq!(routes, ["/static", "", "/hello"]);
    }

    #[test]
    fn duplicate_and_malformed_routes_are_rejected() {
        let trigger = |route: &str, component: &str| HttpRoute {
            route: route.into(),
            component: component.into(),
        };
        assert!(Router::new(&[trigger("/a", "x"), trigger("/a", "y")]).is_err());
        assert!(Router::new(&[trigger("a", "x")]).is_err());
        assert!(Router::new(&[trigger("/a/.../b", "x")]).is_err());
    }
}
