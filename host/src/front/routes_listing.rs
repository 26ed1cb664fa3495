//! What `serve` prints once it listens, the way `spin up` prints it
//! (spinframework/spin `crates/trigger-http/src/server.rs`, `print_startup_msgs`,
//! and `crates/http/src/routes.rs`, `ParsedRoute`'s `Display`):
//!
//! ```text
//!
//! Serving http://127.0.0.1:3000
//! Available Routes:
//!   hello: http://127.0.0.1:3000/hello
//!     Says hello.
//!   files: http://127.0.0.1:3000/static (wildcard)
//! ```

use super::router::Router;
use crate::manifest::Manifest;
use std::fmt::Write;
use std::net::SocketAddr;

/// One line per route, in the order Spin lists them (its router's: the most
/// specific first), with its component's description.
#[derive(Debug, Clone, Default)]
pub struct RoutesListing {
    /// What serves it, the route as listed, the description.
    routes: Vec<(String, String, String)>,
}

impl RoutesListing {
    pub fn new(manifest: &Manifest, router: &Router) -> Self {
        let routes = router
            .routes_ranked()
            .map(|route| {
                let (name, description) = match route.component() {
                    Some(id) => (
                        id.to_string(),
                        manifest
                            .component
                            .get(id)
                            .map(|c| c.description.clone())
                            .unwrap_or_default(),
                    ),
                    None => ("static response".to_string(), String::new()),
                };
                let listed = match route.based.strip_suffix("/...") {
                    Some(prefix) => format!("{prefix} (wildcard)"),
                    None => route.based.clone(),
                };
                (name, listed, description)
            })
            .collect();
        Self { routes }
    }

    /// The text printed on stdout once the server listens on `addr`.
    pub fn render(&self, addr: SocketAddr) -> String {
        let base = format!("http://{addr}");
        let mut text = format!("\nServing {base}\nAvailable Routes:\n");
        for (component, route, description) in &self.routes {
            let _ = writeln!(text, "  {component}: {base}{route}");
            if !description.is_empty() {
                let _ = writeln!(text, "    {description}");
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_print_like_spin_up() {
        let text = "spin_manifest_version = 2\n[application]\nname = \"a\"\n\
             [[trigger.http]]\nroute = \"/hello\"\ncomponent = \"hello\"\n\
             [[trigger.http]]\nroute = \"/static/...\"\ncomponent = \"files\"\n\
             [[trigger.http]]\nroute = \"/...\"\ncomponent = \"all\"\n\
             [component.hello]\nsource = \"h.wasm\"\ndescription = \"Says hello.\"\n\
             [component.files]\nsource = \"f.wasm\"\n[component.all]\nsource = \"a.wasm\"\n";
        let manifest = Manifest::parse(text, "/app".into()).unwrap();
        let router = Router::new("/", &manifest.http_routes()).unwrap();
        let listing = RoutesListing::new(&manifest, &router);
        assert_eq!(
            listing.render("127.0.0.1:3000".parse().unwrap()),
            "\nServing http://127.0.0.1:3000\nAvailable Routes:\n\
             \x20 hello: http://127.0.0.1:3000/hello\n\
             \x20   Says hello.\n\
             \x20 files: http://127.0.0.1:3000/static (wildcard)\n\
             \x20 all: http://127.0.0.1:3000 (wildcard)\n"
        );
    }
}
