//! tests/apps/parity's `front` (and `strict`): a WASIp2 component written as
//! spin-sdk 5's `http-rust` template writes one (`#[http_component]`),
//! reaching the app's other components by Spin's service chaining. Paths are
//! read after their first segment (`/front/x` and `/strict/x` alike):
//!
//! - `/front/hello`: `hello from front` (what `back` chains to);
//! - `/front/greet/<name>`: what the composed dependency's
//!   `spinbench:parity/greet@0.1.0` answers;
//! - `/front/kv/<key>`: the value of `<key>` in the default key-value store
//!   (what the Redis subscribers write), `404` without one;
//! - `/front/chain/<rest>`: a GET of `http://back.spin.internal/<rest>` with
//!   the request's query and an `x-caller: front` header, answered with the
//!   callee's status and body;
//! - `/front/to/<component>/<rest>`: the same to `<component>.spin.internal`,
//!   answered `error=<error>` where the host refuses it (a component
//!   `allowed_outbound_hosts` does not list).

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    use spin_sdk::http::{Method, Request, Response};
    use spin_sdk::http_component;

    // The dependency's import, as `spin build` has a dependency's bindings
    // generated (here by wit-bindgen, which spin-sdk re-exports).
    spin_sdk::wit_bindgen::generate!({
        world: "front-deps",
        path: "../wit",
        runtime_path: "::spin_sdk::wit_bindgen::rt",
    });

    #[http_component]
    async fn handle(req: Request) -> Response {
        // Served under `/front/...` and `/strict/...`: what follows the first segment.
        let full = req.path().to_string();
        let path = format!("/front/{}", full.splitn(3, '/').nth(2).unwrap_or(""));
        let query = req.query().to_string();
        if path == "/front/hello" {
            return Response::new(200, "hello from front");
        }
        if let Some(name) = path.strip_prefix("/front/greet/") {
            return Response::new(200, spinbench::parity::greet::greet(name));
        }
        if let Some(key) = path.strip_prefix("/front/kv/") {
            return match spin_sdk::key_value::Store::open_default().and_then(|s| s.get(key)) {
                Ok(Some(value)) => Response::new(200, value),
                Ok(None) => Response::new(404, "no such key"),
                Err(error) => Response::new(500, format!("{error:?}")),
            };
        }
        let (component, rest) = if let Some(rest) = path.strip_prefix("/front/chain") {
            ("back", rest.to_string())
        } else if let Some(rest) = path.strip_prefix("/front/to/") {
            let (component, rest) = rest.split_once('/').unwrap_or((rest, ""));
            (component, format!("/{rest}"))
        } else {
            return Response::new(404, "no such route in front");
        };
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        let url = format!("http://{component}.spin.internal{rest}{query}");
        let request = Request::builder()
            .method(Method::Get)
            .uri(url)
            .header("x-caller", "front")
            .build();
        match spin_sdk::http::send::<_, Response>(request).await {
            Ok(response) => Response::new(
                *response.status(),
                String::from_utf8_lossy(response.body()).into_owned(),
            ),
            Err(error) => Response::new(200, format!("error={error:?}")),
        }
    }
}
