//! The WASIp3 component host side: serves an [`Endpoint`] from a
//! `wasi:http/handler@0.3.0` export, written on the WASI 0.3 bindings (the
//! `wasip3` crate) rather than spin-sdk 7's `#[http_service]`.
//!
//! Why not the SDK: a reused instance pays for its guest code on every request, and
//! `#[http_service]` turns each request into an `http::Request` (its headers copied
//! into a `HeaderMap`, its URI parsed) before the handler sees it, and the response
//! back. Here the request's method, path and the two headers an endpoint reads come
//! straight from the `wasi:http/types.request` resource, as the WASIp2 adapter does
//! (docs/performance.md, "Lean WASIp3 adapter"). The p3 build of `hello-sdk` keeps
//! the SDK's entry, so the set still measures what a `spin new` WASIp3 app costs.
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
pub use wasip3;
use wasip3::http::types::{self, ErrorCode, Fields, Method, Request};
use wasip3::wit_bindgen::{FutureReader, FutureWriter, StreamReader, StreamResult};
use wasip3::{wit_future, wit_stream};

/// How much a buffered body grows by, at least, per read.
const BUFFERED_CHUNK: usize = 16 * 1024;
/// The one read buffer of a streamed body: bigger reads, fewer trips to the host.
const STREAMED_CHUNK: usize = 64 * 1024;

/// Answers one request; each function's `spin_p3_component!` export calls just this.
pub async fn serve(endpoint: &'static Endpoint, req: Request) -> types::Response {
    let head = head_of(&req);
    // Only an endpoint that reads a body opens it.
    let body = endpoint.body_limit().is_some().then_some(req);
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
    let headers = req.get_headers();
    // `fields.get` answers every value of a name; an endpoint reads the first.
    let header = |name: &str| {
        headers
            .get(name)
            .into_iter()
            .next()
            .and_then(|v| String::from_utf8(v).ok())
    };
    let path_with_query = req.get_path_with_query().unwrap_or_default();
    let (path, query) = path_with_query
        .split_once('?')
        .unwrap_or((path_with_query.as_str(), ""));
    Head {
        method: method_name(req.get_method()),
        path: path.to_string(),
        query: query.to_string(),
        content_type: header("content-type"),
        content_length: header("content-length").and_then(|v| v.parse().ok()),
    }
}

fn method_name(method: Method) -> String {
    let name = match method {
        Method::Get => "GET",
        Method::Head => "HEAD",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Delete => "DELETE",
        Method::Connect => "CONNECT",
        Method::Options => "OPTIONS",
        Method::Trace => "TRACE",
        Method::Patch => "PATCH",
        Method::Other(other) => return other,
    };
    name.to_string()
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
    // A new response is a 200 already: one host call fewer for most replies.
    if reply.status != 200 {
        response
            .set_status_code(reply.status)
            .expect("our status codes are valid");
    }
    response
}

/// Declares a function's WASIp3 Spin entry: a `wasi:http/handler@0.3.0` export
/// that serves `$endpoint`.
#[macro_export]
macro_rules! spin_p3_component {
    ($endpoint:path) => {
        struct SpinComponent;

        impl $crate::component_p3::wasip3::exports::http::handler::Guest for SpinComponent {
            async fn handle(
                req: $crate::component_p3::wasip3::http::types::Request,
            ) -> Result<
                $crate::component_p3::wasip3::http::types::Response,
                $crate::component_p3::wasip3::http::types::ErrorCode,
            > {
                Ok($crate::component_p3::serve(&$endpoint, req).await)
            }
        }

        $crate::component_p3::wasip3::http::service::export!(
            SpinComponent with_types_in $crate::component_p3::wasip3
        );
    };
}
