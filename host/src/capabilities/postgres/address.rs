//! A PostgreSQL address, read once ([`crate::capabilities::dial`]).
//! tokio-postgres parses it (both forms: a URL, or `key=value` pairs); each
//! TCP host it names is checked as Spin checks it (`postgres://host:port`
//! through the allow-list's reader) and must read as the same host and port
//! to tokio-postgres, else `connection-failed` says both readings: a host
//! such as `evil.example#@granted` is one host to the allow-list and another
//! to the resolver. A `hostaddr` is an IP address, checked as it is. Unix
//! sockets (`host=/dir`, `%2F...`) are refused.
//!
//! tokio-postgres then dials only what was checked: its hosts are looked up
//! once, here, and each address found becomes a `hostaddr` beside its host
//! (tokio-postgres dials a `hostaddr` as it is, and keeps the host for TLS),
//! so no lookup the check did not see happens inside the client.

use super::{Connection, Error, Pools, connect, new_pool};
use crate::capabilities::ComponentContext;
use crate::capabilities::dial::Destination;
use crate::capabilities::outbound_hosts::{AllowedHosts, GuestAddress};
use std::net::IpAddr;
use tokio_postgres::Config;
use tokio_postgres::config::Host;

/// PostgreSQL's default port, and tokio-postgres's.
const DEFAULT_PORT: u16 = 5432;

/// An address `open` may dial: tokio-postgres's reading of it, and the
/// destination of each host it names.
#[derive(Debug)]
pub struct Checked {
    pub config: Config,
    pub hosts: Vec<Destination>,
}

/// `address postgres://<authority> is not permitted`, as Spin words it.
fn not_permitted(authority: &str) -> Error {
    Error::ConnectionFailed(format!("address postgres://{authority} is not permitted"))
}

/// `host` (as tokio-postgres read it) at `port` (as Spin picks it: none
/// when the address gives none), checked and read alike by both.
fn check_host(allowed: &AllowedHosts, host: &str, port: Option<u16>) -> Result<Destination, Error> {
    let bracketed = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    let authority = format!(
        "{bracketed}{}",
        port.map(|port| format!(":{port}")).unwrap_or_default()
    );
    let Some(ours) =
        GuestAddress::parse(&authority, "postgres").filter(|a| allowed.allows_address(a))
    else {
        return Err(not_permitted(&authority));
    };
    Destination::agreed(&ours, "tokio-postgres", host, port.unwrap_or(DEFAULT_PORT)).map_err(
        |refusal| {
            let address = format!("postgres://{authority}");
            Error::ConnectionFailed(format!("address {address:?}: {refusal}"))
        },
    )
}

/// Checks `address` against the allow-list as Spin does, and parses it.
pub fn check_address(allowed: &AllowedHosts, address: &str) -> Result<Checked, Error> {
    let config: Config = address
        .parse()
        .map_err(|error: tokio_postgres::Error| Error::ConnectionFailed(error.to_string()))?;
    let ports = config.get_ports();
    // The port of the `index`th host, as Spin picks it: its own, or the only one given.
    let port = |index: usize| {
        ports
            .get(index)
            .or(if ports.len() == 1 {
                ports.first()
            } else {
                None
            })
            .copied()
    };
    let mut hosts = Vec::new();
    for (index, host) in config.get_hosts().iter().enumerate() {
        match host {
            Host::Tcp(name) => hosts.push(check_host(allowed, name, port(index))?),
            Host::Unix(_) => {
                return Err(Error::ConnectionFailed(
                    "Unix sockets are not supported on WebAssembly".to_string(),
                ));
            }
        }
    }
    for (index, ip) in config.get_hostaddrs().iter().enumerate() {
        check_host(allowed, &ip.to_string(), port(index))?;
    }
    Ok(Checked { config, hosts })
}

impl Checked {
    /// The configuration tokio-postgres dials with: every host's addresses,
    /// looked up here, as `hostaddr`s. An address that gives its own
    /// `hostaddr`s is dialled at those (IP addresses, checked as they are).
    pub async fn pinned(self) -> Result<Config, Error> {
        if !self.config.get_hostaddrs().is_empty() {
            return Ok(self.config);
        }
        let mut dials = Vec::new();
        for host in &self.hosts {
            for address in host.resolve().await.map_err(Error::ConnectionFailed)? {
                dials.push((host.host_text(), address.ip(), host.port));
            }
        }
        Ok(with_hosts(&self.config, &dials))
    }
}

/// `parsed` with its hosts replaced by `dials`: each a host (kept for TLS),
/// the address tokio-postgres dials for it, and its port. Every other setting
/// is copied (the tests compare the whole configuration).
pub fn with_hosts(parsed: &Config, dials: &[(String, IpAddr, u16)]) -> Config {
    let mut config = Config::new();
    if let Some(user) = parsed.get_user() {
        config.user(user);
    }
    if let Some(password) = parsed.get_password() {
        config.password(password);
    }
    if let Some(dbname) = parsed.get_dbname() {
        config.dbname(dbname);
    }
    if let Some(options) = parsed.get_options() {
        config.options(options);
    }
    if let Some(name) = parsed.get_application_name() {
        config.application_name(name);
    }
    if let Some(timeout) = parsed.get_connect_timeout() {
        config.connect_timeout(*timeout);
    }
    if let Some(timeout) = parsed.get_tcp_user_timeout() {
        config.tcp_user_timeout(*timeout);
    }
    if let Some(interval) = parsed.get_keepalives_interval() {
        config.keepalives_interval(interval);
    }
    if let Some(retries) = parsed.get_keepalives_retries() {
        config.keepalives_retries(retries);
    }
    config
        .ssl_mode(parsed.get_ssl_mode())
        .ssl_negotiation(parsed.get_ssl_negotiation())
        .keepalives(parsed.get_keepalives())
        .keepalives_idle(parsed.get_keepalives_idle())
        .target_session_attrs(parsed.get_target_session_attrs())
        .channel_binding(parsed.get_channel_binding())
        .load_balance_hosts(parsed.get_load_balance_hosts());
    for (host, ip, port) in dials {
        config.host(host).hostaddr(*ip).port(*port);
    }
    config
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
    pub fn postgres_opener(&self, address: &str) -> Result<Opener, Error> {
        Ok(Opener {
            address: address.to_string(),
            checked: check_address(&self.grants.allowed_outbound_hosts, address)?,
            pools: self.postgres.clone(),
        })
    }
}

impl Opener {
    /// The second half: the hosts resolved, the pool for them (one per
    /// address and what it resolved to, up to [`super::POOL_SIZE`] connections), a
    /// client of that pool.
    pub async fn open(self) -> Result<Connection, Error> {
        let config = self.checked.pinned().await?;
        let key = format!("{}\n{:?}", self.address, config.get_hostaddrs());
        let pool = self.pools.get_or_make(&key, || new_pool(config));
        connect(&pool).await
    }
}
