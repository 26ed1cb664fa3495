//! Loopback ports for services that must be told their port before they start
//! (PostgreSQL, MariaDB, Redis, Mosquitto, docker-registry, an upstream a test
//! app is configured with).
//!
//! A port the kernel picks for `bind(0)` comes from its ephemeral range, the
//! range every outgoing connection also takes its local port from: closed again
//! and handed to a service later, it can be taken in between by any connection
//! on the machine, or picked again by the next `bind(0)` of a parallel test (two
//! PostgreSQL tests once got the same one). So a leased port lies below the
//! ephemeral range, where the kernel never picks on its own, and it is locked:
//! `flock` on a file named for it, which every test process and every
//! `spinbench compare` on the machine honours and the kernel releases when the
//! process ends, however it ends.
//! Anything else that binds such a port explicitly can still take it: a
//! service that then cannot bind is started again on another lease
//! ([`crate::service`]).

use std::fs::File;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;

/// The lowest port leased: above the well-known and most registered services.
const LOWEST: u16 = 10_000;

/// A loopback port held for this process: no other test process leases it
/// while the lease lives.
#[derive(Debug)]
pub struct PortLease {
    pub port: u16,
    _lock: File,
}

impl PortLease {
    /// A port below the kernel's ephemeral range that no test process holds and
    /// nothing listens on now.
    pub fn new() -> PortLease {
        let (low, high) = (LOWEST, ephemeral_low().saturating_sub(1));
        assert!(
            high > low + 1000,
            "the ephemeral range starts at {high}: no room below it"
        );
        let span = u32::from(high - low) + 1;
        let start = random_below(span);
        for step in 0..span {
            let port = low + u16::try_from((start + step) % span).expect("within the span");
            if let Some(lease) = PortLease::try_port(port) {
                return lease;
            }
        }
        panic!("no free loopback port in {low}..={high}");
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Holds the lease until the process exits (a port a static service or a
    /// whole test keeps).
    pub fn keep(self) -> u16 {
        let port = self.port;
        std::mem::forget(self);
        port
    }

    fn try_port(port: u16) -> Option<PortLease> {
        let path = lock_dir().join(port.to_string());
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .ok()?;
        file.try_lock().ok()?;
        // Locked: no test process has it. Free now of anything else?
        TcpListener::bind(("127.0.0.1", port)).ok()?;
        Some(PortLease { port, _lock: file })
    }
}

impl Default for PortLease {
    fn default() -> Self {
        PortLease::new()
    }
}

/// The lock files, one per port, shared by every test process on the machine
/// and by `spinbench compare`'s own leases (its `compare::ports`).
fn lock_dir() -> PathBuf {
    let dir = std::env::temp_dir().join("spinbench-ports");
    std::fs::create_dir_all(&dir).expect("the port lock directory");
    dir
}

/// The first port of the kernel's ephemeral range (Linux's default if unreadable).
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// A number below `n` that differs between processes and calls, so that
/// parallel tests start their search at different ports.
fn random_below(n: u32) -> u32 {
    use std::hash::{BuildHasher, RandomState};
    let hash = RandomState::new().hash_one((std::process::id(), std::time::Instant::now()));
    (hash % u64::from(n)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_leases_never_share_a_port_and_lie_below_the_ephemeral_range() {
        let leases: Vec<PortLease> = (0..50).map(|_| PortLease::new()).collect();
        let mut ports: Vec<u16> = leases.iter().map(|l| l.port).collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 50);
        assert!(ports.iter().all(|&p| p >= LOWEST && p < ephemeral_low()));
    }

    #[test]
    fn a_port_something_listens_on_is_not_leased() {
        let lease = PortLease::new();
        let _listener = TcpListener::bind(lease.addr()).unwrap();
        let port = lease.port;
        drop(lease);
        assert!(PortLease::try_port(port).is_none());
    }
}
