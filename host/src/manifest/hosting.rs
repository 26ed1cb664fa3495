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
            "spinbench serves HTTP triggers only",
        )?;
    }
    for (kind, settings) in &manifest.application.trigger {
        for (key, value) in settings {
            // `base` is the one HTTP trigger setting (Spin 4's `Metadata`).
            let base = kind == "http" && key == "base" && value.is_str();
            if !base {
                refuse(
                    &format!("[application.trigger.{kind}] {key}"),
                    "trigger settings are not implemented",
                )?;
            }
        }
    }
    for trigger in &manifest.trigger.http {
        check_trigger(trigger)?;
    }
    // As Spin, only what a trigger names is loaded: a component nothing
    // triggers may ask for anything.
    for id in manifest.triggered_components() {
        if let Some(component) = manifest.component.get(id) {
            check_component(id, component)?;
        }
    }
    Ok(())
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
    if let Some(name) = component.dependencies.keys().next() {
        refuse(
            &key(&format!("dependencies.{name:?}")),
            "components are not composed",
        )?;
    }
    Ok(())
}

fn refuse(what: &str, why: &str) -> Result<()> {
    bail!("{what} is not supported by spinbench serve ({why}); {USE_SPIN}")
}
