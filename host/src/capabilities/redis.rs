//! Outbound Redis: `fermyon:spin/redis@2.0.0` (spin-sdk 2 to 5) and its async
//! twin `spin:redis/redis@3.0.0` (spin-sdk 6 and 7), as Spin serves them
//! (spinframework/spin `crates/factor-outbound-redis/src/host.rs`): `open` of an
//! address the component's `allowed_outbound_hosts` do not allow (as
//! `redis://...`) is `error::invalid-address`; an allowed one connects with the
//! `redis` crate (what Spin uses), one multiplexed connection per `open`, held
//! in the store's resource table until the guest drops it. Results of
//! `execute` are flattened as Spin flattens them.
//!
//! The address is read once ([`super::dial`]): the `redis` crate's reading
//! must name the host and port the allow-list read, else `open` answers
//! `other` with both readings; a Unix socket (`redis+unix://`, `unix://`) is
//! refused, whatever the list grants. The client is handed the checked host
//! and the addresses the host resolved it to, through its DNS resolver hook.

use super::HostState;
use super::dial::{Destination, Refusal};
use super::outbound_hosts::{AllowedHosts, GuestAddress};
use anyhow::Result;
use redis::aio::MultiplexedConnection;
use redis::io::AsyncDNSResolver;
use redis::{
    AsyncCommands, AsyncConnectionConfig, ConnectionAddr, ConnectionInfo, IntoConnectionInfo, Value,
};
use std::net::SocketAddr;
use wasmtime::StoreContextMut;
use wasmtime::component::{Accessor, ComponentType, Lift, Linker, Lower, Resource, ResourceType};

pub const V2: &str = "fermyon:spin/redis@2.0.0";
pub const V3: &str = "spin:redis/redis@3.0.0";

/// The `error` variant (the same cases in both versions).
#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq, Eq)]
#[component(variant)]
pub enum RedisError {
    #[component(name = "invalid-address")]
    InvalidAddress,
    #[component(name = "too-many-connections")]
    TooManyConnections,
    #[component(name = "type-error")]
    TypeError,
    #[component(name = "other")]
    Other(String),
}

#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq, Eq)]
#[component(variant)]
pub enum RedisParameter {
    #[component(name = "int64")]
    Int64(i64),
    #[component(name = "binary")]
    Binary(Vec<u8>),
}

#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq, Eq)]
#[component(variant)]
pub enum RedisResult {
    #[component(name = "nil")]
    Nil,
    #[component(name = "status")]
    Status(String),
    #[component(name = "int64")]
    Int64(i64),
    #[component(name = "binary")]
    Binary(Vec<u8>),
}

/// The host side of a `connection` resource.
pub struct Connection(MultiplexedConnection);

fn other(error: impl std::fmt::Display) -> RedisError {
    RedisError::Other(error.to_string())
}

/// An address `open` may dial: the connection info the `redis` crate read
/// from it, its address replaced by the destination both readings agree on.
#[derive(Debug)]
pub struct Checked {
    info: ConnectionInfo,
    destination: Destination,
}

/// `address` checked before anything is dialled: allowed by `allowed`, read
/// alike by the `redis` crate, and a TCP address.
pub fn check(allowed: &AllowedHosts, address: &str) -> Result<Checked, RedisError> {
    let Some(ours) = GuestAddress::parse(address, "redis").filter(|a| allowed.allows_address(a))
    else {
        return Err(RedisError::InvalidAddress);
    };
    let info = address
        .into_connection_info()
        .map_err(|_| RedisError::InvalidAddress)?;
    let refused = |refusal: Refusal| RedisError::Other(format!("address {address:?}: {refusal}"));
    let destination = match info.addr() {
        ConnectionAddr::Tcp(host, port) => {
            Destination::agreed(&ours, "redis", host, *port).map_err(refused)?
        }
        ConnectionAddr::Unix(path) => {
            return Err(refused(Refusal::Unsupported(format!(
                "redis reads it as the Unix socket {:?}, which no grant names",
                path.to_string_lossy()
            ))));
        }
        other => {
            return Err(refused(Refusal::Unsupported(format!(
                "redis reads it as {other}, and only plain TCP is dialled"
            ))));
        }
    };
    let info = info.set_addr(ConnectionAddr::Tcp(
        destination.host_text(),
        destination.port,
    ));
    Ok(Checked { info, destination })
}

/// Answers the `redis` crate's every lookup with the addresses the host
/// resolved when it checked the address: the client dials nothing else.
struct Resolved(Vec<SocketAddr>);

impl AsyncDNSResolver for Resolved {
    fn resolve<'a, 'b: 'a>(
        &'a self,
        _host: &'b str,
        _port: u16,
    ) -> redis::RedisFuture<'a, Box<dyn Iterator<Item = SocketAddr> + Send + 'a>> {
        Box::pin(async move {
            Ok(Box::new(self.0.iter().copied()) as Box<dyn Iterator<Item = SocketAddr> + Send>)
        })
    }
}

/// Opens a connection to a checked address.
async fn open(checked: Result<Checked, RedisError>) -> Result<Connection, RedisError> {
    let Checked { info, destination } = checked?;
    let addresses = destination.resolve().await.map_err(RedisError::Other)?;
    let client = redis::Client::open(info).map_err(|_| RedisError::InvalidAddress)?;
    let config = AsyncConnectionConfig::new().set_dns_resolver(Resolved(addresses));
    let connection = client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(other)?;
    Ok(Connection(connection))
}

/// The connection behind a resource handle: a clone, which shares the
/// underlying multiplexed connection.
fn connection<T: HostState>(
    state: &mut T,
    this: &Resource<Connection>,
) -> wasmtime::Result<MultiplexedConnection> {
    Ok(state.table().get(this)?.0.clone())
}

mod operations {
    use super::{
        AsyncCommands, MultiplexedConnection, RedisError, RedisParameter, RedisResult, Value,
        flatten, other,
    };

    pub async fn publish(
        mut c: MultiplexedConnection,
        channel: String,
        payload: Vec<u8>,
    ) -> Result<(), RedisError> {
        c.publish(channel, payload).await.map_err(other)
    }

    pub async fn get(
        mut c: MultiplexedConnection,
        key: String,
    ) -> Result<Option<Vec<u8>>, RedisError> {
        c.get(key).await.map_err(other)
    }

    pub async fn set(
        mut c: MultiplexedConnection,
        key: String,
        value: Vec<u8>,
    ) -> Result<(), RedisError> {
        c.set(key, value).await.map_err(other)
    }

    pub async fn incr(mut c: MultiplexedConnection, key: String) -> Result<i64, RedisError> {
        c.incr(key, 1).await.map_err(other)
    }

    pub async fn del(mut c: MultiplexedConnection, keys: Vec<String>) -> Result<u32, RedisError> {
        c.del(keys).await.map_err(other)
    }

    /// A set operation on a key holding another type is `type-error`, as in Spin.
    fn set_error(error: &redis::RedisError) -> RedisError {
        if error.kind() == redis::ErrorKind::UnexpectedReturnType
            || error.code() == Some("WRONGTYPE")
        {
            RedisError::TypeError
        } else {
            other(error)
        }
    }

    pub async fn sadd(
        mut c: MultiplexedConnection,
        key: String,
        values: Vec<String>,
    ) -> Result<u32, RedisError> {
        c.sadd(key, values).await.map_err(|e| set_error(&e))
    }

    pub async fn smembers(
        mut c: MultiplexedConnection,
        key: String,
    ) -> Result<Vec<String>, RedisError> {
        c.smembers(key).await.map_err(other)
    }

    pub async fn srem(
        mut c: MultiplexedConnection,
        key: String,
        values: Vec<String>,
    ) -> Result<u32, RedisError> {
        c.srem(key, values).await.map_err(|e| set_error(&e))
    }

    pub async fn execute(
        mut c: MultiplexedConnection,
        command: String,
        arguments: Vec<RedisParameter>,
    ) -> Result<Vec<RedisResult>, RedisError> {
        let mut cmd = redis::cmd(&command);
        for argument in arguments {
            match argument {
                RedisParameter::Int64(value) => cmd.arg(value),
                RedisParameter::Binary(value) => cmd.arg(value),
            };
        }
        let value: Value = cmd.query_async(&mut c).await.map_err(other)?;
        let mut results = Vec::new();
        flatten(&mut results, value)?;
        Ok(results)
    }
}

/// A reply as `execute` returns it: arrays and sets flattened, as Spin does.
fn flatten(results: &mut Vec<RedisResult>, value: Value) -> Result<(), RedisError> {
    let unsupported = |what: &str| {
        Err(RedisError::Other(format!(
            "Could not convert Redis response: {what} is not supported"
        )))
    };
    match value {
        Value::Nil => results.push(RedisResult::Nil),
        Value::Int(value) => results.push(RedisResult::Int64(value)),
        Value::BulkString(bytes) => results.push(RedisResult::Binary(bytes)),
        Value::SimpleString(status) => results.push(RedisResult::Status(status)),
        Value::Okay => results.push(RedisResult::Status("OK".into())),
        Value::Array(values) | Value::Set(values) => {
            for value in values {
                flatten(results, value)?;
            }
        }
        Value::Double(value) => results.push(RedisResult::Binary(value.to_string().into_bytes())),
        Value::Boolean(value) => results.push(RedisResult::Int64(i64::from(value))),
        // Its decimal digits (the `redis` crate without `num-bigint`).
        Value::BigNumber(digits) => results.push(RedisResult::Binary(digits)),
        Value::ServerError(error) => return Err(RedisError::Other(format!("{error:?}"))),
        Value::Map(_) => return unsupported("a map"),
        Value::Attribute { .. } => return unsupported("an attribute"),
        Value::VerbatimString { .. } => return unsupported("a verbatim string"),
        Value::Push { .. } => return unsupported("a push"),
        _ => return unsupported("this reply type"),
    }
    Ok(())
}

/// Links one method of `connection` in both styles: `async` for 2.0.0 (the
/// guest waits in a plain call), `concurrent` for 3.0.0's async functions.
macro_rules! method {
    (v2, $instance:expr, $name:literal, $op:path, ($($arg:ident: $ty:ty),*)) => {
        $instance.func_wrap_async(
            concat!("[method]connection.", $name),
            |mut store: StoreContextMut<'_, T>, (this, $($arg,)*): (Resource<Connection>, $($ty,)*)| {
                Box::new(async move {
                    let c = connection(store.data_mut(), &this)?;
                    Ok(($op(c, $($arg),*).await,))
                })
            },
        )?;
    };
    (v3, $instance:expr, $name:literal, $op:path, ($($arg:ident: $ty:ty),*)) => {
        $instance.func_wrap_concurrent(
            concat!("[method]connection.", $name),
            |accessor: &Accessor<T>, (this, $($arg,)*): (Resource<Connection>, $($ty,)*)| {
                Box::pin(async move {
                    let c = accessor.with(|mut access| connection(access.get(), &this))?;
                    Ok(($op(c, $($arg),*).await,))
                })
            },
        )?;
    };
}

macro_rules! methods {
    ($style:ident, $instance:expr) => {
        method!($style, $instance, "publish", operations::publish, (channel: String, payload: Vec<u8>));
        method!($style, $instance, "get", operations::get, (key: String));
        method!($style, $instance, "set", operations::set, (key: String, value: Vec<u8>));
        method!($style, $instance, "incr", operations::incr, (key: String));
        method!($style, $instance, "del", operations::del, (keys: Vec<String>));
        method!($style, $instance, "sadd", operations::sadd, (key: String, values: Vec<String>));
        method!($style, $instance, "smembers", operations::smembers, (key: String));
        method!($style, $instance, "srem", operations::srem, (key: String, values: Vec<String>));
        method!($style, $instance, "execute", operations::execute, (command: String, arguments: Vec<RedisParameter>));
    };
}

fn checked<T: HostState>(state: &T, address: &str) -> Result<Checked, RedisError> {
    check(&state.context().grants.allowed_outbound_hosts, address)
}

pub fn link_v2<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    let mut instance = linker.instance(V2)?;
    instance.resource(
        "connection",
        ResourceType::host::<Connection>(),
        super::drop_resource::<T, Connection>,
    )?;
    instance.func_wrap_async(
        "[static]connection.open",
        |mut store: StoreContextMut<'_, T>, (address,): (String,)| {
            Box::new(async move {
                let checked = checked(store.data(), &address);
                Ok((match open(checked).await {
                    Ok(connection) => Ok(store.data_mut().table().push(connection)?),
                    Err(error) => Err(error),
                },))
            })
        },
    )?;
    methods!(v2, instance);
    Ok(())
}

pub fn link_v3<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    let mut instance = linker.instance(V3)?;
    instance.resource(
        "connection",
        ResourceType::host::<Connection>(),
        super::drop_resource::<T, Connection>,
    )?;
    instance.func_wrap_concurrent(
        "[static]connection.open",
        |accessor: &Accessor<T>, (address,): (String,)| {
            Box::pin(async move {
                let checked = accessor.with(|mut access| checked(access.get(), &address));
                Ok((match open(checked).await {
                    Ok(connection) => {
                        Ok(accessor.with(|mut access| access.get().table().push(connection))?)
                    }
                    Err(error) => Err(error),
                },))
            })
        },
    )?;
    methods!(v3, instance);
    Ok(())
}

#[cfg(test)]
#[path = "redis_tests.rs"]
mod tests;
