//! The glue every function of the set shares.
//!
//! A function describes itself once as an [`Endpoint`]: its route, the methods it
//! accepts and a [`Handler`] made of plain Rust functions. The two hosts then serve
//! that description: [`component`] inside a Spin/WASI HTTP component, [`native`] as a
//! tokio/hyper server. Both go through [`Endpoint::admit`] and the same handler code,
//! so a request gets the same status, content type and body from either.

mod error;
mod query;
mod reply;

#[cfg(all(target_arch = "wasm32", feature = "p2"))]
pub mod component;
#[cfg(all(target_arch = "wasm32", feature = "p3"))]
pub mod component_p3;
#[cfg(not(target_arch = "wasm32"))]
pub mod native;
#[cfg(not(target_arch = "wasm32"))]
pub mod plain;

pub use error::ApiError;
pub use query::Query;
pub use reply::Reply;

use std::time::Duration;

/// What a handler may know of a request before its body.
#[derive(Debug, Clone, Default)]
pub struct Head {
    /// Upper-case method name, as sent.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The raw query string, without the `?`.
    pub query: String,
    /// The two body headers below are read only for endpoints that take a body
    /// ([`Endpoint::body_limit`]): in a component each header lookup is a host call.
    pub content_type: Option<String>,
    /// The declared body length, when the client sent one.
    pub content_length: Option<u64>,
}

/// How an endpoint answers; the hosts drive each kind the same way.
pub enum Handler {
    /// Answers from the request head alone (the body is ignored).
    Head(fn(&Head) -> Result<Reply, ApiError>),
    /// Reads the whole body first, refusing more than `limit` bytes with a `413`.
    Buffered {
        limit: usize,
        handle: fn(&Head, &[u8]) -> Result<Reply, ApiError>,
    },
    /// Feeds the body to a [`BodySink`] chunk by chunk as it arrives, so the body
    /// is never held whole; more than `limit` bytes is a `413`.
    Streamed {
        limit: u64,
        start: fn(&Head) -> Result<Box<dyn BodySink>, ApiError>,
    },
    /// Waits without using the CPU, then answers: the host owns the timer
    /// (tokio's natively, the WASI monotonic clock in a component).
    Delayed(fn(&Head) -> Result<(Duration, Reply), ApiError>),
}

/// Consumes a request body incrementally.
pub trait BodySink: Send {
    fn write(&mut self, chunk: &[u8]);
    fn finish(self: Box<Self>) -> Reply;
}

/// One HTTP function: where it lives, what it accepts, how it answers.
pub struct Endpoint {
    /// The route it is served at, e.g. `/hello`.
    pub route: &'static str,
    /// Accepted methods, upper case.
    pub methods: &'static [&'static str],
    pub handler: Handler,
    /// The handler computes for long enough in one call (a busy wait: milliseconds,
    /// not microseconds) that the native host runs it on tokio's blocking pool
    /// rather than on an async worker, where it would stall every other request on
    /// that worker. A streamed handler's work comes a chunk at a time and runs on
    /// the connection's task ([`Handler::Streamed`]). A component ignores it: the
    /// runner's epoch interruption makes a busy guest yield.
    pub cpu_bound: bool,
}

impl Endpoint {
    /// Checks what every handler needs checked first: the method, and a declared
    /// body length against the handler's limit.
    pub fn admit(&self, head: &Head) -> Result<(), ApiError> {
        if !self.methods.contains(&head.method.as_str()) {
            return Err(ApiError::method_not_allowed(
                &head.method,
                self.route,
                self.methods,
            ));
        }
        if let (Some(declared), Some(limit)) = (head.content_length, self.body_limit())
            && declared > limit
        {
            return Err(ApiError::body_too_large(limit));
        }
        Ok(())
    }

    /// The largest body this endpoint reads, if it reads one.
    pub fn body_limit(&self) -> Option<u64> {
        match self.handler {
            Handler::Buffered { limit, .. } => Some(limit as u64),
            Handler::Streamed { limit, .. } => Some(limit),
            Handler::Head(_) | Handler::Delayed(_) => None,
        }
    }
}
