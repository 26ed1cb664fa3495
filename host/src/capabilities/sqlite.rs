//! SQLite databases, under the names Spin serves them: Spin 2's
//! `fermyon:spin/sqlite@2.0.0` (spin-sdk 2 to 5) and Spin 4's
//! `spin:sqlite/sqlite@3.1.0`, which serves 3.0.0 imports too (spin-sdk 6 and 7).
//! Behaviour as in spinframework/spin v4 (`crates/factor-sqlite/src/host.rs`,
//! `crates/sqlite-inproc`, `crates/sqlite`): `open` of a label the component was
//! not granted (`sqlite_databases`) is `access-denied`, of a label nothing
//! defines `no-such-database`; each open connection is its own SQLite
//! connection to the label's file (in memory without one), opened at its first
//! statement; `ATTACH` of a file is refused unless the runtime config allows it,
//! and each connection is confined and bounded (`sandbox`, `heap`, `connection`).
//!
//! Databases: `default` is `sqlite_db.db` in the state directory;
//! `[sqlite_database.<label>] type = "spin"` with an optional `path` (relative
//! to the working directory, as Spin resolves it) defines or redefines a label.
//! SQLite calls block, so they run on tokio's blocking pool.

use super::runtime_config::RuntimeConfig;
use super::{ComponentContext, HostState};
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use wasmtime::StoreContextMut;
use wasmtime::component::{
    Accessor, ComponentType, FutureReader, Lift, Linker, Lower, Resource, ResourceType,
    StreamReader,
};

mod connection;
mod heap;
mod sandbox;
pub use connection::{LazyConnection, Location, MAX_HEAP_BYTES};
pub use sandbox::Attach;

pub const V2: &str = "fermyon:spin/sqlite@2.0.0";
/// Provides every function of 3.1.0; an import of 3.0.0 takes its subset.
pub const V3: &str = "spin:sqlite/sqlite@3.1.0";

/// The file name of the `default` database in the state directory (Spin's).
pub const DEFAULT_FILE: &str = "sqlite_db.db";

/// The most a query may return, as Spin caps it (`MAX_HOST_BUFFERED_BYTES`).
pub const MAX_RESULT_BYTES: usize = 128 << 20;

/// The `error` variant of both versions.
#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq, Eq)]
#[component(variant)]
pub enum SqliteError {
    #[component(name = "no-such-database")]
    NoSuchDatabase,
    #[component(name = "access-denied")]
    AccessDenied,
    #[component(name = "invalid-connection")]
    InvalidConnection,
    #[component(name = "database-full")]
    DatabaseFull,
    #[component(name = "io")]
    Io(String),
}

/// A value in a row or a parameter.
#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq)]
#[component(variant)]
pub enum Value {
    #[component(name = "integer")]
    Integer(i64),
    #[component(name = "real")]
    Real(f64),
    #[component(name = "text")]
    Text(String),
    #[component(name = "blob")]
    Blob(Vec<u8>),
    #[component(name = "null")]
    Null,
}

#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq)]
#[component(record)]
pub struct RowResult {
    pub values: Vec<Value>,
}

#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq)]
#[component(record)]
pub struct QueryResult {
    pub columns: Vec<String>,
    pub rows: Vec<RowResult>,
}

/// One label's database as the runtime config defines it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    pub location: Location,
    /// Whether `ATTACH` may name a file (Spin's `allow_attach_file`).
    pub allow_attach_file: bool,
}

/// The application's databases by label.
#[derive(Debug, Default)]
pub struct Databases {
    labels: BTreeMap<String, Definition>,
}

impl Databases {
    /// `default` in the state directory, then every `[sqlite_database.<label>]`.
    pub fn from_config(config: &RuntimeConfig) -> Result<Self> {
        let cwd = std::env::current_dir().context("reading the working directory")?;
        let mut labels = BTreeMap::new();
        let default = match &config.state_dir {
            Some(dir) => Location::File(dir.join(DEFAULT_FILE)),
            None => Location::Memory,
        };
        labels.insert(
            "default".to_string(),
            Definition {
                location: default,
                allow_attach_file: false,
            },
        );
        for label in config.labels("sqlite_database") {
            let entry = config
                .entry("sqlite_database", label)
                .with_context(|| format!("[sqlite_database.{label}] is not a table"))?;
            let definition = definition(entry, &cwd)
                .with_context(|| format!("runtime config [sqlite_database.{label}]"))?;
            labels.insert(label.to_string(), definition);
        }
        Ok(Self { labels })
    }

    pub fn get(&self, label: &str) -> Option<&Definition> {
        self.labels.get(label)
    }

    /// Spin refuses at start an app granting a database nothing defines.
    pub fn check_grants(&self, component: &str, granted: &[String]) -> Result<()> {
        for label in granted {
            if !self.labels.contains_key(label) {
                bail!(
                    "component {component:?} uses SQLite database {label:?}, which is not defined; \
                     define it in the runtime config file ([sqlite_database.{label}])"
                );
            }
        }
        Ok(())
    }
}

fn definition(entry: &toml::Table, cwd: &Path) -> Result<Definition> {
    let kind = entry.get("type").and_then(toml::Value::as_str);
    if kind != Some("spin") {
        bail!(
            "type {kind:?}: spinbench serves only type = \"spin\" (a local file); `spin up` serves the others"
        );
    }
    let mut location = Location::Memory;
    let mut allow_attach_file = false;
    for (key, value) in entry {
        match (key.as_str(), value) {
            ("type", _) => {}
            ("path", toml::Value::String(path)) => location = Location::File(cwd.join(path)),
            ("allow_attach_file", toml::Value::Boolean(allow)) => allow_attach_file = *allow,
            (key, _) => bail!("unexpected key or value type: {key}"),
        }
    }
    Ok(Definition {
        location,
        allow_attach_file,
    })
}

/// An open connection: its own SQLite connection to the label's database.
#[derive(Clone)]
pub struct Connection(Arc<LazyConnection>);

impl ComponentContext {
    /// What `connection.open(label)` answers, as Spin answers it.
    pub fn open_database(&self, label: &str) -> Result<Connection, SqliteError> {
        if !self.grants.sqlite_databases.iter().any(|l| l == label) {
            return Err(SqliteError::AccessDenied);
        }
        let definition = self
            .services
            .sqlite
            .get(label)
            .ok_or(SqliteError::NoSuchDatabase)?;
        let attach = if definition.allow_attach_file {
            Attach::Files
        } else {
            Attach::MemoryOnly
        };
        Ok(Connection(Arc::new(LazyConnection::new(
            definition.location.clone(),
            attach,
            |_| Ok(()),
        ))))
    }
}

impl Connection {
    pub async fn execute(
        &self,
        statement: String,
        parameters: Vec<Value>,
    ) -> Result<QueryResult, SqliteError> {
        self.0
            .run(move |connection| execute(connection, &statement, parameters))
            .await
            .map_err(SqliteError::Io)?
    }

    /// `changes` and `last-insert-rowid` have no error case: a connection
    /// that cannot be opened traps, as in Spin.
    async fn changes(&self) -> wasmtime::Result<u64> {
        self.0
            .run(rusqlite::Connection::changes)
            .await
            .map_err(|error| wasmtime::format_err!("{error}"))
    }

    async fn last_insert_rowid(&self) -> wasmtime::Result<i64> {
        self.0
            .run(rusqlite::Connection::last_insert_rowid)
            .await
            .map_err(|error| wasmtime::format_err!("{error}"))
    }
}

fn execute(
    connection: &rusqlite::Connection,
    statement: &str,
    parameters: Vec<Value>,
) -> Result<QueryResult, SqliteError> {
    let io = |error: rusqlite::Error| SqliteError::Io(error.to_string());
    let mut statement = connection.prepare_cached(statement).map_err(io)?;
    let columns: Vec<String> = statement
        .column_names()
        .into_iter()
        .map(str::to_string)
        .collect();
    let parameters = parameters.into_iter().map(|value| match value {
        Value::Integer(i) => rusqlite::types::Value::Integer(i),
        Value::Real(r) => rusqlite::types::Value::Real(r),
        Value::Text(t) => rusqlite::types::Value::Text(t),
        Value::Blob(b) => rusqlite::types::Value::Blob(b),
        Value::Null => rusqlite::types::Value::Null,
    });
    let mut rows = statement
        .query(rusqlite::params_from_iter(parameters))
        .map_err(io)?;
    let mut result = Vec::new();
    let mut bytes = 0;
    while let Some(row) = rows.next().map_err(io)? {
        let values = (0..columns.len())
            .map(|index| {
                Ok(match row.get_ref(index)? {
                    rusqlite::types::ValueRef::Null => Value::Null,
                    rusqlite::types::ValueRef::Integer(i) => Value::Integer(i),
                    rusqlite::types::ValueRef::Real(r) => Value::Real(r),
                    rusqlite::types::ValueRef::Text(t) => {
                        Value::Text(String::from_utf8_lossy(t).into_owned())
                    }
                    rusqlite::types::ValueRef::Blob(b) => Value::Blob(b.to_vec()),
                })
            })
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(io)?;
        bytes += values.iter().map(value_size).sum::<usize>();
        if bytes > MAX_RESULT_BYTES {
            return Err(SqliteError::Io(format!(
                "query result exceeds limit of {MAX_RESULT_BYTES} bytes"
            )));
        }
        result.push(RowResult { values });
    }
    Ok(QueryResult {
        columns,
        rows: result,
    })
}

fn value_size(value: &Value) -> usize {
    size_of::<Value>()
        + match value {
            Value::Text(t) => t.len(),
            Value::Blob(b) => b.len(),
            _ => 0,
        }
}

/// The connection behind a handle of either version's resource type.
fn connection<R: AsRef<Connection> + 'static>(
    table: &wasmtime::component::ResourceTable,
    handle: &Resource<R>,
) -> wasmtime::Result<Connection> {
    Ok(table.get(handle)?.as_ref().clone())
}

/// `fermyon:spin/sqlite@2.0.0`'s connection resource.
pub struct ConnectionV2(Connection);
/// `spin:sqlite/sqlite@3.x`'s connection resource.
pub struct ConnectionV3(Connection);

impl AsRef<Connection> for ConnectionV2 {
    fn as_ref(&self) -> &Connection {
        &self.0
    }
}

impl AsRef<Connection> for ConnectionV3 {
    fn as_ref(&self) -> &Connection {
        &self.0
    }
}

pub fn link_v2<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    link_sync::<T, ConnectionV2>(linker, V2, ConnectionV2, false)
}

/// The synchronous functions of both versions (3.x adds `changes` and
/// `last-insert-rowid`), over the resource type `R`.
fn link_sync<T: HostState, R: AsRef<Connection> + Send + Sync + 'static>(
    linker: &mut Linker<T>,
    name: &str,
    wrap: fn(Connection) -> R,
    v3: bool,
) -> Result<()> {
    let mut instance = linker.instance(name)?;
    instance.resource(
        "connection",
        ResourceType::host::<R>(),
        super::drop_resource::<T, R>,
    )?;
    instance.func_wrap(
        "[static]connection.open",
        move |mut store: StoreContextMut<'_, T>, (label,): (String,)| {
            let opened = store.data().context().open_database(&label);
            Ok((match opened {
                Ok(connection) => Ok(store.data_mut().table().push(wrap(connection))?),
                Err(error) => Err(error),
            },))
        },
    )?;
    instance.func_wrap_async(
        "[method]connection.execute",
        |mut store: StoreContextMut<'_, T>,
         (handle, statement, parameters): (Resource<R>, String, Vec<Value>)| {
            Box::new(async move {
                let connection = connection(store.data_mut().table(), &handle)?;
                Ok((connection.execute(statement, parameters).await,))
            })
        },
    )?;
    if v3 {
        instance.func_wrap_async(
            "[method]connection.changes",
            |mut store: StoreContextMut<'_, T>, (handle,): (Resource<R>,)| {
                Box::new(async move {
                    let connection = connection(store.data_mut().table(), &handle)?;
                    Ok((connection.changes().await?,))
                })
            },
        )?;
        instance.func_wrap_async(
            "[method]connection.last-insert-rowid",
            |mut store: StoreContextMut<'_, T>, (handle,): (Resource<R>,)| {
                Box::new(async move {
                    let connection = connection(store.data_mut().table(), &handle)?;
                    Ok((connection.last_insert_rowid().await?,))
                })
            },
        )?;
    }
    Ok(())
}

/// The rows of an `execute-async`: all read before the stream is handed over
/// (Spin streams them as they come; the result is the same).
type AsyncQuery = (
    Vec<String>,
    StreamReader<RowResult>,
    FutureReader<Result<(), SqliteError>>,
);

pub fn link_v3<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    link_sync::<T, ConnectionV3>(linker, V3, ConnectionV3, true)?;
    let mut instance = linker.instance(V3)?;
    instance.func_wrap_concurrent(
        "[static]connection.open-async",
        |accessor: &Accessor<T>, (label,): (String,)| {
            Box::pin(async move {
                accessor.with(|mut access| {
                    let state = access.get();
                    Ok((match state.context().open_database(&label) {
                        Ok(connection) => Ok(state.table().push(ConnectionV3(connection))?),
                        Err(error) => Err(error),
                    },))
                })
            })
        },
    )?;
    instance.func_wrap_concurrent(
        "[method]connection.execute-async",
        |accessor: &Accessor<T>,
         (handle, statement, parameters): (Resource<ConnectionV3>, String, Vec<Value>)| {
            Box::pin(async move {
                let connection =
                    accessor.with(|mut access| connection(access.get().table(), &handle))?;
                // A statement that fails is an empty result whose future
                // carries the error, as Spin reports it.
                let (columns, rows, outcome) = match connection.execute(statement, parameters).await
                {
                    Ok(result) => (result.columns, result.rows, Ok(())),
                    Err(error) => (Vec::new(), Vec::new(), Err(error)),
                };
                accessor.with(
                    |mut access| -> wasmtime::Result<(Result<AsyncQuery, SqliteError>,)> {
                        let rows = StreamReader::new(&mut access, rows)?;
                        let outcome = FutureReader::new(&mut access, async move {
                            Ok::<_, wasmtime::Error>(outcome)
                        })?;
                        Ok((Ok((columns, rows, outcome)),))
                    },
                )
            })
        },
    )?;
    instance.func_wrap_concurrent(
        "[method]connection.changes-async",
        |accessor: &Accessor<T>, (handle,): (Resource<ConnectionV3>,)| {
            Box::pin(async move {
                let connection =
                    accessor.with(|mut access| connection(access.get().table(), &handle))?;
                Ok((connection.changes().await?,))
            })
        },
    )?;
    instance.func_wrap_concurrent(
        "[method]connection.last-insert-rowid-async",
        |accessor: &Accessor<T>, (handle,): (Resource<ConnectionV3>,)| {
            Box::pin(async move {
                let connection =
                    accessor.with(|mut access| connection(access.get().table(), &handle))?;
                Ok((connection.last_insert_rowid().await?,))
            })
        },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests;
