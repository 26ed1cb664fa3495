//! The container's environment (the OCI spec's `process.env`), read as
//! SpinKube's shim reads it (spinframework/containerd-shim-spin v0.24.0,
//! `src/constants.rs`, `src/engine.rs`, `src/utils.rs`): where to listen, the
//! memory of one instance, and application variables. The shim's own process
//! environment is not the container's and is never read for these.

use anyhow::{Context, Result, bail};
use spinbench_host::HostOptions;
use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};

/// Where the HTTP trigger listens; the Spin shim's variable.
const LISTEN_ADDR: &str = "SPIN_HTTP_LISTEN_ADDR";
/// The Spin shim's default: every interface of the pod, port 80.
pub const DEFAULT_LISTEN_ADDR: &str = "0.0.0.0:80";
/// Bytes one instance's linear memory may grow to: what the operator sets from
/// a `SpinApp`'s `invocationLimits.memory`.
const MAX_INSTANCE_MEMORY: &str = "SPIN_MAX_INSTANCE_MEMORY";
/// The `SpinApp`'s `components`: serve only these (comma-separated).
const COMPONENTS_TO_RETAIN: &str = "SPIN_COMPONENTS_TO_RETAIN";
/// Application variable `name` is `SPIN_VARIABLE_<NAME>`.
const VARIABLE_PREFIX: &str = "SPIN_VARIABLE_";

/// How one of spinbench's own limits is set from a number.
type SetLimit = fn(&mut HostOptions, u64);

/// spinbench's own limits, from the container's environment (SpinKube has
/// none of them): each is the `spinbench serve` flag of the same name
/// (docs/limits.md), memory in bytes as `SPIN_MAX_INSTANCE_MEMORY` is, time
/// in seconds.
const LIMITS: &[(&str, SetLimit)] = &[
    ("SPINBENCH_MAX_INITIAL_MEMORY", |options, bytes| {
        options.pool.max_initial_memory = size(bytes);
    }),
    ("SPINBENCH_MAX_SQLITE_MEMORY", |options, bytes| {
        options.guest.budget.sqlite_memory = size(bytes);
    }),
    ("SPINBENCH_MAX_SQLITE_CONNECTIONS", |options, count| {
        options.guest.budget.sqlite_connections = size(count);
    }),
    ("SPINBENCH_SQLITE_THREADS", |options, count| {
        options.sqlite_threads = size(count);
    }),
    ("SPINBENCH_MAX_HELD_MEMORY", |options, bytes| {
        options.guest.budget.held_bytes = size(bytes);
    }),
    ("SPINBENCH_MAX_COMPONENT_HANDLES", |options, count| {
        options.guest.max_component_handles = size(count);
    }),
    ("SPINBENCH_MAX_INSTANCE_SOCKETS", |options, count| {
        options.guest.budget.sockets = size(count);
    }),
    ("SPINBENCH_MAX_WAGI_OUTPUT", |options, bytes| {
        options.guest.max_wagi_output = size(bytes);
    }),
    ("SPINBENCH_BODY_TOTAL_TIMEOUT", |options, seconds| {
        options.body_total_timeout = std::time::Duration::from_secs(seconds);
    }),
];

fn size(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

/// The container's `NAME=value` pairs.
#[derive(Debug, Clone, Default)]
pub struct ContainerEnv(BTreeMap<String, String>);

impl ContainerEnv {
    pub fn new(pairs: &[String]) -> Self {
        Self(
            pairs
                .iter()
                .map(|pair| {
                    let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                    (name.to_string(), value.to_string())
                })
                .collect(),
        )
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// `SPIN_HTTP_LISTEN_ADDR`, else `0.0.0.0:80`; a host name is resolved.
    pub fn listen_addr(&self) -> Result<SocketAddr> {
        let text = self.get(LISTEN_ADDR).unwrap_or(DEFAULT_LISTEN_ADDR);
        text.to_socket_addrs()
            .ok()
            .and_then(|mut addrs| addrs.next())
            .with_context(|| format!("{LISTEN_ADDR}={text:?} is not an address to listen on"))
    }

    /// `SPIN_MAX_INSTANCE_MEMORY` in bytes, if set.
    pub fn max_instance_memory(&self) -> Result<Option<usize>> {
        let Some(text) = self.get(MAX_INSTANCE_MEMORY) else {
            return Ok(None);
        };
        match text.parse::<usize>() {
            Ok(bytes) if bytes > 0 => Ok(Some(bytes)),
            _ => bail!("{MAX_INSTANCE_MEMORY}={text:?} is not a number of bytes above 0"),
        }
    }

    /// Sets in `options` each of spinbench's own limits the container's
    /// environment names; a value that is not a number above 0 is refused,
    /// naming it.
    pub fn apply_limits(&self, options: &mut HostOptions) -> Result<()> {
        for (name, set) in LIMITS {
            let Some(text) = self.get(name) else {
                continue;
            };
            match text.parse::<u64>() {
                Ok(value) if value > 0 => set(options, value),
                _ => bail!("{name}={text:?} is not a number above 0"),
            }
        }
        Ok(())
    }

    /// `SPIN_COMPONENTS_TO_RETAIN`: the components to serve, as the Spin shim
    /// reads it (a comma-separated list; none: all).
    pub fn components_to_retain(&self) -> Vec<String> {
        self.get(COMPONENTS_TO_RETAIN)
            .map(spinbench_host::manifest::retain::parse_list)
            .unwrap_or_default()
    }

    /// The environment application variables are read from: the container's,
    /// where `NAME` sets variable `name` over `SPIN_VARIABLE_NAME`, as the Spin
    /// shim copies each variable's upper-cased name into its prefixed form.
    pub fn variables(&self) -> BTreeMap<String, String> {
        let mut env = self.0.clone();
        for (name, value) in &self.0 {
            if !name.starts_with(VARIABLE_PREFIX) {
                env.insert(format!("{VARIABLE_PREFIX}{name}"), value.clone());
            }
        }
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[&str]) -> ContainerEnv {
        ContainerEnv::new(&pairs.iter().map(|p| (*p).to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn the_listen_address_defaults_to_the_spin_shims() {
        assert_eq!(
            env(&[]).listen_addr().unwrap(),
            "0.0.0.0:80".parse().unwrap()
        );
        assert_eq!(
            env(&["SPIN_HTTP_LISTEN_ADDR=127.0.0.1:3001"])
                .listen_addr()
                .unwrap(),
            "127.0.0.1:3001".parse().unwrap()
        );
        let error = env(&["SPIN_HTTP_LISTEN_ADDR=nonsense"])
            .listen_addr()
            .unwrap_err();
        assert!(
            error.to_string().contains("SPIN_HTTP_LISTEN_ADDR"),
            "{error}"
        );
    }

    #[test]
    fn instance_memory_is_bytes() {
        assert_eq!(env(&[]).max_instance_memory().unwrap(), None);
        assert_eq!(
            env(&["SPIN_MAX_INSTANCE_MEMORY=16777216"])
                .max_instance_memory()
                .unwrap(),
            Some(16 << 20)
        );
        for bad in ["16Mi", "0", "-1"] {
            let error = env(&[&format!("SPIN_MAX_INSTANCE_MEMORY={bad}")])
                .max_instance_memory()
                .unwrap_err();
            assert!(error.to_string().contains(bad), "{error}");
        }
    }

    #[test]
    fn spinbench_limits_are_read_and_bad_values_refused() {
        let mut options = HostOptions::default();
        env(&["SPINBENCH_MAX_INITIAL_MEMORY=134217728"])
            .apply_limits(&mut options)
            .unwrap();
        assert_eq!(options.pool.max_initial_memory, 128 << 20);
        env(&[
            "SPINBENCH_SQLITE_THREADS=3",
            "SPINBENCH_BODY_TOTAL_TIMEOUT=5",
        ])
        .apply_limits(&mut options)
        .unwrap();
        assert_eq!(options.sqlite_threads, 3);
        assert_eq!(options.body_total_timeout.as_secs(), 5);
        for (name, _) in LIMITS {
            for bad in ["0", "-1", "1Mi"] {
                let error = env(&[&format!("{name}={bad}")])
                    .apply_limits(&mut HostOptions::default())
                    .unwrap_err();
                assert!(error.to_string().contains(name), "{error}");
            }
        }
    }

    #[test]
    fn a_plain_name_sets_its_variable_over_the_prefixed_one() {
        let vars = env(&[
            "SPIN_VARIABLE_GREETING=prefixed",
            "GREETING=plain",
            "SPIN_VARIABLE_ONLY=kept",
        ])
        .variables();
        assert_eq!(vars["SPIN_VARIABLE_GREETING"], "plain");
        assert_eq!(vars["SPIN_VARIABLE_ONLY"], "kept");
    }

    #[test]
    fn the_components_to_retain_are_a_comma_separated_list() {
        assert!(env(&[]).components_to_retain().is_empty());
        assert_eq!(
            env(&["SPIN_COMPONENTS_TO_RETAIN=hello,echo"]).components_to_retain(),
            ["hello", "echo"]
        );
    }
}
