//! Both versions' interfaces linked over [`Connection`]: Spin 2's
//! synchronous `fermyon:spin/sqlite@2.0.0`, and Spin 4's
//! `spin:sqlite/sqlite@3.1.0`, whose async functions hand a WASIp3 guest its
//! rows as a stream, held against the instance's budget until it reads them.

use super::{Connection, RowResult, SqliteError, V2, V3, Value};
use crate::capabilities::HostState;
use crate::capabilities::held_stream::HeldStream;
use anyhow::Result;
use wasmtime::StoreContextMut;
use wasmtime::component::{Accessor, FutureReader, Linker, Resource, ResourceType, StreamReader};

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
        crate::capabilities::drop_resource::<T, R>,
    )?;
    instance.func_wrap(
        "[static]connection.open",
        move |mut store: StoreContextMut<'_, T>, (label,): (String,)| {
            let state = store.data();
            let opened = state.context().open_database(&label, state.budget());
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
/// (Spin streams them as they come; the result is the same), then handed
/// over as the guest reads them.
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
                    let opened = state.context().open_database(&label, state.budget());
                    Ok((match opened {
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
                // carries the error, as Spin reports it. The rows stay
                // charged to the instance until the guest reads them.
                let (columns, rows, outcome) = match connection.query(statement, parameters).await {
                    Ok((columns, rows, held)) => (columns, HeldStream::new(rows, held), Ok(())),
                    Err(error) => (Vec::new(), HeldStream::empty(), Err(error)),
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
