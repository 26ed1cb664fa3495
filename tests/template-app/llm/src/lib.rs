// A template-style handler that asks an AI model (`fermyon:spin/llm@2.0.0`) its
// manifest does not grant: denied, as `spin up` denies it (tests/tests/template_app.rs).
#![cfg(target_arch = "wasm32")]

use spin_sdk::http::{IntoResponse, Request, Response};
use spin_sdk::http_component;
use spin_sdk::llm::{InferencingModel, infer};

/// A simple Spin HTTP component that answers with what the model says.
#[http_component]
fn handle_template_llm(_req: Request) -> anyhow::Result<impl IntoResponse> {
    let answer = infer(InferencingModel::Llama2Chat, "Say hello")?;
    Ok(Response::builder()
        .status(200)
        .header("content-type", "text/plain")
        .body(answer.text)
        .build())
}
