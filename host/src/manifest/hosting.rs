//! What `spinbench serve` can host of a manifest, decided before anything is
//! loaded: the first key it cannot honour the way `spin up` would is refused
//! with one line naming it. Serving such an app differently from Spin (a
//! key-value store that is silently absent) would measure something else than
//! the user's app. `allowed_outbound_hosts` are parsed when the components'
//! contexts are built (`capabilities::outbound_hosts`): an invalid entry stops
//! the start there, naming it.
//!
//! `spinbench build` reads every key and refuses none: building is the same
//! whatever runs the app.

use super::Manifest;
use super::component::{Component, Source};
use super::dependency::{Dependency, DependencyName};
use super::digest::Digest;
use super::trigger::{ComponentRef, HttpTrigger};
use anyhow::{Result, bail};

/// The end of every refusal: what to use instead.
const USE_SPIN: &str = "`spin up` runs this app";

/// `Ok` if `serve` can host every key of `manifest`; otherwise the first one it
/// cannot, as a one-line error.
pub fn check(manifest: &Manifest) -> Result<()> {
    if let Some(kind) = manifest.trigger.other.keys().next() {
        refuse(
            &format!("[[trigger.{kind}]]"),
            "spinbench serves the HTTP and Redis triggers Spin builds in; other trigger types are Spin plugins",
        )?;
    }
    for (kind, settings) in &manifest.application.trigger {
        for (key, value) in settings {
            // `base` is the one HTTP trigger setting (Spin 4's `Metadata`),
            // `address` the one Redis trigger setting (its `TriggerMetadata`).
            let known = matches!(
                (kind.as_str(), key.as_str()),
                ("http", "base") | ("redis", "address")
            );
            if !(known && value.is_str()) {
                refuse(
                    &format!("[application.trigger.{kind}] {key}"),
                    "trigger settings are not implemented",
                )?;
            }
        }
    }
    for trigger in &manifest.trigger.http {
        check_trigger(trigger)?;
        check_middleware(manifest, trigger)?;
    }
    // As Spin, only what a trigger names is loaded: a component nothing
    // triggers may ask for anything.
    for id in manifest.triggered_components() {
        if let Some(component) = manifest.component.get(id) {
            check_component(id, component)?;
            check_dependencies(manifest, id, component)?;
        }
    }
    Ok(())
}

/// A component's dependencies: composed at load, but for a registry
/// package; Spin's own checks on the rest (`normalize.rs`).
fn check_dependencies(manifest: &Manifest, id: &str, component: &Component) -> Result<()> {
    let per_dependency = component
        .dependencies
        .values()
        .any(|d| d.inherit_configuration().is_some());
    if component.dependencies_inherit_configuration.is_some() && per_dependency {
        bail!(
            "Component `{id}` specifies both `dependencies_inherit_configuration` and per-dependency `inherit_configuration`. These are mutually exclusive; use one or the other."
        );
    }
    for (name, dependency) in &component.dependencies {
        DependencyName::parse(name)?;
        let key = format!("component {id:?}: `dependencies.{name:?}`");
        check_dependency_source(manifest, dependency, &key, id)?;
    }
    Ok(())
}

/// An HTTP trigger's `dependencies`: `middleware` only, each composed at load.
fn check_middleware(manifest: &Manifest, trigger: &HttpTrigger) -> Result<()> {
    for (kind, list) in &trigger.dependencies {
        if kind != "middleware" {
            bail!(
                "the HTTP trigger's only allowed trigger dependency is `middleware`, not `{kind}`"
            );
        }
        let place = trigger.path().unwrap_or("(private)");
        let key = format!("[[trigger.http]] route {place:?}: `dependencies.middleware`");
        for dependency in list {
            check_dependency_source(manifest, &dependency.as_dependency(), &key, &trigger.id)?;
        }
    }
    Ok(())
}

/// Refuses a registry package, and an app component that has resources or
/// permissions of its own (Spin's `ensure_is_acceptable_dependency`).
fn check_dependency_source(
    manifest: &Manifest,
    dependency: &Dependency,
    key: &str,
    depender: &str,
) -> Result<()> {
    match dependency {
        Dependency::Version(_) | Dependency::Package { .. } => refuse(
            key,
            "a registry package is found through wasm-pkg's registry configuration, which spinbench does not implement; give its `path` or `url` and `digest`",
        ),
        Dependency::Http { digest, .. } => Digest::parse(digest)
            .map(drop)
            .map_err(|error| anyhow::anyhow!("{key}: {error}")),
        Dependency::Local { .. } => Ok(()),
        Dependency::AppComponent { component, .. } => {
            let Some(depended_on) = manifest.component.get(component) else {
                bail!("dependency ID {component} does not exist");
            };
            let surprises = depended_on.grants_and_resources();
            if !surprises.is_empty() {
                bail!(
                    "Dependencies may not have their own resources or permissions. Component {component} cannot be used as a dependency of {depender} because it specifies: {}",
                    surprises.join(", ")
                );
            }
            if let Source::Registry { .. } = depended_on.source {
                refuse(key, "its component's source is a registry package")?;
            }
            Ok(())
        }
    }
}

fn check_trigger(trigger: &HttpTrigger) -> Result<()> {
    let mut place = match trigger.path() {
        Some(route) => format!("[[trigger.http]] route {route:?}"),
        None => "[[trigger.http]] with a private route".to_string(),
    };
    if !trigger.id.is_empty() {
        place = format!("{place} (id {:?})", trigger.id);
    }
    let key = |key: &str| format!("{place}: `{key}`");
    if !trigger.components.is_empty() {
        refuse(&key("components"), "reserved by Spin")?;
    }
    match &trigger.component {
        Some(ComponentRef::Id(_)) | None => Ok(()),
        Some(ComponentRef::Inline(inline)) => refuse(
            &key(&format!(
                "component = {{ source = {:?}, ... }}",
                inline.source
            )),
            "name a [component.<id>] table instead of an inline one",
        ),
    }
}

fn check_component(id: &str, component: &Component) -> Result<()> {
    let key = |key: &str| format!("component {id:?}: `{key}`");
    match &component.source {
        Source::Local(_) => {}
        // Fetched at load (`instance::remote_source`); a digest Spin would
        // refuse is refused here, before anything is fetched.
        Source::Remote { digest, .. } => {
            if let Err(error) = Digest::parse(digest) {
                bail!("{}: {error}", key("source"));
            }
        }
        Source::Registry {
            registry,
            package,
            version,
        } => refuse(
            &key(&format!(
                "source = {{ registry = {:?}, package = {package:?}, version = {version:?} }}",
                registry.as_deref().unwrap_or("default")
            )),
            "a package is found through wasm-pkg's registry configuration and its warg or OCI protocol, which spinbench does not implement; Spin 4.0.2 resolves it with wasm-pkg-client",
        )?,
    }
    Ok(())
}

fn refuse(what: &str, why: &str) -> Result<()> {
    bail!("{what} is not supported by spinbench serve ({why}); {USE_SPIN}")
}
