// The template's code, unchanged, for the component only (see Cargo.toml).
#![cfg(target_arch = "wasm32")]

use spin_sdk::http::{IntoResponse, Request, Response};
use spin_sdk::http_component;

/// A simple Spin HTTP component.
#[http_component]
fn handle_template_hello(req: Request) -> anyhow::Result<impl IntoResponse> {
    println!("Handling request to {:?}", req.header("spin-full-url"));
    let greeting = spin_sdk::variables::get("greeting")?;
    Ok(Response::builder()
        .status(200)
        .header("content-type", "text/plain")
        .body(greeting)
        .build())
}
