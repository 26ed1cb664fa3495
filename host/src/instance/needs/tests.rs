use super::*;

fn needs(wat: &str) -> Option<Needs> {
    Needs::of(&wat::parse_str(wat).unwrap()).unwrap()
}

#[test]
fn a_core_module_is_one_instance_of_what_it_defines() {
    let found = needs("(module (memory 3) (table 7 funcref))").unwrap();
    assert_eq!(
        found,
        Needs {
            core_instances: 1,
            memories: 1,
            tables: 1,
            memories_per_module: 1,
            tables_per_module: 1,
            initial_memory: 3 * 65536,
            initial_table: 7,
        }
    );
}

#[test]
fn each_instantiation_counts_and_imported_memories_do_not() {
    let found = needs(
        r#"(component
             (core module $big (memory 300) (table 10 funcref) (table 2 funcref))
             (core module $user (import "m" "memory" (memory 1)))
             (core module $empty)
             (core instance $a (instantiate $big))
             (core instance $b (instantiate $user (with "m" (instance $a))))
             (core instance (instantiate $empty))
             (core instance (instantiate $empty)))"#,
    )
    .unwrap();
    assert_eq!(found.core_instances, 4);
    assert_eq!((found.memories, found.tables), (1, 2));
    assert_eq!((found.memories_per_module, found.tables_per_module), (1, 2));
    assert_eq!(found.initial_memory, 300 * 65536);
    assert_eq!(found.initial_table, 10);
}

#[test]
fn a_nested_component_counts_each_time_it_is_instantiated() {
    let found = needs(
        r"(component
             (core module $m (memory 1))
             (component $inner
               (core module $n (table 1 funcref))
               (core instance (instantiate $n))
               (core instance (instantiate $n)))
             (component $outer_alias
               (alias outer 1 $m (core module $m2))
               (core instance (instantiate $m2)))
             (instance (instantiate $inner))
             (instance (instantiate $inner))
             (instance (instantiate $outer_alias))
             (core instance (instantiate $m)))",
    )
    .unwrap();
    assert_eq!(found.core_instances, 6);
    assert_eq!((found.memories, found.tables), (2, 4));
    assert_eq!(found.initial_memory, 2 * 65536, "each memory counts");
}

/// What an instance starts with is every memory's initial size together, so
/// that no ceiling can be passed by spreading a declaration over memories.
#[test]
fn initial_memory_is_the_sum_of_every_memory_of_an_instance() {
    let found = needs(
        r"(component
             (core module $two (memory 10) (memory 20))
             (core module $one (memory 5))
             (core instance (instantiate $two))
             (core instance (instantiate $one))
             (core instance (instantiate $one)))",
    )
    .unwrap();
    assert_eq!(found.initial_memory, (10 + 20 + 5 + 5) * 65536);
}

#[test]
fn instantiating_an_imported_module_is_unknown() {
    let found = needs(
        r#"(component
             (import "m" (core module $m))
             (core instance (instantiate $m)))"#,
    );
    assert_eq!(found, None);
}

#[test]
fn a_component_given_another_s_exports_counts_wasmtime_s_adapter_modules() {
    // A composition (what `wac` writes for a dependency): `$user` is given
    // `$dep`'s instance, so calls between them go through adapter modules
    // wasmtime adds, none in the bytes; bounded by `$user`'s core instances.
    let found = needs(
        r#"(component
             (component $dep
               (core module $d (memory 1))
               (core instance (instantiate $d)))
             (component $user
               (import "dep" (instance))
               (core module $u)
               (core instance (instantiate $u))
               (core instance (instantiate $u)))
             (instance $a (instantiate $dep))
             (instance (instantiate $user (with "dep" (instance $a)))))"#,
    )
    .unwrap();
    assert_eq!(found.core_instances, 1 + 2 + 2);
    assert_eq!((found.memories, found.tables), (1, 0));
}
