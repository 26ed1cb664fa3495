//! A host given the memory it may use (a container's limit: the containerd
//! shim reads it from the cgroup) sizes its pool from the app's own caps, so
//! that every slot at its component's cap fits and overload is a `503` from
//! the queue, never the kernel's OOM killer. The caps are known only once the
//! app's components are read ([`super::for_app`]): a component that starts
//! past `--max-instance-memory` has a larger one, and the pool is sized for it.

use crate::instance::engine::PoolSizing;
use anyhow::{Result, bail};

const MIB: u64 = 1 << 20;

/// What an instance holds beyond its linear memory, at most: its tables (two,
/// kept resident up to 512 KiB each) and its fiber stack. (1,000 live `io`
/// instances added 76 MiB of anonymous memory to the function set's container.)
pub const INSTANCE_OVERHEAD: u64 = 2 * MIB;

/// The memory a host may use, and how much of it the host keeps beside its
/// instances (code, the runtime, its connections' buffers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryFit {
    pub limit: u64,
    pub reserve: u64,
}

/// The pool and the admission cap for instances of at most `instance_memory`
/// bytes of linear memory each under `memory`: every slot of the pool at its
/// cap, with its overhead, fits beside the reserve. Refuses a limit that holds
/// fewer than two (one serving, the one the admission cap keeps free).
pub fn fit(
    memory: MemoryFit,
    instance_memory: usize,
    pool: PoolSizing,
    max_concurrent: usize,
) -> Result<(PoolSizing, usize)> {
    let per_instance = instance_memory as u64 + INSTANCE_OVERHEAD;
    let slots = memory.limit.saturating_sub(memory.reserve) / per_instance;
    if slots < 2 {
        bail!(
            "the memory limit ({} MiB) holds the host ({} MiB) and fewer than two instances of \
             {} MiB (linear memory {} MiB, the largest cap of this app's components, and {} MiB \
             beside it); raise the limit or lower the instance memory",
            memory.limit / MIB,
            memory.reserve / MIB,
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
    Ok((pool, max_concurrent.min(max_instances as usize - 1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESERVE: u64 = 48 * MIB;

    fn memory(limit: u64) -> MemoryFit {
        MemoryFit {
            limit,
            reserve: RESERVE,
        }
    }

    #[test]
    fn a_limit_bounds_the_pool_so_every_slot_at_its_cap_fits() {
        let limit = 256 * MIB;
        let (pool, concurrent) = fit(memory(limit), 16 << 20, PoolSizing::default(), 1024).unwrap();
        // (256 - 48) / (16 + 2) = 11 slots, 10 served at once.
        assert_eq!(pool.max_instances, 11);
        assert_eq!(concurrent, 10);
        let held = RESERVE + u64::from(pool.max_instances) * (16 * MIB + INSTANCE_OVERHEAD);
        assert!(held <= limit, "{held} > {limit}");
        // A large limit keeps the defaults.
        let (pool, concurrent) =
            fit(memory(64 << 30), 16 << 20, PoolSizing::default(), 1024).unwrap();
        assert_eq!(pool.max_instances, PoolSizing::default().max_instances);
        assert_eq!(concurrent, 1024);
    }

    /// Python's componentize-py starts at 18.4 MiB: its cap is that plus the
    /// flag's 16, and the pool is sized for it, not for the flag alone.
    #[test]
    fn the_pool_is_sized_for_the_largest_cap_not_the_flag() {
        let python = 294 * 65536 + (16 << 20);
        let (pool, _) = fit(memory(256 * MIB), python, PoolSizing::default(), 1024).unwrap();
        // (256 - 48) / (34.4 + 2) = 5 slots.
        assert_eq!(pool.max_instances, 5);
    }

    #[test]
    fn a_limit_too_small_for_two_instances_is_refused_with_the_figures() {
        let error = fit(memory(64 * MIB), 16 << 20, PoolSizing::default(), 1024).unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("64 MiB") && text.contains("fewer than two instances of 18 MiB"),
            "{text}"
        );
    }
}
