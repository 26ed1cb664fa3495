//! A component's variables, under each name Spin serves them: Spin 2's
//! `fermyon:spin/variables@2.0.0` (spin-sdk 2 to 5), Spin 4's async
//! `spin:variables/variables@3.0.0` (spin-sdk 6 and 7), Spin 1's
//! `fermyon:spin/config`, and `wasi:config/store`. One lookup answers them all,
//! each in its interface's own error type, mapped as Spin maps them
//! (spinframework/spin `crates/factor-variables/src/host.rs`).
//!
//! The values are the component's `[component.<id>.variables]`, templates
//! expanded over the application's variables at start.

use super::{ComponentContext, HostState};
use crate::manifest::variables::is_valid_name;
use anyhow::Result;
use wasmtime::StoreContextMut;
use wasmtime::component::{Accessor, ComponentType, Lift, Linker, Lower};

pub const V2: &str = "fermyon:spin/variables@2.0.0";
pub const V3: &str = "spin:variables/variables@3.0.0";
pub const CONFIG_V1: &str = "fermyon:spin/config";
pub const WASI_CONFIG: &str = "wasi:config/store@0.2.0-draft-2024-09-27";

/// The `error` variant of `fermyon:spin/variables@2.0.0` and of
/// `spin:variables/variables@3.0.0` (the same cases in both).
#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq, Eq)]
#[component(variant)]
pub enum VariableError {
    #[component(name = "invalid-name")]
    InvalidName(String),
    #[component(name = "undefined")]
    Undefined(String),
    #[component(name = "provider")]
    Provider(String),
    #[component(name = "other")]
    Other(String),
}

/// The `error` variant of Spin 1's `fermyon:spin/config`.
#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq, Eq)]
#[component(variant)]
pub enum ConfigError {
    #[component(name = "provider")]
    Provider(String),
    #[component(name = "invalid-key")]
    InvalidKey(String),
    #[component(name = "invalid-schema")]
    InvalidSchema(String),
    #[component(name = "other")]
    Other(String),
}

/// The `error` variant of `wasi:config/store`.
#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq, Eq)]
#[component(variant)]
pub enum WasiConfigError {
    #[component(name = "upstream")]
    Upstream(String),
    #[component(name = "io")]
    Io(String),
}

impl ComponentContext {
    /// What `variables.get(name)` answers, as Spin answers it.
    pub fn variable(&self, name: &str) -> Result<String, VariableError> {
        if !is_valid_name(name) {
            return Err(VariableError::InvalidName(format!(
                "{name:?}: variable names are lower_snake_case"
            )));
        }
        self.variables.get(name).cloned().ok_or_else(|| {
            VariableError::Undefined(format!(
                "no variable {name:?} in [component.{}.variables]",
                self.id
            ))
        })
    }
}

/// Spin 1's errors for the same lookup.
fn config_value(context: &ComponentContext, key: &str) -> Result<String, ConfigError> {
    context.variable(key).map_err(|error| match error {
        VariableError::InvalidName(message) => ConfigError::InvalidKey(message),
        VariableError::Undefined(message) => ConfigError::Provider(message),
        other => ConfigError::Other(format!("{other:?}")),
    })
}

/// `wasi:config`'s answer: an undefined or invalid name is no value, not an error.
fn wasi_config_value(context: &ComponentContext, key: &str) -> Option<String> {
    context.variable(key).ok()
}

pub fn link_v2<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    linker.instance(V2)?.func_wrap(
        "get",
        |store: StoreContextMut<'_, T>, (name,): (String,)| {
            Ok((store.data().context().variable(&name),))
        },
    )?;
    Ok(())
}

pub fn link_v3<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    linker.instance(V3)?.func_wrap_concurrent(
        "get",
        |accessor: &Accessor<T>, (name,): (String,)| {
            Box::pin(async move {
                Ok((accessor.with(|mut access| access.get().context().variable(&name)),))
            })
        },
    )?;
    Ok(())
}

pub fn link_config_v1<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    linker.instance(CONFIG_V1)?.func_wrap(
        "get-config",
        |store: StoreContextMut<'_, T>, (key,): (String,)| {
            Ok((config_value(store.data().context(), &key),))
        },
    )?;
    Ok(())
}

pub fn link_wasi_config<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    let mut store = linker.instance(WASI_CONFIG)?;
    store.func_wrap("get", |store: StoreContextMut<'_, T>, (key,): (String,)| {
        Ok((Ok::<_, WasiConfigError>(wasi_config_value(
            store.data().context(),
            &key,
        )),))
    })?;
    store.func_wrap("get-all", |store: StoreContextMut<'_, T>, (): ()| {
        let all: Vec<(String, String)> = store
            .data()
            .context()
            .variables
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok((Ok::<_, WasiConfigError>(all),))
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_answer_like_spin() {
        let context = ComponentContext::for_test("c", &[("greeting", "hi")]);
        assert_eq!(context.variable("greeting"), Ok("hi".to_string()));
        assert!(matches!(
            context.variable("nope"),
            Err(VariableError::Undefined(_))
        ));
        assert!(matches!(
            context.variable("Not-Valid"),
            Err(VariableError::InvalidName(_))
        ));
    }

    #[test]
    fn spin_1_and_wasi_config_map_the_errors_as_spin_does() {
        let context = ComponentContext::for_test("c", &[("greeting", "hi")]);
        assert_eq!(config_value(&context, "greeting"), Ok("hi".into()));
        assert!(matches!(
            config_value(&context, "nope"),
            Err(ConfigError::Provider(_))
        ));
        assert!(matches!(
            config_value(&context, "Bad"),
            Err(ConfigError::InvalidKey(_))
        ));
        assert_eq!(wasi_config_value(&context, "greeting"), Some("hi".into()));
        assert_eq!(wasi_config_value(&context, "nope"), None);
        assert_eq!(wasi_config_value(&context, "Bad"), None);
    }
}
