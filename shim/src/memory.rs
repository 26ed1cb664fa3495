//! The container's memory limit mapped onto the host's instance limits, so
//! that the guests of a full pool fit in the container and overload is a
//! `503` from the host's queue, never the kernel's OOM killer.
//!
//! The limit is read as the container sees its own cgroup: `memory.max`
//! (cgroup v2) or `memory/memory.limit_in_bytes` (v1) under `/sys/fs/cgroup`,
//! which Kubernetes' CRI mounts into every container (`ctr run` needs
//! `--mount type=cgroup,...`: deploy/local-node.sh passes it).

use anyhow::{Result, bail};
use spinbench_host::{AdmissionLimits, PoolSizing};
use std::path::Path;

const MIB: u64 = 1 << 20;

/// What the host itself holds beside its instances: code, the runtime, its
/// connections' buffers. The function set's container (seven components,
/// precompiled) was charged 19 MiB idle (11 MiB anonymous, 7 MiB page cache:
/// deploy/README.md); this leaves room for connections on top.
pub const HOST_RESERVE: u64 = 48 * MIB;

/// What an instance holds beyond its linear memory, at most: its tables (two,
/// kept resident up to 512 KiB each) and its fiber stack. (1,000 live `io`
/// instances added 76 MiB of anonymous memory to the function set's container.)
const INSTANCE_OVERHEAD: u64 = 2 * MIB;

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

/// The pool and admission limits for instances of `instance_memory` bytes of
/// linear memory each in a container of `limit` bytes: every slot of the pool
/// at its cap, with its overhead, fits beside [`HOST_RESERVE`]. Without a
/// limit, `defaults`.
pub fn instance_limits(
    limit: Option<u64>,
    instance_memory: usize,
    defaults: (PoolSizing, AdmissionLimits),
) -> Result<(PoolSizing, AdmissionLimits)> {
    let (pool, admission) = defaults;
    let pool = PoolSizing {
        max_memory_size: instance_memory,
        ..pool
    };
    let Some(limit) = limit else {
        return Ok((pool, admission));
    };
    let per_instance = instance_memory as u64 + INSTANCE_OVERHEAD;
    // Two slots at least: one serving, the one the admission cap keeps free.
    let slots = limit.saturating_sub(HOST_RESERVE) / per_instance;
    if slots < 2 {
        bail!(
            "the container's memory limit ({} MiB) holds the host ({} MiB) and fewer than two instances of {} MiB (linear memory {} MiB and {} MiB beside it); raise the limit or lower SPIN_MAX_INSTANCE_MEMORY",
            limit / MIB,
            HOST_RESERVE / MIB,
            per_instance / MIB,
            instance_memory as u64 / MIB,
            INSTANCE_OVERHEAD / MIB
        );
    }
    let max_instances = u32::try_from(slots)
        .unwrap_or(u32::MAX)
        .min(pool.max_instances);
    let pool = PoolSizing {
        max_instances,
        ..pool
    };
    let admission = AdmissionLimits {
        max_concurrent: admission.max_concurrent.min(max_instances as usize - 1),
        ..admission
    };
    Ok((pool, admission))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> (PoolSizing, AdmissionLimits) {
        (PoolSizing::default(), AdmissionLimits::default())
    }

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
    fn without_a_limit_only_the_instance_memory_changes() {
        let (pool, admission) = instance_limits(None, 32 << 20, defaults()).unwrap();
        assert_eq!(pool.max_memory_size, 32 << 20);
        assert_eq!(pool.max_instances, PoolSizing::default().max_instances);
        assert_eq!(admission, AdmissionLimits::default());
    }

    #[test]
    fn a_limit_bounds_the_pool_so_every_slot_at_its_cap_fits() {
        let limit = 256 * MIB;
        let (pool, admission) = instance_limits(Some(limit), 16 << 20, defaults()).unwrap();
        // (256 - 48) / (16 + 2) = 11 slots, 10 served at once.
        assert_eq!(pool.max_instances, 11);
        assert_eq!(admission.max_concurrent, 10);
        let held = HOST_RESERVE + u64::from(pool.max_instances) * (16 * MIB + INSTANCE_OVERHEAD);
        assert!(held <= limit, "{held} > {limit}");
        // A large limit keeps the defaults.
        let (pool, admission) = instance_limits(Some(64 << 30), 16 << 20, defaults()).unwrap();
        assert_eq!(pool.max_instances, PoolSizing::default().max_instances);
        assert_eq!(admission, AdmissionLimits::default());
    }

    #[test]
    fn a_limit_too_small_for_two_instances_is_refused_with_the_figures() {
        let error = instance_limits(Some(64 * MIB), 16 << 20, defaults()).unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("64 MiB") && text.contains("SPIN_MAX_INSTANCE_MEMORY"),
            "{text}"
        );
    }
}
