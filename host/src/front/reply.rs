//! Responses the host itself sends: its errors (413, 500, 503, 504) in the
//! glue crate's JSON format, byte-identical to what the native builds send; and
//! what Spin's HTTP trigger answers itself (a `404` with no body where no route
//! matches, a trigger's `static_response`).

use crate::manifest::trigger::StaticResponse;
use bytes::Bytes;
use glue::{ApiError, Reply};
use http::{HeaderName, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full};

pub use crate::instance::Body;

/// The answer to a path no route matches: Spin's, a `404` with an empty body.
pub fn no_route() -> Response<Body> {
    let mut response = Response::new(full(Bytes::new()));
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}

/// A trigger's `static_response`: its status (`200` if none), headers and body.
/// Its status and headers were checked when the manifest was read.
pub fn static_response(configured: &StaticResponse) -> Response<Body> {
    let body = configured.body.clone().map(Bytes::from).unwrap_or_default();
    let mut response = Response::new(full(body));
    *response.status_mut() = configured
        .status_code
        .and_then(|code| StatusCode::from_u16(code).ok())
        .unwrap_or(StatusCode::OK);
    for (name, value) in &configured.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::try_from(name.as_str()),
            HeaderValue::try_from(value.as_str()),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
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
