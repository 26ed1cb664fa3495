//! Outbound PostgreSQL, as Spin 4 serves it (spinframework/spin
//! `crates/factor-outbound-pg`, read at 94a8fc8a): `fermyon:spin/postgres@2.0.0`
//! (spin-sdk 2 to 5), `spin:postgres/postgres@3.0.0`, and
//! `spin:postgres/postgres@4.2.0` (its sync functions serve 4.0.0 and 4.1.0
//! imports too; spin-sdk 6 uses its `-async` ones). One implementation, in
//! 4.2.0's types ([`types`]); the older versions convert ([`older`]).
//!
//! `open(address)` takes a connection string in either of PostgreSQL's forms
//! (`postgres://user:pw@host:port/db?...` or `host=... port=... dbname=...`),
//! parsed by tokio-postgres. Each host it names (and each `hostaddr`, which is
//! what tokio-postgres dials; Spin does not check those) must be allowed by the
//! component's `allowed_outbound_hosts` as `postgres://host:port`, else
//! `connection-failed("address postgres://host:port is not permitted")`, as
//! Spin answers; and each host must read as the same host to the allow-list
//! and to tokio-postgres ([`address`]), which then dials the addresses the
//! host resolved it to. An allowed address gets a client from the
//! component's pool for that address (deadpool, up to 64 connections, cleaned
//! between uses, as Spin pools them), held until the guest drops the
//! connection.
//!
//! No TLS: connections are plain TCP (tokio-postgres's `NoTls`), so an
//! address with `sslmode=require` fails to connect, and 4.1's
//! `connection-builder.set-ca-root` answers `other`.

// `Error` is the interface's own `error` variant, handed to the guest as it is;
// boxing it would mean converting at every function the guest calls.
#![allow(clippy::result_large_err)]

use super::HostState;
use anyhow::Result;
use std::sync::Arc;
use wasmtime::component::Resource;

pub mod address;
mod convert;
mod link;
pub mod older;
pub mod types;

pub use link::{link_v2, link_v3, link_v4};
use types::{DbError, Error, ParameterValue, QueryError, RowSet};

pub const V2: &str = "fermyon:spin/postgres@2.0.0";
pub const V3: &str = "spin:postgres/postgres@3.0.0";
pub const V4: &str = "spin:postgres/postgres@4.2.0";

/// The most connections one address's pool holds (Spin's `CONNECTION_POOL_SIZE`).
const POOL_SIZE: usize = 64;
/// The most a query may return, as Spin caps it (`MAX_HOST_BUFFERED_BYTES`).
const MAX_RESULT_BYTES: usize = super::sqlite::MAX_RESULT_BYTES;

/// One component's connection pools, by address.
pub type Pools = super::pools::PoolsByAddress<deadpool_postgres::Pool>;

/// A pool of up to [`POOL_SIZE`] connections to one address, cleaned between uses (Spin's).
fn new_pool(config: tokio_postgres::Config) -> deadpool_postgres::Pool {
    let manager = deadpool_postgres::Manager::from_config(
        config,
        tokio_postgres::NoTls,
        deadpool_postgres::ManagerConfig {
            recycling_method: deadpool_postgres::RecyclingMethod::Clean,
        },
    );
    deadpool_postgres::Pool::builder(manager)
        .max_size(POOL_SIZE)
        .build()
        .expect("a pool without timeouts needs no runtime")
}

/// An open connection: a client of the pool, back in it when dropped.
#[derive(Clone)]
pub struct Connection(Arc<deadpool_postgres::Object>);

pub use address::check_address;

/// 4.1's `connection-builder`: an address waiting to be opened.
pub struct Builder(String);

/// The second half of `open`: a client of `pool`, connected if need be.
async fn connect(pool: &deadpool_postgres::Pool) -> Result<Connection, Error> {
    let client = pool
        .get()
        .await
        .map_err(|error| Error::ConnectionFailed(format!("{error:?}")))?;
    Ok(Connection(Arc::new(client)))
}

/// Spin's `query-failed`: the error's debug text, and PostgreSQL's fields when
/// the server reported it.
fn query_failed(error: &tokio_postgres::Error) -> Error {
    let as_text = format!("{error:?}");
    Error::QueryFailed(match error.as_db_error() {
        None => QueryError::Text(as_text),
        Some(db) => {
            let mut extras = Vec::new();
            let mut extra = |name: &str, value: Option<String>| {
                if let Some(value) = value {
                    extras.push((name.to_string(), value));
                }
            };
            extra("column", db.column().map(str::to_string));
            extra("constraint", db.constraint().map(str::to_string));
            extra("routine", db.routine().map(str::to_string));
            extra("hint", db.hint().map(str::to_string));
            extra("table", db.table().map(str::to_string));
            extra("datatype", db.datatype().map(str::to_string));
            extra("schema", db.schema().map(str::to_string));
            extra("file", db.file().map(str::to_string));
            extra("line", db.line().as_ref().map(ToString::to_string));
            extra("where_", db.where_().map(str::to_string));
            QueryError::DbError(DbError {
                as_text,
                severity: db.severity().to_string(),
                code: db.code().code().to_string(),
                message: db.message().to_string(),
                detail: db.detail().map(str::to_string),
                extras,
            })
        }
    })
}

fn parameters(
    params: Vec<ParameterValue>,
    error: fn(String) -> Error,
) -> Result<Vec<convert::Parameter>, Error> {
    params
        .into_iter()
        .map(|param| convert::parameter(param).map_err(|e| error(format!("{e:?}"))))
        .collect()
}

/// A query's rows, read until the end or the first error.
pub struct Rows {
    pub columns: Vec<types::Column>,
    pub rows: Vec<Vec<types::DbValue>>,
    /// Why the rows stopped before the end.
    pub error: Option<Error>,
}

impl Connection {
    pub async fn execute(
        &self,
        statement: &str,
        params: Vec<ParameterValue>,
    ) -> Result<u64, Error> {
        // Spin reports a parameter it cannot convert here as a conversion failure.
        let params = parameters(params, Error::ValueConversionFailed)?;
        self.0
            .execute_raw(statement, params)
            .await
            .map_err(|error| query_failed(&error))
    }

    /// Runs `statement`: an error before the first row is the call's error;
    /// one after it ends [`Rows`] (the async query's future carries it).
    pub async fn query_rows(
        &self,
        statement: &str,
        params: Vec<ParameterValue>,
    ) -> Result<Rows, Error> {
        use futures::StreamExt;
        let params = parameters(params, Error::BadParameter)?;
        let prepared = self
            .0
            .prepare(statement)
            .await
            .map_err(|e| query_failed(&e))?;
        let columns = convert::columns(prepared.columns());
        let stream = self
            .0
            .query_raw(&prepared, params)
            .await
            .map_err(|e| query_failed(&e))?;
        let mut stream = std::pin::pin!(stream);
        let mut rows = Vec::new();
        let mut bytes = size_of::<RowSet>();
        let mut error = None;
        while let Some(row) = stream.next().await {
            let values = match row {
                Ok(row) => convert::row(&row)
                    .map_err(|e| Error::QueryFailed(QueryError::Text(format!("{e:?}")))),
                Err(e) => Err(query_failed(&e)),
            };
            let values = match values {
                Ok(values) => values,
                Err(e) => {
                    error = Some(e);
                    break;
                }
            };
            bytes += values.iter().map(convert::size).sum::<usize>();
            if bytes > MAX_RESULT_BYTES {
                error = Some(Error::QueryFailed(QueryError::Text(format!(
                    "query result exceeds limit of {MAX_RESULT_BYTES} bytes"
                ))));
                break;
            }
            rows.push(values);
        }
        Ok(Rows {
            columns,
            rows,
            error,
        })
    }

    /// `query`: every row, or the first error.
    pub async fn query(
        &self,
        statement: &str,
        params: Vec<ParameterValue>,
    ) -> Result<RowSet, Error> {
        let rows = self.query_rows(statement, params).await?;
        match rows.error {
            Some(error) => Err(error),
            None => Ok(RowSet {
                columns: rows.columns,
                rows: rows.rows,
            }),
        }
    }
}

/// The connection behind a handle, cloned out of the store's table.
fn connection<T: HostState>(
    state: &mut T,
    handle: &Resource<Connection>,
) -> wasmtime::Result<Connection> {
    Ok(state.table().get(handle)?.clone())
}

#[cfg(test)]
mod addresses;
#[cfg(test)]
mod tests;
