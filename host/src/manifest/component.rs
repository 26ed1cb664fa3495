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
    /// What `dependencies` may use; no dependencies are composed (`hosting`).
    #[serde(default, rename = "dependencies_inherit_configuration")]
    _dependencies_inherit_configuration: bool,
    /// Components satisfying this one's imports (composed by Spin at load).
    #[serde(default)]
    pub dependencies: BTreeMap<String, toml::Value>,
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

impl Build {
    pub fn commands(&self) -> &[String] {
        match &self.command {
            Commands::Single(command) => std::slice::from_ref(command),
            Commands::Multiple(commands) => commands,
        }
    }
}
