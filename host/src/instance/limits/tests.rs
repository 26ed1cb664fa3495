use super::*;

const MIB: usize = 1 << 20;

fn rust() -> Needs {
    Needs {
        core_instances: 4,
        memories: 1,
        tables: 2,
        memories_per_module: 1,
        tables_per_module: 2,
        initial_memory: 17 * 65536,
        initial_table: 100,
    }
}

/// What componentize-py 0.25.1 builds for spin-sdk 5.0.0's hello (its counts).
fn python() -> Needs {
    Needs {
        core_instances: 14,
        initial_memory: 294 * 65536,
        ..rust()
    }
}

#[test]
fn an_app_within_the_defaults_keeps_them() {
    let limits = for_app(PoolSizing::default(), &[("hello", Some(rust()))]).unwrap();
    assert_eq!(limits.shape, InstanceShape::DEFAULT);
    assert_eq!(limits.memory_caps["hello"], 16 * MIB);
    assert_eq!(
        limits.line,
        "instance limits: 4 core instances, 2 tables, 1 memory per instance (the defaults); \
         linear memory capped at 16.0 MiB"
    );
}

#[test]
fn a_larger_component_raises_the_counts_and_only_its_own_memory_cap() {
    let limits = for_app(
        PoolSizing::default(),
        &[("hello", Some(rust())), ("py", Some(python()))],
    )
    .unwrap();
    assert_eq!(limits.shape.core_instances, 14);
    assert_eq!(limits.shape.tables, 2);
    // The neighbour keeps the flag's cap; the component that starts past it
    // gets its initial memory plus the cap, and the pool's slots fit it.
    assert_eq!(limits.memory_caps["hello"], 16 * MIB);
    assert_eq!(limits.memory_caps["py"], 294 * 65536 + 16 * MIB);
    assert_eq!(limits.shape.max_memory_size, 294 * 65536 + 16 * MIB);
    assert!(
        limits.line.contains("14 core instances (\"py\")")
            && limits
                .line
                .contains("\"py\" at 34.4 MiB (it starts at 18.4 MiB"),
        "{}",
        limits.line
    );
}

#[test]
fn the_cap_is_the_flag_value_up_to_a_component_that_starts_past_it() {
    assert_eq!(memory_cap(16 * MIB, 0), 16 * MIB);
    assert_eq!(memory_cap(16 * MIB, 16 * MIB as u64), 16 * MIB);
    assert_eq!(memory_cap(16 * MIB, 17 * MIB as u64), 33 * MIB);
    assert_eq!(memory_cap(64 * MIB, 17 * MIB as u64), 64 * MIB);
}

#[test]
fn a_component_past_spins_maxima_is_refused_naming_the_count() {
    let cases = [
        (
            Needs {
                core_instances: 201,
                ..rust()
            },
            "201 core instances",
        ),
        (
            Needs {
                tables: 65,
                ..rust()
            },
            "65 tables",
        ),
        (
            Needs {
                memories: 33,
                ..rust()
            },
            "33 memories",
        ),
        (
            Needs {
                memories_per_module: 3,
                ..rust()
            },
            "3 memories in one module",
        ),
    ];
    for (needs, words) in cases {
        let error = for_app(PoolSizing::default(), &[("big", Some(needs))]).unwrap_err();
        assert!(
            error.to_string().contains(words) && error.to_string().contains("`spin up`"),
            "{error}"
        );
    }
}

#[test]
fn unreadable_needs_keep_the_defaults() {
    let limits = for_app(PoolSizing::default(), &[("imports-a-module", None)]).unwrap();
    assert_eq!(limits.shape, InstanceShape::DEFAULT);
    assert_eq!(limits.memory_caps["imports-a-module"], 16 * MIB);
}

/// A component declaring more initial memory than `--max-initial-memory`
/// (and the cap) is refused, naming both flags; one starting within it (a
/// Python component's 18.4 MiB) is served with its own cap.
#[test]
fn a_declaration_past_the_ceiling_is_refused_naming_the_flags() {
    let two_gib = Needs {
        initial_memory: 2 << 30,
        ..rust()
    };
    let error = for_app(PoolSizing::default(), &[("big", Some(two_gib))]).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("\"big\" declares 2048.0 MiB of initial linear memory")
            && text.contains("--max-initial-memory 64 MiB"),
        "{text}"
    );
    assert!(for_app(PoolSizing::default(), &[("py", Some(python()))]).is_ok());
    // The operator can raise it, and a cap past the ceiling allows as much.
    let raised = PoolSizing {
        max_initial_memory: 4096 * MIB,
        ..PoolSizing::default()
    };
    let limits = for_app(raised, &[("big", Some(two_gib))]).unwrap();
    assert_eq!(limits.memory_caps["big"], (2 << 30) + 16 * MIB);
    let large_cap = PoolSizing {
        max_memory_size: 128 * MIB,
        ..PoolSizing::default()
    };
    let within = Needs {
        initial_memory: 100 * MIB as u64,
        ..rust()
    };
    let limits = for_app(large_cap, &[("c", Some(within))]).unwrap();
    assert_eq!(limits.memory_caps["c"], 128 * MIB);
}
