//! `template-hello-native --listen ADDR`: answers every path with the greeting,
//! like the template app's component. The greeting is read from the same
//! environment variable Spin's environment provider reads
//! (`SPIN_VARIABLE_GREETING`), with the manifest's default otherwise.

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use tokio::net::TcpListener;

const DEFAULT_GREETING: &str = "Hello from a Spin variable";

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let listen = listen_addr()?;
    let greeting: &'static str = std::env::var("SPIN_VARIABLE_GREETING")
        .map_or(DEFAULT_GREETING, |g| Box::leak(g.into_boxed_str()));
    let listener = TcpListener::bind(listen).await?;
    eprintln!("serving / on http://{}", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let service = service_fn(move |_: Request<hyper::body::Incoming>| async move {
                Ok::<_, Infallible>(
                    Response::builder()
                        .header("content-type", "text/plain")
                        .body(Full::new(Bytes::from_static(greeting.as_bytes())))
                        .expect("a valid response"),
                )
            });
            // A client that goes away mid-request is routine, not worth a line.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// `--listen ADDR` (default 127.0.0.1:3000).
fn listen_addr() -> std::io::Result<SocketAddr> {
    let mut args = std::env::args().skip(1);
    let mut listen = "127.0.0.1:3000".to_string();
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--listen", Some(addr)) => listen = addr,
            _ => {
                return Err(std::io::Error::other(
                    "usage: template-hello-native [--listen ADDR]",
                ));
            }
        }
    }
    listen.parse().map_err(std::io::Error::other)
}
