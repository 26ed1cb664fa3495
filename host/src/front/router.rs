//! Routing as Spin's HTTP trigger routes (spinframework/spin `crates/routes`,
//! v4.0.2): exact paths, `:name` segments and a trailing `/...` wildcard,
//! ranked by the `routefinder` crate Spin itself ranks them with (an exact
//! segment beats a `:name` one, which beats the wildcard, segment by segment),
//! under the application's `base`. Two triggers with the same route: the later
//! one serves it, with a warning, as in Spin.

use crate::manifest::{HttpRoute, RouteTarget};
use anyhow::{Result, anyhow, bail};
use http::HeaderValue;

/// The suffix that makes a route a prefix match.
const WILDCARD: &str = "/...";

/// One routed `[[trigger.http]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The route as written in the manifest (`/hello`, `/static/...`):
    /// `spin-raw-component-route`.
    pub raw: String,
    /// The route under the application's base, without a trailing slash:
    /// `spin-matched-route`.
    pub based: String,
    /// Whether it ends in the `/...` wildcard.
    pub wildcard: bool,
    pub target: RouteTarget,
    /// Its `spin-*` header values, built once.
    pub headers: RouteHeaders,
}

/// The `spin-*` header values that depend only on the route (`spin_headers` sets
/// them), built once when the router is rather than per request. `None` where the
/// route is not valid header text (non-ASCII): the header is left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteHeaders {
    /// `spin-raw-component-route`: the route as written.
    pub raw: Option<HeaderValue>,
    /// `spin-matched-route`: the route under the base.
    pub matched: Option<HeaderValue>,
    /// `spin-component-route`: the route as written, without its wildcard.
    pub component_route: Option<HeaderValue>,
}

impl Route {
    fn new(base: &str, trigger: &HttpRoute) -> Self {
        let raw = trigger.route.clone();
        let based = based(base, &raw);
        let wildcard = based.ends_with(WILDCARD);
        let component_route = raw.strip_suffix(WILDCARD).unwrap_or(&raw);
        let headers = RouteHeaders {
            raw: HeaderValue::from_str(&raw).ok(),
            matched: HeaderValue::from_str(&based).ok(),
            component_route: HeaderValue::from_str(component_route).ok(),
        };
        Self {
            raw,
            based,
            wildcard,
            target: trigger.target.clone(),
            headers,
        }
    }

    /// The component serving it, if a component does.
    pub fn component(&self) -> Option<&str> {
        match &self.target {
            RouteTarget::Component(id) => Some(id),
            RouteTarget::Static(_) => None,
        }
    }

    /// routefinder's spelling of the route: its wildcard is `*`.
    fn spec(&self) -> String {
        match self.based.strip_suffix(WILDCARD) {
            Some(prefix) => format!("{prefix}/*"),
            None => self.based.clone(),
        }
    }
}

/// `route` under `base`, as Spin joins them: each without one trailing slash.
fn based(base: &str, route: &str) -> String {
    let trim = |s: &str| s.strip_suffix('/').unwrap_or(s).to_string();
    let route = if route.starts_with('/') {
        route.to_string()
    } else {
        format!("/{route}")
    };
    format!("{}{}", trim(base), trim(&route))
}

/// A request path resolved to its route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteMatch<'a> {
    pub route: &'a Route,
    /// The part of the path the wildcard matched (`spin-path-info`): `""` for
    /// exact routes and for a wildcard route's own prefix; a trailing slash of
    /// the path is kept, as Spin keeps it.
    pub path_info: String,
    /// Each `:name` segment's value, by name (`spin-path-match-<name>`).
    pub captures: Vec<(String, String)>,
}

/// All routes of a manifest.
#[derive(Debug)]
pub struct Router {
    routes: Vec<Route>,
    finder: routefinder::Router<usize>,
}

impl Router {
    /// Fails on a route routefinder cannot parse; a route claimed twice goes to
    /// the later trigger, with a warning on stderr.
    pub fn new(base: &str, triggers: &[HttpRoute]) -> Result<Self> {
        let mut routes: Vec<Route> = Vec::with_capacity(triggers.len());
        for trigger in triggers {
            let route = Route::new(base, trigger);
            if route.raw.contains("...") && !route.wildcard {
                bail!(
                    "route {:?}: '...' is only allowed as a trailing '/...'",
                    route.raw
                );
            }
            if let Some(earlier) = routes.iter().position(|r| r.raw == route.raw) {
                crate::err_line!(
                    "warning: route {:?} is claimed twice; {} serves it, not {}",
                    route.raw,
                    describe(&route.target),
                    describe(&routes[earlier].target)
                );
                routes.remove(earlier);
            }
            routes.push(route);
        }
        let mut finder = routefinder::Router::new();
        for (index, route) in routes.iter().enumerate() {
            finder
                .add(route.spec(), index)
                .map_err(|e| anyhow!("route {:?}: {e}", route.raw))?;
        }
        Ok(Self { routes, finder })
    }

    /// The best route serving `path` (a path without query), if any.
    pub fn route<'a>(&'a self, path: &str) -> Option<RouteMatch<'a>> {
        let best = self.finder.best_match(path)?;
        let route = &self.routes[*best.handler()];
        let captures = best.captures();
        let path_info = match captures.wildcard() {
            // Spin keeps what routefinder drops: the slashes around the wildcard.
            Some(rest) => match (rest.is_empty(), path.ends_with('/')) {
                (true, false) => String::new(),
                (true, true) => "/".to_string(),
                (false, false) => format!("/{rest}"),
                (false, true) => format!("/{rest}/"),
            },
            None => String::new(),
        };
        Some(RouteMatch {
            route,
            path_info,
            captures: captures
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
        })
    }

    /// Every route, the best-ranked first: the order Spin lists them in.
    pub fn routes_ranked(&self) -> impl Iterator<Item = &Route> {
        self.finder.iter().map(|(_, index)| &self.routes[*index])
    }

    /// The first route a component serves (what the in-process API reports it under).
    pub fn route_of(&self, component: &str) -> Option<&Route> {
        self.routes
            .iter()
            .find(|r| r.component() == Some(component))
    }
}

fn describe(target: &RouteTarget) -> String {
    match target {
        RouteTarget::Component(id) => format!("component {id:?}"),
        RouteTarget::Static(_) => "a static response".to_string(),
    }
}

#[cfg(test)]
mod tests;
