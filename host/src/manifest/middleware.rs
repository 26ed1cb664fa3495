//! A component routed by several HTTP triggers with different middleware is
//! a different composition per trigger: as Spin does (spinframework/spin
//! main at 94a8fc8a, `crates/loader/src/local/trigger_components.rs`,
//! `reassign_trigger_deps`), each trigger with middleware whose component
//! other triggers also name gets a copy of the component of its own,
//! `<component>-for-<trigger>`, which its middleware is composed into.

use super::Manifest;

/// `manifest` with each such trigger pointing at its own copy.
pub fn split(manifest: &Manifest) -> Manifest {
    let mut split = manifest.clone();
    let http = &manifest.trigger.http;
    for (index, trigger) in http.iter().enumerate() {
        let Some(id) = trigger.component_id() else {
            continue;
        };
        let shared = http.iter().filter(|t| t.component_id() == Some(id)).count() > 1;
        if !shared || trigger.dependencies.is_empty() {
            continue;
        }
        let label = if trigger.id.is_empty() {
            format!("http-trigger{}", index + 1)
        } else {
            trigger.id.clone()
        };
        let copy = format!("{id}-for-{label}");
        if let Some(component) = manifest.component.get(id) {
            split.component.insert(copy.clone(), component.clone());
            split.trigger.http[index].component = Some(super::trigger::ComponentRef::Id(copy));
        }
    }
    split
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_component_gets_a_copy_per_trigger_with_middleware() {
        let manifest = Manifest::parse(
            r#"spin_manifest_version = 2
[application]
name = "app"
[[trigger.http]]
route = "/plain"
component = "six"
[[trigger.http]]
route = "/mw"
component = "six"
dependencies.middleware = [{ path = "mw.wasm" }]
[[trigger.http]]
route = "/alone"
component = "four"
dependencies.middleware = [{ path = "mw.wasm" }]
[component.six]
source = "six.wasm"
[component.four]
source = "four.wasm"
"#,
            "/app".into(),
        )
        .unwrap();
        let split = split(&manifest);
        let targets: Vec<&str> = split
            .trigger
            .http
            .iter()
            .filter_map(|t| t.component_id())
            .collect();
        assert_eq!(targets, ["six", "six-for-http-trigger2", "four"]);
        assert!(split.component.contains_key("six-for-http-trigger2"));
    }
}
