//! The store's resource limiter: wasmtime's [`StoreLimits`] (each memory,
//! table and count), and the linear memory of the whole instance, all its
//! memories together, under its component's cap. `StoreLimits` caps each
//! memory alone, so a component with 32 memories could hold 32 caps; here
//! their sum is held to one.
//!
//! The sum counts what the limiter allowed: memories are never shrunk and live
//! as long as the store, so it only grows. A growth the limiter allowed that
//! then fails counts all the same (wasmtime reports the failure, but also
//! reports failures of growths it never asked about, so subtracting on that
//! report could be led to subtract what did grow); the limiter refuses
//! up front what the memory's own maximum would refuse, so only a failed
//! allocation can make it count more than was grown, and only against the
//! guest itself.

use wasmtime::{ResourceLimiter, StoreLimits};

pub struct InstanceLimiter {
    each: StoreLimits,
    /// Bytes all the store's memories may hold together.
    cap: usize,
    /// Bytes they hold (as allowed so far).
    total: usize,
}

impl InstanceLimiter {
    /// `each`: the per-memory, per-table and count limits; `cap`: the sum of
    /// every memory's size.
    pub fn new(each: StoreLimits, cap: usize) -> Self {
        Self {
            each,
            cap,
            total: 0,
        }
    }
}

impl ResourceLimiter for InstanceLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let growth = desired.saturating_sub(current);
        let total = self.total.saturating_add(growth);
        if total > self.cap || maximum.is_some_and(|maximum| desired > maximum) {
            return Ok(false);
        }
        if !self.each.memory_growing(current, desired, maximum)? {
            return Ok(false);
        }
        self.total = total;
        Ok(true)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.each.memory_grow_failed(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.each.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.each.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.each.instances()
    }

    fn tables(&self) -> usize {
        self.each.tables()
    }

    fn memories(&self) -> usize {
        self.each.memories()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::StoreLimitsBuilder;

    const MIB: usize = 1 << 20;

    fn limiter(each: usize, cap: usize) -> InstanceLimiter {
        InstanceLimiter::new(StoreLimitsBuilder::new().memory_size(each).build(), cap)
    }

    #[test]
    fn memories_together_stay_under_the_cap() {
        let mut limiter = limiter(16 * MIB, 16 * MIB);
        // Two memories created at 6 MiB each, then grown.
        assert!(limiter.memory_growing(0, 6 * MIB, None).unwrap());
        assert!(limiter.memory_growing(0, 6 * MIB, None).unwrap());
        assert!(limiter.memory_growing(6 * MIB, 10 * MIB, None).unwrap());
        // 16 MiB in all: one more page of either is refused.
        assert!(
            !limiter
                .memory_growing(6 * MIB, 6 * MIB + 65536, None)
                .unwrap()
        );
        assert!(
            !limiter
                .memory_growing(10 * MIB, 10 * MIB + 65536, None)
                .unwrap()
        );
    }

    #[test]
    fn each_memory_keeps_its_own_cap_and_maximum() {
        let mut limiter = limiter(4 * MIB, 16 * MIB);
        assert!(!limiter.memory_growing(0, 5 * MIB, None).unwrap());
        // Past its declared maximum: refused here, and not counted.
        assert!(!limiter.memory_growing(0, 2 * MIB, Some(MIB)).unwrap());
        assert_eq!(limiter.total, 0);
    }
}
