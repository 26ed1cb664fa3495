//! Component dependencies and HTTP middleware composed into the component at
//! load, as Spin composes them, with `wac-graph`, the crate Spin composes
//! with (spinframework/spin main at 94a8fc8a: `crates/compose/src/lib.rs`,
//! `crates/trigger-http/src/middleware.rs`, `crates/capabilities`):
//!
//! - each `[component.x.dependencies]` entry satisfies the imports of `x`
//!   its name matches (`a:b/c@1.0.0`, `a:b/c`, `a:b`, `a:b@1.0.0`, or a plain
//!   name), with the dependency's export of the same name (or `export`), its
//!   type checked to be a subtype of the import's; an entry matching no
//!   import, or two entries matching one import, is refused in Spin's words;
//! - an HTTP trigger's `dependencies.middleware` list chains components that
//!   import and export `wasi:http/handler@0.3.0` in front of the route's
//!   component, outermost first;
//! - a dependency or middleware gets none of its parent's grants unless it
//!   inherits them (`inherit_configuration`): its imports of each capability
//!   set not inherited are renamed into a namespace of their own
//!   ([`DENIED_NAMESPACE`]) before composition, so they can never meet the
//!   parent's grants, and every function of them traps when called. Spin
//!   plugs them with a component of trapping or failing exports instead;
//!   the effect a dependency sees is the same denial, as a trap.
//!
//! A dependency is read from a `path` (relative to the manifest), a `url`
//! with its `digest` (fetched and kept by digest, as a `source` is), or
//! another component's source; a core module is componentized first. The
//! composed bytes are what is compiled, so the compiled-code cache keeps the
//! composition like any component.

use super::prepare;
use super::remote_source;
use crate::manifest::dependency::{Dependency, DependencyName, Inherited, TriggerDependency};
use crate::manifest::{Component, Digest, Manifest, Source};
use anyhow::{Context, Result, anyhow, bail};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use wac_graph::types::{Package, SubtypeChecker};
use wac_graph::{CompositionGraph, EncodeOptions, NodeId};

/// Where imports of capabilities a dependency does not inherit are renamed:
/// `spinbench-denied:wasi-cli/environment@0.2.6` for `wasi:cli/environment@0.2.6`.
pub const DENIED_NAMESPACE: &str = "spinbench-denied";

/// The interface middleware is chained through.
const MIDDLEWARE_HANDLER: &str = "wasi:http/handler@0.3.0";

/// Spin's capability sets (`crates/capabilities/src/lib.rs`), by package and
/// interface: every version of each is denied. WASIp3's `wasi:sockets/types`
/// (its TCP and UDP) is denied with the outbound hosts too, which Spin's
/// list leaves out.
const CAPABILITY_SETS: &[(&str, &[&str])] = &[
    ("ai_models", &["fermyon:spin/llm"]),
    (
        "allowed_outbound_hosts",
        &[
            "fermyon:spin/http",
            "fermyon:spin/mysql",
            "fermyon:spin/postgres",
            "fermyon:spin/redis",
            "fermyon:spin/mqtt",
            "spin:mqtt/mqtt",
            "spin:mysql/mysql",
            "spin:postgres/postgres",
            "spin:redis/redis",
            "wasi:http/client",
            "wasi:http/outgoing-handler",
            "wasi:sockets/ip-name-lookup",
            "wasi:sockets/tcp-create-socket",
            "wasi:sockets/tcp",
            "wasi:sockets/udp-create-socket",
            "wasi:sockets/udp",
            "wasi:sockets/types",
        ],
    ),
    ("environment", &["wasi:cli/environment"]),
    ("files", &["wasi:filesystem/preopens"]),
    (
        "key_value_stores",
        &[
            "fermyon:spin/key-value",
            "spin:key-value/key-value",
            "wasi:keyvalue/store",
        ],
    ),
    (
        "sqlite_databases",
        &["fermyon:spin/sqlite", "spin:sqlite/sqlite"],
    ),
    (
        "variables",
        &[
            "fermyon:spin/config",
            "fermyon:spin/variables",
            "spin:variables/variables",
            "wasi:config/store",
        ],
    ),
];

/// Whether an import was renamed out of reach ([`deny`]).
pub fn is_denied(import: &str) -> bool {
    import
        .strip_prefix(DENIED_NAMESPACE)
        .is_some_and(|rest| rest.starts_with(':'))
}

/// The capability set an import belongs to, if any.
fn capability_set(import: &str) -> Option<&'static str> {
    let path = import.split_once('@').map_or(import, |(path, _)| path);
    CAPABILITY_SETS
        .iter()
        .find(|(_, interfaces)| interfaces.contains(&path))
        .map(|(set, _)| *set)
}

/// `component` with every import of a capability set it does not inherit
/// renamed into [`DENIED_NAMESPACE`].
pub fn deny(component: &[u8], inherited: &Inherited) -> Result<Vec<u8>> {
    let renames: HashMap<String, String> = prepare::imports_of(component)?
        .into_iter()
        .filter(|import| {
            capability_set(import).is_some_and(|set| match inherited {
                Inherited::All => false,
                Inherited::Some(sets) => !sets.iter().any(|s| s == set),
            })
        })
        .map(|import| {
            let (package, rest) = import.split_once('/').unwrap_or((&import, ""));
            let denied = format!("{DENIED_NAMESPACE}:{}/{rest}", package.replace(':', "-"));
            (import, denied)
        })
        .collect();
    if renames.is_empty() {
        return Ok(component.to_vec());
    }
    prepare::rename_imports(component, &renames)
}

/// One dependency, read and ready to compose.
struct Resolved {
    name: String,
    bytes: Vec<u8>,
    export: Option<String>,
}

/// Component `id`'s bytes (`wasm`, read from its source) with its
/// dependencies and the middleware of the HTTP trigger naming it composed
/// in; `None` when it has neither.
pub fn for_component(
    manifest: &Manifest,
    id: &str,
    wasm: &[u8],
    cache_dir: Option<&Path>,
) -> Result<Option<Vec<u8>>> {
    let component = manifest
        .component
        .get(id)
        .ok_or_else(|| anyhow!("no [component.{id}] in the manifest"))?;
    let middleware: Vec<&TriggerDependency> = manifest
        .trigger
        .http
        .iter()
        .filter(|trigger| trigger.component_id() == Some(id))
        .flat_map(|trigger| trigger.dependencies.get("middleware").into_iter().flatten())
        .collect();
    if component.dependencies.is_empty() && middleware.is_empty() {
        return Ok(None);
    }
    let mut composed = prepare::componentized(wasm)?.into_owned();
    if !component.dependencies.is_empty() {
        let resolved = component
            .dependencies
            .iter()
            .map(|(name, dependency)| {
                let inherited = Inherited::of(
                    dependency.inherit_configuration(),
                    component.dependencies_inherit_configuration,
                );
                let bytes = read(manifest, dependency, cache_dir)
                    .and_then(|bytes| deny(&bytes, &inherited))
                    .with_context(|| format!("component {id:?}: dependency {name:?}"))?;
                Ok(Resolved {
                    name: name.clone(),
                    bytes,
                    export: dependency.export().map(str::to_string),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        composed = compose(&composed, id, &resolved)?;
    }
    if !middleware.is_empty() {
        let layers = middleware
            .iter()
            .map(|entry| {
                let dependency = entry.as_dependency();
                let inherited = Inherited::of(dependency.inherit_configuration(), None);
                read(manifest, &dependency, cache_dir)
                    .and_then(|bytes| deny(&bytes, &inherited))
                    .with_context(|| format!("middleware of component {id:?}"))
            })
            .collect::<Result<Vec<_>>>()?;
        composed = chain(composed, &layers)
            .with_context(|| format!("chaining the middleware of component {id:?}"))?;
    }
    Ok(Some(composed))
}

/// A dependency's bytes, componentized (also what a push locks).
pub fn read(
    manifest: &Manifest,
    dependency: &Dependency,
    cache_dir: Option<&Path>,
) -> Result<Vec<u8>> {
    let bytes = match dependency {
        Dependency::Local { path, .. } => {
            let path = manifest.base_dir().join(path);
            std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?
        }
        Dependency::Http { url, digest, .. } => {
            remote_source::fetch(url, Digest::parse(digest)?, cache_dir)?.wasm
        }
        Dependency::AppComponent { component, .. } => {
            let other: &Component = manifest
                .component
                .get(component)
                .ok_or_else(|| anyhow!("dependency ID {component} does not exist"))?;
            match &other.source {
                Source::Local(_) => {
                    let path = manifest.source_path(other).expect("a local source");
                    std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?
                }
                Source::Remote { url, digest } => {
                    remote_source::fetch(url, Digest::parse(digest)?, cache_dir)?.wasm
                }
                Source::Registry { .. } => bail!("component {component:?} is a registry package"),
            }
        }
        // `hosting` refused these before anything was read.
        Dependency::Version(_) | Dependency::Package { .. } => {
            bail!("a registry package cannot be composed by spinbench")
        }
    };
    Ok(prepare::componentized(&bytes)?.into_owned())
}

/// Spin's `Composer::compose`: the dependencies plugged into `primary`'s
/// imports, every export of `primary` exported.
fn compose(primary: &[u8], id: &str, dependencies: &[Resolved]) -> Result<Vec<u8>> {
    let mut graph = CompositionGraph::new();
    let package = Package::from_bytes(id, None, primary.to_vec(), graph.types_mut())
        .with_context(|| format!("component {id:?}"))?;
    let world = package.ty();
    let root = graph.register_package(package)?;
    let instance = graph.instantiate(root);
    let imports: Vec<String> = graph.types()[world].imports.keys().cloned().collect();
    // Import name → the dependency satisfying it.
    let mut plugged: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (index, dependency) in dependencies.iter().enumerate() {
        let name = DependencyName::parse(&dependency.name)?;
        let matched: Vec<&String> = imports.iter().filter(|i| name.matches_import(i)).collect();
        if matched.is_empty() {
            bail!(
                "dependency '{}' doesn't match any imports of component '{id}'",
                dependency.name
            );
        }
        for import in matched {
            plugged.entry(import.clone()).or_default().push(index);
        }
    }
    if let Some((import, conflicting)) = plugged.iter().find(|(_, by)| by.len() > 1) {
        let names: Vec<&str> = conflicting
            .iter()
            .map(|&i| dependencies[i].name.as_str())
            .collect();
        bail!(
            "component '{id}' has dependency conflicts: import '{import}' satisfied by dependencies: '{}'",
            names.join(", ")
        );
    }
    let mut instances: BTreeMap<usize, (NodeId, wac_graph::types::WorldId)> = BTreeMap::new();
    let mut cache = std::collections::HashSet::default();
    for (import, by) in &plugged {
        let index = by[0];
        let dependency = &dependencies[index];
        let (node, dep_world) = if let Some(known) = instances.get(&index) {
            *known
        } else {
            let package = Package::from_bytes(
                &package_name(&dependency.name),
                None,
                dependency.bytes.clone(),
                graph.types_mut(),
            )
            .with_context(|| format!("dependency {:?}", dependency.name))?;
            let dep_world = package.ty();
            let registered = graph.register_package(package)?;
            let node = graph.instantiate(registered);
            instances.insert(index, (node, dep_world));
            (node, dep_world)
        };
        let export = dependency.export.clone().unwrap_or_else(|| import.clone());
        let Some(export_ty) = graph.types()[dep_world].exports.get(&export).copied() else {
            bail!(
                "dependency '{}' doesn't export '{export}' to satisfy import '{import}'",
                dependency.name
            );
        };
        let import_ty = graph.types()[world].imports[import];
        SubtypeChecker::new(&mut cache)
            .is_subtype(export_ty, graph.types(), import_ty, graph.types())
            .with_context(|| {
                format!(
                    "dependency '{}' exports '{export}' which is not compatible with import '{import}'",
                    dependency.name
                )
            })?;
        let alias = graph.alias_instance_export(node, &export)?;
        graph.set_instantiation_argument(instance, import, alias)?;
    }
    let exports: Vec<String> = graph.types()[world].exports.keys().cloned().collect();
    for export in exports {
        let alias = graph.alias_instance_export(instance, &export)?;
        graph.export(alias, &export)?;
    }
    Ok(graph.encode(EncodeOptions::default())?)
}

/// Spin's `compose_middlewares`: `layers` (outermost first) in front of
/// `primary`, each one's `wasi:http/handler@0.3.0` import given the next
/// one's export, the outermost's exported.
fn chain(primary: Vec<u8>, layers: &[Vec<u8>]) -> Result<Vec<u8>> {
    let mut graph = CompositionGraph::new();
    let mut packages = Vec::new();
    for (index, bytes) in layers.iter().enumerate() {
        let package = Package::from_bytes(
            &format!("middleware{index}"),
            None,
            bytes.clone(),
            graph.types_mut(),
        )
        .context("parsing a middleware component")?;
        packages.push(graph.register_package(package)?);
    }
    let package = Package::from_bytes("primary", None, primary, graph.types_mut())
        .context("parsing the route's component")?;
    packages.push(graph.register_package(package)?);
    let mut packages = packages.into_iter().rev();
    let innermost = packages.next().expect("the primary");
    let mut instance = graph.instantiate(innermost);
    let mut handler = graph
        .alias_instance_export(instance, MIDDLEWARE_HANDLER)
        .with_context(|| format!("the route's component must export {MIDDLEWARE_HANDLER}"))?;
    for package in packages {
        instance = graph.instantiate(package);
        graph
            .set_instantiation_argument(instance, MIDDLEWARE_HANDLER, handler)
            .with_context(|| format!("a middleware must import {MIDDLEWARE_HANDLER}"))?;
        handler = graph
            .alias_instance_export(instance, MIDDLEWARE_HANDLER)
            .with_context(|| format!("a middleware must export {MIDDLEWARE_HANDLER}"))?;
    }
    graph.export(handler, MIDDLEWARE_HANDLER)?;
    Ok(graph.encode(EncodeOptions::default())?)
}

/// A package name wac accepts for a dependency's name (`a:b/c@1.0.0` → `a:b`).
fn package_name(name: &str) -> String {
    let path = name.split_once('@').map_or(name, |(path, _)| path);
    path.split_once('/')
        .map_or(path, |(package, _)| package)
        .to_string()
}

#[cfg(test)]
mod tests;
