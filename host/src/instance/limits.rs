//! What each instance may contain and grow to, sized for the app being served
//! from what its components need ([`Needs`]), with one line at start saying
//! what was chosen. The rule (docs/limits.md, "The instance"):
//!
//! - **Counts** (memories, tables, core instances per instance, and per
//!   module): the defaults ([`InstanceShape::DEFAULT`], what a Rust component
//!   needs), raised to what the app's largest component needs, up to Spin's
//!   per-component maxima ([`SPIN_MAXIMA`], `crates/core/src/lib.rs`); past
//!   those the component is refused at start, as Spin's pool refuses it.
//!   Counts are fixed when a component is built (nothing instantiates at run
//!   time), so raising them for the app lets no other component do more; the
//!   pool's totals are `--max-instances` times them, so none can exhaust a
//!   total for the others.
//! - **Linear memory**: `--max-instance-memory` caps the linear memory of
//!   every instance, all its memories together, but one whose component
//!   starts past it (componentize-py's images start at 18 MB): that
//!   component, alone, is capped at what it starts with plus the flag's
//!   value, so it has the same room to grow. What a component may start with
//!   is the operator's too: past `--max-initial-memory` (and the cap) it is
//!   refused at load, naming both, so a declaration can never size the pool
//!   (one declaring 2 GiB was given 2 GiB plus the cap per memory before).
//!   Each store's limiter holds its own component's cap (`limiter`); the
//!   pool's slots are sized for the largest, which no other component can
//!   use, and a host given the memory it may use ([`fit`]) sizes its pool so
//!   every slot at that cap fits.

use super::engine::{InstanceShape, PoolSizing};
use super::needs::Needs;
use anyhow::{Result, bail};
use std::collections::BTreeMap;

mod fit;
pub use fit::{MemoryFit, fit};

/// Spin's per-component maxima (`max_memories_per_component` 32,
/// `max_tables_per_component` 64, `max_core_instances_per_component` 200, and
/// per module 2 of each), beyond which `spin up` refuses a component.
pub const SPIN_MAXIMA: InstanceShape = InstanceShape {
    memories: 32,
    tables: 64,
    core_instances: 200,
    memories_per_module: 2,
    tables_per_module: 2,
    max_memory_size: 4 << 30,
};

/// The limits of every instance of an app.
#[derive(Debug, Clone)]
pub struct AppLimits {
    /// What the pool allows one instance.
    pub shape: InstanceShape,
    /// Each component's linear memory cap (all the memories of one of its
    /// instances together), by component id.
    pub memory_caps: BTreeMap<String, usize>,
    /// What was chosen, in one line for the start.
    pub line: String,
}

/// The cap of a component whose largest memory starts at `initial` bytes:
/// `cap`, or `initial + cap` when `initial` alone is past `cap`.
pub fn memory_cap(cap: usize, initial: u64) -> usize {
    let initial = usize::try_from(initial).unwrap_or(usize::MAX);
    if initial <= cap {
        cap
    } else {
        initial.saturating_add(cap)
    }
}

/// One count of [`InstanceShape`]: its words, its field, and how to read it
/// from needs.
struct Count {
    words: &'static str,
    field: fn(&mut InstanceShape) -> &mut u32,
    of_needs: fn(&Needs) -> u32,
}

impl Count {
    fn of(&self, mut shape: InstanceShape) -> u32 {
        *(self.field)(&mut shape)
    }
}

const COUNTS: &[Count] = &[
    Count {
        words: "core instances",
        field: |s| &mut s.core_instances,
        of_needs: |n| n.core_instances,
    },
    Count {
        words: "tables",
        field: |s| &mut s.tables,
        of_needs: |n| n.tables,
    },
    Count {
        words: "memories",
        field: |s| &mut s.memories,
        of_needs: |n| n.memories,
    },
    Count {
        words: "memories in one module",
        field: |s| &mut s.memories_per_module,
        of_needs: |n| n.memories_per_module,
    },
    Count {
        words: "tables in one module",
        field: |s| &mut s.tables_per_module,
        of_needs: |n| n.tables_per_module,
    },
];

/// The limits for components `needs` (by id; `None` where a component's needs
/// cannot be read from its bytes: it is held to the defaults, and wasmtime
/// refuses it at load if it needs more) under `sizing`'s memory cap. Refuses a
/// component past Spin's maxima, naming it and the count.
pub fn for_app(sizing: PoolSizing, needs: &[(&str, Option<Needs>)]) -> Result<AppLimits> {
    let cap = sizing.max_memory_size;
    let known = || needs.iter().filter_map(|(id, n)| n.map(|n| (*id, n)));
    for (id, need) in known() {
        for count in COUNTS {
            let (wanted, most) = ((count.of_needs)(&need), count.of(SPIN_MAXIMA));
            if wanted > most {
                bail!(
                    "component {id:?} needs {wanted} {} per instance, past the {most} Spin's \
                     pool allows (`crates/core/src/lib.rs`): refused, as `spin up` refuses it",
                    count.words
                );
            }
        }
    }
    let mut shape = InstanceShape {
        max_memory_size: cap,
        ..InstanceShape::DEFAULT
    };
    let mut raised = Vec::new();
    for count in COUNTS {
        let most = known().max_by_key(|(_, n)| (count.of_needs)(n));
        if let Some((id, need)) = most
            && (count.of_needs)(&need) > count.of(shape)
        {
            raised.push(format!(
                "{} {} ({id:?})",
                (count.of_needs)(&need),
                count.words
            ));
            *(count.field)(&mut shape) = (count.of_needs)(&need);
        }
    }
    let mut memory_caps = BTreeMap::new();
    let mut own_caps = Vec::new();
    let ceiling = sizing.max_initial_memory.max(cap);
    for (id, need) in needs {
        let initial = need.map_or(0, |n| n.initial_memory);
        if initial > ceiling as u64 {
            bail!(
                "component {id:?} declares {} of initial linear memory, past the {} an instance \
                 may start with (--max-initial-memory {} MiB, --max-instance-memory {} MiB): \
                 refused; an operator who means to serve it raises --max-initial-memory",
                mib(usize::try_from(initial).unwrap_or(usize::MAX)),
                mib(ceiling),
                sizing.max_initial_memory >> 20,
                cap >> 20
            );
        }
        let own = memory_cap(cap, initial);
        if own != cap {
            own_caps.push(format!(
                "{id:?} at {} (it starts at {}: that plus the cap)",
                mib(own),
                mib(initial as usize)
            ));
        }
        shape.max_memory_size = shape.max_memory_size.max(own);
        memory_caps.insert((*id).to_string(), own);
    }
    let counts = if raised.is_empty() {
        format!(
            "{} core instances, {} tables, {} memory per instance (the defaults)",
            shape.core_instances, shape.tables, shape.memories
        )
    } else {
        format!(
            "raised for this app to {} per instance (defaults {} core instances, {} tables, {} memory)",
            raised.join(", "),
            InstanceShape::DEFAULT.core_instances,
            InstanceShape::DEFAULT.tables,
            InstanceShape::DEFAULT.memories
        )
    };
    let memory = if own_caps.is_empty() {
        format!("linear memory capped at {}", mib(cap))
    } else {
        format!(
            "linear memory capped at {}, {}",
            mib(cap),
            own_caps.join(", ")
        )
    };
    Ok(AppLimits {
        shape,
        memory_caps,
        line: format!("instance limits: {counts}; {memory}"),
    })
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

#[cfg(test)]
mod tests;
