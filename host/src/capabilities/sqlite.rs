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
//! SQLite calls block, so they run on threads of their own (`executor`).
//!
//! What an instance holds is bounded across all its connections
//! (`capabilities::budget`): their heap together, how many are open, and the
//! bytes of its statements in flight and of results it has not read.

use super::ComponentContext;
use super::budget::InstanceBudget;
use super::quota::Share;
use super::runtime_config::RuntimeConfig;
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use wasmtime::component::{ComponentType, Lift, Lower};

mod connection;
mod executor;
mod heap;
mod link;
mod sandbox;
pub use connection::{LazyConnection, Location, MAX_HEAP_BYTES};
pub use executor::Executor;
pub use link::{link_v2, link_v3};
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

/// An open connection: its own SQLite connection to the label's database,
/// counted against the instance that opened it.
#[derive(Clone)]
pub struct Connection(Arc<Opened>);

struct Opened {
    lazy: Arc<LazyConnection>,
    budget: Arc<InstanceBudget>,
    /// Its place among the instance's connections.
    _slot: Share,
}

/// Rows, each with the bytes it was charged, and the share holding them.
type HeldRows = (Vec<String>, Vec<(RowResult, usize)>, Share);

impl ComponentContext {
    /// What `connection.open(label)` answers, as Spin answers it; past the
    /// instance's connections, an `io` error naming the limit.
    pub fn open_database(
        &self,
        label: &str,
        budget: &Arc<InstanceBudget>,
    ) -> Result<Connection, SqliteError> {
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
        let slot = budget.sqlite_connection().map_err(SqliteError::Io)?;
        let lazy = LazyConnection::new(
            definition.location.clone(),
            attach,
            |_| Ok(()),
            self.services.sqlite_executor.clone(),
        );
        Ok(Connection(Arc::new(Opened {
            lazy: Arc::new(lazy),
            budget: budget.clone(),
            _slot: slot,
        })))
    }
}

impl Connection {
    pub async fn execute(
        &self,
        statement: String,
        parameters: Vec<Value>,
    ) -> Result<QueryResult, SqliteError> {
        let (columns, rows, _held) = self.query(statement, parameters).await?;
        Ok(QueryResult {
            columns,
            rows: rows.into_iter().map(|(row, _)| row).collect(),
        })
    }

    /// The statement's rows, held against the instance's budget (with the
    /// statement itself while it waits and runs) until the share is dropped.
    async fn query(
        &self,
        statement: String,
        parameters: Vec<Value>,
    ) -> Result<HeldRows, SqliteError> {
        let arguments = statement.len() + parameters.iter().map(value_size).sum::<usize>();
        let held = self.0.budget.hold(arguments).map_err(SqliteError::Io)?;
        self.0
            .lazy
            .run(&self.0.budget.sqlite_heap, move |connection| {
                execute(connection, &statement, parameters, held, arguments)
            })
            .await
            .map_err(SqliteError::Io)?
    }

    /// `changes` and `last-insert-rowid` have no error case: a connection
    /// that cannot be opened traps, as in Spin.
    async fn changes(&self) -> wasmtime::Result<u64> {
        self.0
            .lazy
            .run(&self.0.budget.sqlite_heap, rusqlite::Connection::changes)
            .await
            .map_err(|error| wasmtime::format_err!("{error}"))
    }

    async fn last_insert_rowid(&self) -> wasmtime::Result<i64> {
        self.0
            .lazy
            .run(
                &self.0.budget.sqlite_heap,
                rusqlite::Connection::last_insert_rowid,
            )
            .await
            .map_err(|error| wasmtime::format_err!("{error}"))
    }
}

/// Runs `statement`, its `arguments` bytes held by `held` until it has run;
/// each row is charged to `held` as it is read, so a result past what the
/// instance may hold stops there, not after it was all built.
fn execute(
    connection: &rusqlite::Connection,
    statement: &str,
    parameters: Vec<Value>,
    mut held: Share,
    arguments: usize,
) -> Result<HeldRows, SqliteError> {
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
    held.shrink(arguments);
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
        let size = values.iter().map(value_size).sum::<usize>();
        bytes += size;
        if bytes > MAX_RESULT_BYTES {
            return Err(SqliteError::Io(format!(
                "query result exceeds limit of {MAX_RESULT_BYTES} bytes"
            )));
        }
        InstanceBudget::hold_more(&mut held, size).map_err(SqliteError::Io)?;
        result.push((RowResult { values }, size));
    }
    Ok((columns, result, held))
}

fn value_size(value: &Value) -> usize {
    size_of::<Value>()
        + match value {
            Value::Text(t) => t.len(),
            Value::Blob(b) => b.len(),
            _ => 0,
        }
}

#[cfg(test)]
mod budget_tests;
#[cfg(test)]
mod tests;
