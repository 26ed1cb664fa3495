//! tests/apps/parity's HTTP middleware, as Spin 4.1's blog post and
//! `examples/http-middleware` write one: a `#[http_service]` that adds
//! `x-middleware: seen` to the request and calls the next handler
//! (`spin_sdk::http::next`), then adds `x-middleware-response: yes` to the
//! response; a path ending in `/blocked` never reaches the next handler
//! (`403 blocked by middleware`). A path ending in `/variable` also reads the
//! Spin variable `mw_greeting` into `x-middleware-variable`: it is its route
//! component's grant, which the middleware reaches only if it inherits
//! `variables` (otherwise the read traps).

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code, clippy::unnecessary_wraps)]
mod component {
    use spin_sdk::http::{HeaderValue, IntoResponse, Request, Response};
    use spin_sdk::http_service;

    #[http_service]
    async fn handle(request: Request) -> anyhow::Result<impl IntoResponse> {
        let response = if request.uri().path().ends_with("/blocked") {
            Response::builder()
                .status(403)
                .body("blocked by middleware".to_string())?
                .into_response()
        } else {
            let variable = if request.uri().path().ends_with("/variable") {
                Some(spin_sdk::variables::get("mw_greeting").await?)
            } else {
                None
            };
            let (mut parts, body) = request.into_parts();
            parts
                .headers
                .insert("x-middleware", HeaderValue::from_static("seen"));
            let mut response = spin_sdk::http::next(Request::from_parts(parts, body))
                .await
                .map_err(|e| anyhow::anyhow!("the next handler failed: {e:?}"))?;
            response
                .headers_mut()
                .insert("x-middleware-response", HeaderValue::from_static("yes"));
            if let Some(variable) = variable {
                response
                    .headers_mut()
                    .insert("x-middleware-variable", HeaderValue::from_str(&variable)?);
            }
            response.into_response()
        };
        response.map_err(|e| anyhow::anyhow!("{e:?}"))
    }
}
