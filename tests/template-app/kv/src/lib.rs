// The template's code, unchanged, for the component only (see Cargo.toml).
#![cfg(target_arch = "wasm32")]

use spin_sdk::http::{IntoResponse, Request, Response};
use spin_sdk::http_component;
use spin_sdk::key_value::Store;

/// A simple Spin HTTP component that counts its requests in the default store.
#[http_component]
fn handle_template_kv(req: Request) -> anyhow::Result<impl IntoResponse> {
    println!("Handling request to {:?}", req.header("spin-full-url"));
    let store = Store::open_default()?;
    let count = store.get("count")?.map_or(0, |v| v.len()) + 1;
    store.set("count", &vec![b'x'; count])?;
    Ok(Response::builder()
        .status(200)
        .header("content-type", "text/plain")
        .body(format!("request {count}"))
        .build())
}
