//! A Spin manifest locked, as `spin registry push` locks it before pushing
//! (spinframework/spin v4.0.2 `crates/loader/src/local.rs`, `load_manifest`,
//! and `crates/manifest/src/normalize.rs`): every component (triggered or
//! not), its metadata, environment, variables and files resolved; triggers
//! given ids; the application's metadata. Content is left local here (the
//! component's bytes and each file's path): [`crate::artifact`] turns it into
//! layers and digests.

use crate::locked::{
    ContentRef, LockedApp, LockedComponent, LockedDependency, LockedInherit, LockedSource,
    LockedTrigger, MIDDLEWARE, Variable,
};
use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};
use spinbench_host::capabilities::{files, outbound_hosts};
use spinbench_host::instance::compose;
use spinbench_host::instance::remote_source;
use spinbench_host::manifest::component::{Build, Commands};
use spinbench_host::manifest::dependency::{Dependency, Inherited, TriggerDependency};
use spinbench_host::manifest::{Component, Digest, Manifest, Source};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What a component's locked content is made of, before it becomes layers.
pub struct LocalContent {
    pub wasm: Vec<u8>,
    /// Each dependency's wasm, by dependency name (left uncomposed, as
    /// `spin registry push --compose=false` leaves them).
    pub dependencies: BTreeMap<String, Vec<u8>>,
    /// Its trigger's middleware wasm, outermost first.
    pub middleware: Vec<Vec<u8>>,
    /// Each file's place below the guest's `/` and where it is read from,
    /// sorted by place (a later `files` entry for the same place wins, as
    /// Spin's copy overwrites).
    pub files: Vec<(String, PathBuf)>,
}

/// A manifest locked: the app, and its components' content in the same order.
pub struct Locked {
    pub app: LockedApp,
    pub content: Vec<LocalContent>,
}

/// Locks the manifest at `path`; `cache_dir` keeps `source = { url }` downloads.
pub fn lock(path: &Path, cache_dir: Option<&Path>) -> Result<Locked> {
    let manifest = Manifest::load(path)?;
    let text = std::fs::read_to_string(path)?;
    let raw: toml::Table = toml::from_str(&text)?;
    let (mut triggers, middleware) = locked_triggers(&raw)?;
    let mut components = Vec::new();
    let mut content = Vec::new();
    // In the manifest's order, as Spin's (ordered) map keeps them.
    let ids = raw
        .get("component")
        .and_then(toml::Value::as_table)
        .map(|table| table.keys().cloned().collect::<Vec<_>>())
        .unwrap_or_default();
    for id in ids {
        let component = &manifest.component[&id];
        let (locked, local) = lock_component(&manifest, &id, component, cache_dir)
            .with_context(|| format!("component {id:?}"))?;
        components.push(locked);
        content.push(local);
    }
    for (index, list) in middleware {
        lock_middleware(
            &manifest,
            &mut triggers[index],
            &list,
            &mut components,
            &mut content,
            cache_dir,
        )?;
    }
    let must_understand = if components.iter().any(|c| !c.host_requirements.is_empty()) {
        vec!["component_host_requirements".to_string()]
    } else {
        Vec::new()
    };
    let app = LockedApp {
        spin_lock_version: 0,
        must_understand,
        metadata: app_metadata(&manifest, &triggers),
        host_requirements: Map::new(),
        variables: manifest
            .variables
            .iter()
            .map(|(name, v)| {
                let variable = Variable {
                    description: v.description.clone(),
                    default: v.default.clone(),
                    secret: v.secret,
                };
                (name.clone(), variable)
            })
            .collect(),
        triggers,
        components,
    };
    Ok(Locked { app, content })
}

/// Spin's `locked_metadata`: name, version, description and authors when
/// given, each trigger type's application settings (`triggers`), and for a
/// single trigger type the same again with its `type` (`trigger`).
fn app_metadata(manifest: &Manifest, triggers: &[LockedTrigger]) -> Map<String, Value> {
    let application = &manifest.application;
    let mut metadata = Map::new();
    let mut string = |key: &str, value: &str| {
        if !value.is_empty() {
            metadata.insert(key.into(), value.into());
        }
    };
    string("name", application.name());
    string("version", application.version().unwrap_or_default());
    string("description", &application.description);
    if !application.authors.is_empty() {
        metadata.insert("authors".into(), json!(application.authors));
    }
    let settings: Map<String, Value> = application
        .trigger
        .iter()
        .map(|(kind, table)| (kind.clone(), toml_to_json(table)))
        .collect();
    let kinds: BTreeSet<&str> = triggers.iter().map(|t| t.trigger_type.as_str()).collect();
    if let [kind] = kinds.into_iter().collect::<Vec<_>>()[..] {
        let mut single = settings
            .get(kind)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        single.insert("type".into(), kind.into());
        metadata.insert("trigger".into(), Value::Object(single));
    }
    metadata.insert("triggers".into(), Value::Object(settings));
    metadata
}

/// Every `[[trigger.<type>]]` table, as written but for its `id` (given one
/// as Spin's `normalize_trigger_ids` gives it) and its `component` (an id).
/// The triggers, and each HTTP trigger's middleware by the trigger's index.
type Middleware = Vec<(usize, Vec<Dependency>)>;

fn locked_triggers(raw: &toml::Table) -> Result<(Vec<LockedTrigger>, Middleware)> {
    let Some(kinds) = raw.get("trigger").and_then(toml::Value::as_table) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut middleware = Vec::new();
    let mut taken: BTreeSet<String> = kinds
        .values()
        .filter_map(toml::Value::as_array)
        .flatten()
        .filter_map(|t| t.get("id").and_then(toml::Value::as_str))
        .map(str::to_string)
        .collect();
    let mut locked = Vec::new();
    for (kind, triggers) in kinds {
        let mut counter = 1;
        for trigger in triggers.as_array().into_iter().flatten() {
            let mut config = trigger.as_table().cloned().unwrap_or_default();
            let component = match config.get("component") {
                None => None,
                Some(toml::Value::String(id)) => Some(id.clone()),
                Some(_) => bail!(
                    "a [[trigger.{kind}]] has its component written inline; name a [component.<id>] table instead"
                ),
            };
            let id = match config
                .remove("id")
                .and_then(|id| id.as_str().map(str::to_string))
            {
                Some(id) if !id.is_empty() => id,
                _ => {
                    let natural = component.as_ref().map(|c| format!("{c}-{kind}-trigger"));
                    match natural.filter(|id| !taken.contains(id)) {
                        Some(id) => id,
                        None => loop {
                            let id = format!("{kind}-trigger{counter}");
                            counter += 1;
                            if !taken.contains(&id) {
                                break id;
                            }
                        },
                    }
                }
            };
            taken.insert(id.clone());
            // Spin moves a trigger's dependencies to its component.
            if let Some(dependencies) = config.remove("dependencies") {
                let mut tables: BTreeMap<
                    String,
                    Vec<spinbench_host::manifest::dependency::TriggerDependency>,
                > = dependencies
                    .try_into()
                    .context("a trigger's `dependencies`")?;
                if let Some(list) = tables.remove("middleware") {
                    middleware.push((
                        locked.len(),
                        list.iter().map(TriggerDependency::as_dependency).collect(),
                    ));
                }
            }
            locked.push(LockedTrigger {
                id,
                trigger_type: kind.clone(),
                trigger_config: toml_to_json(&config),
                trigger_dependencies: Map::new(),
            });
        }
    }
    Ok((locked, middleware))
}

/// Spin 4.1's `reassign_trigger_deps` for one trigger: its middleware on
/// its component, or on a copy of it (`<component>-for-<trigger>`) where
/// other triggers name the same component.
fn lock_middleware(
    manifest: &Manifest,
    trigger: &mut LockedTrigger,
    list: &[Dependency],
    components: &mut Vec<LockedComponent>,
    content: &mut Vec<LocalContent>,
    cache_dir: Option<&Path>,
) -> Result<()> {
    let Some(id) = trigger
        .trigger_config
        .get("component")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return Ok(());
    };
    let index = components
        .iter()
        .position(|c| c.id == id)
        .with_context(|| format!("trigger {:?} names no component", trigger.id))?;
    let shared = manifest
        .trigger
        .http
        .iter()
        .filter(|t| t.component_id() == Some(id.as_str()))
        .count()
        > 1;
    let index = if shared {
        let mut copy = components[index].clone();
        copy.id = format!("{id}-for-{}", trigger.id);
        trigger.trigger_config["component"] = copy.id.clone().into();
        let local = LocalContent {
            wasm: content[index].wasm.clone(),
            dependencies: content[index].dependencies.clone(),
            middleware: Vec::new(),
            files: content[index].files.clone(),
        };
        components.push(copy);
        content.push(local);
        components.len() - 1
    } else {
        index
    };
    let mut locked = Vec::new();
    for dependency in list {
        let bytes = compose::read(manifest, dependency, cache_dir)
            .with_context(|| format!("the middleware of trigger {:?}", trigger.id))?;
        content[index].middleware.push(bytes);
        locked.push(LockedDependency {
            source: placeholder_source(),
            export: None,
            inherit: locked_inherit(&Inherited::of(dependency.inherit_configuration(), None)),
        });
    }
    let component = &mut components[index];
    component
        .trigger_dependencies
        .insert("middleware".into(), locked);
    component
        .metadata
        .insert("resolve-trigger-dependencies-using".into(), "http".into());
    component
        .host_requirements
        .insert(MIDDLEWARE.into(), "required".into());
    Ok(())
}

/// A source whose content [`crate::artifact`] fills in.
fn placeholder_source() -> LockedSource {
    LockedSource {
        content_type: "application/wasm".into(),
        content: ContentRef::default(),
    }
}

fn locked_inherit(inherited: &Inherited) -> LockedInherit {
    match inherited {
        Inherited::All => LockedInherit::All,
        Inherited::Some(sets) => LockedInherit::Some(sets.clone()),
    }
}

fn lock_component(
    manifest: &Manifest,
    id: &str,
    component: &Component,
    cache_dir: Option<&Path>,
) -> Result<(LockedComponent, LocalContent)> {
    let mut dependencies = BTreeMap::new();
    let mut dependency_bytes = BTreeMap::new();
    for (name, dependency) in &component.dependencies {
        let bytes = compose::read(manifest, dependency, cache_dir)
            .with_context(|| format!("dependency {name:?}"))?;
        dependency_bytes.insert(name.clone(), bytes);
        let inherited = Inherited::of(
            dependency.inherit_configuration(),
            component.dependencies_inherit_configuration,
        );
        dependencies.insert(
            name.clone(),
            LockedDependency {
                source: placeholder_source(),
                export: dependency.export().map(str::to_string),
                inherit: locked_inherit(&inherited),
            },
        );
    }
    let wasm = match &component.source {
        Source::Local(_) => {
            let path = manifest.source_path(component).expect("a local source");
            std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?
        }
        Source::Remote { url, digest } => {
            remote_source::fetch(url, Digest::parse(digest)?, cache_dir)?.wasm
        }
        Source::Registry { package, .. } => bail!(
            "its source is the package {package:?} of a component registry, which spinbench does not read; `spin registry push` resolves it"
        ),
    };
    // Spin's `validate::ensure_wasms`.
    if !wasmparser::Parser::is_component(&wasm) && !wasmparser::Parser::is_core_wasm(&wasm) {
        bail!("its source is not a valid .wasm file");
    }
    let mut allowed_outbound_hosts = component.allowed_outbound_hosts.clone();
    allowed_outbound_hosts.extend(outbound_hosts::convert_allowed_http_hosts(
        &component.allowed_http_hosts,
    )?);
    let mut metadata = Map::new();
    if !component.description.is_empty() {
        metadata.insert("description".into(), component.description.clone().into());
    }
    for (key, list) in [
        ("allowed_outbound_hosts", &allowed_outbound_hosts),
        ("key_value_stores", &component.key_value_stores),
        ("databases", &component.sqlite_databases),
        ("ai_models", &component.ai_models),
    ] {
        if !list.is_empty() {
            metadata.insert(key.into(), json!(list));
        }
    }
    if let Some(build) = &component.build {
        metadata.insert("build".into(), build_json(build));
    }
    let mut host_requirements = Map::new();
    // Spin's `requires_service_chaining`: a `*.spin.internal` host allowed.
    if allowed_outbound_hosts
        .iter()
        .any(|host| host.contains(".spin.internal"))
    {
        host_requirements.insert(crate::locked::SERVICE_CHAINING.into(), "required".into());
    }
    let locked = LockedComponent {
        id: id.to_string(),
        metadata,
        source: LockedSource {
            content_type: "application/wasm".into(),
            content: ContentRef::default(),
        },
        env: component.environment.clone(),
        files: Vec::new(),
        config: component.variables.clone(),
        dependencies,
        trigger_dependencies: BTreeMap::new(),
        host_requirements,
    };
    let files = component_files(manifest, component)?;
    Ok((
        locked,
        LocalContent {
            wasm,
            dependencies: dependency_bytes,
            middleware: Vec::new(),
            files,
        },
    ))
}

/// The files a component's `files` entries name, resolved as `serve`
/// resolves them (`capabilities::files`), one per place.
fn component_files(manifest: &Manifest, component: &Component) -> Result<Vec<(String, PathBuf)>> {
    if component.files.is_empty() {
        return Ok(Vec::new());
    }
    // The app's directory is the boundary, as for `serve` without `--files-root`.
    let boundary = files::Boundary::new(manifest.base_dir(), None)?;
    let mut places = BTreeMap::new();
    for entry in files::resolve(&boundary, &component.files, &component.exclude_files)? {
        if let files::Entry::File {
            source,
            destination,
            ..
        } = entry
        {
            let place = destination
                .components()
                .map(|part| part.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            places.insert(place, source);
        }
    }
    Ok(places.into_iter().collect())
}

/// `[component.<id>.build]` as Spin serializes its `ComponentBuildConfig`.
fn build_json(build: &Build) -> Value {
    let mut table = Map::new();
    table.insert(
        "command".into(),
        match &build.command {
            Commands::Single(command) => json!(command),
            Commands::Multiple(commands) => json!(commands),
        },
    );
    if let Some(workdir) = &build.workdir {
        table.insert("workdir".into(), json!(workdir));
    }
    if !build.watch.is_empty() {
        table.insert("watch".into(), json!(build.watch));
    }
    Value::Object(table)
}

/// A TOML table as JSON (dates become their text, as Spin's `try_into` does).
pub fn toml_to_json(table: &toml::Table) -> Value {
    serde_json::to_value(table).unwrap_or(Value::Null)
}
