use spin_sdk::http::{IntoResponse, Request, Response};
use spin_sdk::http_service;

/// A simple Spin HTTP component.
#[http_service]
async fn handle_spin4_template(req: Request) -> anyhow::Result<impl IntoResponse> {
    println!("Handling request to {:?}", req.headers().get("spin-full-url"));
    let greeting = spin_sdk::variables::get("greeting").await?;
    let name = req
        .headers()
        .get("spin-path-match-name")
        .and_then(|name| name.to_str().ok())
        .unwrap_or("World");
    Ok(Response::builder()
        .status(200)
        .header("content-type", "text/plain")
        .body(format!("{greeting}, {name}!")))
}
