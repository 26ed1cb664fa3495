//! The instance machinery: the engine and its pool, compiled code and its cache,
//! what a store holds, and the two ways a component serves requests (a fresh
//! WASIp2 instance per request, or reused WASIp3 instances).

pub mod compiled_cache;
pub mod compose;
pub mod engine;
pub mod flavour;
pub mod invoke;
pub mod limiter;
pub mod limits;
pub mod needs;
pub mod prepare;
pub mod remote_source;
pub mod reuse;
pub mod slots;
pub mod state;
pub mod tether;
pub mod ticker;
pub mod wagi;

use http::HeaderMap;

/// The body type of every response the host sends: a guest's streamed body or the host's own.
pub type Body = wasmtime_wasi_http::p2::body::HyperOutgoingBody;

/// What a request holds from admission until its instance is done with it.
pub type Permit = tokio::sync::OwnedSemaphorePermit;

/// The `Content-Length` a request or response declares, if any (and parseable).
pub fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}
