//! `[component.<id>]`: every key of Spin's manifest v2 component table
//! (spinframework/spin `crates/manifest/src/schema/v2.rs`, `Component`, and
//! `common.rs`), parsed whole; `hosting` decides which of them `serve` can honour.
//! Fields named `_x` are Spin's key `x`, checked for their type and otherwise unused.

use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    pub source: Source,
    /// Printed under the component's routes at start, as `spin up` prints it.
    #[serde(default)]
    pub description: String,
    /// Component variables: values are templates over the application's
    /// variables (`"{{ api_host }}/users"`); what `variables::get` returns.
    #[serde(default)]
    pub variables: BTreeMap<String, String>,
    /// The component's environment variables (`wasi:cli/environment`).
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    /// Glob patterns or `{ source, destination }` directories mapped into the guest.
    #[serde(default)]
    pub files: Vec<FilesMount>,
    #[serde(default)]
    pub exclude_files: Vec<String>,
    /// Deprecated by Spin in favour of `allowed_outbound_hosts`.
    #[serde(default)]
    pub allowed_http_hosts: Vec<String>,
    #[serde(default)]
    pub allowed_outbound_hosts: Vec<String>,
    #[serde(default)]
    pub key_value_stores: Vec<String>,
    #[serde(default)]
    pub sqlite_databases: Vec<String>,
    #[serde(default)]
    pub ai_models: Vec<String>,
    pub build: Option<Build>,
    /// Settings for other tools; Spin ignores it, and so does the runner.
    #[serde(default, rename = "tool")]
    _tool: BTreeMap<String, toml::Table>,
    /// `true`: every dependency inherits every grant of this component
    /// (Spin's shorthand for `inherit_configuration = true` on each).
    pub dependencies_inherit_configuration: Option<bool>,
    /// Components satisfying this one's imports, composed into it at load
    /// (`instance::compose`), by dependency name.
    #[serde(default)]
    pub dependencies: BTreeMap<String, super::dependency::Dependency>,
    /// `spin up --profile <name>` overrides; the runner serves the default profile,
    /// as `spin up` does without `--profile`.
    #[serde(default, rename = "profile")]
    _profile: BTreeMap<String, toml::Table>,
}

/// `source = "bin/x.wasm"`, `{ url, digest }` or `{ registry, package, version }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, untagged)]
pub enum Source {
    Local(String),
    Remote {
        url: String,
        digest: String,
    },
    Registry {
        registry: Option<String>,
        package: String,
        version: String,
    },
}

/// One `files` entry: a glob pattern, or a host directory placed in the guest.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, untagged)]
pub enum FilesMount {
    Pattern(String),
    Placement { source: String, destination: String },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Build {
    /// One shell command, or several run in order (`spin build`'s `Commands`).
    pub command: Commands,
    /// Where the commands run, relative to the manifest's directory.
    pub workdir: Option<String>,
    /// For `spin watch`; the runner has no watch mode (a push keeps it in
    /// the locked app's metadata, as Spin's does).
    #[serde(default)]
    pub watch: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Commands {
    Single(String),
    Multiple(Vec<String>),
}

impl Component {
    /// The keys that give a component resources or permissions of its own,
    /// which a component used as a dependency may not have (Spin's
    /// `ensure_is_acceptable_dependency`), in Spin's order.
    pub fn grants_and_resources(&self) -> Vec<&'static str> {
        [
            ("ai_models", self.ai_models.is_empty()),
            ("allowed_http_hosts", self.allowed_http_hosts.is_empty()),
            (
                "allowed_outbound_hosts",
                self.allowed_outbound_hosts.is_empty(),
            ),
            ("dependencies", self.dependencies.is_empty()),
            ("environment", self.environment.is_empty()),
            ("files", self.files.is_empty()),
            ("key_value_stores", self.key_value_stores.is_empty()),
            ("sqlite_databases", self.sqlite_databases.is_empty()),
            ("variables", self.variables.is_empty()),
        ]
        .into_iter()
        .filter(|(_, empty)| !empty)
        .map(|(key, _)| key)
        .collect()
    }
}

impl Build {
    pub fn commands(&self) -> &[String] {
        match &self.command {
            Commands::Single(command) => std::slice::from_ref(command),
            Commands::Multiple(commands) => commands,
        }
    }
}
