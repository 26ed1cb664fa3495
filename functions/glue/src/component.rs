//! The component host side: serves an [`Endpoint`] from a WASIp2
//! `wasi:http/incoming-handler` export, written on the WASI 0.2 bindings (the
//! `wasip2` crate) rather than spin-sdk's `#[http_component]`.
//!
//! Why not the SDK: every function a component imports is wired again at each
//! instantiation, about 1k host instructions apiece, and a fresh instance is made
//! per request. spin-sdk 5.2's entry (its executor, body streams and `eprintln!`
//! fallbacks) brings `hello` to 47 imports; this adapter makes only the calls an
//! endpoint's kind needs, with blocking calls instead of an executor, and `hello`
//! imports 35 (docs/performance.md, "Lean WASIp2 adapter"). `hello-sdk` keeps the
//! SDK's entry, so the set still measures what a `spin new` app costs.
//!
//! Routing belongs to the host (Spin, `wasmtime serve`, the spinbench runner), so
//! unlike the native server this does not check the path: a component mounted at
//! another route in someone's own manifest keeps working.

use crate::{ApiError, Endpoint, Handler, Head, Reply};
pub use wasip2;
use wasip2::http::types::{
    Fields, IncomingBody, IncomingRequest, OutgoingBody, OutgoingResponse, ResponseOutparam,
};
use wasip2::io::streams::StreamError;

/// Answers one request; each function's `spin_component!` calls just this.
///
/// Inlined into the function's own export so that, with the endpoint a constant,
/// the compiler drops the handler kinds it does not have, and their imports.
#[allow(
    clippy::inline_always,
    reason = "an import left in costs every instantiation ~1k host instructions"
)]
#[inline(always)]
pub fn serve(endpoint: &'static Endpoint, req: IncomingRequest, out: ResponseOutparam) {
    let reply = answer(endpoint, &req).unwrap_or_else(|e| e.to_reply());
    // Done with the request before answering: the host may free it now.
    drop(req);
    send(&reply, out);
}

#[allow(clippy::inline_always, reason = "as for `serve`")]
#[inline(always)]
fn answer(endpoint: &'static Endpoint, req: &IncomingRequest) -> Result<Reply, ApiError> {
    let head = head_of(req, endpoint.body_limit().is_some());
    endpoint.admit(&head)?;
    match &endpoint.handler {
        Handler::Head(handle) => handle(&head),
        Handler::Buffered { limit, handle } => {
            let mut body = Vec::new();
            read_body(req, *limit as u64, |chunk| body.extend_from_slice(chunk))?;
            handle(&head, &body)
        }
        Handler::Streamed { limit, start } => {
            let mut sink = start(&head)?;
            read_body(req, *limit, |chunk| sink.write(chunk))?;
            Ok(sink.finish())
        }
        Handler::Delayed(plan) => {
            let (wait, reply) = plan(&head)?;
            // In wasm32-wasip2, std's sleep is a `wasi:clocks` subscription the
            // guest blocks on through `wasi:io/poll`: the host parks this instance
            // on its async timer, using no CPU and no host thread meanwhile.
            std::thread::sleep(wait);
            Ok(reply)
        }
    }
}

/// The request head; the body headers only if the endpoint reads a body (every
/// lookup is a host call, and a fresh instance per request pays for each).
fn head_of(req: &IncomingRequest, reads_body: bool) -> Head {
    let path_and_query = req.path_with_query().unwrap_or_else(|| "/".to_string());
    let (path, query) = path_and_query
        .split_once('?')
        .unwrap_or((path_and_query.as_str(), ""));
    let mut head = Head {
        method: method_name(&req.method()),
        path: path.to_string(),
        query: query.to_string(),
        content_type: None,
        content_length: None,
    };
    if reads_body {
        let headers = req.headers();
        let header = |name: &str| {
            headers
                .get(name)
                .into_iter()
                .next()
                .and_then(|v| String::from_utf8(v).ok())
        };
        head.content_type = header("content-type");
        head.content_length = header("content-length").and_then(|v| v.parse().ok());
    }
    head
}

fn method_name(method: &wasip2::http::types::Method) -> String {
    use wasip2::http::types::Method;
    match method {
        Method::Get => "GET",
        Method::Head => "HEAD",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Delete => "DELETE",
        Method::Connect => "CONNECT",
        Method::Options => "OPTIONS",
        Method::Trace => "TRACE",
        Method::Patch => "PATCH",
        Method::Other(other) => other,
    }
    .to_string()
}

/// The most one `blocking-read` asks for: what hyper hands the host at once.
const READ_CHUNK: u64 = 64 * 1024;

/// Feeds the body to `take` chunk by chunk; more than `limit` bytes is a `413`.
fn read_body(
    req: &IncomingRequest,
    limit: u64,
    mut take: impl FnMut(&[u8]),
) -> Result<(), ApiError> {
    let body = req.consume().map_err(|()| unreadable("already consumed"))?;
    let mut received = 0u64;
    {
        let stream = body.stream().map_err(|()| unreadable("stream taken"))?;
        loop {
            match stream.blocking_read(READ_CHUNK) {
                Ok(chunk) => {
                    received += chunk.len() as u64;
                    if received > limit {
                        return Err(ApiError::body_too_large(limit));
                    }
                    take(&chunk);
                }
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(error)) => {
                    return Err(unreadable(&error.to_debug_string()));
                }
            }
        }
    }
    // The trailers are not read; finishing the body lets the host drop it now.
    drop(IncomingBody::finish(body));
    Ok(())
}

fn unreadable(why: &str) -> ApiError {
    ApiError::bad_request(format!("request body could not be read: {why}"))
}

fn send(reply: &Reply, out: ResponseOutparam) {
    let fields =
        Fields::from_list(&reply.wire_headers()).expect("our header names and values are valid");
    let response = OutgoingResponse::new(fields);
    // A new response is a 200 already: one host call fewer for most replies.
    if reply.status != 200 {
        response
            .set_status_code(reply.status)
            .expect("our status codes are valid");
    }
    let body = response.body().expect("a new response's body is untaken");
    ResponseOutparam::set(out, Ok(response));
    // A client that went away mid-response is not an error worth a trap.
    if let Ok(stream) = body.write() {
        // `blocking-write-and-flush` takes at most 4096 bytes per call (wasi:io 0.2).
        for chunk in reply.body.chunks(MAX_BLOCKING_WRITE) {
            if stream.blocking_write_and_flush(chunk).is_err() {
                break;
            }
        }
    }
    let _ = OutgoingBody::finish(body, None);
}

/// The most `blocking-write-and-flush` takes in one call (wasi:io 0.2).
const MAX_BLOCKING_WRITE: usize = 4096;

/// Declares a function crate's Spin entry: a WASIp2 `wasi:http/incoming-handler`
/// export that serves `$endpoint`.
#[macro_export]
macro_rules! spin_component {
    ($endpoint:path) => {
        struct SpinComponent;

        impl $crate::component::wasip2::exports::http::incoming_handler::Guest for SpinComponent {
            fn handle(
                req: $crate::component::wasip2::http::types::IncomingRequest,
                out: $crate::component::wasip2::http::types::ResponseOutparam,
            ) {
                $crate::component::serve(&$endpoint, req, out)
            }
        }

        $crate::component::wasip2::http::proxy::export!(
            SpinComponent with_types_in $crate::component::wasip2
        );
    };
}
