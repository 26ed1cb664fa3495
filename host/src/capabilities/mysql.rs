//! Outbound MySQL, as Spin 4.0.2 serves it (spinframework/spin
//! `crates/factor-outbound-mysql`, `src/client.rs` and `src/host.rs`):
//! `fermyon:spin/mysql@2.0.0` (spin-sdk 2 to 7, sync) and
//! `spin:mysql/mysql@3.0.0` (spin-sdk 7, async functions: `query` hands its
//! rows over as a stream). Both have the types of
//! `fermyon:spin/rdbms-types@2.0.0`, which PostgreSQL 2.0.0 shares: they are
//! [`super::postgres::older::v2`]'s, here as in Spin.
//!
//! `open(address)` takes a `mysql://user:pw@host:port/db?...` URL. The address
//! must be allowed by the component's `allowed_outbound_hosts` (scheme
//! `mysql`, port 3306 by default), else `connection-failed("address ... is
//! not permitted")`, as Spin answers. An allowed address is parsed as Spin
//! parses it (its `ssl-mode` query parameter taken out, the rest mysql_async's
//! URL options) and gets a connection from the component's pool for that
//! address, held until the guest drops it. Spin opens a pool of its own for
//! each `open` and takes one connection from it; a pool per address reuses
//! connections across requests instead (mysql_async resets a connection's
//! session when it goes back into its pool, so the guest sees a fresh one).
//!
//! Statements run as Spin runs them: prepared, with positional `?`
//! parameters (`execute` through `exec_batch`, `query` through `exec_iter`),
//! values and column types converted as Spin converts them ([`convert`]).
//!
//! No TLS (mysql_async is built without it, to keep the build short): an
//! address asking for it (`ssl-mode` other than `disabled`; Spin ignores
//! mysql_async's own `require_ssl`, and so does this) answers
//! `connection-failed` without connecting, where Spin connects with TLS. A
//! `socket=` option is refused too: it would reach a Unix socket the
//! allow-list cannot name (Spin lets mysql_async use it), and so is
//! mysql_async's `prefer_socket` (on by default on Unix: after connecting
//! over TCP it asks the server for `@@socket` and reconnects through the Unix
//! socket the server names, one the allow-list never saw).
//!
//! The address is read once ([`super::dial`]): mysql_async's reading must
//! name the host and port the allow-list read, else `connection-failed` says
//! both; mysql_async is then given the checked host and the addresses the
//! host resolved it to (`resolved_ips`), and dials nothing else.

use super::ComponentContext;
use super::dial::Destination;
use super::outbound_hosts::{AllowedHosts, GuestAddress};
use super::postgres::older::Error;
use super::postgres::older::v2::{Column, DbValue, ParameterValue, RowSet};
use mysql_async::prelude::Queryable as _;
use std::sync::Arc;

mod convert;
mod link;

pub use link::{link_rdbms_types_v2, link_v2, link_v3};

pub const V2: &str = "fermyon:spin/mysql@2.0.0";
pub const V3: &str = "spin:mysql/mysql@3.0.0";
/// The types both 2.0.0 interfaces use: an interface of types only.
pub const RDBMS_TYPES_V2: &str = "fermyon:spin/rdbms-types@2.0.0";

/// The most a query may return, as Spin caps it (`MAX_HOST_BUFFERED_BYTES`).
const MAX_RESULT_BYTES: usize = super::sqlite::MAX_RESULT_BYTES;

/// One component's connection pools, by address.
pub type Pools = super::pools::PoolsByAddress<mysql_async::Pool>;

/// An open connection. The guest's calls on it take turns, as in Spin (a lock
/// per connection); it goes back to its pool when the guest drops it.
#[derive(Clone)]
pub struct Connection(Arc<tokio::sync::Mutex<mysql_async::Conn>>);

/// Spin's `connection-failed` for anything that stops a connection: the
/// error as Spin formats it, its `anyhow` error's debug form (the error, then
/// `Caused by:` and its sources). Written out here because anyhow's appends a
/// backtrace of the host when `RUST_BACKTRACE` is set (Spin's does then too).
fn connection_failed(error: &mysql_async::Error) -> Error {
    Error::ConnectionFailed(anyhow_debug(error))
}

/// What `format!("{:?}", anyhow::Error::from(error))` gives without a backtrace.
fn anyhow_debug(error: &dyn std::error::Error) -> String {
    use std::fmt::Write as _;
    let mut text = error.to_string();
    let causes: Vec<String> = std::iter::successors(error.source(), |e| e.source())
        .map(ToString::to_string)
        .collect();
    if !causes.is_empty() {
        text.push_str("\n\nCaused by:");
        for (index, cause) in causes.iter().enumerate() {
            // anyhow indents a cause's further lines under its first.
            if causes.len() == 1 {
                let _ = write!(text, "\n    {}", cause.replace('\n', "\n    "));
            } else {
                let cause = cause.replace('\n', "\n       ");
                let _ = write!(text, "\n{index:>5}: {cause}");
            }
        }
    }
    text
}

/// Whether a URL query parameter is the `ssl-mode` Spin reads.
fn is_ssl_param(name: &str) -> bool {
    ["ssl-mode", "sslmode"].contains(&name.to_lowercase().as_str())
}

/// The connection options of `address`, built as Spin's `build_opts` builds
/// them: `ssl-mode` taken out of the URL, the rest given to mysql_async, TLS
/// asked for by `ssl-mode` alone (mysql_async's own `require_ssl` overridden).
/// Spin hands mysql_async the URL through a conversion that panics on one it
/// rejects; this answers `connection-failed` with mysql_async's reason. What
/// spinbench cannot connect as asked (TLS, a Unix socket) is refused.
pub fn build_opts(address: &str) -> Result<mysql_async::Opts, Error> {
    let url = url::Url::parse(address).map_err(|e| connection_failed(&e.into()))?;
    let use_ssl = url
        .query_pairs()
        .any(|(k, v)| is_ssl_param(&k) && v.to_lowercase() != "disabled");
    if use_ssl {
        // mysql_async built without TLS panics when asked to connect with it.
        return Err(Error::ConnectionFailed(
            "spinbench serve connects to MySQL without TLS, and this address asks for it \
             (ssl-mode); `spin up` connects with TLS"
                .to_string(),
        ));
    }
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| !is_ssl_param(k))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let mut cleaned = url.clone();
    cleaned.set_query(None);
    cleaned.query_pairs_mut().extend_pairs(kept);
    let opts =
        mysql_async::Opts::from_url(cleaned.as_str()).map_err(|e| connection_failed(&e.into()))?;
    if opts.socket().is_some() {
        return Err(Error::ConnectionFailed(
            "spinbench serve does not connect to MySQL through a Unix socket (`socket=`)"
                .to_string(),
        ));
    }
    Ok(mysql_async::OptsBuilder::from_opts(opts)
        .ssl_opts(None::<mysql_async::SslOpts>)
        .prefer_socket(false)
        .into())
}

/// An address `open` may dial: mysql_async's options for it and the
/// destination both readings agree on.
#[derive(Debug)]
pub struct Checked {
    pub opts: mysql_async::Opts,
    pub destination: Destination,
}

/// Spin's allow-list check of `address`, then its options, read alike by
/// mysql_async (nothing dialled yet).
pub fn check_address(allowed: &AllowedHosts, address: &str) -> Result<Checked, Error> {
    let Some(ours) = GuestAddress::parse(address, "mysql").filter(|a| allowed.allows_address(a))
    else {
        return Err(Error::ConnectionFailed(format!(
            "address {address} is not permitted"
        )));
    };
    let opts = build_opts(address)?;
    let destination =
        Destination::agreed(&ours, "mysql_async", opts.ip_or_hostname(), opts.tcp_port()).map_err(
            |refusal| Error::ConnectionFailed(format!("address {address:?}: {refusal}")),
        )?;
    Ok(Checked { opts, destination })
}

impl Checked {
    /// The options mysql_async dials with: the checked host, and the
    /// addresses it resolved to here.
    pub async fn pinned(self) -> Result<mysql_async::Opts, Error> {
        let ips: Vec<std::net::IpAddr> = self
            .destination
            .resolve()
            .await
            .map_err(Error::ConnectionFailed)?
            .iter()
            .map(std::net::SocketAddr::ip)
            .collect();
        Ok(mysql_async::OptsBuilder::from_opts(self.opts)
            .ip_or_hostname(self.destination.host_text())
            .tcp_port(self.destination.port)
            .resolved_ips(Some(ips))
            .into())
    }
}

/// `open(address)` once its address is checked: what it needs after the
/// store is out of reach (the component's pools, shared).
pub struct Opener {
    address: String,
    checked: Checked,
    pools: Pools,
}

impl ComponentContext {
    /// The first half of `open(address)`: Spin's checks, nothing dialled.
    pub fn mysql_opener(&self, address: &str) -> Result<Opener, Error> {
        Ok(Opener {
            address: address.to_string(),
            checked: check_address(&self.grants.allowed_outbound_hosts, address)?,
            pools: self.mysql.clone(),
        })
    }
}

impl Opener {
    /// The second half: the address resolved, the pool for it (one per
    /// address and what it resolved to), a connection of that pool.
    pub async fn open(self) -> Result<Connection, Error> {
        let opts = self.checked.pinned().await?;
        let key = format!("{}\n{:?}", self.address, opts.resolved_ips());
        let pool = self
            .pools
            .get_or_make(&key, || mysql_async::Pool::new(opts));
        connect(&pool).await
    }
}

/// A connection of `pool`, connected if need be.
async fn connect(pool: &mysql_async::Pool) -> Result<Connection, Error> {
    let conn = pool.get_conn().await.map_err(|e| connection_failed(&e))?;
    Ok(Connection(Arc::new(tokio::sync::Mutex::new(conn))))
}

/// A query's rows, read until the end or the first error.
pub struct Rows {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<DbValue>>,
    /// Why the rows stopped before the end: in 2.0.0 the call's error, in
    /// 3.0.0 what the query's future answers after the rows streamed.
    pub error: Option<Error>,
}

fn positional(params: Vec<ParameterValue>) -> mysql_async::Params {
    mysql_async::Params::Positional(params.into_iter().map(convert::parameter).collect())
}

impl Connection {
    /// `execute`: the statement prepared and run once with `params`.
    pub async fn execute(&self, statement: &str, params: Vec<ParameterValue>) -> Result<(), Error> {
        let params = positional(params);
        let mut conn = self.0.lock().await;
        conn.exec_batch(statement, std::iter::once(params))
            .await
            .map_err(|e| Error::QueryFailed(format!("{e:?}")))
    }

    /// Runs `statement`: failing to run it is the call's error (Spin's
    /// `query-failed`); what fails while the rows are read ends [`Rows`].
    pub async fn query_rows(
        &self,
        statement: &str,
        params: Vec<ParameterValue>,
    ) -> Result<Rows, Error> {
        use futures::TryStreamExt as _;
        let params = positional(params);
        let mut conn = self.0.lock().await;
        let mut result = conn
            .exec_iter(statement, params)
            .await
            .map_err(|e| Error::QueryFailed(format!("{e:?}")))?;
        let columns = convert::columns(result.columns_ref());
        let mut rows = Vec::new();
        let mut error = None;
        let mut bytes = size_of::<RowSet>();
        match result.stream::<mysql_async::Row>().await {
            Err(e) => error = Some(Error::Other(e.to_string())),
            Ok(None) => error = Some(Error::Other("unable to stream query result".into())),
            Ok(Some(mut stream)) => loop {
                let row = match stream.try_next().await {
                    Ok(Some(row)) => row,
                    Ok(None) => break,
                    Err(e) => {
                        error = Some(Error::Other(e.to_string()));
                        break;
                    }
                };
                let values = match convert::row(row, &columns) {
                    Ok(values) => values,
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                };
                bytes += values.iter().map(convert::size).sum::<usize>();
                if bytes > MAX_RESULT_BYTES {
                    error = Some(Error::Other(format!(
                        "query result exceeds limit of {MAX_RESULT_BYTES} bytes"
                    )));
                    break;
                }
                rows.push(values);
            },
        }
        Ok(Rows {
            columns,
            rows,
            error,
        })
    }

    /// 2.0.0's `query`: every row, or the first error.
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

#[cfg(test)]
mod addresses;
#[cfg(test)]
mod tests;
