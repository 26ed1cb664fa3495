//! Loopback ports for servers that must be told their port before they start:
//! the hosts `spinbench compare` runs (`--listen`, `{port}` in a benchmark
//! file's command line) and the services the tests start (PostgreSQL, MariaDB,
//! Redis, Mosquitto, docker-registry).
//!
//! A port the kernel picks for `bind(0)` comes from its ephemeral range, the
//! range every outgoing connection also takes its local port from: closed again
//! and handed to a server later, it can be taken in between by any connection
//! on the machine (a load generator's), or picked again by the next `bind(0)`
//! of a parallel process (two PostgreSQL tests once got the same one). So a
//! leased port lies below the ephemeral range, where the kernel never picks on
//! its own, and it is locked: `flock` on a file named for it, in a directory
//! every spinbench process and test shares, which the kernel releases when the
//! process ends, however it ends. Anything else that binds such a port
//! explicitly can still take it: a caller whose server then cannot bind starts
//! it again on another lease.

use std::fs::File;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;

/// The lowest port leased: above the well-known and most registered services.
const LOWEST: u16 = 10_000;

/// A loopback port held by this process until dropped: no other spinbench
/// process or test leases it meanwhile.
#[derive(Debug)]
pub struct PortLease {
    pub port: u16,
    _lock: File,
}

impl PortLease {
    /// A port below the kernel's ephemeral range that no spinbench process
    /// holds and nothing listens on now.
    ///
    /// # Errors
    /// When the ephemeral range leaves no room below it, the lock directory
    /// cannot be made, or every port in the room is taken.
    pub fn new() -> io::Result<PortLease> {
        let (low, high) = (LOWEST, ephemeral_low().saturating_sub(1));
        if high <= low {
            return Err(io::Error::other(format!(
                "the kernel's ephemeral ports start at {}: no room below them",
                high + 1
            )));
        }
        let dir = lock_dir()?;
        let span = u32::from(high - low) + 1;
        let start = random_below(span);
        for step in 0..span {
            let port = low + u16::try_from((start + step) % span).expect("within the span");
            if let Some(lease) = try_port(&dir, port) {
                return Ok(lease);
            }
        }
        Err(io::Error::other(format!(
            "no free loopback port in {low}..={high}"
        )))
    }

    /// `127.0.0.1:<port>`.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Holds the lease until the process exits (a port a static service or a
    /// whole test keeps).
    #[must_use]
    pub fn keep(self) -> u16 {
        let port = self.port;
        std::mem::forget(self);
        port
    }
}

fn try_port(dir: &std::path::Path, port: u16) -> Option<PortLease> {
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(port.to_string()))
        .ok()?;
    lock.try_lock().ok()?;
    // Locked: no spinbench process has it. Free now of anything else?
    TcpListener::bind(("127.0.0.1", port)).ok()?;
    Some(PortLease { port, _lock: lock })
}

/// The lock files, one per port.
fn lock_dir() -> io::Result<PathBuf> {
    let dir = std::env::temp_dir().join("spinbench-ports");
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The first port of the kernel's ephemeral range (Linux's default if unreadable).
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// A number below `n` that differs between processes and calls, so that
/// parallel processes start their search at different ports.
fn random_below(n: u32) -> u32 {
    use std::hash::{BuildHasher, RandomState};
    let hash = RandomState::new().hash_one((std::process::id(), std::time::Instant::now()));
    u32::try_from(hash % u64::from(n)).expect("below n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_are_distinct_below_the_ephemeral_range_and_held_until_dropped() {
        let leases: Vec<PortLease> = (0..50).map(|_| PortLease::new().unwrap()).collect();
        let mut ports: Vec<u16> = leases.iter().map(|l| l.port).collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 50);
        assert!(ports.iter().all(|&p| p >= LOWEST && p < ephemeral_low()));
        let dir = lock_dir().unwrap();
        let held = leases[0].port;
        assert!(
            try_port(&dir, held).is_none(),
            "a held port is leased again"
        );
        drop(leases);
        assert!(try_port(&dir, held).is_some(), "a dropped lease stays held");
    }

    #[test]
    fn a_port_something_listens_on_is_not_leased() {
        let lease = PortLease::new().unwrap();
        let _listener = TcpListener::bind(lease.addr()).unwrap();
        let port = lease.port;
        drop(lease);
        assert!(try_port(&lock_dir().unwrap(), port).is_none());
    }
}
