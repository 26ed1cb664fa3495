//! `fermyon:spin/llm@2.0.0`: linked, so that apps importing it start as under
//! `spin up`, and every call refused as Spin refuses a model the component's
//! `ai_models` do not list (spinframework/spin `crates/factor-llm/src/host.rs`,
//! `access_denied_error`): spinbench serve runs no model, and a manifest that
//! lists `ai_models` is refused at start (`manifest::hosting`).
//!
//! Both functions are defined with dynamic types (`func_new`): only their
//! error is built, the same `error::invalid-input` for both.

use super::HostState;
use anyhow::Result;
use wasmtime::component::{Linker, Val};

pub const V2: &str = "fermyon:spin/llm@2.0.0";

/// Spin's message for a model the component may not use.
fn access_denied(model: &str) -> String {
    format!(
        "The component does not have access to use '{model}'. To give the component access, add '{model}' to the 'ai_models' key for the component in your spin.toml manifest"
    )
}

pub fn link_v2<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    let mut instance = linker.instance(V2)?;
    for function in ["infer", "generate-embeddings"] {
        instance.func_new(function, |_, _, params, results| {
            let model = match params.first() {
                Some(Val::String(model)) => model.as_str(),
                _ => "",
            };
            results[0] = Val::Result(Err(Some(Box::new(Val::Variant(
                "invalid-input".into(),
                Some(Box::new(Val::String(access_denied(model)))),
            )))));
            Ok(())
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_the_model_and_the_key() {
        let message = access_denied("llama2-chat");
        assert!(message.contains("'llama2-chat'") && message.contains("'ai_models'"));
    }
}
