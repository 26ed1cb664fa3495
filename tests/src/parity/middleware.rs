//! tests/apps/parity with Spin 4.1's HTTP middleware (`mw`, spin-sdk 7's
//! `http::next`), and what it must answer wherever it is served (a
//! directory, a registry reference): shared by tests/tests/parity.rs and
//! parity_registry.rs.

use super::{app, line};
use crate::{exchange, get, header, workspace_root};
use std::path::{Path, PathBuf};

/// What `mw` reads of its route component's grants: `back`'s variable.
const GRANTED: &str = "granted to back";

/// A copy of the app's manifest, written in `dir`, with `mw` in front of
/// `back` on `/mw/...` inheriting `variables` and on `/mw-strict/...`
/// inheriting nothing (`back` keeps its plain `/back/...` route and is
/// granted the variable `mw_greeting`); with `front_too`, `mw` in front of
/// the WASIp2 `front` on `/mw-front/...` as well.
pub fn manifest(dir: &Path, front_too: bool) -> PathBuf {
    let original = std::fs::read_to_string(app().join("spin.toml")).unwrap();
    let mut triggers = String::new();
    let mut route = |path: &str, component: &str, inherit: &str| {
        triggers.push_str(&format!(
            "[[trigger.http]]\nroute = \"{path}\"\ncomponent = \"{component}\"\ndependencies.middleware = [{{ component = \"mw\"{inherit} }}]\n\n"
        ));
    };
    route(
        "/mw/...",
        "back",
        ", inherit_configuration = [\"variables\"]",
    );
    route("/mw-strict/...", "back", "");
    if front_too {
        route("/mw-front/...", "front", "");
    }
    let back = "[component.back]\n";
    assert!(original.contains(back));
    let text = original
        .replacen(
            "[[trigger.http]]",
            &format!("{triggers}[[trigger.http]]"),
            1,
        )
        .replacen(
            back,
            &format!("{back}variables = {{ mw_greeting = \"{GRANTED}\" }}\n"),
            1,
        )
        .replace(
            "../../../target",
            &format!("{}/target", workspace_root().display()),
        );
    let manifest = dir.join("spin.toml");
    std::fs::write(&manifest, text).unwrap();
    manifest
}

/// At `base`: a request through `mw` reaches `back` with the header `mw`
/// adds, and comes back with `mw`'s response header; `mw` answers
/// `/blocked` itself; it reads `back`'s variable, as it inherits
/// `variables`; `back`'s own route runs without it.
pub fn runs_in_front_of_its_route(base: &str) {
    let (answer, headers) = exchange("GET", &format!("{base}/mw/hello"), &[], b"");
    let text = answer.text();
    assert_eq!(answer.status, 200, "{text}");
    assert!(text.starts_with("path=/mw/hello\n"), "{text}");
    assert_eq!(line(&text, "x-middleware"), Some("seen"), "{text}");
    assert_eq!(header(&headers, "x-middleware-response"), Some("yes"));

    let answer = get(&format!("{base}/mw/blocked"));
    assert_eq!(
        (answer.status, answer.text().as_str()),
        (403, "blocked by middleware")
    );

    let (answer, headers) = exchange("GET", &format!("{base}/mw/variable"), &[], b"");
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(header(&headers, "x-middleware-variable"), Some(GRANTED));

    let (answer, headers) = exchange("GET", &format!("{base}/back/hello"), &[], b"");
    let text = answer.text();
    assert_eq!(answer.status, 200, "{text}");
    assert!(text.starts_with("path=/back/hello\n"), "{text}");
    assert_eq!(line(&text, "x-middleware"), None, "{text}");
    assert_eq!(header(&headers, "x-middleware-response"), None);
}

/// At `base`: `mw` inheriting nothing traps reading `back`'s variable (the
/// request fails without it), and still runs what needs no grant.
pub fn reaches_only_what_it_inherits(base: &str) {
    let (answer, headers) = exchange("GET", &format!("{base}/mw-strict/variable"), &[], b"");
    assert_eq!(answer.status, 500, "{}", answer.text());
    assert_eq!(header(&headers, "x-middleware-variable"), None);
    assert!(!answer.text().contains(GRANTED), "{}", answer.text());

    let (answer, headers) = exchange("GET", &format!("{base}/mw-strict/hello"), &[], b"");
    let text = answer.text();
    assert_eq!(answer.status, 200, "{text}");
    assert_eq!(line(&text, "x-middleware"), Some("seen"), "{text}");
    assert_eq!(header(&headers, "x-middleware-response"), Some("yes"));
}
