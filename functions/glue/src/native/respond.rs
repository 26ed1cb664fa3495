//! One request: route, admit, run the handler under the request deadline.

use super::Server;
use super::body::BodyReader;
use super::compute::ComputePool;
use crate::{ApiError, Handler, Head, Reply};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};

/// The response to `req`: the handler's, or a JSON error (a `504` past the deadline).
pub async fn respond(
    server: &'static Server,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let deadline = server.limits.request_timeout;
    let reply = match tokio::time::timeout(deadline, answer(server, req)).await {
        Ok(Ok(reply)) => reply,
        Ok(Err(error)) => error.to_reply(),
        Err(_elapsed) => ApiError::new(
            504,
            format!(
                "{} did not respond within {deadline:?}",
                server.endpoint.route
            ),
        )
        .to_reply(),
    };
    Ok(to_response(reply))
}

async fn answer(server: &'static Server, req: Request<Incoming>) -> Result<Reply, ApiError> {
    let endpoint = server.endpoint;
    let head = head_of(&req);
    if head.path != endpoint.route {
        return Err(ApiError::not_found(&head.path));
    }
    endpoint.admit(&head)?;
    let compute = endpoint.cpu_bound.then_some(&server.compute);
    let body = |limit| BodyReader::new(req.into_body(), limit, server.limits.body_read_timeout);
    match &endpoint.handler {
        Handler::Head(handle) => {
            let handle = *handle;
            call(compute, move || handle(&head)).await
        }
        Handler::Buffered { limit, handle } => {
            let bytes = body(*limit as u64).read_all().await?;
            let handle = *handle;
            call(compute, move || handle(&head, &bytes)).await
        }
        Handler::Streamed { limit, start } => {
            let sink = start(&head)?;
            body(*limit).feed(sink).await
        }
        Handler::Delayed(plan) => {
            let plan = *plan;
            let (wait, reply) = call(compute, move || plan(&head)).await?;
            tokio::time::sleep(wait).await;
            Ok(reply)
        }
    }
}

/// Runs `work` on the blocking pool when the endpoint is CPU-bound, here otherwise.
async fn call<T, F>(compute: Option<&'static ComputePool>, work: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
{
    match compute {
        Some(pool) => pool.run(work).await?,
        None => work(),
    }
}

fn head_of(req: &Request<Incoming>) -> Head {
    let header = |name| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    Head {
        method: req.method().as_str().to_string(),
        path: req.uri().path().to_string(),
        query: req.uri().query().unwrap_or("").to_string(),
        content_type: header(hyper::header::CONTENT_TYPE),
        content_length: header(hyper::header::CONTENT_LENGTH).and_then(|v| v.parse().ok()),
    }
}

fn to_response(reply: Reply) -> Response<Full<Bytes>> {
    let mut builder = Response::builder()
        .status(reply.status)
        .header(hyper::header::CONTENT_TYPE, reply.content_type);
    for (name, value) in &reply.headers {
        builder = builder.header(*name, value);
    }
    builder
        .body(Full::new(Bytes::from(reply.body)))
        .expect("status and headers come from our own constants")
}
