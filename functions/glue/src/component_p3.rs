//! The WASIp3 component host side: serves an [`Endpoint`] from a
//! `wasi:http/handler@0.3.0` export (spin-sdk 7's `#[http_service]`).
//!
//! It answers exactly as [`crate::component`] (the WASIp2 flavour) does: the same
//! [`Endpoint::admit`] check first (405, declared-length 413), the same handler
//! code, the same status, content type, `content-length` and extra headers. What
//! differs is how it waits. A WASIp3 instance serves many requests at once, each
//! as its own task, so nothing here may block the instance: the body is read from
//! the request's `stream<u8>`, the response body is written from a spawned task
//! after the response is returned, and [`Handler::Delayed`] awaits the async
//! monotonic clock (`wait-for`) instead of sleeping.
//!
//! Routing belongs to the host, as in the WASIp2 flavour.

use crate::{ApiError, Endpoint, Handler, Head, Reply};
use wasip3::http::types::{self, ErrorCode, Fields};
use wasip3::http_compat::Request;
use wasip3::wit_bindgen::{FutureReader, FutureWriter, StreamReader, StreamResult};
use wasip3::{wit_future, wit_stream};

/// How much a buffered body grows by, at least, per read.
const BUFFERED_CHUNK: usize = 16 * 1024;
/// The one read buffer of a streamed body: bigger reads, fewer trips to the host.
const STREAMED_CHUNK: usize = 64 * 1024;

/// Answers one request; each function's `#[http_service]` calls just this.
pub async fn serve(endpoint: &'static Endpoint, req: Request) -> types::Response {
    let head = head_of(&req);
    // `#[http_service]` wraps the request without starting its body, so the raw
    // `wasi:http/types.request` is still there to read the body from directly.
    let body = req.into_body().take_unstarted();
    let reply = answer(endpoint, &head, body).await;
    respond(reply.unwrap_or_else(|e| e.to_reply()))
}

async fn answer(
    endpoint: &'static Endpoint,
    head: &Head,
    body: Option<types::Request>,
) -> Result<Reply, ApiError> {
    endpoint.admit(head)?;
    match &endpoint.handler {
        Handler::Head(handle) => handle(head),
        Handler::Buffered { limit, handle } => {
            let body = read_body(Body::open(body), head, *limit).await?;
            handle(head, &body)
        }
        Handler::Streamed { limit, start } => {
            let mut sink = start(head)?;
            let mut body = Body::open(body);
            let mut chunk = Vec::with_capacity(STREAMED_CHUNK);
            let mut received = 0u64;
            while body.fill(&mut chunk).await? {
                received += chunk.len() as u64;
                if received > *limit {
                    return Err(ApiError::body_too_large(*limit));
                }
                sink.write(&chunk);
                chunk.clear();
            }
            Ok(sink.finish())
        }
        Handler::Delayed(plan) => {
            let (wait, reply) = plan(head)?;
            // `wasi:clocks/monotonic-clock.wait-for`, an async import: this task is
            // parked on the host's timer while the instance serves other requests.
            let nanos = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
            wasip3::clocks::monotonic_clock::wait_for(nanos).await;
            Ok(reply)
        }
    }
}

fn head_of(req: &Request) -> Head {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| std::str::from_utf8(v.as_bytes()).ok())
            .map(str::to_string)
    };
    Head {
        method: req.method().as_str().to_string(),
        path: req.uri().path().to_string(),
        query: req.uri().query().unwrap_or("").to_string(),
        content_type: header("content-type"),
        content_length: header("content-length").and_then(|v| v.parse().ok()),
    }
}

/// Reads the whole body into one buffer, sized from the declared length when there
/// is one, refusing more than `limit` bytes.
async fn read_body(mut reader: Body, head: &Head, limit: usize) -> Result<Vec<u8>, ApiError> {
    // `admit` has refused a declared length over the limit already.
    let declared = head
        .content_length
        .map_or(0, |n| n.min(limit as u64) as usize);
    let mut body = Vec::with_capacity(declared);
    loop {
        if body.len() == body.capacity() {
            body.reserve(BUFFERED_CHUNK);
        }
        if !reader.fill(&mut body).await? {
            return Ok(body);
        }
        if body.len() > limit {
            return Err(ApiError::body_too_large(limit as u64));
        }
    }
}

/// A request body as WASIp3 hands it over: a `stream<u8>`, then a future that says
/// whether it arrived whole (and carries trailers, which we ignore).
struct Body {
    stream: Option<StreamReader<u8>>,
    trailers: Option<FutureReader<Result<Option<types::Trailers>, ErrorCode>>>,
    /// Our side of `consume-body`'s `res`: dropped unwritten, it reports success.
    _result: Option<FutureWriter<Result<(), ErrorCode>>>,
}

impl Body {
    fn open(req: Option<types::Request>) -> Self {
        match req {
            Some(req) => {
                let (result, res) = wit_future::new(|| Ok(()));
                let (stream, trailers) = types::Request::consume_body(req, res);
                Self {
                    stream: Some(stream),
                    trailers: Some(trailers),
                    _result: Some(result),
                }
            }
            None => Self {
                stream: None,
                trailers: None,
                _result: None,
            },
        }
    }

    /// Reads what the host has into `buf`'s spare capacity; `false` once the body
    /// has ended (and arrived whole).
    async fn fill(&mut self, buf: &mut Vec<u8>) -> Result<bool, ApiError> {
        let Some(stream) = self.stream.as_mut() else {
            return Ok(false);
        };
        let (result, filled) = stream.read(std::mem::take(buf)).await;
        *buf = filled;
        match result {
            StreamResult::Complete(_) => Ok(true),
            StreamResult::Dropped | StreamResult::Cancelled => {
                self.stream = None;
                match self.trailers.take() {
                    Some(trailers) => trailers.await.map(|_| false).map_err(|e| unreadable(&e)),
                    None => Ok(false),
                }
            }
        }
    }
}

fn unreadable(error: &ErrorCode) -> ApiError {
    ApiError::bad_request(format!("request body could not be read: {error:?}"))
}

fn respond(reply: Reply) -> types::Response {
    let headers = reply.wire_headers();
    let fields = Fields::from_list(&headers).expect("our header names and values are valid");
    // No trailers: the writer dropped unwritten resolves the future to `Ok(None)`.
    let (_, trailers) = wit_future::new(|| Ok(None));
    let contents = (!reply.body.is_empty()).then(|| {
        let (mut tx, rx) = wit_stream::new();
        let body = reply.body;
        // The host reads the body only after `handle` has returned the response, so
        // it is written from a task of its own, which outlives `handle`. A client
        // that went away mid-response is not an error worth a trap.
        wasip3::spawn(async move {
            let _ = tx.write_all(body).await;
        });
        rx
    });
    let (response, _transmitted) = types::Response::new(fields, contents, trailers);
    response
        .set_status_code(reply.status)
        .expect("our status codes are valid");
    response
}

/// Declares a function's WASIp3 Spin entry: a `wasi:http/handler@0.3.0` export
/// (spin-sdk 7's `#[http_service]`) that serves `$endpoint`.
///
/// spin-sdk's macro expands to `::spin_sdk` paths, so the calling crate (the
/// function's `p3` entry crate) depends on spin-sdk 7 as `spin-sdk`, for wasm32 only.
#[macro_export]
macro_rules! spin_p3_component {
    ($endpoint:path) => {
        #[::spin_sdk::http_service]
        async fn handle(
            req: ::spin_sdk::http::Request,
        ) -> ::spin_sdk::wasip3::http::types::Response {
            // `$crate` does not survive the trip through a proc macro, hence `::glue`.
            ::glue::component_p3::serve(&$endpoint, req).await
        }
    };
}
