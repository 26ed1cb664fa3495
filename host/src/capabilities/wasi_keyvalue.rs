//! `wasi:keyvalue@0.2.0-draft2` (`store`, `batch`, `atomics`), the version
//! Spin 4.0.2 links (spinframework/spin v4.0.2 `wit/deps/keyvalue-2024-10-17`,
//! `crates/factor-key-value/src/host.rs`, `crates/key-value-spin`), over the
//! same stores and grants as Spin's own key-value interfaces ([`key_value`]):
//! a bucket is a store, so a value set through `fermyon:spin/key-value` reads
//! the same here, as in Spin, where both share one store table.
//!
//! Behaviour as Spin's SQLite store has it:
//! - `open` of a label not granted is `access-denied`;
//! - `list-keys` answers every key at once with no cursor, and a cursor given
//!   back is `other("list_keys: cursor not supported")`;
//! - `get-many` answers only the keys that exist, in the order SQLite returns
//!   them (one `IN rarray(..)` query, as Spin's);
//! - `increment` reads the value as an 8-byte little-endian integer (absent:
//!   0) and adds with wrapping, as Spin's release build does;
//! - a `cas` remembers the value its `current` read; `swap` updates only if
//!   the key still holds that value, else answers `cas-failed` with a fresh
//!   `cas` whose `current` has been read. Without a value read (no `current`
//!   called, or the key absent) `swap` writes unconditionally, as Spin's does.
//!
//! Differences, none of which a guest that works under Spin can rely on: a
//! value `increment` cannot read (not 8 bytes) is `other(..)` where Spin's host
//! panics; a `cas` keeps its store, so `cas-failed` still answers after its
//! bucket was dropped (Spin then answers `store-error(no-such-store)`); a
//! swapped `cas` leaves the resource table (Spin keeps it until the instance ends).
//!
//! [`key_value`]: super::key_value

use super::HostState;
use super::budget::InstanceBudget;
use super::key_value::{KeyValueError, Store, too_large};
use super::sqlite::MAX_RESULT_BYTES;
use anyhow::Result;
use rusqlite::types::Value;
use std::rc::Rc;
use wasmtime::StoreContextMut;
use wasmtime::component::{
    ComponentType, Lift, Linker, Lower, Resource, ResourceTable, ResourceType,
};

pub const STORE: &str = "wasi:keyvalue/store@0.2.0-draft2";
pub const BATCH: &str = "wasi:keyvalue/batch@0.2.0-draft2";
pub const ATOMICS: &str = "wasi:keyvalue/atomics@0.2.0-draft2";

/// `store.error`, which `batch` and `atomics` use too.
#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq, Eq)]
#[component(variant)]
pub enum Error {
    #[component(name = "no-such-store")]
    NoSuchStore,
    #[component(name = "access-denied")]
    AccessDenied,
    #[component(name = "other")]
    Other(String),
}

/// Spin's `to_wasi_err`: this error has no `store-table-full`.
impl From<KeyValueError> for Error {
    fn from(error: KeyValueError) -> Self {
        match error {
            KeyValueError::AccessDenied => Error::AccessDenied,
            KeyValueError::NoSuchStore => Error::NoSuchStore,
            KeyValueError::StoreTableFull => Error::Other("store table full".to_string()),
            KeyValueError::Other(message) => Error::Other(message),
        }
    }
}

/// `store.key-response`.
#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq, Eq)]
#[component(record)]
pub struct KeyResponse {
    pub keys: Vec<String>,
    pub cursor: Option<String>,
}

/// `atomics.cas-error`.
#[derive(ComponentType, Lower, Debug)]
#[component(variant)]
pub enum CasError {
    #[component(name = "store-error")]
    StoreError(Error),
    #[component(name = "cas-failed")]
    CasFailed(Resource<Cas>),
}

/// The `bucket` resource: an open store.
pub struct Bucket(Store);

/// The `cas` resource: a key of a store, and the value its `current` read.
pub struct Cas {
    store: Store,
    key: String,
    /// `None` until `current` reads a value.
    read: Option<Vec<u8>>,
}

impl std::fmt::Debug for Cas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cas")
            .field("key", &self.key)
            .field("read", &self.read)
            .finish_non_exhaustive()
    }
}

/// How a `swap` can fail, before the fresh `cas` is in the resource table.
#[derive(Debug)]
pub enum SwapFailure {
    /// The key no longer holds the value read: a `cas` for it, its value read.
    Changed(Cas),
    Store(Error),
}

pub async fn list_keys(store: &Store, cursor: Option<String>) -> Result<KeyResponse, Error> {
    if cursor.is_some() {
        return Err(Error::Other("list_keys: cursor not supported".to_string()));
    }
    let keys = store.get_keys().await?;
    Ok(KeyResponse { keys, cursor: None })
}

pub async fn get_many(
    store: &Store,
    keys: Vec<String>,
) -> Result<Vec<(String, Option<Vec<u8>>)>, Error> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let mut held = store.held(keys.iter().map(String::len).sum())?;
    // Spin's count: the list, then each pair with its key and value; read
    // pair by pair, and stopped at the one past the limit.
    let (found, _held) = store
        .run(move |connection, label| {
            let keys = Rc::new(keys.into_iter().map(Value::from).collect::<Vec<_>>());
            let mut statement = connection.prepare_cached(
                "SELECT key, value FROM spin_key_value WHERE store=$1 AND key IN rarray($2)",
            )?;
            let mut rows = statement.query(rusqlite::params![label, keys])?;
            let (mut found, mut bytes) = (Vec::new(), size_of::<Vec<String>>());
            while let Some(row) = rows.next()? {
                let (key, value): (String, Vec<u8>) = (row.get(0)?, row.get(1)?);
                let size = size_of::<(String, Option<Vec<u8>>)>() + key.len() + value.len();
                bytes += size;
                if bytes > MAX_RESULT_BYTES {
                    return Ok(Err(too_large()));
                }
                if let Err(error) = InstanceBudget::hold_more(&mut held, size) {
                    return Ok(Err(KeyValueError::Other(error)));
                }
                found.push((key, Some(value)));
            }
            Ok(Ok((found, held)))
        })
        .await??;
    Ok(found)
}

/// All or nothing, in one transaction (Spin's; the interface allows less).
pub async fn set_many(store: &Store, pairs: Vec<(String, Vec<u8>)>) -> Result<(), Error> {
    if pairs.is_empty() {
        return Ok(());
    }
    let _held = store.held(pairs.iter().map(|(k, v)| k.len() + v.len()).sum())?;
    Ok(store
        .run(move |connection, label| {
            let transaction = connection.unchecked_transaction()?;
            for (key, value) in pairs {
                transaction
                    .prepare_cached(
                        "INSERT INTO spin_key_value (store, key, value) VALUES ($1, $2, $3)
                         ON CONFLICT(store, key) DO UPDATE SET value=$3",
                    )?
                    .execute(rusqlite::params![label, key, value])?;
            }
            transaction.commit()
        })
        .await?)
}

pub async fn delete_many(store: &Store, keys: Vec<String>) -> Result<(), Error> {
    if keys.is_empty() {
        return Ok(());
    }
    Ok(store
        .run(move |connection, label| {
            let keys = Rc::new(keys.into_iter().map(Value::from).collect::<Vec<_>>());
            connection
                .prepare_cached("DELETE FROM spin_key_value WHERE store=$1 AND key IN rarray($2)")?
                .execute(rusqlite::params![label, keys])
                .map(drop)
        })
        .await?)
}

pub async fn increment(store: &Store, key: String, delta: i64) -> Result<i64, Error> {
    store
        .run(move |connection, label| {
            let transaction = connection.unchecked_transaction()?;
            let value: Option<Vec<u8>> = transaction
                .prepare_cached("SELECT value FROM spin_key_value WHERE store=$1 AND key=$2")?
                .query_map([label, &key], |row| row.get(0))?
                .next()
                .transpose()?;
            let current = match value.map(<[u8; 8]>::try_from) {
                None => 0,
                Some(Ok(bytes)) => i64::from_le_bytes(bytes),
                // Spin's host panics here; a guest's data must not crash the host.
                Some(Err(value)) => {
                    return Ok(Err(format!(
                        "the value of {key:?} is {} bytes, not an 8-byte little-endian integer",
                        value.len()
                    )));
                }
            };
            let new = current.wrapping_add(delta);
            transaction
                .prepare_cached(
                    "INSERT INTO spin_key_value (store, key, value) VALUES ($1, $2, $3)
                     ON CONFLICT(store, key) DO UPDATE SET value=$3",
                )?
                .execute(rusqlite::params![label, key, new.to_le_bytes()])?;
            transaction.commit()?;
            Ok(Ok(new))
        })
        .await?
        .map_err(Error::Other)
}

impl Cas {
    pub fn new(store: Store, key: String) -> Self {
        Self {
            store,
            key,
            read: None,
        }
    }

    /// The key's value, remembered for `swap` (even when too large to hand
    /// back, as Spin remembers it).
    pub async fn current(&mut self) -> Result<Option<Vec<u8>>, Error> {
        let key = self.key.clone();
        let value: Option<Vec<u8>> = self
            .store
            .run(move |connection, label| {
                connection
                    .prepare_cached("SELECT value FROM spin_key_value WHERE store=$1 AND key=$2")?
                    .query_map([label, &key], |row| row.get(0))?
                    .next()
                    .transpose()
            })
            .await?;
        self.read.clone_from(&value);
        if size_of::<Option<Vec<u8>>>() + value.as_ref().map_or(0, Vec::len) > MAX_RESULT_BYTES {
            return Err(too_large().into());
        }
        Ok(value)
    }

    pub async fn swap(self, value: Vec<u8>) -> Result<(), SwapFailure> {
        let (key, read) = (self.key.clone(), self.read);
        let changed = self
            .store
            .run(move |connection, label| {
                let rows = match read {
                    Some(read) => connection
                        .prepare_cached(
                            // `?N`, not `$N`: SQLite numbers `$N` by first appearance.
                            "UPDATE spin_key_value SET value=?4 WHERE store=?1 AND key=?2 AND value=?3",
                        )?
                        .execute(rusqlite::params![label, key, read, value])?,
                    None => connection
                        .prepare_cached(
                            "INSERT INTO spin_key_value (store, key, value) VALUES ($1, $2, $3)
                             ON CONFLICT(store, key) DO UPDATE SET value=$3",
                        )?
                        .execute(rusqlite::params![label, key, value])?,
                };
                Ok(rows != 1)
            })
            .await
            .map_err(|error| SwapFailure::Store(error.into()))?;
        if !changed {
            return Ok(());
        }
        let mut fresh = Cas::new(self.store, self.key);
        fresh.current().await.map_err(SwapFailure::Store)?;
        Err(SwapFailure::Changed(fresh))
    }
}

fn store_of(table: &ResourceTable, bucket: &Resource<Bucket>) -> wasmtime::Result<Store> {
    Ok(table.get(bucket)?.0.clone())
}

/// Defines a function taking a bucket first: the store behind the handle,
/// then `$call` awaited on it, its error made this interface's. Functions are
/// synchronous in the WIT; the host awaits SQLite on tokio's blocking pool, as
/// `key_value::link_v2` does.
macro_rules! bucket_fn {
    ($instance:expr, $name:literal, |$store:ident $(, $arg:ident: $ty:ty)*| $call:expr) => {
        $instance.func_wrap_async(
            $name,
            |mut state: StoreContextMut<'_, T>, (bucket, $($arg,)*): (Resource<Bucket>, $($ty,)*)| {
                Box::new(async move {
                    let $store = store_of(state.data_mut().table(), &bucket)?;
                    Ok(($call.await.map_err(Error::from),))
                })
            },
        )?
    };
}

/// `store`, `batch` and `atomics`: `batch` and `atomics` use `store`'s
/// `bucket`, so a component importing either imports `store` too.
pub fn link<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    let mut store = linker.instance(STORE)?;
    store.resource(
        "bucket",
        ResourceType::host::<Bucket>(),
        super::drop_resource::<T, Bucket>,
    )?;
    store.func_wrap(
        "open",
        |mut state: StoreContextMut<'_, T>, (label,): (String,)| {
            let data = state.data();
            let opened = data.context().open_store(&label, data.budget());
            Ok((match opened {
                Ok(opened) => Ok(state.data_mut().table().push(Bucket(opened))?),
                Err(error) => Err(Error::from(error)),
            },))
        },
    )?;
    bucket_fn!(store, "[method]bucket.get", |s, key: String| s.get(key));
    bucket_fn!(
        store,
        "[method]bucket.set",
        |s, key: String, value: Vec<u8>| s.set(key, value)
    );
    bucket_fn!(store, "[method]bucket.delete", |s, key: String| s
        .delete(key));
    bucket_fn!(store, "[method]bucket.exists", |s, key: String| s
        .exists(key));
    bucket_fn!(store, "[method]bucket.list-keys", |s,
                                                   cursor: Option<
        String,
    >| list_keys(
        &s, cursor
    ));

    let mut batch = linker.instance(BATCH)?;
    bucket_fn!(batch, "get-many", |s, keys: Vec<String>| get_many(&s, keys));
    bucket_fn!(batch, "set-many", |s, pairs: Vec<(String, Vec<u8>)>| {
        set_many(&s, pairs)
    });
    bucket_fn!(batch, "delete-many", |s, keys: Vec<String>| delete_many(
        &s, keys
    ));

    let mut atomics = linker.instance(ATOMICS)?;
    atomics.resource(
        "cas",
        ResourceType::host::<Cas>(),
        super::drop_resource::<T, Cas>,
    )?;
    bucket_fn!(
        atomics,
        "increment",
        |s, key: String, delta: i64| increment(&s, key, delta)
    );
    atomics.func_wrap(
        "[static]cas.new",
        |mut state: StoreContextMut<'_, T>, (bucket, key): (Resource<Bucket>, String)| {
            let table = state.data_mut().table();
            let cas = Cas::new(store_of(table, &bucket)?, key);
            Ok((Ok::<_, Error>(table.push(cas)?),))
        },
    )?;
    atomics.func_wrap_async(
        "[method]cas.current",
        |mut state: StoreContextMut<'_, T>, (handle,): (Resource<Cas>,)| {
            Box::new(async move {
                // Read on a copy, so the table is not borrowed across the await.
                let cas = state.data_mut().table().get(&handle)?;
                let mut copy = Cas::new(cas.store.clone(), cas.key.clone());
                let value = copy.current().await;
                state.data_mut().table().get_mut(&handle)?.read = copy.read;
                Ok((value,))
            })
        },
    )?;
    atomics.func_wrap_async(
        "swap",
        |mut state: StoreContextMut<'_, T>, (handle, value): (Resource<Cas>, Vec<u8>)| {
            Box::new(async move {
                // `swap` takes the `cas`: it leaves the table whatever the outcome.
                let cas = state.data_mut().table().delete(handle)?;
                Ok((match cas.swap(value).await {
                    Ok(()) => Ok(()),
                    Err(SwapFailure::Store(error)) => Err(CasError::StoreError(error)),
                    Err(SwapFailure::Changed(fresh)) => {
                        Err(CasError::CasFailed(state.data_mut().table().push(fresh)?))
                    }
                },))
            })
        },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests;
