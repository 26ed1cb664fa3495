//! The request/response component of a Spin 2.0-2.2 era app, written against
//! spin-sdk 2.2 as its users wrote them: one `#[http_component]` handler taking
//! a buffered `Request`, dispatching on the path.
//!
//! - `GET /hello`: `GET /hello`, the method and path it was asked with, in
//!   `text/plain` with an `x-spin2: yes` header.
//! - `POST /echo`: the request body back, with the request's `x-echo` header.
//! - `GET /variable`: the Spin variable `message`.
//! - `PUT /kv/<key>` (or `POST`): stores the body under `<key>` in the
//!   `default` key-value store, reads it back and answers what it read;
//!   `GET /kv/<key>`: the stored value, 404 if none.
//! - `GET /outbound?url=<url>`: GETs `<url>` with `spin_sdk::http::send` and
//!   answers `upstream <status> <body>`, or a 502 whose body is the error.

use spin_sdk::http::{IntoResponse, Method, Request, Response};
use spin_sdk::http_component;
use spin_sdk::key_value::Store;

#[http_component]
async fn handle_spin2_sdk(req: Request) -> anyhow::Result<impl IntoResponse> {
    let path = req.path().to_string();
    match (req.method(), path.as_str()) {
        (Method::Get, "/hello") => Ok(hello(&req)),
        (Method::Post, "/echo") => Ok(echo(req)),
        (Method::Get, "/variable") => {
            let message = spin_sdk::variables::get("message")?;
            Ok(text(200, message))
        }
        (method, kv) if kv.starts_with("/kv/") => {
            let key = &kv["/kv/".len()..];
            Ok(key_value(method, key, req.body())?)
        }
        (Method::Get, "/outbound") => {
            let url = req.query().strip_prefix("url=").unwrap_or_default();
            Ok(outbound(url).await)
        }
        (method, path) => Ok(text(404, format!("no route for {method} {path}"))),
    }
}

fn text(status: u16, body: impl Into<String>) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "text/plain")
        .body(body.into())
        .build()
}

fn hello(req: &Request) -> Response {
    Response::builder()
        .status(200)
        .header("content-type", "text/plain")
        .header("x-spin2", "yes")
        .body(format!("{} {}", req.method(), req.path()))
        .build()
}

fn echo(req: Request) -> Response {
    let tag = req
        .header("x-echo")
        .map(|value| value.clone().into_utf8_lossy());
    let mut response = Response::builder();
    response
        .status(200)
        .header("content-type", "application/octet-stream");
    if let Some(tag) = tag {
        response.header("x-echo", tag);
    }
    response.body(req.into_body()).build()
}

fn key_value(method: &Method, key: &str, body: &[u8]) -> anyhow::Result<Response> {
    let store = Store::open_default()?;
    match method {
        Method::Put | Method::Post => store.set(key, body)?,
        Method::Get => {}
        _ => return Ok(text(405, "GET, PUT or POST /kv/<key>")),
    }
    Ok(match store.get(key)? {
        Some(value) => Response::builder()
            .status(200)
            .header("content-type", "application/octet-stream")
            .body(value)
            .build(),
        None => text(404, format!("no value for {key:?}")),
    })
}

async fn outbound(url: &str) -> Response {
    let sent: Result<Response, _> = spin_sdk::http::send(Request::get(url)).await;
    match sent {
        Ok(upstream) => {
            let body = String::from_utf8_lossy(upstream.body()).into_owned();
            text(200, format!("upstream {} {body}", upstream.status()))
        }
        Err(error) => text(502, error.to_string()),
    }
}
