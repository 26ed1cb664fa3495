//! Spin's variables: application variables (`[variables]`, with a default or
//! `required`) and the component variables built from them (`[component.<id>.variables]`,
//! templates such as `"https://{{ api_host }}/users"`). A component reads only its
//! own component variables (spinframework/spin `crates/manifest/src/schema/v2.rs`:
//! application variables "are not available directly to components").
//!
//! Values come from `SPIN_VARIABLE_<NAME>` in the environment, else the default:
//! Spin's environment-variable provider, the one `spin up` uses without a
//! runtime config file (spinframework/spin `crates/variables-env/src/lib.rs`,
//! `DEFAULT_ENV_PREFIX`). Spin also reads a `.env` file; the runner does not.

use anyhow::{Result, bail};
use serde::Deserialize;
use std::collections::BTreeMap;

/// `[variables] <name> = { default = "...", required = false, secret = false, description = "..." }`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variable {
    pub description: Option<String>,
    #[serde(default)]
    pub required: bool,
    pub default: Option<String>,
    /// Spin keeps secret values out of its logs; the runner logs no values at
    /// all (a push keeps the flag in the locked app).
    #[serde(default)]
    pub secret: bool,
}

/// The prefix of the environment variables that set application variables.
const ENV_PREFIX: &str = "SPIN_VARIABLE_";

/// Spin's variable names are lower snake case (`LowerSnakeId`).
pub fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.ends_with('_')
        && !name.contains("__")
}

/// Checks the `[variables]` table as Spin does at load: valid names, and each
/// variable either required or given a default, not both.
pub fn validate(variables: &BTreeMap<String, Variable>) -> Result<()> {
    for (name, variable) in variables {
        if !is_valid_name(name) {
            bail!("variable {name:?}: names must be lower_snake_case");
        }
        match (variable.required, &variable.default) {
            (true, Some(_)) => bail!("variable {name:?} is both required and given a default"),
            (false, None) => bail!("variable {name:?} needs a default or `required = true`"),
            _ => {}
        }
    }
    Ok(())
}

/// The application variables' values: `SPIN_VARIABLE_<NAME>` from `env`, else the default.
pub fn application_values(
    variables: &BTreeMap<String, Variable>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, String>> {
    let mut values = BTreeMap::new();
    for (name, variable) in variables {
        let key = format!("{ENV_PREFIX}{}", name.to_ascii_uppercase());
        let Some(value) = env(&key).or_else(|| variable.default.clone()) else {
            bail!("variable {name:?} is required: set {key}");
        };
        values.insert(name.clone(), value);
    }
    Ok(values)
}

/// A component's variables, each template expanded over the application's values.
pub fn component_values(
    templates: &BTreeMap<String, String>,
    application: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>> {
    templates
        .iter()
        .map(|(name, template)| {
            if !is_valid_name(name) {
                bail!("variable {name:?}: names must be lower_snake_case");
            }
            Ok((name.clone(), expand(template, application)?))
        })
        .collect()
}

/// Replaces each `{{ name }}` with the application variable's value.
pub fn expand(template: &str, application: &BTreeMap<String, String>) -> Result<String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            bail!("{template:?}: `{{{{` without a closing `}}}}`");
        };
        let name = after[..end].trim();
        let Some(value) = application.get(name) else {
            bail!("{template:?} refers to {name:?}, which is not in [variables]");
        };
        out.push_str(value);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variable(default: Option<&str>, required: bool) -> Variable {
        Variable {
            description: None,
            required,
            default: default.map(str::to_string),
            secret: false,
        }
    }

    fn map<V: Clone>(entries: &[(&str, V)]) -> BTreeMap<String, V> {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn names_are_lower_snake_case() {
        for good in ["a", "api_host", "v2"] {
            assert!(is_valid_name(good), "{good}");
        }
        for bad in ["", "Api", "2x", "api-host", "a__b", "a_"] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_variable_is_required_or_has_a_default() {
        assert!(validate(&map(&[("a", variable(Some("x"), false))])).is_ok());
        assert!(validate(&map(&[("a", variable(None, true))])).is_ok());
        assert!(validate(&map(&[("a", variable(None, false))])).is_err());
        assert!(validate(&map(&[("a", variable(Some("x"), true))])).is_err());
        assert!(validate(&map(&[("A", variable(Some("x"), false))])).is_err());
    }

    #[test]
    fn environment_overrides_the_default() {
        let variables = map(&[("greeting", variable(Some("hi"), false))]);
        let none = application_values(&variables, |_| None).unwrap();
        assert_eq!(none["greeting"], "hi");
        let set = application_values(&variables, |key| {
            (key == "SPIN_VARIABLE_GREETING").then(|| "hello".to_string())
        })
        .unwrap();
        assert_eq!(set["greeting"], "hello");
    }

    #[test]
    fn a_required_variable_without_a_value_names_its_env_var() {
        let variables = map(&[("token", variable(None, true))]);
        let error = application_values(&variables, |_| None).unwrap_err();
        assert!(error.to_string().contains("SPIN_VARIABLE_TOKEN"), "{error}");
    }

    #[test]
    fn templates_expand_application_variables() {
        let app = map(&[("host", "example.com".to_string())]);
        let values = component_values(
            &map(&[
                ("url", "https://{{ host }}/users".to_string()),
                ("plain", "x".to_string()),
            ]),
            &app,
        )
        .unwrap();
        assert_eq!(values["url"], "https://example.com/users");
        assert_eq!(values["plain"], "x");
        assert!(component_values(&map(&[("u", "{{ nope }}".to_string())]), &app).is_err());
        assert!(component_values(&map(&[("u", "{{ host".to_string())]), &app).is_err());
    }
}
