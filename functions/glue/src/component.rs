//! The component host side: serves an [`Endpoint`] from a WASIp2
//! `wasi:http/incoming-handler` export (spin-sdk's `#[http_component]`).
//!
//! Routing belongs to the host (Spin, `wasmtime serve`, the spinbench runner), so
//! unlike the native server this does not check the path: a component mounted at
//! another route in someone's own manifest keeps working.

use crate::{ApiError, Endpoint, Handler, Head, Reply};
use futures::{SinkExt, StreamExt};
use spin_sdk::http::{Fields, IncomingRequest, OutgoingBody, OutgoingResponse, ResponseOutparam};

/// Answers one request; each function's `#[http_component]` calls just this.
pub async fn serve(endpoint: &'static Endpoint, req: IncomingRequest, out: ResponseOutparam) {
    let reply = answer(endpoint, req).await.unwrap_or_else(|e| e.to_reply());
    send(reply, out).await;
}

async fn answer(endpoint: &'static Endpoint, req: IncomingRequest) -> Result<Reply, ApiError> {
    let head = head_of(&req, endpoint.body_limit().is_some());
    endpoint.admit(&head)?;
    match &endpoint.handler {
        Handler::Head(handle) => handle(&head),
        Handler::Buffered { limit, handle } => {
            let body = read_body(req, *limit as u64).await?;
            handle(&head, &body)
        }
        Handler::Streamed { limit, start } => {
            let mut sink = start(&head)?;
            let mut received = 0u64;
            let mut chunks = req.into_body_stream();
            while let Some(chunk) = chunks.next().await {
                let chunk = chunk.map_err(unreadable)?;
                received += chunk.len() as u64;
                if received > *limit {
                    return Err(ApiError::body_too_large(*limit));
                }
                sink.write(&chunk);
            }
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
        method: req.method().to_string(),
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

async fn read_body(req: IncomingRequest, limit: u64) -> Result<Vec<u8>, ApiError> {
    let mut body = Vec::new();
    let mut chunks = req.into_body_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(unreadable)?;
        if (body.len() + chunk.len()) as u64 > limit {
            return Err(ApiError::body_too_large(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn unreadable(error: impl std::fmt::Debug) -> ApiError {
    ApiError::bad_request(format!("request body could not be read: {error:?}"))
}

async fn send(reply: Reply, out: ResponseOutparam) {
    let headers = reply.wire_headers();
    let fields = Fields::from_list(&headers).expect("our header names and values are valid");
    let response = OutgoingResponse::new(fields);
    response
        .set_status_code(reply.status)
        .expect("our status codes are valid");
    // A client that went away mid-response is not an error worth a trap.
    if reply.body.len() <= SMALL_BODY {
        // One host call for the whole body instead of the SDK sink's
        // check-write / write / flush rounds.
        let body = response.body().expect("a new response's body is untaken");
        out.set(response);
        if let Ok(stream) = body.write() {
            let _ = stream.blocking_write_and_flush(&reply.body);
        }
        let _ = OutgoingBody::finish(body, None);
    } else {
        let mut body = response.take_body();
        out.set(response);
        let _ = body.send(reply.body).await;
    }
}

/// The most `blocking-write-and-flush` takes in one call (wasi:io 0.2).
const SMALL_BODY: usize = 4096;

/// Declares a function crate's Spin entry: a WASIp2 `wasi:http/incoming-handler`
/// export (spin-sdk's `#[http_component]`) that serves `$endpoint`.
///
/// spin-sdk's macro expands to `::spin_sdk` paths, so the calling crate depends on
/// spin-sdk itself (for wasm32 only); this keeps that entry to one line per function.
#[macro_export]
macro_rules! spin_component {
    ($endpoint:path) => {
        #[::spin_sdk::http_component]
        async fn handle(
            req: ::spin_sdk::http::IncomingRequest,
            out: ::spin_sdk::http::ResponseOutparam,
        ) {
            // `$crate` does not survive the trip through a proc macro, hence `::glue`.
            ::glue::component::serve(&$endpoint, req, out).await
        }
    };
}
