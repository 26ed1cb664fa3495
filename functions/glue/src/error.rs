use crate::Reply;
use std::fmt;

/// A request the function refuses: a 4xx status and a sentence naming what is wrong.
///
/// Every host renders it the same way, as `application/json` `{"error": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
    /// Extra headers the status calls for (`Allow` on a `405`).
    pub headers: Vec<(&'static str, String)>,
}

impl ApiError {
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            headers: Vec::new(),
        }
    }

    /// `400`: the request is malformed or a parameter is out of range.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, message)
    }

    /// `404`: nothing is served at this path.
    pub fn not_found(path: &str) -> Self {
        Self::new(404, format!("no route matches path {path:?}"))
    }

    /// `405`, with the `Allow` header listing what the route accepts.
    pub fn method_not_allowed(method: &str, route: &str, allowed: &[&str]) -> Self {
        let allow = allowed.join(", ");
        let mut error = Self::new(
            405,
            format!("method {method} is not allowed on {route}; use {allow}"),
        );
        error.headers.push(("allow", allow));
        error
    }

    /// `413`: the body is larger than the endpoint reads.
    pub fn body_too_large(limit: u64) -> Self {
        Self::new(
            413,
            format!("request body is larger than the limit of {limit} bytes"),
        )
    }

    /// `408`: the client stopped sending its request body for `idle`.
    pub fn request_body_stalled(idle: std::time::Duration) -> Self {
        Self::new(
            408,
            format!("request body stalled: nothing received for {idle:?}"),
        )
    }

    /// `415`: the body's declared media type is not one the endpoint reads.
    pub fn unsupported_media_type(got: &str, expected: &str) -> Self {
        Self::new(
            415,
            format!("content-type {got:?} is not supported; send {expected}"),
        )
    }

    /// The JSON body every host sends for this error.
    pub fn to_reply(&self) -> Reply {
        let body = serde_json::json!({ "error": self.message });
        let mut reply = Reply::json_value(self.status, &body);
        reply.headers.extend(self.headers.iter().cloned());
        reply
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.status, self.message)
    }
}

impl std::error::Error for ApiError {}

impl From<ApiError> for Reply {
    fn from(error: ApiError) -> Self {
        error.to_reply()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_body_is_json_naming_the_problem() {
        let reply = ApiError::bad_request("lat must be a number").to_reply();
        assert_eq!(reply.status, 400);
        assert_eq!(reply.content_type, "application/json");
        assert_eq!(reply.body, br#"{"error":"lat must be a number"}"#);
    }

    #[test]
    fn method_not_allowed_lists_the_allowed_methods() {
        let reply = ApiError::method_not_allowed("PUT", "/echo", &["POST"]).to_reply();
        assert_eq!(reply.status, 405);
        assert!(reply.headers.contains(&("allow", "POST".to_string())));
    }
}
