//! The three versions' functions, linked over the one implementation: each
//! version converts its parameters in and its rows and errors out. Sync
//! functions are host `async` (the guest waits in a plain call); 4.2.0's
//! `-async` functions use the component model's async ABI.

use super::older::{self, v2, v3};
use super::types::{Column, DbValue, Error, ParameterValue, RowSet};
use super::{Builder, Connection, V2, V3, V4, connection};
use crate::capabilities::{HostState, drop_resource};
use anyhow::Result;
use wasmtime::StoreContextMut;
use wasmtime::component::{
    Accessor, ComponentType, FutureReader, Lift, Linker, Lower, Resource, ResourceType,
    StreamReader,
};

/// How one version's types map onto 4.2.0's.
struct Version<P, R, E> {
    name: &'static str,
    params: fn(Vec<P>) -> Result<Vec<ParameterValue>, E>,
    rows: fn(RowSet) -> R,
    error: fn(Error) -> E,
}

pub fn link_v2<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    link_sync(
        linker,
        &Version {
            name: V2,
            params: |params: Vec<v2::ParameterValue>| {
                params.into_iter().map(ParameterValue::try_from).collect()
            },
            rows: v2::RowSet::from,
            error: older::Error::from,
        },
    )
}

pub fn link_v3<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    link_sync(
        linker,
        &Version {
            name: V3,
            params: |params: Vec<v3::ParameterValue>| {
                Ok(params.into_iter().map(ParameterValue::from).collect())
            },
            rows: v3::RowSet::from,
            error: older::Error::from,
        },
    )
}

/// `connection` with `open`, `query` and `execute`, in `version`'s types.
fn link_sync<T, P, R, E>(linker: &mut Linker<T>, version: &Version<P, R, E>) -> Result<()>
where
    T: HostState,
    P: ComponentType + Lift + Send + Sync + 'static,
    R: ComponentType + Lower + Send + Sync + 'static,
    E: ComponentType + Lower + Send + Sync + 'static,
{
    let &Version {
        name,
        params,
        rows,
        error,
    } = version;
    let mut instance = linker.instance(name)?;
    instance.resource(
        "connection",
        ResourceType::host::<Connection>(),
        drop_resource::<T, Connection>,
    )?;
    instance.func_wrap_async(
        "[static]connection.open",
        move |mut store: StoreContextMut<'_, T>, (address,): (String,)| {
            Box::new(async move {
                let opened = match store.data().context().postgres_opener(&address) {
                    Ok(opener) => opener.open().await,
                    Err(e) => Err(e),
                };
                Ok((match opened {
                    Ok(connection) => Ok(store.data_mut().table().push(connection)?),
                    Err(e) => Err(error(e)),
                },))
            })
        },
    )?;
    instance.func_wrap_async(
        "[method]connection.query",
        move |mut store: StoreContextMut<'_, T>,
              (handle, statement, values): (Resource<Connection>, String, Vec<P>)| {
            Box::new(async move {
                let connection = connection(store.data_mut(), &handle)?;
                let result = match params(values) {
                    Ok(values) => connection
                        .query(&statement, values)
                        .await
                        .map(rows)
                        .map_err(error),
                    Err(e) => Err(e),
                };
                Ok((result,))
            })
        },
    )?;
    instance.func_wrap_async(
        "[method]connection.execute",
        move |mut store: StoreContextMut<'_, T>,
              (handle, statement, values): (Resource<Connection>, String, Vec<P>)| {
            Box::new(async move {
                let connection = connection(store.data_mut(), &handle)?;
                let result = match params(values) {
                    Ok(values) => connection.execute(&statement, values).await.map_err(error),
                    Err(e) => Err(e),
                };
                Ok((result,))
            })
        },
    )?;
    Ok(())
}

/// What `set-ca-root` answers: there is no TLS to give the root to.
fn no_tls() -> Error {
    Error::Other(
        "spinbench serve connects to PostgreSQL without TLS, so it cannot use a CA root; `spin up` can"
            .to_string(),
    )
}

/// The rows of a `query-async`: all read before the stream is handed over
/// (Spin streams them as they come; the guest reads the same rows).
type AsyncRows = (
    Vec<Column>,
    StreamReader<Vec<DbValue>>,
    FutureReader<Result<(), Error>>,
);

/// 4.2.0: the sync functions (also what 4.0.0 and 4.1.0 imports take), the
/// connection builder of 4.1, and the `-async` functions of 4.2.
pub fn link_v4<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    link_sync(
        linker,
        &Version {
            name: V4,
            params: Ok,
            rows: std::convert::identity,
            error: std::convert::identity,
        },
    )?;
    let mut instance = linker.instance(V4)?;
    instance.resource(
        "connection-builder",
        ResourceType::host::<Builder>(),
        drop_resource::<T, Builder>,
    )?;
    instance.func_wrap(
        "[constructor]connection-builder",
        |mut store: StoreContextMut<'_, T>, (address,): (String,)| {
            Ok((store.data_mut().table().push(Builder(address))?,))
        },
    )?;
    instance.func_wrap(
        "[method]connection-builder.set-ca-root",
        |_: StoreContextMut<'_, T>, (_, _): (Resource<Builder>, String)| {
            Ok((Err::<(), _>(no_tls()),))
        },
    )?;
    // Spin checks the address in `build-async` only; both check it here.
    instance.func_wrap_async(
        "[method]connection-builder.build",
        |mut store: StoreContextMut<'_, T>, (builder,): (Resource<Builder>,)| {
            Box::new(async move {
                let address = store.data_mut().table().get(&builder)?.0.clone();
                let opened = match store.data().context().postgres_opener(&address) {
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
    instance.func_wrap_concurrent(
        "[method]connection-builder.build-async",
        |accessor: &Accessor<T>, (builder,): (Resource<Builder>,)| {
            Box::pin(async move {
                let address = accessor.with(|mut access| {
                    Ok::<_, wasmtime::Error>(access.get().table().get(&builder)?.0.clone())
                })?;
                open_async(accessor, address).await
            })
        },
    )?;
    instance.func_wrap_concurrent(
        "[static]connection.open-async",
        |accessor: &Accessor<T>, (address,): (String,)| {
            Box::pin(async move { open_async(accessor, address).await })
        },
    )?;
    instance.func_wrap_concurrent(
        "[method]connection.execute-async",
        |accessor: &Accessor<T>,
         (handle, statement, params): (Resource<Connection>, String, Vec<ParameterValue>)| {
            Box::pin(async move {
                let connection = accessor.with(|mut access| connection(access.get(), &handle))?;
                Ok((connection.execute(&statement, params).await,))
            })
        },
    )?;
    instance.func_wrap_concurrent(
        "[method]connection.query-async",
        |accessor: &Accessor<T>,
         (handle, statement, params): (Resource<Connection>, String, Vec<ParameterValue>)| {
            Box::pin(async move {
                let connection = accessor.with(|mut access| connection(access.get(), &handle))?;
                let rows = match connection.query_rows(&statement, params).await {
                    Ok(rows) => rows,
                    Err(error) => return Ok((Err(error),)),
                };
                let outcome = rows.error.map_or(Ok(()), Err);
                accessor.with(
                    |mut access| -> wasmtime::Result<(Result<AsyncRows, Error>,)> {
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

async fn open_async<T: HostState>(
    accessor: &Accessor<T>,
    address: String,
) -> wasmtime::Result<(Result<Resource<Connection>, Error>,)> {
    let opener = accessor.with(|mut access| access.get().context().postgres_opener(&address));
    let opened = match opener {
        Ok(opener) => opener.open().await,
        Err(e) => Err(e),
    };
    Ok((match opened {
        Ok(connection) => Ok(accessor.with(|mut access| access.get().table().push(connection))?),
        Err(e) => Err(e),
    },))
}
