//! `fermyon:spin/llm@2.0.0`, answered as Spin 4.0.2 answers it with its
//! default local engine and no model files (spinframework/spin v4.0.2
//! `crates/factor-llm/src/host.rs`, `crates/llm-local/src/lib.rs`): a model
//! the component's `ai_models` do not list is `invalid-input` (access denied);
//! a listed one is looked up under `<state_dir>/ai-models` and, as there is
//! none there, is Spin's `runtime-error` saying so. spinbench runs no model:
//! where the model's files do exist, the answer is a `runtime-error` saying
//! that, where Spin would run it (docs/compatibility.md).
//!
//! Both functions are defined with dynamic types (`func_new`): only their
//! error is built.

use super::HostState;
use super::runtime_config::RuntimeConfig;
use anyhow::{Result, bail};
use std::path::{Path, PathBuf};
use wasmtime::component::{Linker, Val};

pub const V2: &str = "fermyon:spin/llm@2.0.0";

/// The one embeddings model Spin's local engine knows.
const EMBEDDINGS_MODEL: &str = "all-minilm-l6-v2";

/// A `fermyon:spin/llm` error: its case, and its text where it has one.
#[derive(Debug, PartialEq, Eq)]
enum LlmError {
    ModelNotSupported,
    RuntimeError(String),
    InvalidInput(String),
}

impl LlmError {
    fn into_val(self) -> Val {
        let (case, text) = match self {
            LlmError::ModelNotSupported => ("model-not-supported", None),
            LlmError::RuntimeError(text) => ("runtime-error", Some(text)),
            LlmError::InvalidInput(text) => ("invalid-input", Some(text)),
        };
        Val::Result(Err(Some(Box::new(Val::Variant(
            case.into(),
            text.map(|text| Box::new(Val::String(text))),
        )))))
    }
}

/// Spin's message for a model the component may not use.
fn access_denied(model: &str) -> LlmError {
    LlmError::InvalidInput(format!(
        "The component does not have access to use '{model}'. To give the component access, add '{model}' to the 'ai_models' key for the component in your spin.toml manifest"
    ))
}

/// Where Spin's local engine looks for models: `ai-models` in the state
/// directory, or in the working directory when there is none.
fn registry(state_dir: Option<&Path>) -> PathBuf {
    state_dir
        .map(Path::to_path_buf)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default()
        .join("ai-models")
}

fn runs_no_model(path: &Path) -> LlmError {
    LlmError::RuntimeError(format!(
        "spinbench runs no model: '{}' is not loaded (spin up runs it)",
        path.display()
    ))
}

/// Whether `model` is granted, and a plain name that can only be looked up
/// inside the registry (the manifest's check, again where it becomes a path).
fn may_use(model: &str, granted: &[String]) -> bool {
    granted.iter().any(|g| g == model) && crate::manifest::ids::model_name(model).is_ok()
}

/// How one function answers: from the model asked for, the models granted
/// and the registry directory.
type Answer = fn(&str, &[String], &Path) -> LlmError;

/// `infer` with `model`, granted `granted`.
fn infer(model: &str, granted: &[String], registry: &Path) -> LlmError {
    if !may_use(model, granted) {
        return access_denied(model);
    }
    // Spin's registry: `<registry>/<architecture>/<model>/`.
    let architectures = match std::fs::read_dir(registry) {
        Ok(entries) => entries,
        Err(e) => {
            return LlmError::RuntimeError(format!(
                "Could not read model registry directory '{}': {e}",
                registry.display()
            ));
        }
    };
    let found = architectures
        .flatten()
        .map(|arch| arch.path().join(model))
        .find(|dir| dir.is_dir());
    match found {
        Some(dir) => runs_no_model(&dir),
        None => LlmError::InvalidInput(format!(
            "no model directory found in registry for model '{model}'"
        )),
    }
}

/// `generate-embeddings` with `model`, granted `granted`.
fn generate_embeddings(model: &str, granted: &[String], registry: &Path) -> LlmError {
    if !may_use(model, granted) {
        return access_denied(model);
    }
    if model != EMBEDDINGS_MODEL {
        return LlmError::ModelNotSupported;
    }
    let dir = registry.join(model);
    if dir.exists() {
        runs_no_model(&dir)
    } else {
        LlmError::RuntimeError(format!(
            "The directory expected to house the embeddings models '{}' does not exist.",
            dir.display()
        ))
    }
}

/// Refuses a runtime config `[llm_compute]` other than Spin's local engine
/// (`type = "spin"`): a `remote_http` one sends inferences to a server, which
/// this host does not do.
pub fn check_runtime_config(config: &RuntimeConfig) -> Result<()> {
    let Some(section) = config.table.get("llm_compute") else {
        return Ok(());
    };
    let kind = section.get("type").and_then(toml::Value::as_str);
    if kind != Some("spin") {
        bail!(
            "runtime config `[llm_compute]` type {kind:?}: spinbench serves only type = \"spin\" (the local engine, with no model run); `spin up` serves the others"
        );
    }
    Ok(())
}

pub fn link_v2<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    let mut instance = linker.instance(V2)?;
    let functions: [(&str, Answer); 2] = [
        ("infer", infer),
        ("generate-embeddings", generate_embeddings),
    ];
    for (name, answer) in functions {
        instance.func_new(name, move |store, _, params, results| {
            let model = match params.first() {
                Some(Val::String(model)) => model.as_str(),
                _ => "",
            };
            let context = store.data().context();
            let state_dir = context.services.runtime_config.state_dir.as_deref();
            results[0] = answer(model, &context.grants.ai_models, &registry(state_dir)).into_val();
            Ok(())
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn granted(models: &[&str]) -> Vec<String> {
        models.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_model_not_listed_is_denied_naming_the_model_and_the_key() {
        let registry = Path::new("/nonexistent/ai-models");
        for answer in [
            infer("llama2-chat", &granted(&["codellama-instruct"]), registry),
            generate_embeddings("llama2-chat", &[], registry),
        ] {
            let LlmError::InvalidInput(text) = answer else {
                panic!("{answer:?}");
            };
            assert!(
                text.contains("'llama2-chat'") && text.contains("'ai_models'"),
                "{text}"
            );
        }
    }

    #[test]
    fn a_listed_model_without_a_registry_is_spin_s_runtime_error() {
        let state = tempfile::tempdir().unwrap();
        let registry = registry(Some(state.path()));
        let LlmError::RuntimeError(text) =
            infer("llama2-chat", &granted(&["llama2-chat"]), &registry)
        else {
            panic!("a runtime error");
        };
        assert!(
            text.starts_with(&format!(
                "Could not read model registry directory '{}': ",
                state.path().join("ai-models").display()
            )),
            "{text}"
        );
        let embeddings =
            generate_embeddings(EMBEDDINGS_MODEL, &granted(&[EMBEDDINGS_MODEL]), &registry);
        assert_eq!(
            embeddings,
            LlmError::RuntimeError(format!(
                "The directory expected to house the embeddings models '{}' does not exist.",
                registry.join(EMBEDDINGS_MODEL).display()
            ))
        );
        assert_eq!(
            generate_embeddings("other", &granted(&["other"]), &registry),
            LlmError::ModelNotSupported
        );
    }

    #[test]
    fn a_listed_model_is_looked_up_by_architecture_and_never_run() {
        let state = tempfile::tempdir().unwrap();
        let registry = registry(Some(state.path()));
        std::fs::create_dir_all(registry.join("llama/llama2-chat")).unwrap();
        let granted = granted(&["llama2-chat", "codellama-instruct"]);
        assert_eq!(
            infer("codellama-instruct", &granted, &registry),
            LlmError::InvalidInput(
                "no model directory found in registry for model 'codellama-instruct'".into()
            )
        );
        let LlmError::RuntimeError(text) = infer("llama2-chat", &granted, &registry) else {
            panic!("a runtime error");
        };
        assert!(text.starts_with("spinbench runs no model"), "{text}");
    }

    #[test]
    fn only_spin_s_local_engine_is_accepted_in_the_runtime_config() {
        let config = |text: &str| RuntimeConfig {
            table: text.parse().unwrap(),
            ..RuntimeConfig::default()
        };
        check_runtime_config(&config("")).unwrap();
        check_runtime_config(&config("[llm_compute]\ntype = \"spin\"\n")).unwrap();
        let error = check_runtime_config(&config(
            "[llm_compute]\ntype = \"remote_http\"\nurl = \"http://127.0.0.1:1\"\n",
        ))
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("\"remote_http\"") && error.contains("`spin up`"),
            "{error}"
        );
    }

    #[test]
    fn errors_become_the_wit_variant_cases() {
        let Val::Result(Err(Some(error))) = LlmError::ModelNotSupported.into_val() else {
            panic!("an error result");
        };
        assert_eq!(*error, Val::Variant("model-not-supported".into(), None));
    }
}
