//! The wasmtime engine, configured the way Spin's core crate configures it
//! (spinframework/spin `crates/core/src/lib.rs`), but sized for more live instances.

use anyhow::Result;
use std::time::Duration;
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How often the ticker thread advances the epoch: Spin's `DEFAULT_EPOCH_TICK_INTERVAL`.
/// It is the granularity of request deadlines and of a busy guest yielding to other tasks.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// Sizing of the pooling allocator.
#[derive(Debug, Clone, Copy)]
pub struct PoolSizing {
    /// Component instance slots in the pool. The admission cap
    /// (`AdmissionLimits::max_concurrent`, 1024 by default) must stay below it,
    /// so overload is answered with `503`s, never with a failed instantiation.
    ///
    /// Spin defaults to 1_000. We default to 1_100, just above the cap: each slot
    /// reserves wasmtime's default 4 GiB + 32 MiB guard of address space (kept so
    /// bounds checks stay elided, as under Spin; only touched pages become resident),
    /// and setting the pool up is paid at every start, about 2.5 ms per 1,000 slots
    /// here (first response after exec: 10,000 slots 35 ms, 2,048 slots 19 ms,
    /// 1,100 slots 11 ms).
    pub max_instances: u32,
    /// Largest linear memory an instance may grow to, all its memories
    /// together; past it, allocation fails and the guest traps (`500`). 16 MiB
    /// by default: every function runs within 2 MiB, and 1024 concurrent
    /// instances at the cap stay within 16 GiB. A component whose initial
    /// memory alone is past it gets a cap of its own (`instance::limits`).
    pub max_memory_size: usize,
    /// The most linear memory a component may declare that its instances
    /// start with (when that is past `max_memory_size`); past it the
    /// component is refused at load. 64 MiB by default: componentize-py's
    /// Python starts at 18.4 MiB.
    pub max_initial_memory: usize,
}

impl PoolSizing {
    /// `--max-instance-memory`'s default.
    pub const DEFAULT_MAX_MEMORY: usize = 16 * MIB;
    /// `--max-initial-memory`'s default.
    pub const DEFAULT_MAX_INITIAL_MEMORY: usize = 64 * MIB;
}

impl Default for PoolSizing {
    fn default() -> Self {
        Self {
            max_instances: 1_100,
            max_memory_size: Self::DEFAULT_MAX_MEMORY,
            max_initial_memory: Self::DEFAULT_MAX_INITIAL_MEMORY,
        }
    }
}

/// Which instance allocator the engine uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allocation {
    Pooling,
    /// Memories and tables allocated per instance: no address space reserved
    /// up front (for machines whose address space is limited), at a higher
    /// cost per instantiation. Also the fallback when the pool cannot be reserved.
    OnDemand,
}

/// Elements per table (Spin's value); a table's slot in the pool reserves 8
/// bytes per element of address space.
pub const TABLE_ELEMENTS: usize = 100_000;

/// What one component instance may contain, the same for every component of
/// the app (`instance::limits` sizes it from the app's components). The pool
/// refuses a component past it when it is loaded; under on-demand allocation
/// the store limiter (`state.rs`) refuses its instantiation. The pool's totals
/// are these times [`PoolSizing::max_instances`], so no component can exhaust
/// a total for the others: only the admission cap, shared fairly by requests,
/// bounds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstanceShape {
    /// Linear memories.
    pub memories: u32,
    /// Tables.
    pub tables: u32,
    /// Core module instances (main module, adapter, shim and fixup modules).
    pub core_instances: u32,
    /// Memories and tables one core module may define.
    pub memories_per_module: u32,
    pub tables_per_module: u32,
    /// The largest linear memory any instance may grow to: the largest
    /// component's cap (each store's limiter holds its own component's).
    pub max_memory_size: usize,
}

impl InstanceShape {
    /// What a Rust component needs: one memory (the WASIp1 adapter, when
    /// present, uses its main module's), two tables (its module's and the
    /// adapter shims'), four core instances (main module, adapter, shim and
    /// fixup modules).
    pub const DEFAULT: InstanceShape = InstanceShape {
        memories: 1,
        tables: 2,
        core_instances: 4,
        memories_per_module: 1,
        tables_per_module: 2,
        max_memory_size: PoolSizing::DEFAULT_MAX_MEMORY,
    };
}

/// Builds the engine with the allocator asked for. `Pooling` falls back to
/// on-demand allocation (with a warning) if the pool cannot be reserved on this
/// machine. `wasip3`: whether any component to be hosted is a WASIp3 one.
pub fn build(
    sizing: PoolSizing,
    shape: InstanceShape,
    allocation: Allocation,
    wasip3: bool,
) -> Result<(Engine, Allocation)> {
    if allocation == Allocation::OnDemand {
        let engine = Engine::new(&base_config(wasip3))?;
        return Ok((engine, Allocation::OnDemand));
    }
    let mut config = base_config(wasip3);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling(
        sizing.max_instances,
        shape,
    )));
    match Engine::new(&config) {
        Ok(engine) => Ok((engine, Allocation::Pooling)),
        Err(error) => {
            crate::err_line!(
                "warning: pooling allocator unavailable ({error}); using on-demand allocation"
            );
            let engine = Engine::new(&base_config(wasip3))?;
            Ok((engine, Allocation::OnDemand))
        }
    }
}

fn base_config(wasip3: bool) -> Config {
    let mut config = Config::new();
    // Async support is always on in wasmtime 48 (the `async` feature); the
    // component model and cranelift are what Spin uses, copy-on-write memory
    // images are wasmtime's default and are kept.
    config.wasm_component_model(true);
    // WASIp3 components need the component model's async ABI and the store's
    // concurrency machinery. WASIp2 ones use neither, and without them every
    // instantiation and call does less bookkeeping: `hello`'s instance cold
    // start 30 -> 23 µs (docs/performance.md, Levers). So they are on only when needed.
    config.wasm_component_model_async(wasip3);
    config.concurrency_support(wasip3);
    config.strategy(wasmtime::Strategy::Cranelift);
    config.epoch_interruption(true);
    config
}

/// Spin's pooling settings (spinframework/spin `crates/core/src/lib.rs`), but
/// with each component's share of the pool bounded by `shape` (Spin allows 32
/// memories, 64 tables and 200 core instances per component out of totals
/// shared by all).
fn pooling(n: u32, shape: InstanceShape) -> PoolingAllocationConfig {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(n)
        // Each total is `n` instances at their per-instance maxima.
        .total_memories(n * shape.memories)
        .total_tables(n * shape.tables)
        // One fiber stack per live instance, as each runs on its own async stack.
        .total_stacks(n)
        // Core instances reserve no address space, only `max_core_instance_size`.
        .total_core_instances(n * shape.core_instances)
        .table_elements(TABLE_ELEMENTS)
        .max_component_instance_size(10 * MIB)
        .max_core_instance_size(10 * MIB)
        .max_core_instances_per_component(shape.core_instances)
        .max_tables_per_component(shape.tables)
        .max_memories_per_component(shape.memories)
        .max_tables_per_module(shape.tables_per_module)
        .max_memories_per_module(shape.memories_per_module)
        .max_memory_size(shape.max_memory_size)
        // Spin's numbers: reused slots keep this much resident instead of
        // returning it to the kernel, which makes the next instantiation cheaper.
        .linear_memory_keep_resident(2 * MIB)
        .table_keep_resident(512 * KIB)
        // Where the kernel has PAGEMAP_SCAN (Linux >= 6.7), a reused slot resets
        // only the pages the last instance wrote, not the whole kept region: a
        // component with a large initial memory (suntimes' bundled tz database)
        // no longer copies all of it back after every request (suntimes'
        // instance cold start 61 -> 50 µs). Elsewhere wasmtime falls back to memset.
        .pagemap_scan(Enabled::Auto);
    pool
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_pool_builds() {
        let sizing = PoolSizing {
            max_instances: 4,
            ..PoolSizing::default()
        };
        for wasip3 in [false, true] {
            let shape = InstanceShape::DEFAULT;
            let (_engine, allocation) = build(sizing, shape, Allocation::Pooling, wasip3).unwrap();
            assert_eq!(allocation, Allocation::Pooling);
            let (_engine, allocation) = build(sizing, shape, Allocation::OnDemand, wasip3).unwrap();
            assert_eq!(allocation, Allocation::OnDemand);
        }
    }
}
