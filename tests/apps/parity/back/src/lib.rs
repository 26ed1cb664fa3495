//! tests/apps/parity's `back`: a WASIp3 component written as Spin 4.1's
//! `http-rust` template writes one (spin-sdk 7's `#[http_service]`).
//!
//! - `/back/to-front`: chains to `http://front.spin.internal/front/hello` (a
//!   WASIp2 component: chaining across WASIp3 and WASIp2, as Spin 4.1 does)
//!   and answers `front said <status>: <body>`;
//! - anything else: `200` with one `name: value` line per `spin-*` and `x-*`
//!   request header it was given, after `path=<path>`, so that a test sees
//!   what a chained request carries.

// `#[http_service]` expands to the component's exported ABI (wit-bindgen's
// `export_name`, unsafe blocks); the template's signature returns a `Result`.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code, clippy::unnecessary_wraps)]
mod component {
    use spin_sdk::http::body::IncomingBodyExt;
    use spin_sdk::http::{IntoResponse, Request, Response};
    use spin_sdk::http_service;

    #[http_service]
    async fn handle(request: Request) -> anyhow::Result<impl IntoResponse> {
        let text = if request.uri().path() == "/back/to-front" {
            match spin_sdk::http::get("http://front.spin.internal/front/hello").await {
                Ok(response) => {
                    let status = response.status();
                    let body = response.into_body().bytes().await.unwrap_or_default();
                    format!("front said {status}: {}", String::from_utf8_lossy(&body))
                }
                Err(error) => format!("error={error:?}"),
            }
        } else {
            let mut lines = vec![format!("path={}", request.uri().path())];
            for (name, value) in request.headers() {
                let name = name.as_str();
                if name.starts_with("spin-") || name.starts_with("x-") {
                    lines.push(format!("{name}: {}", value.to_str().unwrap_or("?")));
                }
            }
            lines.join("\n")
        };
        Ok(Response::builder()
            .status(200)
            .header("content-type", "text/plain")
            .body(text))
    }
}
