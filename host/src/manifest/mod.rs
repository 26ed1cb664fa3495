//! The Spin manifest (v2), typed: every key of Spin's schema
//! (spinframework/spin `crates/manifest/src/schema/v2.rs` and `common.rs`), so
//! the manifest `spin new http-rust` writes is read as it is. Unknown keys are
//! still errors, as they are for Spin. Reading a key is not hosting it: `serve`
//! refuses, by name, what it cannot do the way `spin up` would ([`hosting`]).

pub mod component;
pub mod dependency;
pub mod digest;
pub mod hosting;
pub mod ids;
pub mod middleware;
pub mod one_component;
pub mod retain;
pub mod trigger;
pub mod variables;

pub use component::{Build, Component, Source};
pub use digest::Digest;

use anyhow::{Context, Result, bail};
use ids::IdKind;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use trigger::{HttpTrigger, Triggers};
use variables::Variable;

/// The only manifest format the runner reads (Spin 2.x and later).
const SUPPORTED_VERSION: u32 = 2;

/// The file `-f DIR` means, as for `spin up` and `spin build`.
pub const DEFAULT_FILE: &str = "spin.toml";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub spin_manifest_version: u32,
    pub application: Application,
    /// Application variables (`[variables]`), by name.
    #[serde(default)]
    pub variables: BTreeMap<String, Variable>,
    pub trigger: Triggers,
    /// Components by id (`[component.<id>]`), in id order.
    #[serde(default)]
    pub component: BTreeMap<String, Component>,
    /// Directory the manifest was read from; relative paths resolve against it.
    #[serde(skip)]
    pub dir: PathBuf,
}

/// `[application]`. Fields named `_x` are Spin's key `x`, checked for their
/// type and otherwise unused (for other tools); `description` and `authors`
/// are read by a push (they become the locked app's metadata).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Application {
    name: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub authors: Vec<String>,
    /// Deployment targets `spin build` checks the app against; the runner does not.
    #[serde(default, rename = "targets")]
    _targets: Vec<toml::Value>,
    /// `[application.trigger.<type>]`: settings for a trigger type (e.g. Redis' address).
    #[serde(default)]
    pub trigger: BTreeMap<String, toml::Table>,
    /// Settings for other tools; Spin ignores it, and so does the runner.
    #[serde(default, rename = "tool")]
    _tool: BTreeMap<String, toml::Table>,
}

impl Application {
    /// `[application] name`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `[application] version`, if given.
    pub fn version(&self) -> Option<&str> {
        (!self.version.is_empty()).then_some(self.version.as_str())
    }
}

impl Manifest {
    /// Reads, parses and validates the manifest at `path`.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading manifest {}", path.display()))?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::parse(&text, dir).with_context(|| format!("in manifest {}", path.display()))
    }

    /// [`Manifest::load`] of the app reduced to the components `retained`
    /// names (Spin's selective deployment, [`retain`]); all of it when empty.
    pub fn load_retaining(path: &Path, retained: &[String]) -> Result<Self> {
        if retained.is_empty() {
            return Self::load(path);
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading manifest {}", path.display()))?;
        let text = retain::retain(&text, retained).with_context(|| {
            format!(
                "in manifest {}: retaining only components {}",
                path.display(),
                retained.join(", ")
            )
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::parse(&text, dir).with_context(|| format!("in manifest {}", path.display()))
    }

    /// Parses and validates manifest text; relative paths will resolve against `dir`.
    pub fn parse(text: &str, dir: PathBuf) -> Result<Self> {
        let mut manifest: Manifest = toml::from_str(text).context("parsing TOML")?;
        manifest.dir = dir;
        manifest.validate()?;
        Ok(manifest)
    }

    fn validate(&self) -> Result<()> {
        if self.spin_manifest_version != SUPPORTED_VERSION {
            bail!(
                "spin_manifest_version is {}, only {SUPPORTED_VERSION} is supported",
                self.spin_manifest_version
            );
        }
        variables::validate(&self.variables)?;
        self.validate_names()?;
        for trigger in &self.trigger.http {
            if let trigger::RouteConfig::Private(route) = &trigger.route
                && !route.private
            {
                bail!(
                    "a [[trigger.http]] route must be a path or {{ private = true }}, not {{ private = false }}"
                );
            }
            if let Some(id) = trigger.component_id()
                && !self.component.contains_key(id)
            {
                bail!(
                    "a [[trigger.http]] names component {id:?}, which has no [component.{id}] table"
                );
            }
            match (&trigger.component, &trigger.static_response) {
                (Some(_), Some(_)) => bail!(
                    "a [[trigger.http]] has both `component` and `static_response`; it must have one"
                ),
                (None, None) => bail!(
                    "a [[trigger.http]] has neither `component` nor `static_response`; it must have one"
                ),
                _ => {}
            }
        }
        for trigger in &self.trigger.redis {
            if !self.component.contains_key(&trigger.component) {
                bail!(
                    "a [[trigger.redis]] names component {:?}, which has no [component.{}] table",
                    trigger.component,
                    trigger.component
                );
            }
        }
        Ok(())
    }

    /// Every name the app gives a part, by Spin's rules ([`ids`]): component
    /// ids, the ids triggers name, store and database labels, model names.
    fn validate_names(&self) -> Result<()> {
        for (id, component) in &self.component {
            ids::check(IdKind::Component, id)?;
            let in_component = |e: anyhow::Error| e.context(format!("in [component.{id}]"));
            for label in component
                .key_value_stores
                .iter()
                .chain(&component.sqlite_databases)
            {
                ids::check(IdKind::Label, label).map_err(in_component)?;
            }
            for model in &component.ai_models {
                ids::model_name(model).map_err(in_component)?;
            }
        }
        for id in self
            .trigger
            .http
            .iter()
            .filter_map(HttpTrigger::component_id)
        {
            ids::check(IdKind::Component, id).context("in a [[trigger.http]]")?;
        }
        Ok(())
    }

    /// The HTTP routes served: each non-private `[[trigger.http]]` naming a
    /// component by id or answering with a static response, in manifest order.
    pub fn http_routes(&self) -> Vec<HttpRoute> {
        self.trigger
            .http
            .iter()
            .filter_map(|trigger| {
                let target = match (&trigger.static_response, trigger.component_id()) {
                    (Some(response), _) => RouteTarget::Static(response.clone()),
                    (None, Some(id)) => RouteTarget::Component(id.to_string()),
                    (None, None) => return None,
                };
                Some(HttpRoute {
                    route: trigger.path()?.to_string(),
                    target,
                })
            })
            .collect()
    }

    /// `[application.trigger.http] base`: the path every route is under
    /// (Spin's default, `/`, when absent).
    pub fn http_base(&self) -> &str {
        self.application
            .trigger
            .get("http")
            .and_then(|settings| settings.get("base"))
            .and_then(toml::Value::as_str)
            .unwrap_or("/")
    }

    /// The components a `[[trigger.http]]` (private routes included) or a
    /// `[[trigger.redis]]` names, each once, HTTP first, in trigger order:
    /// what `spin up` loads (a component no trigger names is never
    /// instantiated, so it is not read either).
    pub fn triggered_components(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = Vec::new();
        let http = self
            .trigger
            .http
            .iter()
            .filter_map(HttpTrigger::component_id);
        let redis = self.trigger.redis.iter().map(|t| t.component.as_str());
        for id in http.chain(redis) {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        ids
    }

    /// Whether a `[[trigger.http]]` names component `id`.
    pub fn is_http_component(&self, id: &str) -> bool {
        self.trigger
            .http
            .iter()
            .any(|trigger| trigger.component_id() == Some(id))
    }

    /// Whether a `[[trigger.redis]]` names component `id`.
    pub fn is_redis_component(&self, id: &str) -> bool {
        self.trigger.redis.iter().any(|t| t.component == id)
    }

    /// Where a component's `.wasm` is: its local `source`, resolved against the
    /// manifest's directory (`None` for a URL or registry source).
    pub fn source_path(&self, component: &Component) -> Option<PathBuf> {
        match &component.source {
            Source::Local(path) => Some(self.dir.join(path)),
            Source::Remote { .. } | Source::Registry { .. } => None,
        }
    }

    /// The directory build commands run in (`.` when the manifest path has no parent).
    pub fn base_dir(&self) -> &Path {
        if self.dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.dir
        }
    }
}

/// One served route: what the router is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRoute {
    /// `/exact`, `/prefix/...` (trailing wildcard), `/users/:id` (named segments).
    pub route: String,
    pub target: RouteTarget,
}

/// What answers a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteTarget {
    /// The `[component.<id>]` of that id.
    Component(String),
    /// The host itself, without running a component.
    Static(trigger::StaticResponse),
}

impl HttpRoute {
    /// The component serving it, if a component does.
    pub fn component(&self) -> Option<&str> {
        match &self.target {
            RouteTarget::Component(id) => Some(id),
            RouteTarget::Static(_) => None,
        }
    }
}

/// The manifest `-f/--from` names, as `spin up` and `spin build` read it: a
/// manifest file, or a directory holding `spin.toml`.
pub fn resolve_path(from: &Path) -> PathBuf {
    if from.is_dir() {
        from.join(DEFAULT_FILE)
    } else {
        from.to_path_buf()
    }
}

#[cfg(test)]
mod tests;
