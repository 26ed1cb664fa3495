//! Responses the host itself sends (404, 413, 500, 503, 504), in the glue crate's JSON
//! format so they are byte-identical to what the native builds send.

use bytes::Bytes;
use glue::{ApiError, Reply};
use http::Response;
use http_body_util::{BodyExt, Full};
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;

/// The body type of every response the host sends: a guest's streamed body or ours.
pub type Body = HyperOutgoingBody;

pub fn not_found(path: &str) -> Response<Body> {
    to_response(ApiError::not_found(path).to_reply())
}

/// A `{"error": message}` reply with a 5xx status.
pub fn server_error(status: u16, message: impl Into<String>) -> Reply {
    ApiError::new(status, message).to_reply()
}

/// A `503` with `Retry-After: 1`: the server is busy, not broken.
pub fn busy(message: impl Into<String>) -> Reply {
    let mut error = ApiError::new(503, message);
    error.headers.push(("retry-after", "1".to_string()));
    error.to_reply()
}

/// The same translation as glue's native host: status, content-type, extra headers, body.
pub fn to_response(reply: Reply) -> Response<Body> {
    let mut builder = Response::builder()
        .status(reply.status)
        .header(http::header::CONTENT_TYPE, reply.content_type);
    for (name, value) in &reply.headers {
        builder = builder.header(*name, value);
    }
    builder
        .body(full(Bytes::from(reply.body)))
        .expect("status and headers come from our own constants")
}

pub fn full(bytes: Bytes) -> Body {
    Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}
