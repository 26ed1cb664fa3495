//! The container's memory limit mapped onto the host's instance limits, so
//! that the guests of a full pool fit in the container and overload is a
//! `503` from the host's queue, never the kernel's OOM killer.
//!
//! The limit is read as the container sees its own cgroup: `memory.max`
//! (cgroup v2) or `memory/memory.limit_in_bytes` (v1) under `/sys/fs/cgroup`,
//! which Kubernetes' CRI mounts into every container (`ctr run` needs
//! `--mount type=cgroup,...`: deploy/local-node.sh passes it).

use spinbench_host::MemoryFit;
use std::path::Path;

const MIB: u64 = 1 << 20;

/// What the host itself holds beside its instances: code, the runtime, its
/// connections' buffers. The function set's container (seven components,
/// precompiled) was charged 19 MiB idle (11 MiB anonymous, 7 MiB page cache:
/// deploy/README.md); this leaves room for connections on top.
pub const HOST_RESERVE: u64 = 48 * MIB;

/// The container's memory limit in bytes, if it has one and can see it.
pub fn container_limit(cgroup_root: &Path) -> Option<u64> {
    let files = ["memory.max", "memory/memory.limit_in_bytes"];
    let text = files
        .iter()
        .find_map(|file| std::fs::read_to_string(cgroup_root.join(file)).ok())?;
    // "max" (v2) or a page-rounded i64::MAX (v1, 9223372036854771712): none.
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|&bytes| bytes < 1 << 62)
}

/// What the host may use: the container's limit, if it has one and can see
/// it, with [`HOST_RESERVE`] kept beside the instances. The host sizes its
/// pool from it once it has read the app's components (`MemoryFit`): a
/// component that starts past `SPIN_MAX_INSTANCE_MEMORY` has a larger cap,
/// and the pool is sized for it.
pub fn memory_fit(cgroup_root: &Path) -> Option<MemoryFit> {
    container_limit(cgroup_root).map(fit_in)
}

/// What the host may use under a memory limit of `limit` bytes.
pub fn fit_in(limit: u64) -> MemoryFit {
    MemoryFit {
        limit,
        reserve: HOST_RESERVE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_read_from_either_cgroup_version() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(container_limit(dir.path()), None);
        std::fs::create_dir(dir.path().join("memory")).unwrap();
        let v1 = dir.path().join("memory/memory.limit_in_bytes");
        std::fs::write(&v1, "9223372036854771712\n").unwrap();
        assert_eq!(container_limit(dir.path()), None, "unlimited (v1)");
        std::fs::write(&v1, "268435456\n").unwrap();
        assert_eq!(container_limit(dir.path()), Some(256 * MIB));
        std::fs::write(dir.path().join("memory.max"), "max\n").unwrap();
        assert_eq!(container_limit(dir.path()), None, "unlimited (v2)");
        std::fs::write(dir.path().join("memory.max"), "134217728\n").unwrap();
        assert_eq!(container_limit(dir.path()), Some(128 * MIB));
    }

    #[test]
    fn the_fit_keeps_the_reserve() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(memory_fit(dir.path()), None);
        std::fs::write(dir.path().join("memory.max"), "268435456\n").unwrap();
        assert_eq!(
            memory_fit(dir.path()),
            Some(MemoryFit {
                limit: 256 * MIB,
                reserve: HOST_RESERVE
            })
        );
    }
}
