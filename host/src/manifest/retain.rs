//! Selective deployment: an app reduced to some of its components, as
//! `spin up --component-id <id>` (repeatable) and SpinKube's shim
//! (`SPIN_COMPONENTS_TO_RETAIN=a,b`) reduce it (spinframework/spin main at
//! 94a8fc8a: `crates/app/src/lib.rs` `retain_components`,
//! `crates/factor-outbound-networking/src/allowed_hosts.rs`
//! `validate_service_chaining_for_components`; containerd-shim-spin v0.25
//! calls the same two).
//!
//! - every id named must be a component of the app;
//! - a retained component whose trigger's component lists a chaining host of
//!   a component not retained (`http://other.spin.internal`), or the
//!   wildcard `http://*.spin.internal`, is refused, in Spin's words; a
//!   templated host is not checked (it is not resolved yet, as in Spin);
//! - what remains is every trigger, of any type, naming a retained
//!   component, the components those triggers name, and the components
//!   they use as dependencies or middleware (`{ component = "x" }`; Spin
//!   resolved those into sources before it reduces the app, so they stay).
//!
//! It works on the manifest's TOML, before it is parsed, so that the app
//! that is checked and served is the reduced one.

use super::component::Component;
use crate::capabilities::outbound_hosts::convert_allowed_http_hosts;
use crate::capabilities::service_chaining;
use anyhow::{Context, Result, bail};
use std::collections::BTreeSet;
use toml::{Table, Value};

/// Component ids from a comma-separated list (`SPIN_COMPONENTS_TO_RETAIN`),
/// blanks dropped.
pub fn parse_list(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .collect()
}

/// `text` (a v2 manifest) with only the triggers naming a component of
/// `retained`, and the components they name.
pub fn retain(text: &str, retained: &[String]) -> Result<String> {
    let mut doc: Table = toml::from_str(text).context("parsing TOML")?;
    let components = doc
        .get("component")
        .and_then(Value::as_table)
        .cloned()
        .unwrap_or_default();
    for id in retained {
        if !components.contains_key(id) {
            bail!("Specified component \"{id}\" not found in application");
        }
    }
    let mut triggers = doc
        .get("trigger")
        .and_then(Value::as_table)
        .cloned()
        .unwrap_or_default();
    let mut kept = BTreeSet::new();
    for (_, list) in &mut triggers {
        let Some(list) = list.as_array_mut() else {
            continue;
        };
        list.retain(|trigger| {
            trigger_component(trigger).is_some_and(|id| retained.iter().any(|r| r == id))
        });
        for trigger in list.iter() {
            if let Some(id) = trigger_component(trigger) {
                kept.insert(id.to_string());
            }
        }
    }
    for id in &kept {
        check_chaining(id, &components[id.as_str()], retained)?;
    }
    let used: Vec<String> = triggers
        .values()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|trigger| trigger.get("dependencies"))
        .chain(
            kept.iter()
                .filter_map(|id| components[id.as_str()].get("dependencies")),
        )
        .flat_map(component_dependencies)
        .collect();
    kept.extend(used);
    let components: Table = components
        .into_iter()
        .filter(|(id, _)| kept.contains(id))
        .collect();
    doc.insert("trigger".into(), Value::Table(triggers));
    doc.insert("component".into(), Value::Table(components));
    toml::to_string(&doc).context("writing TOML")
}

/// The ids `{ component = "x" }` entries of a `dependencies` table name, at
/// any depth (a trigger's `middleware = [...]` list or a component's table).
fn component_dependencies(table: &Value) -> Vec<String> {
    match table {
        Value::Table(entries) => match entries.get("component").and_then(Value::as_str) {
            Some(id) if entries.len() <= 3 => vec![id.to_string()],
            _ => entries.values().flat_map(component_dependencies).collect(),
        },
        Value::Array(items) => items.iter().flat_map(component_dependencies).collect(),
        _ => Vec::new(),
    }
}

/// The component id a trigger names (`component = "id"`).
fn trigger_component(trigger: &Value) -> Option<&str> {
    trigger.get("component").and_then(Value::as_str)
}

/// Spin's `validate_service_chaining_for_components` for one retained component.
fn check_chaining(id: &str, table: &Value, retained: &[String]) -> Result<()> {
    // A table that does not parse is refused later, where it is parsed whole.
    let Ok(component) = table.clone().try_into::<Component>() else {
        return Ok(());
    };
    let mut hosts = component.allowed_outbound_hosts.clone();
    hosts.extend(convert_allowed_http_hosts(&component.allowed_http_hosts).unwrap_or_default());
    for host in hosts {
        let Ok(uri) = host.parse::<http::Uri>() else {
            continue;
        };
        let Some(target) = uri.host().and_then(service_chaining::host_target) else {
            continue;
        };
        if retained.iter().any(|r| r == target) {
            continue;
        }
        if target == "*" {
            bail!(
                "Selected component '{id}' cannot use wildcard service chaining: allowed_outbound_hosts = [\"http://*.spin.internal\"]"
            );
        }
        bail!(
            "Selected component '{id}' cannot use service chaining to unselected component: allowed_outbound_hosts = [\"http://{target}.spin.internal\"]"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Manifest;

    /// Spin's own test app (`validate_service_chaining_for_components_fails`),
    /// with HTTP and Redis triggers.
    const APP: &str = r#"spin_manifest_version = 2
[application]
name = "test-app"
[[trigger.http]]
route = "/empty"
component = "empty"
[[trigger.redis]]
channel = "messages"
component = "another"
[[trigger.http]]
route = "/third"
component = "third"
[[trigger.http]]
route = "/static"
static_response = { body = "hi" }
[component.empty]
source = "empty.wasm"
allowed_outbound_hosts = ["http://another.spin.internal"]
[component.another]
source = "another.wasm"
[component.third]
source = "third.wasm"
allowed_outbound_hosts = ["http://*.spin.internal"]
[component.untriggered]
source = "untriggered.wasm"
"#;

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(ToString::to_string).collect()
    }

    fn kept(list: &[&str]) -> Manifest {
        Manifest::parse(&retain(APP, &ids(list)).unwrap(), "/app".into()).unwrap()
    }

    #[test]
    fn only_the_retained_components_and_their_triggers_remain() {
        let manifest = kept(&["another"]);
        assert_eq!(manifest.component.keys().collect::<Vec<_>>(), ["another"]);
        assert!(manifest.trigger.http.is_empty());
        assert_eq!(manifest.trigger.redis.len(), 1);
        let manifest = kept(&["empty", "another"]);
        assert_eq!(
            manifest.component.keys().collect::<Vec<_>>(),
            ["another", "empty"]
        );
        assert_eq!(manifest.http_routes().len(), 1);
        // A retained component no trigger names goes too, as in Spin.
        assert!(kept(&["untriggered"]).component.is_empty());
    }

    #[test]
    fn components_used_as_dependencies_or_middleware_stay() {
        let app =
            APP.replace(
                "route = \"/empty\"\n",
                "route = \"/empty\"\ndependencies.middleware = [{ component = \"untriggered\" }]\n",
            )
            .replace(
                "[component.empty]\n",
                "[component.empty]\ndependencies = { \"a:b/c\" = { component = \"lib\" } }\n",
            ) + "[component.lib]\nsource = \"lib.wasm\"\n";
        let kept = |list: &[&str]| {
            Manifest::parse(&retain(&app, &ids(list)).unwrap(), "/app".into()).unwrap()
        };
        let both = kept(&["empty", "another"]);
        assert!(both.component.contains_key("untriggered"));
        assert!(both.component.contains_key("lib"));
        assert!(!kept(&["another"]).component.contains_key("lib"));
    }

    #[test]
    fn chaining_to_a_component_left_out_is_refused_in_spins_words() {
        let error = retain(APP, &ids(&["empty"])).unwrap_err().to_string();
        assert_eq!(
            error,
            "Selected component 'empty' cannot use service chaining to unselected component: allowed_outbound_hosts = [\"http://another.spin.internal\"]"
        );
        let error = retain(APP, &ids(&["third", "another"]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "Selected component 'third' cannot use wildcard service chaining: allowed_outbound_hosts = [\"http://*.spin.internal\"]"
        );
        let error = retain(APP, &ids(&["nobody"])).unwrap_err().to_string();
        assert_eq!(
            error,
            "Specified component \"nobody\" not found in application"
        );
    }

    #[test]
    fn a_templated_chaining_host_is_not_checked() {
        let app = APP.replace(
            "http://another.spin.internal",
            "http://{{ host }}.spin.internal",
        );
        assert!(retain(&app, &ids(&["empty"])).is_ok());
    }

    #[test]
    fn the_list_is_comma_separated() {
        assert_eq!(parse_list(" a, b,,c "), ["a", "b", "c"]);
        assert!(parse_list("").is_empty());
    }
}
