//! What one component instance may contain and grow to, whole. The counts
//! (memories, tables, core instances) are read from the app's components and
//! sized for its largest, from the defaults (one memory, two tables, four core
//! instances) up to Spin's per-component maxima (32, 64, 200, and two of each
//! per module): a component past those is refused when the runner loads it,
//! under both allocators. Linear memory is capped by `--max-instance-memory`
//! (a component that starts past it gets its initial memory plus the cap, for
//! itself alone), tables at 100,000 elements: growing past either fails, and
//! the guest traps (`500`), under the pool and under on-demand allocation
//! (`--allocation on-demand`, also the fallback when the pool cannot be
//! reserved; the store limiter holds the same limits). The neighbour (hello)
//! keeps answering.
//!
//! The components are WAT text: Rust cannot express them. Each exports
//! `wasi:http/incoming-handler` whose `handle` does what the case asks and, if
//! the host lets it, then loops forever: a missing limit shows as a `504` at
//! the 2 s deadline instead of a `500`.

use e2e::{Server, artifact, get, serve_until_exit};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A component whose `handle` runs `body` then loops; `extra` adds core
/// modules and instances next to the main one.
fn component(main_module_extra: &str, body: &str, extra: &str) -> String {
    component_with_memory(1, main_module_extra, body, extra)
}

/// [`component`], its main module's memory starting at `pages` pages of 64 KiB.
fn component_with_memory(pages: u32, main_module_extra: &str, body: &str, extra: &str) -> String {
    format!(
        r#"(component
  (import "wasi:http/types@0.2.0" (instance $types
    (export "incoming-request" (type (sub resource)))
    (export "response-outparam" (type (sub resource)))))
  (alias export $types "incoming-request" (type $request))
  (alias export $types "response-outparam" (type $outparam))
  (core module $main
    (memory {pages})
    (table 1 funcref)
    {main_module_extra}
    (func (export "handle") (param i32 i32)
      {body}
      (loop $forever (br $forever))))
  (core instance $main (instantiate $main))
  {extra}
  (func $handle (param "request" (own $request)) (param "response-out" (own $outparam))
    (canon lift (core func $main "handle")))
  (instance $handler (export "handle" (func $handle)))
  (export "wasi:http/incoming-handler@0.2.0" (instance $handler)))"#
    )
}

/// `count` more core instances of a module defining `defines`.
fn extra_instances(defines: &str, count: usize) -> String {
    let mut wat = format!("(core module $extra {defines})\n");
    for _ in 0..count {
        wat.push_str("  (core instance (instantiate $extra))\n");
    }
    wat
}

/// Components past one default per-instance count each, within Spin's.
fn past_the_defaults() -> Vec<(&'static str, String)> {
    vec![
        (
            "two memories",
            component("", "", &extra_instances("(memory 1)", 1)),
        ),
        (
            "two memories in one module",
            component("(memory 1)", "", ""),
        ),
        (
            "three tables",
            component("", "", &extra_instances("(table 1 funcref)", 2)),
        ),
        (
            "five core instances",
            component("", "", &extra_instances("", 4)),
        ),
    ]
}

/// Components past one of Spin's per-component maxima each, with the words
/// the refusal names it in.
fn past_spins_counts() -> Vec<(&'static str, String)> {
    vec![
        (
            "33 memories",
            component("", "", &extra_instances("(memory 1)", 32)),
        ),
        (
            "3 memories in one module",
            component("(memory 1) (memory 1)", "", ""),
        ),
        (
            "65 tables",
            component("", "", &extra_instances("(table 1 funcref)", 64)),
        ),
        (
            "201 core instances",
            component("", "", &extra_instances("", 200)),
        ),
    ]
}

/// Traps unless `grow` (a `memory.grow` or `table.grow`) succeeded.
fn trap_unless_grown(grow: &str) -> String {
    format!("(if (i32.eq ({grow}) (i32.const -1)) (then unreachable))")
}

/// Components that grow past a limit at run time (the first: memory to 17 MiB).
fn growing_past_the_limits() -> Vec<(&'static str, String)> {
    vec![
        (
            "memory grown to 17 MiB",
            component("", &trap_unless_grown("memory.grow (i32.const 271)"), ""),
        ),
        (
            "table grown to 200,001 elements",
            component(
                "",
                &trap_unless_grown("table.grow (ref.null func) (i32.const 200000)"),
                "",
            ),
        ),
    ]
}

/// A manifest serving `wat` at `/limits` and hello at `/hello`, in a fresh directory.
fn app(wat: &str) -> (tempfile::TempDir, PathBuf) {
    app_of(&[("limits", wat)])
}

/// A manifest serving each `(name, wat)` at `/<name>` and hello at `/hello`,
/// in a fresh directory.
fn app_of(components: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let hello = artifact("wasm32-wasip2/release/hello.wasm");
    let mut manifest = format!(
        "spin_manifest_version = 2\n[application]\nname = \"limits\"\n\
         [[trigger.http]]\nroute = \"/hello\"\ncomponent = \"hello\"\n\
         [component.hello]\nsource = \"{}\"\n",
        hello.display()
    );
    for (name, wat) in components {
        let wasm = wat::parse_str(wat).unwrap_or_else(|e| panic!("{e}\n{wat}"));
        std::fs::write(dir.path().join(format!("{name}.wasm")), wasm).unwrap();
        manifest.push_str(&format!(
            "[[trigger.http]]\nroute = \"/{name}\"\ncomponent = \"{name}\"\n\
             [component.{name}]\nsource = \"{name}.wasm\"\n"
        ));
    }
    let path = dir.path().join("spin.toml");
    std::fs::write(&path, manifest).unwrap();
    (dir, path)
}

/// Serves `wat` with `allocation` and checks that `/limits` is a 500 within
/// the deadline (not the loop's 504) and that hello answers before and after.
fn assert_refused_with_500(what: &str, wat: &str, allocation: &str) {
    let (_dir, manifest) = app(wat);
    let server = Server::runner_with(
        &manifest,
        &["--allocation", allocation, "--request-timeout", "2"],
    );
    assert_path_refused_with_500(&server, "/limits", &format!("{what} ({allocation})"));
}

fn assert_path_refused_with_500(server: &Server, path: &str, what: &str) {
    assert_eq!(get(&server.url("/hello")).status, 200, "{what}");
    let start = Instant::now();
    let answer = get(&server.url(path));
    assert_eq!(answer.status, 500, "{what}: {}", answer.text());
    assert_eq!(answer.content_type, "application/json", "{what}");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{what}: {:?}",
        start.elapsed()
    );
    assert_eq!(get(&server.url("/hello")).text(), "Hello, World!", "{what}");
}

#[test]
fn growth_past_the_limits_is_a_500_under_both_allocators() {
    for allocation in ["pooling", "on-demand"] {
        for (what, wat) in growing_past_the_limits() {
            assert_refused_with_500(what, &wat, allocation);
        }
    }
}

/// Spin's pool refuses a component past its per-component counts; so does the
/// runner, when it loads it, naming the count, whatever the allocator.
#[test]
fn components_past_spins_counts_are_refused_at_load_under_both_allocators() {
    for allocation in ["pooling", "on-demand"] {
        for (what, wat) in past_spins_counts() {
            let (_dir, manifest) = app(&wat);
            let (status, output) = serve_until_exit(&manifest, &["--allocation", allocation])
                .unwrap_or_else(|| panic!("{what}: the runner started serving it"));
            assert!(!status.success(), "{what}: {output}");
            assert!(
                output.contains(&format!("component \"limits\" needs {what} per instance"))
                    && output.contains("`spin up` refuses it"),
                "{what} ({allocation}): {output}"
            );
        }
    }
}

/// Past the default counts and within Spin's, the pool (and the store
/// limiter) is sized for the app's largest component, the start line says so,
/// and the component runs (its loop: a 504 at the deadline) beside hello.
#[test]
fn a_component_past_the_default_counts_is_served_with_the_pool_sized_for_it() {
    for allocation in ["pooling", "on-demand"] {
        for (what, wat) in past_the_defaults() {
            let (_dir, manifest) = app(&wat);
            let server = Server::runner_with(
                &manifest,
                &["--allocation", allocation, "--request-timeout", "1"],
            );
            assert_eq!(
                get(&server.url("/limits")).status,
                504,
                "{what} ({allocation})"
            );
            assert_eq!(get(&server.url("/hello")).text(), "Hello, World!");
            let log = server.log();
            assert!(
                log.contains("instance limits: raised for this app to")
                    && log.contains("(\"limits\")"),
                "{what} ({allocation}): {log}"
            );
        }
    }
}

/// A component whose memory starts past the cap (17 MiB against 16) is served
/// with a cap of its own, its initial memory plus the flag's value (33 MiB):
/// it grows to 32 MiB, not to 34. Its neighbour in the same app keeps the
/// flag's 16 MiB: growing to 17 MiB is still a 500.
#[test]
fn a_component_that_starts_past_the_cap_gets_its_own_and_its_neighbours_keep_theirs() {
    // From 272 pages of 64 KiB (17 MiB) to `mib` MiB.
    let grow_to =
        |mib: u32| trap_unless_grown(&format!("memory.grow (i32.const {})", mib * 16 - 272));
    let (_, small) = growing_past_the_limits().swap_remove(0);
    let within = component_with_memory(272, "", &grow_to(32), "");
    let past = component_with_memory(272, "", &grow_to(34), "");
    let (_dir, manifest) = app_of(&[("small", &small), ("within", &within), ("past", &past)]);
    for allocation in ["pooling", "on-demand"] {
        let server = Server::runner_with(
            &manifest,
            &["--allocation", allocation, "--request-timeout", "1"],
        );
        let log = server.log();
        assert!(
            log.contains("linear memory capped at 16.0 MiB")
                && log.contains("\"within\" at 33.0 MiB (it starts at 17.0 MiB"),
            "{allocation}: {log}"
        );
        assert_eq!(get(&server.url("/within")).status, 504, "{allocation}");
        assert_path_refused_with_500(&server, "/past", allocation);
        assert_path_refused_with_500(&server, "/small", allocation);
    }
}

/// Sanity check of the template: within the limits, the component instantiates
/// and loops (so a 504 at the deadline), under both allocators.
#[test]
fn a_component_within_the_limits_runs() {
    let wat = component("", "", &extra_instances("", 3));
    for allocation in ["pooling", "on-demand"] {
        let (_dir, manifest) = app(&wat);
        let server = Server::runner_with(
            &manifest,
            &["--allocation", allocation, "--request-timeout", "1"],
        );
        assert_eq!(get(&server.url("/limits")).status, 504, "{allocation}");
    }
}

/// A component's declaration does not size the host: one declaring 2 GiB of
/// initial memory (in one memory, or spread over two) is refused at load,
/// naming `--max-initial-memory`, under both allocators; raised, it loads.
/// (Before, it was given 2 GiB plus the cap per memory: six requests took the
/// runner to 5.5 GiB.)
#[test]
fn a_declaration_past_the_initial_memory_ceiling_is_refused_at_load() {
    let one = component_with_memory(32_768, "", "", "");
    let spread = component_with_memory(16_384, "(memory 16384)", "", "");
    for (what, wat) in [("one memory", &one), ("two memories", &spread)] {
        let (_dir, manifest) = app(wat);
        for allocation in ["pooling", "on-demand"] {
            let (status, output) = serve_until_exit(&manifest, &["--allocation", allocation])
                .unwrap_or_else(|| panic!("{what}: the runner started serving it"));
            assert!(!status.success(), "{what}: {output}");
            assert!(
                output.contains("\"limits\" declares 2048.0 MiB of initial linear memory")
                    && output.contains("--max-initial-memory 64 MiB"),
                "{what} ({allocation}): {output}"
            );
        }
        let server = Server::runner_with(
            &manifest,
            &["--max-initial-memory", "2048", "--request-timeout", "1"],
        );
        assert!(
            server
                .log()
                .contains("\"limits\" at 2064.0 MiB (it starts at 2048.0 MiB"),
            "{what}: {}",
            server.log()
        );
    }
}

/// The cap holds all of an instance's memories together: two memories of a
/// component under a 16 MiB cap grow to 12.6 MiB in all (a 504 from its
/// loop), not to 18.9 MiB (a 500), though each alone stays under 16 MiB.
#[test]
fn an_instances_memories_together_stay_under_its_cap() {
    let grow_both = |first: u32, second: u32| {
        format!(
            "{} {}",
            trap_unless_grown(&format!("memory.grow 0 (i32.const {first})")),
            trap_unless_grown(&format!("memory.grow 1 (i32.const {second})"))
        )
    };
    let within = component("(memory 1)", &grow_both(100, 100), "");
    let past = component("(memory 1)", &grow_both(200, 100), "");
    let (_dir, manifest) = app_of(&[("within", &within), ("past", &past)]);
    for allocation in ["pooling", "on-demand"] {
        let server = Server::runner_with(
            &manifest,
            &["--allocation", allocation, "--request-timeout", "1"],
        );
        assert_eq!(get(&server.url("/within")).status, 504, "{allocation}");
        assert_path_refused_with_500(&server, "/past", allocation);
    }
}

/// A component that makes `count` handles of a resource of its own
/// (`resource.new`, no host code in the loop), keeps them all, then loops.
fn handle_maker(count: u32) -> String {
    format!(
        r#"(component
  (import "wasi:http/types@0.2.0" (instance $types
    (export "incoming-request" (type (sub resource)))
    (export "response-outparam" (type (sub resource)))))
  (alias export $types "incoming-request" (type $request))
  (alias export $types "response-outparam" (type $outparam))
  (type $mine (resource (rep i32)))
  (core func $new (canon resource.new $mine))
  (core module $main
    (import "" "new" (func $new (param i32) (result i32)))
    (memory 1)
    (func (export "handle") (param i32 i32) (local $i i32)
      (loop $make
        (drop (call $new (local.get $i)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br_if $make (i32.lt_u (local.get $i) (i32.const {count}))))
      (loop $forever (br $forever))))
  (core instance $main (instantiate $main
    (with "" (instance (export "new" (func $new))))))
  (func $handle (param "request" (own $request)) (param "response-out" (own $outparam))
    (canon lift (core func $main "handle")))
  (instance $handler (export "handle" (func $handle)))
  (export "wasi:http/incoming-handler@0.2.0" (instance $handler)))"#
    )
}

/// Handles a guest makes without host code in the loop are bounded by
/// `--max-component-handles` (wasmtime's store-wide cap, 100,000 by
/// default, 4,096 here): 5,000 of them trap (a 500 at once, not the loop's
/// 504), and with the cap raised the same component runs on to its loop.
#[test]
fn handles_past_the_operators_cap_trap() {
    let (_dir, manifest) = app(&handle_maker(5_000));
    let server = Server::runner_with(&manifest, &["--request-timeout", "1"]);
    assert_path_refused_with_500(&server, "/limits", "5,000 handles");
    let server = Server::runner_with(
        &manifest,
        &["--request-timeout", "1", "--max-component-handles", "10000"],
    );
    assert_eq!(get(&server.url("/limits")).status, 504);
}
