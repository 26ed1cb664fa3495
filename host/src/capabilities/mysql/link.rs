//! The two versions' functions, linked over the one implementation in the
//! shared `rdbms-types` types. 2.0.0's are sync for the guest (host `async`:
//! the guest waits in a plain call); 3.0.0's are component-model `async`
//! functions, its `query` answering with a stream of rows and a future of
//! how they ended.

use super::RDBMS_TYPES_V2;
use super::{Column, Connection, DbValue, Error, ParameterValue, V2, V3};
use crate::capabilities::{HostState, drop_resource};
use anyhow::Result;
use wasmtime::StoreContextMut;
use wasmtime::component::{Accessor, FutureReader, Linker, Resource, ResourceType, StreamReader};

/// The connection behind a handle, cloned out of the store's table.
fn connection<T: HostState>(
    state: &mut T,
    handle: &Resource<Connection>,
) -> wasmtime::Result<Connection> {
    Ok(state.table().get(handle)?.clone())
}

/// `fermyon:spin/rdbms-types@2.0.0` has no functions or resources: an empty
/// instance satisfies its import (its types are checked where they are used).
pub fn link_rdbms_types_v2<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    linker.instance(RDBMS_TYPES_V2)?;
    Ok(())
}

/// `fermyon:spin/mysql@2.0.0`: `open`, `query` (every row at once, or the
/// first error) and `execute`.
pub fn link_v2<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    let mut instance = linker.instance(V2)?;
    instance.resource(
        "connection",
        ResourceType::host::<Connection>(),
        drop_resource::<T, Connection>,
    )?;
    instance.func_wrap_async(
        "[static]connection.open",
        |mut store: StoreContextMut<'_, T>, (address,): (String,)| {
            Box::new(async move {
                let opened = match store.data().context().mysql_opener(&address) {
                    Ok(opener) => opener.open().await,
                    Err(e) => Err(e),
                };
                Ok((match opened {
                    Ok(connection) => Ok(store.data_mut().table().push(connection)?),
                    Err(e) => Err(e),
                },))
            })
        },
    )?;
    instance.func_wrap_async(
        "[method]connection.query",
        |mut store: StoreContextMut<'_, T>,
         (handle, statement, params): (Resource<Connection>, String, Vec<ParameterValue>)| {
            Box::new(async move {
                let connection = connection(store.data_mut(), &handle)?;
                Ok((connection.query(&statement, params).await,))
            })
        },
    )?;
    instance.func_wrap_async(
        "[method]connection.execute",
        |mut store: StoreContextMut<'_, T>,
         (handle, statement, params): (Resource<Connection>, String, Vec<ParameterValue>)| {
            Box::new(async move {
                let connection = connection(store.data_mut(), &handle)?;
                Ok((connection.execute(&statement, params).await,))
            })
        },
    )?;
    Ok(())
}

/// What 3.0.0's `query` answers with: the columns, the rows, how they ended.
type Streamed = (
    Vec<Column>,
    StreamReader<Vec<DbValue>>,
    FutureReader<Result<(), Error>>,
);

/// What Spin 4.0.2's 3.0.0 `query` answers when the statement fails to run:
/// its query task ends before sending the columns, and the call reports the
/// closed channel it was waiting on (the reason is dropped with the future
/// that would have carried it).
fn query_not_run() -> Error {
    Error::Other("async error: channel closed".to_string())
}

/// `spin:mysql/mysql@3.0.0`: the same functions, `async`; `query` reads every
/// row before handing the stream over (Spin streams them as they come; the
/// guest reads the same rows, and the same error after them).
pub fn link_v3<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    let mut instance = linker.instance(V3)?;
    instance.resource(
        "connection",
        ResourceType::host::<Connection>(),
        drop_resource::<T, Connection>,
    )?;
    instance.func_wrap_concurrent(
        "[static]connection.open",
        |accessor: &Accessor<T>, (address,): (String,)| {
            Box::pin(async move {
                let opener =
                    accessor.with(|mut access| access.get().context().mysql_opener(&address));
                let opened = match opener {
                    Ok(opener) => opener.open().await,
                    Err(e) => Err(e),
                };
                Ok((match opened {
                    Ok(connection) => {
                        Ok(accessor.with(|mut access| access.get().table().push(connection))?)
                    }
                    Err(e) => Err(e),
                },))
            })
        },
    )?;
    instance.func_wrap_concurrent(
        "[method]connection.execute",
        |accessor: &Accessor<T>,
         (handle, statement, params): (Resource<Connection>, String, Vec<ParameterValue>)| {
            Box::pin(async move {
                let connection = accessor.with(|mut access| connection(access.get(), &handle))?;
                Ok((connection.execute(&statement, params).await,))
            })
        },
    )?;
    instance.func_wrap_concurrent(
        "[method]connection.query",
        |accessor: &Accessor<T>,
         (handle, statement, params): (Resource<Connection>, String, Vec<ParameterValue>)| {
            Box::pin(async move {
                let connection = accessor.with(|mut access| connection(access.get(), &handle))?;
                let Ok(rows) = connection.query_rows(&statement, params).await else {
                    return Ok((Err(query_not_run()),));
                };
                let outcome = rows.error.map_or(Ok(()), Err);
                accessor.with(
                    |mut access| -> wasmtime::Result<(Result<Streamed, Error>,)> {
                        let stream = StreamReader::new(&mut access, rows.rows)?;
                        let future = FutureReader::new(&mut access, async move {
                            Ok::<_, wasmtime::Error>(outcome)
                        })?;
                        Ok((Ok((rows.columns, stream, future)),))
                    },
                )
            })
        },
    )?;
    Ok(())
}
