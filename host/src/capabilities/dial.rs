//! An outbound address is read once, and what is dialled is what was checked.
//!
//! A guest's Redis, MQTT, MySQL or PostgreSQL address is text two parsers
//! read: the allow-list's ([`GuestAddress`], Spin's `OutboundUrl`) and the
//! client crate's own (`redis`'s `IntoConnectionInfo`, `rumqttc`'s
//! `MqttOptions`, `mysql_async`'s `Opts`, `tokio-postgres`'s `Config`). Where
//! they disagree (`redis://10.0.0.1:6379#@granted:6379`: the allow-list reads
//! the authority after the `#`, the URL parser the one before it), a check
//! on one reading grants the other. So:
//!
//! - both readings must name the same host and port ([`Destination::agreed`]),
//!   else the address is refused, the refusal saying both readings;
//! - the client is then handed that [`Destination`], not the text: its host
//!   as the allow-list read it, and the socket addresses [`Destination::resolve`]
//!   found (an IP address as it is; a name looked up once, here), wherever the
//!   client takes addresses (a DNS resolver for `redis`, `resolved_ips` for
//!   `mysql_async`, `hostaddr` for `tokio-postgres`), so no second lookup
//!   the check did not see happens inside the client;
//! - what no grant can name (a Unix socket, a client's own redirection to one)
//!   is refused or switched off.
//!
//! Spin (spinframework/spin v4.0.2, `crates/outbound-networking-config`
//! `OutboundUrl`, `crates/factor-outbound-{redis,mysql,mqtt,pg}`) checks its
//! reading and hands the client the original text; this is stricter.

use super::outbound_hosts::GuestAddress;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use url::Host;

/// Where a checked address goes: the host and port both readings agree on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub host: Host,
    pub port: u16,
}

/// Why an address allowed by the list is still not dialled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The client reads another host or port than the allow-list did.
    Ambiguous {
        client: &'static str,
        ours: String,
        theirs: String,
    },
    /// The client reads something that is not a host the list can name.
    NotAHost {
        client: &'static str,
        theirs: String,
    },
    /// Something no `allowed_outbound_hosts` entry can grant.
    Unsupported(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ambiguous {
                client,
                ours,
                theirs,
            } => write!(
                f,
                "the allow-list reads it as {ours} and {client} as {theirs}; \
                 an address read two ways is refused"
            ),
            Self::NotAHost { client, theirs } => write!(
                f,
                "{client} reads its host as {theirs:?}, which is not a host name or IP address"
            ),
            Self::Unsupported(what) => f.write_str(what),
        }
    }
}

/// A host as a client crate wrote it: an IP address with or without IPv6
/// brackets, or a name (percent-decoded and IDNA-mapped as URL hosts are,
/// so `LOCALHOST` and `localhost` are one host).
fn read_host(text: &str) -> Option<Host> {
    match text.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => Some(Host::Ipv4(ip)),
        Ok(IpAddr::V6(ip)) => Some(Host::Ipv6(ip)),
        Err(_) => Host::parse(text).ok(),
    }
}

impl Destination {
    /// The destination of `ours` (an address the allow-list allows) if
    /// `client` read the same text as `their_host` and `their_port`.
    pub fn agreed(
        ours: &GuestAddress,
        client: &'static str,
        their_host: &str,
        their_port: u16,
    ) -> Result<Self, Refusal> {
        let port = ours.port_or_default().ok_or_else(|| {
            Refusal::Unsupported(format!("scheme {:?} has no default port", ours.scheme))
        })?;
        let ours = Self {
            host: ours.host.clone(),
            port,
        };
        let Some(host) = read_host(their_host) else {
            return Err(Refusal::NotAHost {
                client,
                theirs: their_host.to_string(),
            });
        };
        let theirs = Self {
            host,
            port: their_port,
        };
        if theirs == ours {
            Ok(ours)
        } else {
            Err(Refusal::Ambiguous {
                client,
                ours: ours.to_string(),
                theirs: theirs.to_string(),
            })
        }
    }

    /// The host as clients take it: a name, or an IP address (IPv6 without
    /// brackets).
    pub fn host_text(&self) -> String {
        match &self.host {
            Host::Domain(name) => name.clone(),
            Host::Ipv4(ip) => ip.to_string(),
            Host::Ipv6(ip) => ip.to_string(),
        }
    }

    /// The socket addresses it is dialled at: an IP address as it is, a name
    /// looked up once, here. A name that resolves to nothing is an error.
    pub async fn resolve(&self) -> Result<Vec<SocketAddr>, String> {
        let ip = match &self.host {
            Host::Ipv4(ip) => IpAddr::V4(*ip),
            Host::Ipv6(ip) => IpAddr::V6(*ip),
            Host::Domain(name) => {
                let found: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), self.port))
                    .await
                    .map_err(|error| format!("looking up {name}: {error}"))?
                    .collect();
                if found.is_empty() {
                    return Err(format!("{name} resolves to no address"));
                }
                return Ok(found);
            }
        };
        Ok(vec![SocketAddr::new(ip, self.port)])
    }
}

/// `host:port`, IPv6 in brackets: an authority as URLs write it.
impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(address: &str, scheme: &str) -> GuestAddress {
        GuestAddress::parse(address, scheme).unwrap()
    }

    #[test]
    fn readings_agree_only_on_the_same_host_and_port() {
        let granted = ours("redis://127.0.0.1:6379", "redis");
        let agreed = Destination::agreed(&granted, "redis", "127.0.0.1", 6379).unwrap();
        assert_eq!(agreed.to_string(), "127.0.0.1:6379");
        // Spellings of the same host agree; another host or port does not.
        let v6 = ours("redis://[::1]", "redis");
        assert!(Destination::agreed(&v6, "redis", "::1", 6379).is_ok());
        assert!(Destination::agreed(&v6, "rumqttc", "[::1]", 6379).is_ok());
        let name = ours("redis://localhost", "redis");
        assert!(Destination::agreed(&name, "redis", "LOCALHOST", 6379).is_ok());
        let other_port = Destination::agreed(&granted, "redis", "127.0.0.1", 6380).unwrap_err();
        assert_eq!(
            other_port.to_string(),
            "the allow-list reads it as 127.0.0.1:6379 and redis as 127.0.0.1:6380; \
             an address read two ways is refused"
        );
        assert!(Destination::agreed(&granted, "redis", "127.0.0.2", 6379).is_err());
        assert!(Destination::agreed(&granted, "redis", "localhost", 6379).is_err());
        let not_a_host = Destination::agreed(&granted, "tokio-postgres", "a@127.0.0.1", 6379);
        assert!(
            matches!(not_a_host, Err(Refusal::NotAHost { .. })),
            "{not_a_host:?}"
        );
    }

    #[tokio::test]
    async fn an_address_is_its_own_destination_and_a_name_is_looked_up_here() {
        let v6 = Destination {
            host: Host::Ipv6(std::net::Ipv6Addr::LOCALHOST),
            port: 7,
        };
        assert_eq!(v6.host_text(), "::1");
        assert_eq!(v6.to_string(), "[::1]:7");
        assert_eq!(v6.resolve().await.unwrap(), ["[::1]:7".parse().unwrap()]);
        let name = Destination {
            host: Host::Domain("localhost".into()),
            port: 7,
        };
        let found = name.resolve().await.unwrap();
        assert!(!found.is_empty() && found.iter().all(|a| a.ip().is_loopback() && a.port() == 7));
    }
}
