//! Loopback ports for the hosts a run starts, each told its port before it
//! starts (`--listen`, `{port}` in a benchmark file's command line).
//!
//! A port the kernel picks for `bind(0)` comes from its ephemeral range, which
//! every outgoing connection also takes its local port from: closed again and
//! handed to a host, it can be taken in between by one of the load
//! generator's connections, or picked again by another process's `bind(0)`.
//! So a leased port lies below the ephemeral range, where the kernel never
//! picks on its own, and is locked (`flock` on a file named for it, in a
//! directory every spinbench process and the repository's tests share; the
//! kernel drops the lock when the process ends) until the host is stopped.

use anyhow::{Result, bail};
use std::fs::File;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;

/// The lowest port leased: above the well-known and most registered services.
const LOWEST: u16 = 10_000;

/// A loopback port held by this process until dropped.
#[derive(Debug)]
pub struct Lease {
    pub addr: SocketAddr,
    _lock: File,
}

/// A port below the kernel's ephemeral range that no spinbench process holds
/// and nothing listens on now.
pub fn lease() -> Result<Lease> {
    let (low, high) = (LOWEST, ephemeral_low().saturating_sub(1));
    if high <= low {
        bail!("the kernel's ephemeral ports start at {high}: no room below them for hosts");
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
    bail!("no free loopback port in {low}..={high}")
}

fn try_port(dir: &std::path::Path, port: u16) -> Option<Lease> {
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(port.to_string()))
        .ok()?;
    lock.try_lock().ok()?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    // Locked: no spinbench process has it. Free now of anything else?
    TcpListener::bind(addr).ok()?;
    Some(Lease { addr, _lock: lock })
}

/// The lock files, one per port: the directory spinbench's port leases share
/// (the repository's tests lease from it too).
fn lock_dir() -> Result<PathBuf> {
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
/// parallel runs start their search at different ports.
fn random_below(n: u32) -> u32 {
    use std::hash::{BuildHasher, RandomState};
    let hash = RandomState::new().hash_one((std::process::id(), std::time::Instant::now()));
    (hash % u64::from(n)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_are_distinct_and_below_the_ephemeral_range_until_dropped() {
        let leases: Vec<Lease> = (0..50).map(|_| lease().unwrap()).collect();
        let mut ports: Vec<u16> = leases.iter().map(|l| l.addr.port()).collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 50);
        assert!(ports.iter().all(|&p| p >= LOWEST && p < ephemeral_low()));
        let dir = lock_dir().unwrap();
        let held = leases[0].addr.port();
        assert!(
            try_port(&dir, held).is_none(),
            "a held port is leased again"
        );
        drop(leases);
        assert!(try_port(&dir, held).is_some(), "a dropped lease stays held");
    }
}
