//! What host functions know of the component they serve: its grants from the
//! manifest (variables, environment, stores, databases, outbound hosts), read
//! once at start, and the application's services, shared by every component
//! and instance.

use super::outbound_hosts::AllowedHosts;
use super::runtime_config::RuntimeConfig;
use super::{
    connection_limits, files, key_value, llm, mysql, outbound_http, postgres, service_chaining,
    sqlite,
};
use crate::manifest::{Manifest, variables};
use anyhow::{Result, anyhow};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// One component's view of the application, shared by all its stores.
#[derive(Debug)]
pub struct ComponentContext {
    /// The component's id, as the errors it gets name it.
    pub id: String,
    /// Its component variables (`[component.<id>.variables]`), templates expanded.
    pub variables: BTreeMap<String, String>,
    /// Its environment (`wasi:cli/environment`).
    pub environment: Vec<(String, String)>,
    /// What its manifest table grants beyond variables and environment.
    pub grants: Grants,
    /// Its `files`, copied at start; `None` without any.
    pub files: Option<files::Mount>,
    pub services: Arc<AppServices>,
    /// Its PostgreSQL connection pools, one per address (Spin pools per component).
    pub postgres: postgres::Pools,
    /// Its MySQL connection pools, one per address.
    pub mysql: mysql::Pools,
}

/// A component's `key_value_stores`, `sqlite_databases`, `ai_models` and
/// `allowed_outbound_hosts` (with `allowed_http_hosts`, Spin's older name),
/// templates in the hosts expanded over the application's variables.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    pub key_value_stores: Vec<String>,
    pub sqlite_databases: Vec<String>,
    pub ai_models: Vec<String>,
    /// `allowed_outbound_hosts` and `allowed_http_hosts`, parsed.
    pub allowed_outbound_hosts: AllowedHosts,
}

/// What every component of the application shares.
#[derive(Debug)]
pub struct AppServices {
    /// The runtime config file and the state directory.
    pub runtime_config: RuntimeConfig,
    /// The key-value stores, each opened once for all instances.
    pub key_value: key_value::Stores,
    /// The SQLite databases.
    pub sqlite: sqlite::Databases,
    /// The threads every SQLite call (databases and key-value stores) runs on.
    pub sqlite_executor: Arc<sqlite::Executor>,
    /// Where requests to the application itself go, once `serve` listens.
    pub self_origin: outbound_http::SelfOrigin,
    /// Where requests to `<component>.spin.internal` go, once the application is built.
    pub chain: service_chaining::Chain,
    /// The runtime config's cap on open outbound HTTP connections.
    pub http_connections: connection_limits::ConnectionLimit,
}

impl AppServices {
    /// The stores and databases `runtime_config` defines (none opened yet),
    /// used on `sqlite_threads` threads.
    pub fn new(runtime_config: RuntimeConfig, sqlite_threads: usize) -> Result<Self> {
        llm::check_runtime_config(&runtime_config)?;
        let http_connections = connection_limits::check(&runtime_config)?;
        let sqlite_executor = sqlite::Executor::new(sqlite_threads);
        Ok(Self {
            http_connections: connection_limits::ConnectionLimit::new(http_connections),
            key_value: key_value::Stores::from_config(&runtime_config, &sqlite_executor)?,
            sqlite: sqlite::Databases::from_config(&runtime_config)?,
            sqlite_executor,
            self_origin: outbound_http::SelfOrigin::default(),
            chain: service_chaining::Chain::default(),
            runtime_config,
        })
    }
}

impl Default for AppServices {
    /// Nothing defined but the defaults in memory, one SQLite thread.
    fn default() -> Self {
        Self::new(RuntimeConfig::default(), 1).expect("the default services start")
    }
}

impl ComponentContext {
    /// The context of each component `ids` names, application variables read
    /// from `SPIN_VARIABLE_<NAME>` in `env` or their defaults; `files` from
    /// the app's directory, or from `files_root` if the operator names one.
    pub fn for_components<'a>(
        manifest: &Manifest,
        ids: impl IntoIterator<Item = &'a str>,
        services: &Arc<AppServices>,
        env: impl Fn(&str) -> Option<String>,
        files_root: Option<&Path>,
    ) -> Result<BTreeMap<String, Arc<ComponentContext>>> {
        let application = variables::application_values(&manifest.variables, env)?;
        // `*.spin.internal` grants each component of the app, by name.
        let component_ids: Vec<String> = manifest.component.keys().cloned().collect();
        ids.into_iter()
            .map(|id| {
                let component = manifest
                    .component
                    .get(id)
                    .ok_or_else(|| anyhow!("no [component.{id}] in the manifest"))?;
                let in_component = |e: anyhow::Error| anyhow!("component {id:?}: {e}");
                // Spin refuses a granted label nothing defines at start.
                services
                    .key_value
                    .check_grants(id, &component.key_value_stores)?;
                services
                    .sqlite
                    .check_grants(id, &component.sqlite_databases)?;
                let variables = variables::component_values(&component.variables, &application)
                    .map_err(in_component)?;
                let expand = |hosts: &[String]| {
                    hosts
                        .iter()
                        .map(|host| variables::expand(host, &application))
                        .collect::<Result<Vec<_>>>()
                };
                let allowed_outbound_hosts = AllowedHosts::parse(
                    &expand(&component.allowed_outbound_hosts).map_err(in_component)?,
                    &expand(&component.allowed_http_hosts).map_err(in_component)?,
                )
                .map_err(in_component)?
                .expand_service_chaining(&component_ids);
                let files = files::Mount::for_component(
                    manifest.base_dir(),
                    &component.files,
                    &component.exclude_files,
                    files_root,
                )
                .map_err(|e| anyhow!("component {id:?}: `files`: {e:#}"))?;
                let context = ComponentContext {
                    id: id.to_string(),
                    files,
                    variables,
                    environment: component.environment.clone().into_iter().collect(),
                    grants: Grants {
                        key_value_stores: component.key_value_stores.clone(),
                        sqlite_databases: component.sqlite_databases.clone(),
                        ai_models: component.ai_models.clone(),
                        allowed_outbound_hosts,
                    },
                    services: services.clone(),
                    postgres: postgres::Pools::default(),
                    mysql: mysql::Pools::default(),
                };
                Ok((id.to_string(), Arc::new(context)))
            })
            .collect()
    }

    /// A context with only an id and variables, for tests.
    #[cfg(test)]
    pub fn for_test(id: &str, variables: &[(&str, &str)]) -> Self {
        Self {
            id: id.to_string(),
            variables: variables
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect(),
            environment: Vec::new(),
            grants: Grants::default(),
            files: None,
            services: Arc::default(),
            postgres: postgres::Pools::default(),
            mysql: mysql::Pools::default(),
        }
    }
}
