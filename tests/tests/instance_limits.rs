//! What one component instance may contain and grow to, whole: one linear
//! memory (capped by `--max-instance-memory`), two tables of at most 100,000
//! elements, four core instances. Under the pooling allocator a component past
//! the counts is refused when the runner loads it; under on-demand allocation
//! (`--allocation on-demand`, also the fallback when the pool cannot be
//! reserved) the store limiter refuses its instantiation: `500`. Growing a
//! memory or table past its limit fails, and the guest traps: `500`. The
//! neighbour (hello) keeps answering.
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
    format!(
        r#"(component
  (import "wasi:http/types@0.2.0" (instance $types
    (export "incoming-request" (type (sub resource)))
    (export "response-outparam" (type (sub resource)))))
  (alias export $types "incoming-request" (type $request))
  (alias export $types "response-outparam" (type $outparam))
  (core module $main
    (memory 1)
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

/// Components past one per-instance count each.
fn past_the_counts() -> Vec<(&'static str, String)> {
    vec![
        (
            "two memories",
            component("", "", &extra_instances("(memory 1)", 1)),
        ),
        (
            "33 memories",
            component("", "", &extra_instances("(memory 1)", 32)),
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

/// Components that grow past a limit at run time.
fn growing_past_the_limits() -> Vec<(&'static str, String)> {
    let trap_unless_grown =
        |grow: &str| format!("(if (i32.eq ({grow}) (i32.const -1)) (then unreachable))");
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
    let dir = tempfile::tempdir().unwrap();
    let wasm = wat::parse_str(wat).unwrap_or_else(|e| panic!("{e}\n{wat}"));
    std::fs::write(dir.path().join("limits.wasm"), wasm).unwrap();
    let hello = artifact("wasm32-wasip2/release/hello.wasm");
    let manifest = dir.path().join("spin.toml");
    std::fs::write(
        &manifest,
        format!(
            "spin_manifest_version = 2\n[application]\nname = \"limits\"\n\
             [[trigger.http]]\nroute = \"/limits\"\ncomponent = \"limits\"\n\
             [component.limits]\nsource = \"limits.wasm\"\n\
             [[trigger.http]]\nroute = \"/hello\"\ncomponent = \"hello\"\n\
             [component.hello]\nsource = \"{}\"\n",
            hello.display()
        ),
    )
    .unwrap();
    (dir, manifest)
}

/// Serves `wat` with `allocation` and checks that `/limits` is a 500 within
/// the deadline (not the loop's 504) and that hello answers before and after.
fn assert_refused_with_500(what: &str, wat: &str, allocation: &str) {
    let (_dir, manifest) = app(wat);
    let mut server = Server::runner_with(
        &manifest,
        &["--allocation", allocation, "--request-timeout", "2"],
    );
    assert_eq!(get(&server.url("/hello")).status, 200, "{what}");
    let start = Instant::now();
    let answer = get(&server.url("/limits"));
    assert_eq!(
        answer.status,
        500,
        "{what} ({allocation}): {}",
        answer.text()
    );
    assert_eq!(answer.content_type, "application/json", "{what}");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{what}: {:?}",
        start.elapsed()
    );
    assert_eq!(get(&server.url("/hello")).text(), "Hello, World!", "{what}");
    assert!(server.is_alive(), "{what}:\n{}", server.log());
}

#[test]
fn the_store_limiter_refuses_instances_past_the_counts_under_on_demand_allocation() {
    for (what, wat) in past_the_counts() {
        assert_refused_with_500(what, &wat, "on-demand");
    }
}

#[test]
fn growth_past_the_limits_is_a_500_under_both_allocators() {
    for allocation in ["pooling", "on-demand"] {
        for (what, wat) in growing_past_the_limits() {
            assert_refused_with_500(what, &wat, allocation);
        }
    }
}

/// The pool bounds each component's share, so no component can take the
/// memories, tables or core instances its neighbours' requests need: one past
/// the counts is refused when loaded, naming the limit.
#[test]
fn the_pool_refuses_components_past_the_counts_at_load() {
    for (what, wat) in past_the_counts() {
        let (_dir, manifest) = app(&wat);
        let (status, output) = serve_until_exit(&manifest, &["--allocation", "pooling"])
            .unwrap_or_else(|| panic!("{what}: the runner started serving it"));
        assert!(!status.success(), "{what}: {output}");
        assert!(
            output.contains("loading component \"limits\""),
            "{what}: {output}"
        );
        assert!(
            output.contains("exceeds the configured maximum")
                || output.contains("does not fit in pooling allocator requirements"),
            "{what}: {output}"
        );
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
