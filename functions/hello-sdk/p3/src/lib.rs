//! `GET /hello-sdk` → `200 Hello, World!` as a WASIp3 component, written as Spin's
//! `http-rust` template writes a handler (spinframework/spin v4.0.2
//! `templates/http-rust/content/src/lib.rs`): spin-sdk's `#[http_service]` on an
//! `async fn(Request) -> anyhow::Result<impl IntoResponse>` that builds a `Response`.
//! The template's `println!` of the request's URL is left out, as in the WASIp2
//! `hello-sdk` (it would measure where each host sends a guest's stdout).
//!
//! Beside `hello`'s p3 build (glue's lean adapter), it shows what the SDK's
//! `http::Request`/`Response` conversions and executor cost a reused instance.

// `#[http_service]` expands to the component's exported ABI (wit-bindgen's
// `export_name`, unsafe blocks); the template's signature returns a `Result`.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code, clippy::unnecessary_wraps)]
mod component {
    use spin_sdk::http::{IntoResponse, Request, Response};
    use spin_sdk::http_service;

    /// A simple Spin HTTP component.
    #[http_service]
    async fn handle_hello_sdk(_req: Request) -> anyhow::Result<impl IntoResponse> {
        Ok(Response::builder()
            .status(200)
            .header("content-type", "text/plain")
            .body("Hello, World!".to_string()))
    }
}
