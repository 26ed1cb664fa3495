//! The native host: one endpoint served over HTTP/1.1 by tokio and hyper.
//!
//! `<name>-native --listen 127.0.0.1:PORT` is the whole CLI (and `--plain-calls`,
//! which times the logic without HTTP: `crate::plain`). Requests are answered
//! on tokio's worker threads; waits use tokio's timer, so a thousand waiting
//! requests cost a thousand small tasks, not a thousand threads.

use crate::{ApiError, BodySink, Endpoint, Handler, Head, Reply};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;

const DEFAULT_LISTEN: &str = "127.0.0.1:3000";
/// A client has this long to send its request head (slowloris guard).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Entry point of every `<name>-native` binary.
pub fn main(endpoint: &'static Endpoint) -> ! {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("--plain-calls") {
        args.next();
        let code = match crate::plain::main(endpoint, args) {
            Ok(()) => 0,
            Err(error) => {
                eprintln!("error: {error}");
                2
            }
        };
        std::process::exit(code)
    }
    let code = match parse_listen(std::env::args().skip(1)) {
        Ok(addr) => match run(endpoint, addr) {
            Ok(()) => 0,
            Err(error) => {
                eprintln!("error: {error}");
                1
            }
        },
        Err(usage) => {
            eprintln!("{usage}");
            2
        }
    };
    std::process::exit(code)
}

fn parse_listen(mut args: impl Iterator<Item = String>) -> Result<SocketAddr, String> {
    let usage = "usage: <name>-native [--listen 127.0.0.1:PORT]";
    let mut listen = DEFAULT_LISTEN.to_string();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => listen = args.next().ok_or(usage)?,
            "-h" | "--help" => return Err(usage.to_string()),
            other => return Err(format!("unknown argument {other:?}\n{usage}")),
        }
    }
    listen
        .parse()
        .map_err(|_| format!("--listen {listen:?} is not an IP:PORT address\n{usage}"))
}

fn run(endpoint: &'static Endpoint, addr: SocketAddr) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(addr).await?;
        eprintln!(
            "serving {} on http://{}",
            endpoint.route,
            listener.local_addr()?
        );
        tokio::select! {
            result = accept_loop(endpoint, listener) => result,
            _ = shutdown_signal() => Ok(()),
        }
    })
}

async fn accept_loop(endpoint: &'static Endpoint, listener: TcpListener) -> std::io::Result<()> {
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(conn) => conn,
            // Running out of file descriptors is transient under load: back off, keep serving.
            Err(error) => {
                eprintln!("accept failed: {error}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let service = service_fn(move |req| respond(endpoint, req));
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler installs");
    tokio::select! {
        _ = term.recv() => {},
        _ = tokio::signal::ctrl_c() => {},
    }
}

async fn respond(
    endpoint: &'static Endpoint,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let reply = match answer(endpoint, req).await {
        Ok(reply) => reply,
        Err(error) => error.to_reply(),
    };
    Ok(to_response(reply))
}

async fn answer(endpoint: &'static Endpoint, req: Request<Incoming>) -> Result<Reply, ApiError> {
    let head = head_of(&req);
    if head.path != endpoint.route {
        return Err(ApiError::not_found(&head.path));
    }
    endpoint.admit(&head)?;
    match &endpoint.handler {
        Handler::Head(handle) => handle(&head),
        Handler::Buffered { limit, handle } => {
            let body = read_body(req.into_body(), *limit).await?;
            handle(&head, &body)
        }
        Handler::Streamed { limit, start } => {
            let sink = start(&head)?;
            stream_body(req.into_body(), *limit, sink).await
        }
        Handler::Delayed(plan) => {
            let (wait, reply) = plan(&head)?;
            tokio::time::sleep(wait).await;
            Ok(reply)
        }
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

async fn read_body(body: Incoming, limit: usize) -> Result<Vec<u8>, ApiError> {
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes().to_vec()),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => {
            Err(ApiError::body_too_large(limit as u64))
        }
        Err(error) => Err(ApiError::bad_request(format!(
            "request body could not be read: {error}"
        ))),
    }
}

async fn stream_body(
    mut body: Incoming,
    limit: u64,
    mut sink: Box<dyn BodySink>,
) -> Result<Reply, ApiError> {
    let mut received = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|error| {
            ApiError::bad_request(format!("request body could not be read: {error}"))
        })?;
        if let Some(chunk) = frame.data_ref() {
            received += chunk.len() as u64;
            if received > limit {
                return Err(ApiError::body_too_large(limit));
            }
            sink.write(chunk);
        }
    }
    Ok(sink.finish())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> impl Iterator<Item = String> {
        list.iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn listen_defaults_to_loopback() {
        assert_eq!(parse_listen(args(&[])).unwrap().to_string(), DEFAULT_LISTEN);
        assert_eq!(
            parse_listen(args(&["--listen", "127.0.0.1:8080"]))
                .unwrap()
                .port(),
            8080
        );
        assert!(parse_listen(args(&["--listen", "nope"])).is_err());
        assert!(parse_listen(args(&["--bogus"])).is_err());
    }
}
