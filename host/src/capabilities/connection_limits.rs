//! The runtime config file's connection settings, which Spin 4.1 added
//! (spinframework/spin main at 94a8fc8a: `crates/factor-outbound-http/src/runtime_config/spin.rs`,
//! `crates/factor-outbound-networking/src/runtime_config/spin.rs`,
//! `crates/connection-semaphore`; the 4.1 release notes), honoured or
//! refused at start, never ignored:
//!
//! - `[outbound_http] max_connections = N` is honoured: at most `N` outbound
//!   HTTP connections are open at once across the application; a request
//!   past it waits for one to close, within its connect timeout (then
//!   `connection-timeout`), as Spin waits; `0` allows none. The deprecated
//!   `max_concurrent_requests = N` means `N + 1`, as in Spin, and giving both
//!   is refused as Spin refuses it. `connection_pooling = false` is what
//!   spinbench does anyway (one connection per request); `true` is refused.
//! - every other connection setting (`[outbound_networking]`'s
//!   `max_total_connections`, `max_socket_connections`, `block_networks`;
//!   `[[client_tls]]`; `[outbound_pg]`, `[outbound_mysql]`,
//!   `[outbound_redis]`, `[outbound_mqtt]`) is refused by name with the
//!   reason, and so is any table Spin would not read either (Spin refuses
//!   unused runtime config keys).

use super::runtime_config::RuntimeConfig;
use anyhow::{Result, bail};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The top-level tables and keys read elsewhere (`runtime_config`,
/// `key_value`, `sqlite`, `llm`) or here.
const SERVED: &[&str] = &[
    "state_dir",
    "key_value_store",
    "sqlite_database",
    "llm_compute",
    "outbound_http",
];

/// Settings refused, by table (and key: `None` for the whole table), with why.
const REFUSED: &[(&str, Option<&str>, &str)] = &[
    (
        "outbound_networking",
        Some("max_total_connections"),
        "a ceiling across every kind of outbound connection; spinbench limits outbound HTTP connections only ([outbound_http] max_connections)",
    ),
    (
        "outbound_networking",
        Some("max_socket_connections"),
        "spinbench does not count wasi:sockets connections",
    ),
    (
        "outbound_networking",
        Some("block_networks"),
        "spinbench blocks nothing beyond each component's allowed_outbound_hosts",
    ),
    (
        "client_tls",
        None,
        "spinbench verifies outbound TLS against the webpki roots and presents no client certificate",
    ),
    (
        "outbound_pg",
        None,
        "spinbench keeps a pool of up to 64 PostgreSQL connections per component and address",
    ),
    (
        "outbound_mysql",
        None,
        "spinbench keeps a pool of up to 64 MySQL connections per component and address",
    ),
    (
        "outbound_redis",
        None,
        "spinbench does not limit outbound Redis connections",
    ),
    (
        "outbound_mqtt",
        None,
        "spinbench does not limit outbound MQTT connections or payloads",
    ),
    (
        "variables_provider",
        None,
        "spinbench reads variables from the manifest's defaults and SPIN_VARIABLE_* only",
    ),
    (
        "config_provider",
        None,
        "spinbench reads variables from the manifest's defaults and SPIN_VARIABLE_* only",
    ),
];

/// The keys of `[outbound_http]`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct OutboundHttpToml {
    #[serde(default)]
    connection_pooling: bool,
    max_connections: Option<usize>,
    max_concurrent_requests: Option<usize>,
}

/// Refuses, in one line, every connection setting and table that is not
/// served; `Ok` with the outbound HTTP connection cap, if one is set.
pub fn check(config: &RuntimeConfig) -> Result<Option<usize>> {
    for (table, value) in &config.table {
        if SERVED.contains(&table.as_str()) {
            continue;
        }
        let keys: Vec<&str> = match value.as_table() {
            Some(keys) => keys.keys().map(String::as_str).collect(),
            None => Vec::new(),
        };
        let refusal = REFUSED
            .iter()
            .find(|(name, key, _)| name == table && key.is_none_or(|key| keys.contains(&key)));
        match refusal {
            Some((_, key, why)) => {
                let place = key.map_or(format!("[{table}]"), |key| format!("[{table}] {key}"));
                bail!("runtime config: {place} is not supported by spinbench serve ({why})");
            }
            None => bail!(
                "runtime config: unused key `{table}` (Spin refuses runtime config keys it does not use, and so does spinbench)"
            ),
        }
    }
    let Some(value) = config.table.get("outbound_http") else {
        return Ok(None);
    };
    let toml: OutboundHttpToml = value
        .clone()
        .try_into()
        .map_err(|e| anyhow::anyhow!("runtime config: [outbound_http]: {e}"))?;
    if toml.connection_pooling {
        bail!(
            "runtime config: [outbound_http] connection_pooling = true is not supported by spinbench serve (it opens one connection per outbound request); remove it or set it to false"
        );
    }
    match (toml.max_connections, toml.max_concurrent_requests) {
        (Some(_), Some(_)) => bail!(
            "runtime config: cannot set both `max_connections` and `max_concurrent_requests` in `[outbound_http]`; use `max_connections` only"
        ),
        (Some(n), None) => Ok(Some(n)),
        // Spin's old semantics: 0 allowed one connection.
        (None, Some(n)) => {
            crate::err_line!(
                "warning: `max_concurrent_requests` in `[outbound_http]` is deprecated; use `max_connections` instead (`max_connections = 0` blocks all connections, whereas `max_concurrent_requests = 0` allowed 1)"
            );
            Ok(Some(n.saturating_add(1)))
        }
        (None, None) => Ok(None),
    }
}

/// The application's outbound HTTP connection cap, shared by its components.
#[derive(Debug, Clone, Default)]
pub struct ConnectionLimit(Option<Arc<Semaphore>>);

impl ConnectionLimit {
    pub fn new(max: Option<usize>) -> Self {
        Self(max.map(|n| Arc::new(Semaphore::new(n.min(Semaphore::MAX_PERMITS)))))
    }

    /// A permit for one connection, waiting at most `wait` (Spin counts the
    /// wait in the connect timeout); `None` without a cap.
    pub async fn acquire(
        &self,
        wait: Duration,
    ) -> Result<Option<OwnedSemaphorePermit>, wasmtime_wasi_http::Error> {
        let Some(semaphore) = &self.0 else {
            return Ok(None);
        };
        match tokio::time::timeout(wait, semaphore.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(Some(permit)),
            Ok(Err(_)) => Err(wasmtime_wasi_http::Error::ConnectionLimitReached),
            Err(_) => Err(wasmtime_wasi_http::Error::ConnectionTimeout),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> RuntimeConfig {
        RuntimeConfig {
            table: toml::from_str(text).unwrap(),
            ..RuntimeConfig::default()
        }
    }

    #[test]
    fn outbound_http_connection_caps_are_read_as_spin_reads_them() {
        assert_eq!(check(&config("")).unwrap(), None);
        assert_eq!(
            check(&config("[outbound_http]\nmax_connections = 3")).unwrap(),
            Some(3)
        );
        assert_eq!(
            check(&config("[outbound_http]\nmax_concurrent_requests = 0")).unwrap(),
            Some(1)
        );
        assert_eq!(
            check(&config("[outbound_http]\nconnection_pooling = false")).unwrap(),
            None
        );
        for (text, words) in [
            (
                "[outbound_http]\nmax_connections = 1\nmax_concurrent_requests = 1",
                "cannot set both",
            ),
            (
                "[outbound_http]\nconnection_pooling = true",
                "connection_pooling",
            ),
            ("[outbound_http]\nmax_conections = 1", "max_conections"),
        ] {
            let error = check(&config(text)).unwrap_err().to_string();
            assert!(error.contains(words), "{text}: {error}");
        }
    }

    #[test]
    fn other_connection_settings_and_unknown_tables_are_refused_by_name() {
        for (text, words) in [
            (
                "[outbound_networking]\nmax_total_connections = 5",
                "[outbound_networking] max_total_connections",
            ),
            (
                "[outbound_networking]\nmax_socket_connections = 5",
                "[outbound_networking] max_socket_connections",
            ),
            ("[[client_tls]]\ncomponent_ids = [\"a\"]", "[client_tls]"),
            ("[outbound_pg]\nmax_connections = 5", "[outbound_pg]"),
            ("[outbound_redis]\nmax_connections = 5", "[outbound_redis]"),
            (
                "[[variables_provider]]\ntype = \"vault\"",
                "[variables_provider]",
            ),
            ("[made_up]\nx = 1", "unused key `made_up`"),
        ] {
            let error = check(&config(text)).unwrap_err().to_string();
            assert!(error.contains(words), "{text}: {error}");
            assert!(!error.contains('\n'), "{error}");
        }
        // The tables other modules read pass here.
        assert!(
            check(&config(
                "state_dir = \"x\"\n[key_value_store.a]\ntype = \"spin\""
            ))
            .is_ok()
        );
    }

    #[tokio::test]
    async fn the_cap_holds_connections_to_its_count() {
        let limit = ConnectionLimit::new(Some(1));
        let first = limit.acquire(Duration::from_millis(10)).await.unwrap();
        assert!(first.is_some());
        assert!(matches!(
            limit.acquire(Duration::from_millis(10)).await,
            Err(wasmtime_wasi_http::Error::ConnectionTimeout)
        ));
        drop(first);
        assert!(
            limit
                .acquire(Duration::from_millis(10))
                .await
                .unwrap()
                .is_some()
        );
        let none = ConnectionLimit::new(Some(0));
        assert!(none.acquire(Duration::from_millis(10)).await.is_err());
        assert!(
            ConnectionLimit::default()
                .acquire(Duration::ZERO)
                .await
                .unwrap()
                .is_none()
        );
    }
}
