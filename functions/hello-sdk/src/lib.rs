//! `GET /hello-sdk` → `200 Hello, World!`, written the Spin SDK's documented way.
//!
//! The component is what `spin new http-rust` generates with spin-sdk 5.2
//! (Spin 3.x's templates/http-rust/content/src/lib.rs): `#[http_component]` on a
//! `fn(Request) -> anyhow::Result<impl IntoResponse>` that builds a `Response`.
//! It answers `hello`'s body, so the two sit side by side in the report: `hello`
//! goes through glue's tuned entry (raw `blocking-write-and-flush`, fewer host
//! calls), this one through the SDK's `Request`/`Response` conversions.
//! One line of the template is left out: its `println!` of the request URL,
//! which would measure where each host sends a guest's stdout (nowhere in the
//! runner, a log file in Spin, the terminal under `wasmtime serve`), not the SDK.
//!
//! Natively, glue's server answers the same status, content type and body.

// `#[http_component]` expands to the component's exported ABI (`export_name`, unsafe
// blocks), which wit-bindgen generates from the WIT and the canonical ABI; the template's
// signature returns a `Result` whether or not the handler can fail.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code, clippy::unnecessary_wraps)]
mod component {
    use spin_sdk::http::{IntoResponse, Request, Response};
    use spin_sdk::http_component;

    /// A simple Spin HTTP component.
    #[http_component]
    fn handle_hello_sdk(_req: Request) -> anyhow::Result<impl IntoResponse> {
        Ok(Response::builder()
            .status(200)
            .header("content-type", "text/plain")
            .body("Hello, World!")
            .build())
    }
}

#[cfg(not(target_arch = "wasm32"))]
pub use native_endpoint::ENDPOINT;

#[cfg(not(target_arch = "wasm32"))]
mod native_endpoint {
    use glue::{ApiError, Endpoint, Handler, Head, Reply};

    /// The component answers every method (the template does not look at it).
    pub static ENDPOINT: Endpoint = Endpoint {
        route: "/hello-sdk",
        methods: &["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"],
        handler: Handler::Head(hello),
        cpu_bound: false,
    };

    #[allow(clippy::unnecessary_wraps, reason = "the signature of `Handler::Head`")]
    fn hello(_: &Head) -> Result<Reply, ApiError> {
        Ok(Reply {
            content_type: "text/plain",
            ..Reply::text(200, "Hello, World!")
        })
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn answers_like_the_template() {
            let reply = hello(&Head::default()).unwrap();
            assert_eq!(
                (reply.status, reply.content_type, reply.body.as_slice()),
                (200, "text/plain", &b"Hello, World!"[..])
            );
        }
    }
}
