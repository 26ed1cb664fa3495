//! What one component gets beyond the shared WASI linker: its variables
//! (Spin's `fermyon:spin/variables@2.0.0`, what spin-sdk 5's `variables::get`
//! imports) and its `environment`. Both are constant per component, so they are
//! host functions of the component's own copy of the linker, closing over its
//! values, rather than per-request store state.

use super::state::RequestState;
use crate::manifest::{Manifest, variables};
use anyhow::Result;
use std::collections::BTreeMap;
use std::sync::Arc;
use wasmtime::StoreContextMut;
use wasmtime::component::{Component, ComponentType, InstancePre, Lift, Linker, Lower};

/// Spin's variables interface, as spin-sdk 5.2 imports it (its `wit/deps/spin@2.0.0/variables.wit`).
pub const VARIABLES_V2: &str = "fermyon:spin/variables@2.0.0";
/// The WASI interface whose `get-environment` a component's environment answers.
const ENVIRONMENT: &str = "wasi:cli/environment@";

/// The `error` variant of Spin's variables interface.
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

/// One component's variables and environment, resolved at start.
#[derive(Debug, Clone, Default)]
pub struct GuestConfig {
    id: String,
    variables: Arc<BTreeMap<String, String>>,
    environment: Arc<Vec<(String, String)>>,
}

impl GuestConfig {
    /// The configuration of every component of `manifest`, application
    /// variables read from `SPIN_VARIABLE_<NAME>` or their defaults.
    pub fn all(manifest: &Manifest) -> Result<BTreeMap<String, GuestConfig>> {
        let application =
            variables::application_values(&manifest.variables, |key| std::env::var(key).ok())?;
        manifest
            .component
            .iter()
            .map(|(id, component)| {
                let values = variables::component_values(&component.variables, &application)
                    .map_err(|e| anyhow::anyhow!("component {id:?}: {e}"))?;
                let config = GuestConfig {
                    id: id.clone(),
                    variables: Arc::new(values),
                    environment: Arc::new(component.environment.clone().into_iter().collect()),
                };
                Ok::<_, anyhow::Error>((id.clone(), config))
            })
            .collect()
    }

    /// What `variables::get(name)` answers, as Spin answers it.
    pub fn variable(&self, name: &str) -> Result<String, VariableError> {
        if !variables::is_valid_name(name) {
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

    /// Pre-instantiates `component` with the shared `linker` plus what it
    /// imports of this configuration. Past `imports::first_unprovided`, only a
    /// finer mismatch (a function or type within an interface) fails here: it
    /// is reported in one line too.
    pub fn instantiate_pre(
        &self,
        linker: &Linker<RequestState>,
        component: &Component,
        imports: &[String],
    ) -> Result<InstancePre<RequestState>> {
        let mut linker = linker.clone();
        // This component's own definitions take precedence over the shared ones.
        linker.allow_shadowing(true);
        for import in imports {
            if import == VARIABLES_V2 {
                self.define_variables(&mut linker, import)?;
            } else if import.starts_with(ENVIRONMENT) && !self.environment.is_empty() {
                self.define_environment(&mut linker, import)?;
            }
        }
        linker.instantiate_pre(component).map_err(|e| {
            let reason = format!("{:#}", anyhow::Error::from(e)).replace('\n', " ");
            anyhow::anyhow!(
                "component {:?} cannot be linked ({reason}); `spin up` runs this app",
                self.id
            )
        })
    }

    fn define_variables(&self, linker: &mut Linker<RequestState>, name: &str) -> Result<()> {
        let config = self.clone();
        linker.instance(name)?.func_wrap(
            "get",
            move |_: StoreContextMut<'_, RequestState>, (name,): (String,)| {
                Ok((config.variable(&name),))
            },
        )?;
        Ok(())
    }

    /// The environment, with no arguments and no working directory, as the
    /// shared WASI context has (the function is `initial-cwd` in 0.2 and
    /// `get-initial-cwd` in 0.3; defining both is harmless).
    fn define_environment(&self, linker: &mut Linker<RequestState>, name: &str) -> Result<()> {
        let environment = self.environment.clone();
        let mut instance = linker.instance(name)?;
        instance.func_wrap(
            "get-environment",
            move |_: StoreContextMut<'_, RequestState>, (): ()| Ok((environment.to_vec(),)),
        )?;
        instance.func_wrap(
            "get-arguments",
            |_: StoreContextMut<'_, RequestState>, (): ()| Ok((Vec::<String>::new(),)),
        )?;
        for cwd in ["initial-cwd", "get-initial-cwd"] {
            instance.func_wrap(cwd, |_: StoreContextMut<'_, RequestState>, (): ()| {
                Ok((None::<String>,))
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(variables: &[(&str, &str)]) -> GuestConfig {
        GuestConfig {
            id: "c".into(),
            variables: Arc::new(
                variables
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            environment: Arc::default(),
        }
    }

    #[test]
    fn variables_answer_like_spin() {
        let config = config(&[("greeting", "hi")]);
        assert_eq!(config.variable("greeting"), Ok("hi".to_string()));
        assert!(matches!(
            config.variable("nope"),
            Err(VariableError::Undefined(_))
        ));
        assert!(matches!(
            config.variable("Not-Valid"),
            Err(VariableError::InvalidName(_))
        ));
    }
}
