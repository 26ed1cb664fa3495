use super::*;

fn router_under(base: &str, routes: &[(&str, &str)]) -> Router {
    let triggers: Vec<HttpRoute> = routes
        .iter()
        .map(|(route, component)| HttpRoute {
            route: route.to_string(),
            target: RouteTarget::Component(component.to_string()),
        })
        .collect();
    Router::new(base, &triggers).unwrap()
}

fn router(routes: &[(&str, &str)]) -> Router {
    router_under("/", routes)
}

fn resolve<'a>(router: &'a Router, path: &str) -> Option<(&'a str, String)> {
    router
        .route(path)
        .map(|m| (m.route.component().unwrap(), m.path_info))
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
fn wildcards_match_their_prefix_and_below_keeping_slashes_as_spin_does() {
    let r = router(&[("/static/...", "files")]);
    assert_eq!(resolve(&r, "/static"), Some(("files", String::new())));
    assert_eq!(resolve(&r, "/static/"), Some(("files", "/".into())));
    assert_eq!(
        resolve(&r, "/static/a/b.css"),
        Some(("files", "/a/b.css".into()))
    );
    assert_eq!(resolve(&r, "/static/a/"), Some(("files", "/a/".into())));
    assert_eq!(resolve(&r, "/staticx"), None);
}

#[test]
fn the_root_wildcard_matches_everything() {
    let r = router(&[("/...", "all")]);
    assert_eq!(resolve(&r, "/"), Some(("all", "/".into())));
    assert_eq!(resolve(&r, "/a/b"), Some(("all", "/a/b".into())));
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
fn named_segments_capture_and_rank_between_exact_and_wildcard() {
    let r = router(&[
        ("/base/:path_segment/:path_end/...", "shape"),
        ("/users/:id", "user"),
        ("/users/me", "me"),
        ("/users/...", "users"),
    ]);
    let shape = r.route("/base/path/end/rest").unwrap();
    assert_eq!(shape.route.component(), Some("shape"));
    assert_eq!(shape.path_info, "/rest");
    assert_eq!(
        shape.captures,
        [
            ("path_segment".to_string(), "path".to_string()),
            ("path_end".to_string(), "end".to_string())
        ]
    );
    assert_eq!(resolve(&r, "/users/me"), Some(("me", String::new())));
    assert_eq!(resolve(&r, "/users/42"), Some(("user", String::new())));
    assert_eq!(
        r.route("/users/42").unwrap().captures,
        [("id".to_string(), "42".to_string())]
    );
    assert_eq!(resolve(&r, "/users/42/x"), Some(("users", "/42/x".into())));
    assert_eq!(resolve(&r, "/base/path"), None);
}

#[test]
fn headers_name_the_route_as_written_and_as_matched() {
    let r = router_under("/api", &[("/files/...", "files"), ("/", "root")]);
    let files = r.route_of("files").unwrap();
    assert_eq!(files.headers.raw.as_ref().unwrap(), "/files/...");
    assert_eq!(files.headers.matched.as_ref().unwrap(), "/api/files/...");
    assert_eq!(files.headers.component_route.as_ref().unwrap(), "/files");
    assert_eq!(files.based, "/api/files/...");
    assert_eq!(resolve(&r, "/api/files/x"), Some(("files", "/x".into())));
    assert_eq!(resolve(&r, "/files/x"), None);
    assert_eq!(resolve(&r, "/api"), Some(("root", String::new())));
}

#[test]
fn a_route_claimed_twice_goes_to_the_later_trigger() {
    let r = router(&[("/a", "x"), ("/b", "y"), ("/a", "z")]);
    assert_eq!(resolve(&r, "/a"), Some(("z", String::new())));
    assert_eq!(r.routes_ranked().count(), 2);
}

#[test]
fn malformed_routes_are_rejected() {
    let trigger = |route: &str| HttpRoute {
        route: route.into(),
        target: RouteTarget::Component("x".into()),
    };
    assert!(Router::new("/", &[trigger("/a/.../b")]).is_err());
    assert!(Router::new("/", &[trigger("/a...")]).is_err());
}
