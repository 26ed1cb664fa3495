//! `allowed_outbound_hosts`, parsed and enforced as Spin does it
//! (spinframework/spin `crates/outbound-networking-config/src/allowed_hosts.rs`,
//! read at 94a8fc8a; not published on crates.io, so written here): each entry is
//! `<scheme>://<host>[:<port>]` where
//!
//! - the scheme is `*` or one name (`http`, `https`, `redis`, `mqtt`,
//!   `postgres`, `mysql`, `tcp`, `udp`, ...);
//! - the host is `*`, `*.<domain>` (any subdomain, not the domain itself), a
//!   name or IP address compared exactly, a CIDR range (`10.0.0.0/8`,
//!   `2001:db8::/32`), or `self` / `self.alt` (the app itself);
//! - the port is `*`, one port, a range `start..end` (end excluded, as Spin's
//!   `Range`), or absent: then the scheme's well-known port, and an entry whose
//!   scheme has none is invalid.
//!
//! `{{ variable }}` templates were expanded over the application's variables
//! before parsing; an entry a template made empty (or just `http://` or
//! `https://`) is skipped, as Spin skips it. The deprecated `allowed_http_hosts`
//! are converted as Spin converts them (`spin-manifest`'s `compat`). A host
//! name never matches an IP address, nor an IP a name: `localhost` does not
//! allow `127.0.0.1`.

use anyhow::{Context, Result, anyhow, bail, ensure};
use ipnet::IpNet;
use std::net::{IpAddr, SocketAddr};
use url::Host;

/// One component's allow-list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedHosts {
    entries: Vec<AllowedHost>,
}

/// One parsed `allowed_outbound_hosts` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedHost {
    /// `None` for `*`.
    scheme: Option<String>,
    host: HostPattern,
    port: PortPattern,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    Any,
    /// `*.example.com`, kept as `.example.com`.
    Subdomain(String),
    /// `self` or `self.alt`: requests to the app itself.
    ToSelf,
    Exact(Host),
    Cidr(IpNet),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PortPattern {
    Any,
    One(u16),
    /// `start..end`, end excluded.
    Range(u16, u16),
}

/// The port a scheme uses when none is given (Spin's `well_known_port`).
pub fn well_known_port(scheme: &str) -> Option<u16> {
    match scheme {
        "postgres" => Some(5432),
        "mysql" => Some(3306),
        "redis" => Some(6379),
        "mqtt" => Some(1883),
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

impl AllowedHosts {
    /// Parses a component's `allowed_outbound_hosts` and `allowed_http_hosts`,
    /// templates already expanded: the first invalid entry is an error naming it.
    pub fn parse(outbound: &[String], http: &[String]) -> Result<Self> {
        if outbound.len() == 1 && outbound[0] == "insecure:allow-all" {
            bail!(
                "allowed_outbound_hosts: \"insecure:allow-all\" is not allowed; use \"*://*:*\" to allow all outbound traffic"
            );
        }
        let converted = convert_allowed_http_hosts(http)?;
        let mut entries = Vec::new();
        for entry in outbound.iter().chain(&converted) {
            let entry = entry.trim();
            // An "optional endpoint": a variable left empty grants nothing.
            if entry.is_empty() || entry == "http://" || entry == "https://" {
                continue;
            }
            // One line naming the entry, whatever wraps it.
            entries.push(
                AllowedHost::parse(entry).map_err(|error| {
                    anyhow!("allowed_outbound_hosts entry {entry:?}: {error:#}")
                })?,
            );
        }
        Ok(Self { entries })
    }

    /// An allow-list of the given entries, for tests.
    #[cfg(test)]
    pub fn of(entries: &[&str]) -> Self {
        let entries: Vec<String> = entries.iter().map(ToString::to_string).collect();
        Self::parse(&entries, &[]).unwrap()
    }

    /// `*.spin.internal` entries as Spin reads them: one entry per component
    /// of the application (`<id>.spin.internal`), so that a name that is no
    /// component stays denied (`service_chaining`).
    #[must_use]
    pub fn expand_service_chaining(self, component_ids: &[String]) -> Self {
        let chaining = format!(".{}", super::service_chaining::DOMAIN);
        let entries = self
            .entries
            .into_iter()
            .flat_map(|entry| match &entry.host {
                HostPattern::Subdomain(suffix) if *suffix == chaining => component_ids
                    .iter()
                    .filter_map(|id| Host::parse(&format!("{id}{chaining}")).ok())
                    .map(|host| AllowedHost {
                        host: HostPattern::Exact(host),
                        ..entry.clone()
                    })
                    .collect(),
                _ => vec![entry],
            })
            .collect();
        Self { entries }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether a connection to `host:port` under `scheme` is allowed; without a
    /// port, the scheme's well-known one.
    pub fn allows(&self, scheme: &str, host: &Host, port: Option<u16>) -> bool {
        self.entries
            .iter()
            .any(|entry| entry.allows(scheme, host, port))
    }

    /// Whether a socket address is allowed under `scheme` (`tcp`, `udp`).
    pub fn allows_socket(&self, scheme: &str, address: SocketAddr) -> bool {
        let host = match address.ip().to_canonical() {
            IpAddr::V4(ip) => Host::Ipv4(ip),
            IpAddr::V6(ip) => Host::Ipv6(ip),
        };
        self.allows(scheme, &host, Some(address.port()))
    }

    /// Whether an address a guest gave (`redis://host:port`, `host:port`) is
    /// allowed: as Spin, parsed as a URL, else as one under `scheme`. An
    /// address that parses as neither is not allowed.
    pub fn allows_url(&self, address: &str, scheme: &str) -> bool {
        GuestAddress::parse(address, scheme).is_some_and(|address| self.allows_address(&address))
    }

    /// Whether the allow-list allows `address`.
    pub fn allows_address(&self, address: &GuestAddress) -> bool {
        self.allows(&address.scheme, &address.host, address.port)
    }

    /// Whether requests to the app itself under any of `schemes` are allowed.
    pub fn allows_self(&self, schemes: &[&str]) -> bool {
        self.entries.iter().any(|entry| {
            matches!(entry.host, HostPattern::Any | HostPattern::ToSelf)
                && schemes.iter().any(|scheme| entry.allows_scheme(scheme))
        })
    }
}

/// An address a guest gave, as the allow-list reads it: Spin's `OutboundUrl`
/// (user information percent-encoded first, so a `#` or `:` in a password
/// does not end the authority; then a URL, or one under the default scheme).
/// A client crate may read the same text differently; `dial` compares the two.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestAddress {
    pub scheme: String,
    pub host: Host,
    /// As written; `None` when the address gives none.
    pub port: Option<u16>,
}

impl GuestAddress {
    /// `address` read under `scheme` when it names none; `None` when it has
    /// no host the allow-list can read.
    pub fn parse(address: &str, scheme: &str) -> Option<Self> {
        let address = encode_userinfo(address);
        let url = match url::Url::parse(&address) {
            Ok(url) if url.has_host() => url,
            _ => url::Url::parse(&format!("{scheme}://{address}")).ok()?,
        };
        let host = Host::parse(url.host_str()?).ok()?;
        Some(Self {
            scheme: url.scheme().to_string(),
            host,
            port: url.port(),
        })
    }

    /// The port it is dialled at: its own, or its scheme's well-known one.
    pub fn port_or_default(&self) -> Option<u16> {
        self.port.or_else(|| well_known_port(&self.scheme))
    }
}

fn encode_userinfo(address: &str) -> String {
    let Some(at) = address.find('@') else {
        return address.to_string();
    };
    let start = address.find("://").map_or(0, |end| end + 3);
    let path = address[start..]
        .find('/')
        .map_or(usize::MAX, |path| path + start);
    if at < start || at > path {
        return address.to_string();
    }
    let userinfo: String = url::form_urlencoded::byte_serialize(&address.as_bytes()[start..at])
        .collect::<String>()
        .replace('+', "%20");
    format!("{}{userinfo}{}", &address[..start], &address[at..])
}

impl AllowedHost {
    /// One entry, as Spin's `AllowedHostConfig::parse` reads it.
    fn parse(entry: &str) -> Result<Self> {
        let Some((scheme, rest)) = entry.split_once("://") else {
            if matches!(entry, "*" | ":" | "?") {
                bail!(
                    "not a host: entries are <scheme>://<host>[:<port>], with `*` allowed in each (\"*://*:*\" allows everything)"
                );
            }
            bail!("no scheme (such as `http://` or `*://`)");
        };
        let (host, port) = match rest.rsplit_once(':') {
            None => (rest, ""),
            Some((host, "")) => (host, ""),
            // `[::1]` and `ff00::/8` hold colons and no port.
            Some(_) if HostPattern::parse(rest).is_ok() => (rest, ""),
            Some((host, tail)) => match tail.split_once('/') {
                Some((_, path)) if !path.is_empty() => bail!("has a path"),
                Some((port, _)) => (host, port),
                None => (host, tail),
            },
        };
        let port = PortPattern::parse(port, scheme).with_context(|| format!("port {port:?}"))?;
        let scheme = match scheme {
            "*" => None,
            scheme if scheme.starts_with('{') => bail!("scheme lists are not supported"),
            scheme if !scheme.is_empty() && scheme.chars().all(char::is_alphabetic) => {
                Some(scheme.to_string())
            }
            scheme => bail!("scheme {scheme:?}: only letters are allowed"),
        };
        let host = HostPattern::parse(host).with_context(|| format!("host {host:?}"))?;
        Ok(Self { scheme, host, port })
    }

    fn allows_scheme(&self, scheme: &str) -> bool {
        self.scheme
            .as_deref()
            .is_none_or(|allowed| allowed == scheme)
    }

    fn allows(&self, scheme: &str, host: &Host, port: Option<u16>) -> bool {
        self.allows_scheme(scheme)
            && self.host.allows(host)
            && port
                .or_else(|| well_known_port(scheme))
                .is_some_and(|port| self.port.allows(port))
    }
}

impl HostPattern {
    fn parse(host: &str) -> Result<Self> {
        let host = host.trim();
        match host {
            "*" => return Ok(Self::Any),
            "self" | "self.alt" => return Ok(Self::ToSelf),
            _ => {}
        }
        ensure!(!host.starts_with('{'), "host lists are not supported");
        if let Ok(net) = host.parse::<IpNet>() {
            return Ok(Self::Cidr(net.trunc()));
        }
        let host = host.strip_suffix('/').unwrap_or(host);
        ensure!(!host.contains('/'), "must not include a path");
        if let Some(domain) = host.strip_prefix("*.") {
            ensure!(
                !domain.contains('*'),
                "wildcards are allowed only as prefixes"
            );
            let Host::Domain(domain) = Host::parse(domain)? else {
                bail!("a wildcard's suffix must be a domain");
            };
            return Ok(Self::Subdomain(format!(".{domain}")));
        }
        ensure!(
            !host.contains('*'),
            "wildcards are allowed only as subdomains"
        );
        Ok(Self::Exact(Host::parse(host)?))
    }

    fn allows(&self, host: &Host) -> bool {
        match (self, host) {
            (Self::Any, _) => true,
            (Self::Subdomain(suffix), Host::Domain(domain)) => domain.ends_with(suffix.as_str()),
            (Self::Exact(exact), host) => exact == host,
            (Self::Cidr(net), Host::Ipv4(ip)) => net.contains(&IpAddr::V4(*ip)),
            (Self::Cidr(net), Host::Ipv6(ip)) => net.contains(&IpAddr::V6(*ip)),
            // `self` is checked by `allows_self`; names never match ranges.
            (Self::ToSelf | Self::Subdomain(_) | Self::Cidr(_), _) => false,
        }
    }
}

impl PortPattern {
    fn parse(port: &str, scheme: &str) -> Result<Self> {
        if port.is_empty() {
            return well_known_port(scheme).map(Self::One).with_context(|| {
                format!("no port given, and scheme {scheme:?} has no well-known port")
            });
        }
        if port == "*" {
            return Ok(Self::Any);
        }
        ensure!(!port.starts_with('{'), "port lists are not supported");
        if let Some((start, end)) = port.split_once("..") {
            return Ok(Self::Range(
                start.parse().context("not a port range")?,
                end.parse().context("not a port range")?,
            ));
        }
        Ok(Self::One(port.parse().context("not a port number")?))
    }

    fn allows(&self, port: u16) -> bool {
        match *self {
            Self::Any => true,
            Self::One(one) => one == port,
            Self::Range(start, end) => (start..end).contains(&port),
        }
    }
}

/// `allowed_http_hosts` (Spin 1's key) as `allowed_outbound_hosts` entries:
/// `insecure:allow-all` is every HTTP(S) host and the app itself, `self` the
/// app itself, and `host[:port]` or `http(s)://host[:port]` that host over
/// both HTTP and HTTPS.
pub fn convert_allowed_http_hosts(hosts: &[String]) -> Result<Vec<String>> {
    if hosts.iter().any(|host| host == "insecure:allow-all") {
        return Ok(vec![
            "http://*:*".into(),
            "https://*:*".into(),
            "http://self".into(),
        ]);
    }
    let mut converted = Vec::new();
    for text in hosts {
        let bad = || format!("allowed_http_hosts entry {text:?}");
        let url = if text.contains("//") {
            let url = url::Url::parse(text).with_context(bad)?;
            ensure!(
                matches!(url.scheme(), "http" | "https"),
                "{}: not an HTTP host",
                bad()
            );
            url
        } else {
            url::Url::parse(&format!("http://{text}")).with_context(bad)?
        };
        let host = url
            .host_str()
            .with_context(|| format!("{}: no host", bad()))?;
        ensure!(url.path().len() <= 1, "{}: has a path", bad());
        if host == "self" {
            converted.push("http://self".into());
        } else {
            let port = url
                .port()
                .map(|port| format!(":{port}"))
                .unwrap_or_default();
            converted.push(format!("http://{host}{port}"));
            converted.push(format!("https://{host}{port}"));
        }
    }
    Ok(converted)
}

#[cfg(test)]
#[path = "outbound_hosts_tests.rs"]
mod tests;
