//! What a component may import, and what provides it: one module per
//! capability, the way Spin has one `factor-*` crate per capability, and one
//! table, [`INTERFACES`], of every interface name and version the runner links.
//! The import check, the engine's settings and the linker all read that table.
//!
//! Capabilities are linked for every component that imports them, granted or
//! not, as Spin links them: what a component was not granted in its manifest
//! (`key_value_stores`, `allowed_outbound_hosts`, ...) is denied when it is
//! called, with the error Spin returns, never refused at start.
//!
//! Host functions reach a store's data through [`HostState`], so this module
//! does not depend on how the instance machinery lays its stores out.

pub mod budget;
pub mod connection_limits;
pub mod context;
pub mod dial;
pub mod environment;
pub mod files;
mod held_stream;
pub mod key_value;
pub mod llm;
pub mod mqtt;
pub mod mysql;
pub mod outbound_hosts;
pub mod outbound_http;
mod pools;
pub mod postgres;
pub mod quota;
pub mod redis;
pub mod runtime_config;
pub mod service_chaining;
pub mod sockets;
pub mod sqlite;
pub mod variables;
pub mod wasi;
pub mod wasi_2023_10_18;
pub mod wasi_2023_11_10;
pub mod wasi_keyvalue;

pub use context::{AppServices, ComponentContext};

use anyhow::Result;
use semver::Version;
use std::collections::BTreeSet;
use std::sync::Arc;
use wasmtime::component::{Linker, ResourceTable};

/// What every store's data gives host functions.
pub trait HostState: Send + 'static {
    /// The component's grants and the application's services.
    fn context(&self) -> &ComponentContext;
    /// The store's resource table.
    fn table(&mut self) -> &mut ResourceTable;
    /// What the store's instance holds on the host through its capabilities.
    fn budget(&self) -> &Arc<budget::InstanceBudget>;
    /// A WAGI request's arguments and CGI environment (`environment`).
    fn command_line(&self) -> Option<&CommandLine> {
        None
    }
}

/// What a WAGI program is started with besides its component's own
/// `environment`: its arguments and its request's CGI variables.
#[derive(Debug, Clone, Default)]
pub struct CommandLine {
    pub arguments: Vec<String>,
    pub environment: Vec<(String, String)>,
}

/// The destructor of a host resource kept in the store's table: the guest
/// dropped its handle, so the host's value goes with it.
pub fn drop_resource<T: HostState, R: 'static>(
    mut store: wasmtime::StoreContextMut<'_, T>,
    rep: u32,
) -> wasmtime::Result<()> {
    store
        .data_mut()
        .table()
        .delete(wasmtime::component::Resource::<R>::new_own(rep))?;
    Ok(())
}

/// A set of interfaces linked together: one version of one capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    /// WASI 0.2.x (`wasi:cli`, `clocks`, `filesystem`, `io`, `random`,
    /// `sockets`, and `wasi:http`'s `types` and `outgoing-handler`).
    WasiP2,
    /// WASI's 0.2.0 release candidate of 2023-10-18 (`wasi:http` types and
    /// outgoing handler, `wasi:io` poll and streams: what spin-sdk 2.0 to 2.2
    /// import), served over WASI 0.2's implementation.
    WasiRc2023_10_18,
    /// WASI's 0.2.0 release candidate of 2023-11-10: its `wasi:http/types`
    /// (everything else it names is renamed to 0.2.0 at load).
    WasiRc2023_11_10,
    /// WASI 0.3.x, including what its release candidate 2026-03-15 is renamed to
    /// (`instance::prepare`).
    WasiP3,
    /// `fermyon:spin/variables@2.0.0`.
    VariablesV2,
    /// `spin:variables/variables@3.0.0` (async).
    VariablesV3,
    /// `fermyon:spin/config` (Spin 1's name for variables).
    ConfigV1,
    /// `wasi:config/store@0.2.0-draft-2024-09-27`.
    WasiConfig,
    /// `fermyon:spin/key-value@2.0.0`.
    KeyValueV2,
    /// `spin:key-value/key-value@3.0.0` (async).
    KeyValueV3,
    /// `fermyon:spin/sqlite@2.0.0`.
    SqliteV2,
    /// `spin:sqlite/sqlite@3.1.0` (its `-async` functions), serving 3.0.0 too.
    SqliteV3,
    /// `fermyon:spin/redis@2.0.0`.
    RedisV2,
    /// `spin:redis/redis@3.0.0` (async).
    RedisV3,
    /// `fermyon:spin/redis-types` (unversioned, types only): what a Redis
    /// trigger component of spin-sdk 2 to 5 imports beside its
    /// `fermyon:spin/inbound-redis` export (`trigger::redis`).
    RedisTypesV1,
    /// `fermyon:spin/mqtt@2.0.0`.
    MqttV2,
    /// `spin:mqtt/mqtt@3.0.0` (async).
    MqttV3,
    /// `fermyon:spin/postgres@2.0.0`, `spin:postgres/postgres@3.0.0`, `@4.2.0`
    /// (its `-async` functions use the async ABI): served.
    PostgresV2,
    PostgresV3,
    PostgresV4,
    /// `fermyon:spin/mysql@2.0.0`, `spin:mysql/mysql@3.0.0` (async): served.
    MysqlV2,
    MysqlV3,
    /// `fermyon:spin/rdbms-types@2.0.0`, types only.
    RdbmsTypesV2,
    /// `fermyon:spin/llm@2.0.0`: linked, every call refused.
    LlmV2,
    /// `wasi:keyvalue/{store,batch,atomics}@0.2.0-draft2`, over the key-value stores.
    WasiKeyValue,
}

impl Group {
    /// Whether its host functions use the component model's async ABI, which
    /// the engine must then be configured for.
    pub fn concurrent(self) -> bool {
        matches!(
            self,
            Group::WasiP3
                | Group::VariablesV3
                | Group::KeyValueV3
                | Group::SqliteV3
                | Group::RedisV3
                | Group::MqttV3
                | Group::PostgresV4
                | Group::MysqlV3
        )
    }
}

/// One interface the runner provides, by the name a component imports it under.
#[derive(Debug, Clone, Copy)]
pub struct Interface {
    /// The name as provided (`fermyon:spin/variables@2.0.0`). A versioned
    /// import matches it when package and interface agree and the provided
    /// version is semver-compatible with, and not older than, the imported
    /// one: what wasmtime's linker accepts.
    pub name: &'static str,
    pub group: Group,
}

/// Every Spin interface the runner links, by the version it provides. WASI's
/// releases are matched by package and release track instead
/// ([`wasi::group_of`]); its candidates are listed here.
pub static INTERFACES: &[Interface] = &[
    Interface {
        name: variables::V2,
        group: Group::VariablesV2,
    },
    Interface {
        name: variables::V3,
        group: Group::VariablesV3,
    },
    Interface {
        name: variables::CONFIG_V1,
        group: Group::ConfigV1,
    },
    Interface {
        name: variables::WASI_CONFIG,
        group: Group::WasiConfig,
    },
    Interface {
        name: key_value::V2,
        group: Group::KeyValueV2,
    },
    Interface {
        name: key_value::V3,
        group: Group::KeyValueV3,
    },
    Interface {
        name: sqlite::V2,
        group: Group::SqliteV2,
    },
    Interface {
        name: sqlite::V3,
        group: Group::SqliteV3,
    },
    Interface {
        name: redis::V2,
        group: Group::RedisV2,
    },
    Interface {
        name: redis::V3,
        group: Group::RedisV3,
    },
    Interface {
        name: REDIS_TYPES_V1,
        group: Group::RedisTypesV1,
    },
    Interface {
        name: mqtt::V2,
        group: Group::MqttV2,
    },
    Interface {
        name: mqtt::V3,
        group: Group::MqttV3,
    },
    Interface {
        name: postgres::V2,
        group: Group::PostgresV2,
    },
    Interface {
        name: postgres::V3,
        group: Group::PostgresV3,
    },
    Interface {
        name: postgres::V4,
        group: Group::PostgresV4,
    },
    Interface {
        name: mysql::V2,
        group: Group::MysqlV2,
    },
    Interface {
        name: mysql::V3,
        group: Group::MysqlV3,
    },
    Interface {
        name: mysql::RDBMS_TYPES_V2,
        group: Group::RdbmsTypesV2,
    },
    Interface {
        name: llm::V2,
        group: Group::LlmV2,
    },
    Interface {
        name: wasi_2023_10_18::HTTP_TYPES,
        group: Group::WasiRc2023_10_18,
    },
    Interface {
        name: wasi_2023_10_18::HTTP_OUTGOING_HANDLER,
        group: Group::WasiRc2023_10_18,
    },
    Interface {
        name: wasi_2023_10_18::IO_POLL,
        group: Group::WasiRc2023_10_18,
    },
    Interface {
        name: wasi_2023_10_18::IO_STREAMS,
        group: Group::WasiRc2023_10_18,
    },
    Interface {
        name: wasi_2023_11_10::HTTP_TYPES,
        group: Group::WasiRc2023_11_10,
    },
    Interface {
        name: wasi_keyvalue::STORE,
        group: Group::WasiKeyValue,
    },
    Interface {
        name: wasi_keyvalue::BATCH,
        group: Group::WasiKeyValue,
    },
    Interface {
        name: wasi_keyvalue::ATOMICS,
        group: Group::WasiKeyValue,
    },
];

/// The unversioned interface of the Redis trigger's error and payload types.
const REDIS_TYPES_V1: &str = "fermyon:spin/redis-types";

/// The group that provides `import`, if the runner provides it.
pub fn group_of(import: &str) -> Option<Group> {
    let name = Name::parse(import)?;
    wasi::group_of(&name).or_else(|| {
        INTERFACES
            .iter()
            .find(|interface| {
                Name::parse(interface.name).is_some_and(|provided| provided.satisfies(&name))
            })
            .map(|interface| interface.group)
    })
}

/// What one component's imports need, or the first import nothing provides.
pub fn groups_for(imports: &[String]) -> Result<BTreeSet<Group>, Unprovided> {
    imports
        .iter()
        .map(|import| group_of(import).ok_or_else(|| Unprovided(import.clone())))
        .collect()
}

/// An import no capability provides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unprovided(pub String);

/// Adds every interface of `groups` to `linker`.
pub fn link<T>(linker: &mut Linker<T>, groups: &BTreeSet<Group>) -> Result<()>
where
    T: HostState + wasmtime_wasi::WasiView + wasmtime_wasi_http::WasiHttpView,
{
    for group in groups {
        match group {
            Group::WasiP2 => {
                wasi::link_p2(linker)?;
                sockets::limit_p2(linker)?;
            }
            Group::WasiRc2023_10_18 => wasi_2023_10_18::link(linker)?,
            Group::WasiRc2023_11_10 => wasi_2023_11_10::link(linker)?,
            Group::WasiP3 => {
                wasi::link_p3(linker)?;
                sockets::limit_p3(linker)?;
            }
            Group::VariablesV2 => variables::link_v2(linker)?,
            Group::VariablesV3 => variables::link_v3(linker)?,
            Group::ConfigV1 => variables::link_config_v1(linker)?,
            Group::WasiConfig => variables::link_wasi_config(linker)?,
            Group::KeyValueV2 => key_value::link_v2(linker)?,
            Group::KeyValueV3 => key_value::link_v3(linker)?,
            Group::SqliteV2 => sqlite::link_v2(linker)?,
            Group::SqliteV3 => sqlite::link_v3(linker)?,
            Group::RedisV2 => redis::link_v2(linker)?,
            Group::RedisV3 => redis::link_v3(linker)?,
            // Types only: an instance with nothing to define.
            Group::RedisTypesV1 => {
                linker.instance(REDIS_TYPES_V1)?;
            }
            Group::MqttV2 => mqtt::link_v2(linker)?,
            Group::MqttV3 => mqtt::link_v3(linker)?,
            Group::PostgresV2 => postgres::link_v2(linker)?,
            Group::PostgresV3 => postgres::link_v3(linker)?,
            Group::PostgresV4 => postgres::link_v4(linker)?,
            Group::MysqlV2 => mysql::link_v2(linker)?,
            Group::MysqlV3 => mysql::link_v3(linker)?,
            Group::RdbmsTypesV2 => mysql::link_rdbms_types_v2(linker)?,
            Group::LlmV2 => llm::link_v2(linker)?,
            Group::WasiKeyValue => wasi_keyvalue::link(linker)?,
        }
    }
    Ok(())
}

/// An import name taken apart: `package:name/interface@version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name<'a> {
    /// `wasi:http`, `fermyon:spin`.
    pub package: &'a str,
    pub interface: &'a str,
    /// `None` for an unversioned package (Spin 1's `fermyon:spin/key-value`).
    pub version: Option<Version>,
}

impl<'a> Name<'a> {
    /// `None` for a name that is not an interface of a package (a plain import name).
    pub fn parse(name: &'a str) -> Option<Self> {
        let (path, version) = match name.split_once('@') {
            Some((path, version)) => (path, Some(Version::parse(version).ok()?)),
            None => (name, None),
        };
        let (package, interface) = path.split_once('/')?;
        package.contains(':').then_some(Self {
            package,
            interface,
            version,
        })
    }

    /// Whether an import of `wanted` can be given this provided interface, as
    /// wasmtime's linker decides it: the same interface, and for a versioned
    /// one, this version not older and on the same semver track (same major,
    /// or same minor under 1.0, or exactly equal for a pre-release).
    pub fn satisfies(&self, wanted: &Name<'_>) -> bool {
        if self.package != wanted.package || self.interface != wanted.interface {
            return false;
        }
        match (&self.version, &wanted.version) {
            (None, None) => true,
            (Some(provided), Some(wanted)) => compatible(provided, wanted),
            _ => false,
        }
    }
}

fn compatible(provided: &Version, wanted: &Version) -> bool {
    if !provided.pre.is_empty() || !wanted.pre.is_empty() {
        return provided == wanted;
    }
    let track = |v: &Version| match (v.major, v.minor) {
        (0, 0) => (0, 0, v.patch),
        (0, minor) => (0, minor, 0),
        (major, _) => (major, 0, 0),
    };
    track(provided) == track(wanted) && provided >= wanted
}

#[cfg(test)]
pub(crate) mod hostile_addresses;
#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
mod tests;
