//! Key-value stores, under the names Spin serves them: Spin 2's
//! `fermyon:spin/key-value@2.0.0` (spin-sdk 2 to 5) and Spin 4's async
//! `spin:key-value/key-value@3.0.0` (spin-sdk 6 and 7). Behaviour as in
//! spinframework/spin v4 (`crates/factor-key-value/src/host.rs`,
//! `crates/key-value-spin`): `open` of a label the component was not granted
//! (`key_value_stores`) is `access-denied`, of a label nothing defines
//! `no-such-store`; every store is a SQLite database with Spin's table
//! (`spin_key_value`, keyed by store label and key), so a state directory
//! written by Spin reads the same here.
//!
//! Stores: `default` is `sqlite_key_value.db` in the state directory;
//! `[key_value_store.<label>] type = "spin"` with an optional `path` (relative
//! to the runtime config file, as Spin resolves it) defines or redefines a
//! label. Each label's connection is opened once and shared by every instance
//! of the application; SQLite calls run on the SQLite threads, what they
//! allocate charged to the calling instance's SQLite heap, and a listing of
//! keys is bounded while it is read (`capabilities::budget`).

use super::budget::InstanceBudget;
use super::held_stream::HeldStream;
use super::quota::Share;
use super::runtime_config::RuntimeConfig;
use super::sqlite::{Attach, Executor, LazyConnection, Location};
use super::{ComponentContext, HostState};
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::sync::Arc;
use wasmtime::StoreContextMut;
use wasmtime::component::{
    Accessor, ComponentType, FutureReader, Lift, Linker, Lower, Resource, ResourceType,
    StreamReader,
};

pub const V2: &str = "fermyon:spin/key-value@2.0.0";
pub const V3: &str = "spin:key-value/key-value@3.0.0";

/// The file name of the `default` store in the state directory (Spin's).
pub const DEFAULT_FILE: &str = "sqlite_key_value.db";

/// The most a `get` or `get-keys` may return, as Spin caps it.
const MAX_RESULT_BYTES: usize = super::sqlite::MAX_RESULT_BYTES;

/// The `error` variant of both versions.
#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq, Eq)]
#[component(variant)]
pub enum KeyValueError {
    #[component(name = "store-table-full")]
    StoreTableFull,
    #[component(name = "no-such-store")]
    NoSuchStore,
    #[component(name = "access-denied")]
    AccessDenied,
    #[component(name = "other")]
    Other(String),
}

/// The application's stores by label, each with its connection.
#[derive(Default)]
pub struct Stores {
    labels: BTreeMap<String, Arc<LazyConnection>>,
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.labels.keys()).finish()
    }
}

impl Stores {
    /// `default` in the state directory, then every `[key_value_store.<label>]`,
    /// each used on `executor`'s threads.
    pub fn from_config(config: &RuntimeConfig, executor: &Arc<Executor>) -> Result<Self> {
        let mut locations = BTreeMap::new();
        let default = match &config.state_dir {
            Some(dir) => Location::File(dir.join(DEFAULT_FILE)),
            None => Location::Memory,
        };
        locations.insert("default".to_string(), default);
        for label in config.labels("key_value_store") {
            let entry = config
                .entry("key_value_store", label)
                .with_context(|| format!("[key_value_store.{label}] is not a table"))?;
            let location = location(config, entry)
                .with_context(|| format!("runtime config [key_value_store.{label}]"))?;
            locations.insert(label.to_string(), location);
        }
        let labels = locations
            .into_iter()
            .map(|(label, location)| {
                let connection =
                    LazyConnection::new(location, Attach::MemoryOnly, setup, executor.clone());
                (label, Arc::new(connection))
            })
            .collect();
        Ok(Self { labels })
    }

    /// Spin refuses at start an app granting a store nothing defines.
    pub fn check_grants(&self, component: &str, granted: &[String]) -> Result<()> {
        for label in granted {
            if !self.labels.contains_key(label) {
                bail!(
                    "unknown key_value_stores label {label:?} for component {component:?}; \
                     define it in the runtime config file ([key_value_store.{label}])"
                );
            }
        }
        Ok(())
    }
}

fn location(config: &RuntimeConfig, entry: &toml::Table) -> Result<Location> {
    let kind = entry.get("type").and_then(toml::Value::as_str);
    if kind != Some("spin") {
        bail!(
            "type {kind:?}: spinbench serves only type = \"spin\" (a local file); `spin up` serves the others"
        );
    }
    match entry.get("path") {
        None => Ok(Location::Memory),
        Some(toml::Value::String(path)) => Ok(Location::File(config.resolve(path))),
        Some(other) => bail!("path must be a string, not {other}"),
    }
}

/// Spin's table, created on first use, and the `rarray` table function that
/// `wasi:keyvalue/batch` queries with (as Spin's `key-value-spin` loads it).
fn setup(connection: &rusqlite::Connection) -> rusqlite::Result<()> {
    rusqlite::vtab::array::load_module(connection)?;
    connection.execute(
        "CREATE TABLE IF NOT EXISTS spin_key_value (
            store TEXT NOT NULL,
            key   TEXT NOT NULL,
            value BLOB NOT NULL,
            PRIMARY KEY (store, key)
        )",
        [],
    )?;
    Ok(())
}

/// An open store: a label and its database, used by one instance.
#[derive(Clone)]
pub struct Store {
    label: Arc<str>,
    connection: Arc<LazyConnection>,
    budget: Arc<InstanceBudget>,
}

/// Keys, each with the bytes it was charged, and the share holding them.
type HeldKeys = (Vec<(String, usize)>, Share);

impl ComponentContext {
    /// What `store.open(label)` answers, as Spin answers it.
    pub fn open_store(
        &self,
        label: &str,
        budget: &Arc<InstanceBudget>,
    ) -> Result<Store, KeyValueError> {
        if !self.grants.key_value_stores.iter().any(|l| l == label) {
            return Err(KeyValueError::AccessDenied);
        }
        let connection = self
            .services
            .key_value
            .labels
            .get(label)
            .ok_or(KeyValueError::NoSuchStore)?;
        Ok(Store {
            label: label.into(),
            connection: connection.clone(),
            budget: budget.clone(),
        })
    }
}

impl Store {
    /// Runs `work` on the store's connection with its label; `wasi_keyvalue`
    /// builds its batch and atomic operations on it.
    pub(super) async fn run<R: Send + 'static>(
        &self,
        work: impl FnOnce(&rusqlite::Connection, &str) -> rusqlite::Result<R> + Send + 'static,
    ) -> Result<R, KeyValueError> {
        let label = self.label.clone();
        self.connection
            .run(&self.budget.sqlite_heap, move |connection| {
                work(connection, &label)
            })
            .await
            .map_err(KeyValueError::Other)?
            .map_err(|error| KeyValueError::Other(error.to_string()))
    }

    pub async fn get(&self, key: String) -> Result<Option<Vec<u8>>, KeyValueError> {
        let value = self
            .run(move |connection, label| {
                let mut statement = connection
                    .prepare_cached("SELECT value FROM spin_key_value WHERE store=$1 AND key=$2")?;
                let mut rows = statement.query([label, &key])?;
                rows.next()?.map(|row| row.get::<_, Vec<u8>>(0)).transpose()
            })
            .await?;
        let size = value.as_ref().map_or(0, Vec::len);
        if size > MAX_RESULT_BYTES {
            return Err(too_large());
        }
        // Held until it is handed back: a WASIp3 guest may have many gets
        // in flight at once.
        let _held = self.held(size)?;
        Ok(value)
    }

    pub async fn set(&self, key: String, value: Vec<u8>) -> Result<(), KeyValueError> {
        let _held = self.held(key.len() + value.len())?;
        self.run(move |connection, label| {
            connection
                .prepare_cached(
                    "INSERT INTO spin_key_value (store, key, value) VALUES ($1, $2, $3)
                     ON CONFLICT(store, key) DO UPDATE SET value=$3",
                )?
                .execute(rusqlite::params![label, key, value])
                .map(drop)
        })
        .await
    }

    pub async fn delete(&self, key: String) -> Result<(), KeyValueError> {
        self.run(move |connection, label| {
            connection
                .prepare_cached("DELETE FROM spin_key_value WHERE store=$1 AND key=$2")?
                .execute([label, &key])
                .map(drop)
        })
        .await
    }

    pub async fn exists(&self, key: String) -> Result<bool, KeyValueError> {
        self.run(move |connection, label| {
            connection
                .prepare_cached("SELECT 1 FROM spin_key_value WHERE store=$1 AND key=$2")?
                .exists([label, &key])
        })
        .await
    }

    pub async fn get_keys(&self) -> Result<Vec<String>, KeyValueError> {
        let (keys, _held) = self.held_keys().await?;
        Ok(keys.into_iter().map(|(key, _)| key).collect())
    }

    /// Every key of the store, each charged to the instance as it is read:
    /// a listing past Spin's result limit, or past what the instance may
    /// hold, stops at the key that passes it.
    async fn held_keys(&self) -> Result<HeldKeys, KeyValueError> {
        let mut held = self.held(0)?;
        self.run(move |connection, label| {
            let mut statement =
                connection.prepare_cached("SELECT key FROM spin_key_value WHERE store=$1")?;
            let mut rows = statement.query([label])?;
            let (mut keys, mut bytes) = (Vec::new(), size_of::<Vec<String>>());
            while let Some(row) = rows.next()? {
                let key: String = row.get(0)?;
                let size = key.len() + size_of::<String>();
                bytes += size;
                if bytes > MAX_RESULT_BYTES {
                    return Ok(Err(too_large()));
                }
                if let Err(error) = InstanceBudget::hold_more(&mut held, size) {
                    return Ok(Err(KeyValueError::Other(error)));
                }
                keys.push((key, size));
            }
            Ok(Ok((keys, held)))
        })
        .await?
    }

    /// `bytes` held for this instance's call, or the error saying why not.
    pub(super) fn held(&self, bytes: usize) -> Result<Share, KeyValueError> {
        self.budget.hold(bytes).map_err(KeyValueError::Other)
    }
}

pub(super) fn too_large() -> KeyValueError {
    KeyValueError::Other(format!(
        "query result exceeds limit of {MAX_RESULT_BYTES} bytes"
    ))
}

/// `fermyon:spin/key-value@2.0.0`'s store resource.
pub struct StoreV2(Store);
/// `spin:key-value/key-value@3.0.0`'s store resource.
pub struct StoreV3(Store);

fn store_of<R: AsRef<Store> + 'static>(
    table: &wasmtime::component::ResourceTable,
    handle: &Resource<R>,
) -> wasmtime::Result<Store> {
    Ok(table.get(handle)?.as_ref().clone())
}

impl AsRef<Store> for StoreV2 {
    fn as_ref(&self) -> &Store {
        &self.0
    }
}

impl AsRef<Store> for StoreV3 {
    fn as_ref(&self) -> &Store {
        &self.0
    }
}

/// Defines a synchronous method of the v2 store resource: the store behind the
/// handle, then `$call` awaited on it.
macro_rules! v2_method {
    ($instance:expr, $name:literal, |$store:ident $(, $arg:ident: $ty:ty)*| $call:expr) => {
        $instance.func_wrap_async(
            $name,
            |mut state: StoreContextMut<'_, T>, (handle, $($arg,)*): (Resource<StoreV2>, $($ty,)*)| {
                Box::new(async move {
                    let $store = store_of(state.data_mut().table(), &handle)?;
                    Ok(($call.await,))
                })
            },
        )?
    };
}

/// The same for the v3 store resource, whose methods are async.
macro_rules! v3_method {
    ($instance:expr, $name:literal, |$store:ident $(, $arg:ident: $ty:ty)*| $call:expr) => {
        $instance.func_wrap_concurrent(
            $name,
            |accessor: &Accessor<T>, (handle, $($arg,)*): (Resource<StoreV3>, $($ty,)*)| {
                Box::pin(async move {
                    let $store = accessor.with(|mut access| store_of(access.get().table(), &handle))?;
                    Ok(($call.await,))
                })
            },
        )?
    };
}

pub fn link_v2<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    let mut instance = linker.instance(V2)?;
    instance.resource(
        "store",
        ResourceType::host::<StoreV2>(),
        super::drop_resource::<T, StoreV2>,
    )?;
    instance.func_wrap(
        "[static]store.open",
        |mut state: StoreContextMut<'_, T>, (label,): (String,)| {
            let data = state.data();
            let opened = data.context().open_store(&label, data.budget());
            Ok((match opened {
                Ok(store) => Ok(state.data_mut().table().push(StoreV2(store))?),
                Err(error) => Err(error),
            },))
        },
    )?;
    v2_method!(instance, "[method]store.get", |store, key: String| store
        .get(key));
    v2_method!(
        instance,
        "[method]store.set",
        |store, key: String, value: Vec<u8>| store.set(key, value)
    );
    v2_method!(instance, "[method]store.delete", |store, key: String| store
        .delete(key));
    v2_method!(instance, "[method]store.exists", |store, key: String| store
        .exists(key));
    v2_method!(instance, "[method]store.get-keys", |store| store.get_keys());
    Ok(())
}

pub fn link_v3<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    let mut instance = linker.instance(V3)?;
    instance.resource(
        "store",
        ResourceType::host::<StoreV3>(),
        super::drop_resource::<T, StoreV3>,
    )?;
    instance.func_wrap_concurrent(
        "[static]store.open",
        |accessor: &Accessor<T>, (label,): (String,)| {
            Box::pin(async move {
                accessor.with(|mut access| {
                    let state = access.get();
                    let opened = state.context().open_store(&label, state.budget());
                    Ok((match opened {
                        Ok(store) => Ok(state.table().push(StoreV3(store))?),
                        Err(error) => Err(error),
                    },))
                })
            })
        },
    )?;
    v3_method!(instance, "[method]store.get", |store, key: String| store
        .get(key));
    v3_method!(
        instance,
        "[method]store.set",
        |store, key: String, value: Vec<u8>| store.set(key, value)
    );
    v3_method!(instance, "[method]store.delete", |store, key: String| store
        .delete(key));
    v3_method!(instance, "[method]store.exists", |store, key: String| store
        .exists(key));
    instance.func_wrap_concurrent(
        "[method]store.get-keys",
        |accessor: &Accessor<T>, (handle,): (Resource<StoreV3>,)| {
            Box::pin(async move {
                let store = accessor.with(|mut access| store_of(access.get().table(), &handle))?;
                // A failure is an empty stream whose future carries the
                // error; the keys stay charged until the guest reads them.
                let (keys, outcome) = match store.held_keys().await {
                    Ok((keys, held)) => (HeldStream::new(keys, held), Ok(())),
                    Err(error) => (HeldStream::empty(), Err(error)),
                };
                accessor.with(|mut access| {
                    let keys = StreamReader::new(&mut access, keys)?;
                    let outcome = FutureReader::new(&mut access, async move {
                        Ok::<_, wasmtime::Error>(outcome)
                    })?;
                    Ok(((keys, outcome),))
                })
            })
        },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests;
