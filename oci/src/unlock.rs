//! A locked app made an app directory that `spinbench serve`, `compare` and
//! `spin up` all read: a Spin manifest (v2) written from the locked app, each
//! component's wasm under `wasm/<digest>.wasm` and its files under
//! `files/<n>/` (`n` its place in the locked app), mounted at the guest's
//! `/`, as Spin 4.0.2's OCI loader mounts them (spinframework/spin v4.0.2
//! `crates/oci/src/loader.rs`, `resolve_component_content_refs`, which names
//! that directory `assets/<component id>`: an id a registry wrote, made a
//! path; here no id is). Content is taken from the blobs by digest, each
//! checked, or from the locked app where it is inline.
//!
//! Before anything is written, every name is checked ([`boundary::names`]),
//! and everything is written beneath the directory through
//! [`boundary::AppDir`].
//!
//! Dependencies pushed uncomposed (`spin registry push --compose=false`) and
//! a trigger's middleware (Spin 4.1's `trigger_dependencies`) are written
//! back as `dependencies` on their component and trigger, each wasm by
//! digest, and composed when the app is served (`instance::compose`);
//! `*.spin.internal` service chaining (the `local_service_chaining` host
//! requirement) is served, as by the host for an app on disk. Everything
//! else is left to the manifest's own checks, as for an app on disk.

use crate::boundary::app_dir::{AppDir, Placed};
use crate::boundary::{self, RelativePath};
use crate::locked::{ContentRef, LockedApp, LockedComponent, LockedDependency, LockedInherit};
use crate::store::Blobs;
use anyhow::{Context, Result, bail, ensure};
use serde_json::{Map, Value};
use spinbench_host::manifest::Digest;
use std::path::Path;
use toml::Table;

/// The manifest in an app directory.
pub const MANIFEST_FILE: &str = "spin.toml";

/// What each `must_understand` entry asks, and whether spinbench meets it
/// (by meeting every host requirement it names, which [`check`] does).
const UNDERSTOOD: &[&str] = &["host_requirements", "component_host_requirements"];

/// Writes `app` into `dir` (which exists and is empty): `spin.toml`, `wasm/`, `files/`.
pub fn write_app(app: &LockedApp, blobs: &dyn Blobs, dir: &Path) -> Result<()> {
    boundary::names::check(app)?;
    check(app)?;
    let out = Out {
        dir: AppDir::open(dir)?,
        blobs,
        blobs_dir: blobs.dir()?,
    };
    let mut manifest = Table::new();
    manifest.insert("spin_manifest_version".into(), 2.into());
    manifest.insert("application".into(), application(app)?.into());
    if !app.variables.is_empty() {
        manifest.insert("variables".into(), variables(app).into());
    }
    let mut triggers = Table::new();
    for trigger in &app.triggers {
        let mut table: Table = toml_value(&trigger.trigger_config)?
            .try_into()
            .with_context(|| format!("trigger {:?}: its config is not a table", trigger.id))?;
        table.insert("id".into(), trigger.id.clone().into());
        triggers
            .entry(trigger.trigger_type.clone())
            .or_insert_with(|| toml::Value::Array(Vec::new()))
            .as_array_mut()
            .expect("an array")
            .push(table.into());
    }
    let mut components = Table::new();
    for (index, component) in app.components.iter().enumerate() {
        let table = out
            .component(index, component)
            .with_context(|| format!("component {:?}", component.id))?;
        components.insert(component.id.clone(), table.into());
        if let Some(list) = component.trigger_dependencies.get("middleware") {
            let middleware = list
                .iter()
                .map(|dependency| out.dependency(dependency, false))
                .collect::<Result<Vec<_>>>()
                .with_context(|| format!("component {:?}: middleware", component.id))?;
            add_middleware(&mut triggers, &component.id, &middleware);
        }
    }
    manifest.insert("trigger".into(), triggers.into());
    manifest.insert("component".into(), components.into());
    let text = format!(
        "# Written by spinbench from the locked app of a registry artifact.\n{}",
        toml::to_string(&manifest)?
    );
    if out
        .dir
        .write_new(&RelativePath::new(MANIFEST_FILE)?, text.as_bytes())?
        != Placed::New
    {
        bail!("{MANIFEST_FILE} was already written");
    }
    Ok(())
}

/// Refuses, in one line, what spinbench cannot serve of a locked app.
fn check(app: &LockedApp) -> Result<()> {
    if let Some(unknown) = app
        .must_understand
        .iter()
        .find(|field| !UNDERSTOOD.contains(&field.as_str()))
    {
        bail!("the app requires its host to understand {unknown:?}, which Spin 4.0.2 does not");
    }
    if let Some(trigger) = app
        .triggers
        .iter()
        .find(|t| !t.trigger_dependencies.is_empty())
    {
        bail!(
            "trigger {:?} carries its dependencies itself, where Spin 4.1 moves them to its component; push it again with Spin 4.1 or later",
            trigger.id
        );
    }
    Ok(())
}

/// `dependencies = { middleware = [...] }` on every HTTP trigger naming `id`.
fn add_middleware(triggers: &mut Table, id: &str, middleware: &[toml::Value]) {
    let Some(http) = triggers.get_mut("http").and_then(toml::Value::as_array_mut) else {
        return;
    };
    for trigger in http.iter_mut().filter_map(toml::Value::as_table_mut) {
        if trigger.get("component").and_then(toml::Value::as_str) == Some(id) {
            let mut dependencies = Table::new();
            dependencies.insert("middleware".into(), middleware.to_vec().into());
            trigger.insert("dependencies".into(), dependencies.into());
        }
    }
}

/// `[application]` from the locked app's metadata.
fn application(app: &LockedApp) -> Result<Table> {
    let mut table = Table::new();
    for key in ["name", "version", "description"] {
        if let Some(value) = app.metadata_str(key) {
            table.insert(key.into(), value.into());
        }
    }
    if !table.contains_key("name") {
        table.insert("name".into(), "app".into());
    }
    if let Some(authors) = app.metadata.get("authors") {
        table.insert("authors".into(), toml_value(authors)?);
    }
    let settings: Map<String, Value> = app
        .metadata
        .get("triggers")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let settings: Map<String, Value> = settings
        .into_iter()
        .filter(|(_, value)| value.as_object().is_some_and(|table| !table.is_empty()))
        .collect();
    if !settings.is_empty() {
        table.insert("trigger".into(), toml_value(&settings)?);
    }
    Ok(table)
}

/// `[variables]`: a locked variable without a default is a required one.
fn variables(app: &LockedApp) -> Table {
    let mut variables = Table::new();
    for (name, variable) in &app.variables {
        let mut table = Table::new();
        match &variable.default {
            Some(default) => table.insert("default".into(), default.clone().into()),
            None => table.insert("required".into(), true.into()),
        };
        if variable.secret {
            table.insert("secret".into(), true.into());
        }
        if let Some(description) = &variable.description {
            table.insert("description".into(), description.clone().into());
        }
        variables.insert(name.clone(), table.into());
    }
    variables
}

/// Where an app is being written, and the blobs it is written from.
struct Out<'a> {
    dir: AppDir,
    blobs: &'a dyn Blobs,
    blobs_dir: cap_std::fs::Dir,
}

impl Out<'_> {
    /// `[component.<id>]` of the `index`th component, its wasm and files written.
    fn component(&self, index: usize, component: &LockedComponent) -> Result<Table> {
        let mut table = Table::new();
        table.insert(
            "source".into(),
            self.wasm(&component.source.content)?.into(),
        );
        if let Some(description) = component.metadata.get("description") {
            table.insert("description".into(), toml_value(description)?);
        }
        for (key, metadata) in [
            ("allowed_outbound_hosts", "allowed_outbound_hosts"),
            ("key_value_stores", "key_value_stores"),
            ("sqlite_databases", "databases"),
            ("ai_models", "ai_models"),
        ] {
            let list = component.metadata_list(metadata);
            if !list.is_empty() {
                table.insert(key.into(), list.into());
            }
        }
        if !component.env.is_empty() {
            table.insert("environment".into(), toml_value(&component.env)?);
        }
        if !component.dependencies.is_empty() {
            let mut dependencies = Table::new();
            for (name, dependency) in &component.dependencies {
                let written = self
                    .dependency(dependency, true)
                    .with_context(|| format!("dependency {name:?}"))?;
                dependencies.insert(name.clone(), written);
            }
            table.insert("dependencies".into(), dependencies.into());
        }
        if !component.config.is_empty() {
            table.insert("variables".into(), toml_value(&component.config)?);
        }
        if !component.files.is_empty() {
            // By its place in the locked app, never by its id.
            let root = format!("files/{index}");
            self.dir.create_dirs(&RelativePath::new(&root)?)?;
            for file in &component.files {
                let place = format!(
                    "{root}/{}",
                    RelativePath::new(&file.path)?.as_path().display()
                );
                self.place(&file.content, &RelativePath::new(&place)?, Placed::New)
                    .with_context(|| format!("file {:?}", file.path))?;
            }
            let mut mount = Table::new();
            mount.insert("source".into(), root.into());
            mount.insert("destination".into(), "/".into());
            table.insert("files".into(), vec![toml::Value::Table(mount)].into());
        }
        Ok(table)
    }

    /// A locked dependency as a manifest's: its wasm placed by digest, its
    /// export (`with_export`: a component's dependency) and what it inherits.
    fn dependency(&self, dependency: &LockedDependency, with_export: bool) -> Result<toml::Value> {
        let wasm = self.wasm(&dependency.source.content)?;
        let mut table = Table::new();
        table.insert("path".into(), wasm.into());
        if with_export && let Some(export) = &dependency.export {
            table.insert("export".into(), export.clone().into());
        }
        let inherit = match &dependency.inherit {
            LockedInherit::All => toml::Value::Boolean(true),
            LockedInherit::Some(sets) => sets.clone().into(),
        };
        table.insert("inherit_configuration".into(), inherit);
        Ok(table.into())
    }

    /// Places wasm `content` at `wasm/<digest>.wasm`, shared by whatever
    /// names the same digest; its path in the app.
    fn wasm(&self, content: &ContentRef) -> Result<String> {
        let wasm = format!("wasm/{}.wasm", content_digest(content)?.hex());
        self.place(content, &RelativePath::new(&wasm)?, Placed::Existing)?;
        Ok(wasm)
    }

    /// Writes content at `target`: inline bytes (checked against the digest
    /// when one is given), else the blob of its digest, checked, hard-linked
    /// where it can be, copied where not. Finding `target` already there is
    /// what `existing` says it may be: `Existing` for wasm named by its
    /// digest (two components share it), `New` for a file, which the locked
    /// app lists once.
    fn place(&self, content: &ContentRef, target: &RelativePath, existing: Placed) -> Result<()> {
        let placed = if let Some(bytes) = &content.inline {
            if let Some(digest) = content.digest.as_deref().map(Digest::parse).transpose()? {
                let actual = Digest::of(bytes);
                ensure!(
                    actual == digest,
                    "inline content is {actual}, not its digest {digest}"
                );
            }
            self.dir.write_new(target, bytes)?
        } else {
            let Some(digest) = content.digest.as_deref() else {
                bail!("content has neither a digest nor inline bytes");
            };
            let digest = Digest::parse(digest)?;
            self.blobs.check(digest)?;
            self.dir.place(&self.blobs_dir, &digest.hex(), target)?
        };
        if placed == Placed::Existing && existing == Placed::New {
            bail!("{} is listed twice", target.as_path().display());
        }
        Ok(())
    }
}

/// The digest content is named by: its own, or that of its inline bytes.
fn content_digest(content: &ContentRef) -> Result<Digest> {
    match (&content.digest, &content.inline) {
        (Some(digest), _) => Digest::parse(digest),
        (None, Some(bytes)) => Ok(Digest::of(bytes)),
        (None, None) => bail!("content has neither a digest nor inline bytes"),
    }
}

/// A JSON value as TOML (objects become tables; nulls are dropped, TOML has none).
fn toml_value(value: &impl serde::Serialize) -> Result<toml::Value> {
    let json = strip_nulls(serde_json::to_value(value)?);
    Ok(toml::Value::try_from(json)?)
}

fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .filter(|v| !v.is_null())
                .map(strip_nulls)
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests;
