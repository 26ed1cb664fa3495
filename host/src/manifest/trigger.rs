//! `[[trigger.<type>]]`: Spin's `Trigger` (spinframework/spin
//! `crates/manifest/src/schema/v2.rs`) and, for `http`, its `HttpTriggerConfig`
//! (`crates/http/src/config.rs`), and `redis` (`crates/trigger-redis`'s
//! `TriggerConfig`). Other trigger types are kept as opaque tables: `hosting`
//! refuses them by name.

use super::component::Component;
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Deserialize)]
pub struct Triggers {
    /// `[[trigger.http]]`
    #[serde(default)]
    pub http: Vec<HttpTrigger>,
    /// `[[trigger.redis]]`
    #[serde(default)]
    pub redis: Vec<RedisTrigger>,
    /// `[[trigger.cron]]`, `[[trigger.sqs]]`, ...: by type.
    #[serde(flatten)]
    pub other: BTreeMap<String, Vec<toml::Table>>,
}

/// `[[trigger.redis]] component = "id", channel = "news", address = "redis://..."`:
/// a message on `channel` of the server at `address` (else the application's
/// `[application.trigger.redis] address`) runs the component.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisTrigger {
    #[serde(default)]
    pub id: String,
    pub component: String,
    pub channel: String,
    pub address: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpTrigger {
    #[serde(default)]
    pub id: String,
    pub route: RouteConfig,
    /// The component's id, or (Spin allows it) a component table written inline.
    pub component: Option<ComponentRef>,
    /// Reserved by Spin for future use.
    #[serde(default)]
    pub components: BTreeMap<String, toml::Value>,
    pub executor: Option<Executor>,
    /// A response the host sends without running a component.
    pub static_response: Option<StaticResponse>,
    /// `dependencies.middleware = [...]`: components run before this
    /// route's own, outermost first (Spin 4.1's HTTP middleware).
    #[serde(default)]
    pub dependencies: BTreeMap<String, Vec<super::dependency::TriggerDependency>>,
}

/// `static_response = { status_code = 404, headers = { ... }, body = "..." }`
/// (spinframework/spin `crates/http/src/config.rs`, `StaticResponse`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticResponse {
    /// `200` when absent.
    pub status_code: Option<u16>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub body: Option<String>,
}

/// `route = "/path"`, or `route = { private = true }` (reachable only through
/// Spin's service chaining, never over HTTP).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RouteConfig {
    Path(String),
    Private(PrivateRoute),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivateRoute {
    /// Must be `true`: Spin refuses `{ private = false }`.
    pub private: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ComponentRef {
    Id(String),
    Inline(Box<Component>),
}

/// `executor = { type = "http" }` (or its alias `"spin"`), or `{ type = "wagi", ... }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Executor {
    #[serde(alias = "spin")]
    Http,
    /// A WASI command module run as a CGI script per request (`host::instance::wagi`).
    Wagi(WagiConfig),
}

/// `executor = { type = "wagi", argv = "...", entrypoint = "..." }`, with
/// Spin 4.0.2's defaults (spinframework/spin `crates/http/src/config.rs`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WagiConfig {
    /// The program's arguments, space-separated: `${SCRIPT_NAME}` is the
    /// request's path, `${ARGS}` its query with each `&` a space.
    #[serde(default = "WagiConfig::default_argv")]
    pub argv: String,
    /// Deprecated in Spin and not read by it: the command's `_start` runs.
    #[serde(default, rename = "entrypoint")]
    _entrypoint: Option<String>,
}

impl WagiConfig {
    fn default_argv() -> String {
        "${SCRIPT_NAME} ${ARGS}".to_string()
    }
}

impl HttpTrigger {
    /// The WAGI settings, if the trigger runs its component as WAGI.
    pub fn wagi(&self) -> Option<&WagiConfig> {
        match &self.executor {
            Some(Executor::Wagi(config)) => Some(config),
            _ => None,
        }
    }
}

impl HttpTrigger {
    /// The route as written, unless private.
    pub fn path(&self) -> Option<&str> {
        match &self.route {
            RouteConfig::Path(path) => Some(path),
            RouteConfig::Private(_) => None,
        }
    }

    /// The id of the component it names (`None` for an inline table or none at all).
    pub fn component_id(&self) -> Option<&str> {
        match &self.component {
            Some(ComponentRef::Id(id)) => Some(id),
            _ => None,
        }
    }
}
