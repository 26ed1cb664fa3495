//! The Spin manifest (v2), typed: exactly the fields `spin.toml` uses.
//!
//! Every table denies unknown keys, so a manifest using a Spin feature the runner
//! does not implement (variables, key-value stores, other triggers, ...) fails at
//! load instead of being silently served differently from `spin up`.

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The only manifest format the runner reads (Spin 2.x and later).
const SUPPORTED_VERSION: u32 = 2;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub spin_manifest_version: u32,
    #[allow(dead_code)]
    pub application: Application,
    pub trigger: Triggers,
    /// Components by id (`[component.<id>]`), in id order.
    pub component: BTreeMap<String, Component>,
    /// Directory the manifest was read from; relative paths resolve against it.
    #[serde(skip)]
    pub dir: PathBuf,
}

/// Descriptive only: read by nothing yet, modelled so the manifest is checked whole.
#[allow(dead_code)]
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Application {
    pub name: String,
    pub version: Option<String>,
    pub description: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Triggers {
    /// `[[trigger.http]]`
    pub http: Vec<HttpTrigger>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpTrigger {
    /// `/exact` or `/prefix/...` (trailing wildcard).
    pub route: String,
    /// Id of the `[component.<id>]` that serves the route.
    pub component: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    /// Path of the `.wasm`, relative to the manifest's directory.
    pub source: PathBuf,
    #[serde(default)]
    pub allowed_outbound_hosts: Vec<String>,
    pub build: Option<Build>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Build {
    /// Shell command run by `spinbench build` in the manifest's directory.
    pub command: String,
    /// For `spin watch`; the runner has no watch mode.
    #[allow(dead_code)]
    #[serde(default)]
    pub watch: Vec<String>,
}

impl Manifest {
    /// Reads, parses and validates the manifest at `path`.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading manifest {}", path.display()))?;
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
        for trigger in &self.trigger.http {
            if !self.component.contains_key(&trigger.component) {
                bail!(
                    "route {:?} names component {:?}, which has no [component.{}] table",
                    trigger.route,
                    trigger.component,
                    trigger.component
                );
            }
        }
        Ok(())
    }

    /// Where a component's `.wasm` is: its `source`, resolved against the manifest's directory.
    pub fn source_path(&self, component: &Component) -> PathBuf {
        self.dir.join(&component.source)
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

#[cfg(test)]
mod tests {
    use super::*;

    const REPO_MANIFEST: &str = include_str!("../../spin.toml");

    fn parse(text: &str) -> Result<Manifest> {
        Manifest::parse(text, PathBuf::from("/app"))
    }

    #[test]
    fn repo_manifest_parses() {
        let manifest = parse(REPO_MANIFEST).unwrap();
        assert_eq!(manifest.application.name, "spinbench");
        assert_eq!(manifest.trigger.http.len(), 7);
        assert_eq!(manifest.component.len(), 7);
        let hello = &manifest.component["hello"];
        assert!(hello.allowed_outbound_hosts.is_empty());
        assert!(hello.build.as_ref().unwrap().command.contains("-p hello"));
    }

    #[test]
    fn every_route_has_a_component() {
        let manifest = parse(REPO_MANIFEST).unwrap();
        for trigger in &manifest.trigger.http {
            assert!(
                manifest.component.contains_key(&trigger.component),
                "{trigger:?}"
            );
        }
    }

    #[test]
    fn relative_sources_resolve_against_the_manifest_dir() {
        let manifest = parse(REPO_MANIFEST).unwrap();
        let path = manifest.source_path(&manifest.component["hello"]);
        assert_eq!(
            path,
            Path::new("/app/target/wasm32-wasip2/release/hello.wasm")
        );
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let text = REPO_MANIFEST.replace("[application]", "[application]\nauthors = [\"x\"]");
        let error = format!("{:#}", parse(&text).unwrap_err());
        assert!(error.contains("authors"), "{error}");

        let text = REPO_MANIFEST.replace(
            "allowed_outbound_hosts = []",
            "allowed_outbound_hosts = []\nfiles = [\"x\"]",
        );
        assert!(parse(&text).is_err());
    }

    #[test]
    fn other_manifest_versions_are_rejected() {
        let text = REPO_MANIFEST.replace("spin_manifest_version = 2", "spin_manifest_version = 1");
        let error = format!("{:#}", parse(&text).unwrap_err());
        assert!(error.contains("spin_manifest_version"), "{error}");
    }

    #[test]
    fn a_route_to_a_missing_component_is_rejected() {
        let text = REPO_MANIFEST.replace("component = \"echo\"", "component = \"nope\"");
        let error = format!("{:#}", parse(&text).unwrap_err());
        assert!(error.contains("nope"), "{error}");
    }
}
