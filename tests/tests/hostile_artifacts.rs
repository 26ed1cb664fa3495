//! What an app brings crosses one boundary (oci/src/boundary): hostile
//! artifacts pushed to a real registry (Debian's docker-registry,
//! `e2e::registry`) and hostile registries (`e2e::fake_registry`, on
//! loopback), pulled both ways an app is pulled (`spinbench registry pull`
//! and `serve -f <reference>`) and, on a node, by the containerd shim. Each
//! must fail with one line naming the reason, write nothing outside the
//! cache, and hold no more memory than the bounds allow (peak RSS from the
//! kernel, `e2e::peak`). Skipped (with a line saying so) where
//! `docker-registry` is not installed; the node test where the node cannot run.

use e2e::crafted::{self, Base, Entry};
use e2e::fake_registry::{Body, FakeRegistry, Script};
use e2e::peak::Measured;
use e2e::registry::Registry;
use e2e::{Scratch, artifact, run_command_to_exit, sha256_digest};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Numbers each pull's cache directory, so no two share one.
static CACHES: AtomicU32 = AtomicU32::new(0);

/// Peak RSS a pull may reach while refusing: far below what buffering the
/// refused content would take (256 MiB and more in every case here).
const PEAK_KIB: u64 = 160 << 10;

/// How `spinbench` ended.
struct Outcome {
    ok: bool,
    output: String,
    peak_kib: Option<u64>,
}

/// `spinbench args...` with the test registry's credentials, an empty
/// config home, run to its end (two minutes at most), its peak RSS measured.
fn spinbench(scratch: &Scratch, registry: Option<&Registry>, args: &[&str]) -> Outcome {
    let program = artifact("release/spinbench");
    let measured = Measured::new(&program, &scratch.0);
    let mut command = match &measured {
        Some(measured) => {
            let mut command = Command::new(measured.command.get_program());
            command.args(measured.command.get_args());
            command
        }
        None => Command::new(&program),
    };
    let docker = match registry {
        Some(registry) => registry.docker_config(&scratch.0),
        None => scratch.path("no-docker"),
    };
    command
        .args(args)
        .env("DOCKER_CONFIG", docker)
        .env("XDG_CONFIG_HOME", scratch.path("config-home"));
    let (status, output) = run_command_to_exit(command, None, Duration::from_mins(2))
        .unwrap_or_else(|| panic!("spinbench {args:?} ran over two minutes"));
    Outcome {
        ok: status.success(),
        output,
        peak_kib: measured.map(|m| m.peak_kib()),
    }
}

/// `reference` pulled both ways, `extra` flags given: each must fail with
/// one `Error:` line containing `reason`, leave no app (nor anything
/// half-written) in its cache and nothing in `outside`, within [`PEAK_KIB`].
fn refused(
    scratch: &Scratch,
    registry: Option<&Registry>,
    reference: &str,
    extra: &[&str],
    reason: &str,
    outside: &Path,
) {
    for way in ["pull", "serve"] {
        let cache = scratch.path(&format!("cache-{}", CACHES.fetch_add(1, Ordering::Relaxed)));
        let cache_arg = cache.to_str().unwrap();
        let mut args = match way {
            "pull" => vec!["registry", "pull", reference],
            _ => vec!["serve", "-f", reference, "--listen", "127.0.0.1:0"],
        };
        args.extend(["--insecure", "--cache-dir", cache_arg]);
        args.extend(extra);
        let outcome = spinbench(scratch, registry, &args);
        let what = format!("{way} {reference} {extra:?}");
        assert!(!outcome.ok, "{what}: succeeded:\n{}", outcome.output);
        let lines: Vec<&str> = outcome
            .output
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect();
        assert_eq!(lines.len(), 1, "{what}: {}", outcome.output);
        assert!(
            lines[0].starts_with("Error: ") && lines[0].contains(reason),
            "{what}: expected {reason:?} in {}",
            outcome.output
        );
        eprintln!(
            "refused {what} (peak RSS {:?} KiB): {}",
            outcome.peak_kib, lines[0]
        );
        if let Some(peak) = outcome.peak_kib {
            assert!(peak < PEAK_KIB, "{what}: peak RSS {peak} KiB");
        }
        assert_nothing_in(outside);
        assert_no_app(&cache, &what);
    }
}

fn assert_nothing_in(outside: &Path) {
    let entries: Vec<PathBuf> = std::fs::read_dir(outside)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(entries.is_empty(), "written outside the cache: {entries:?}");
}

/// No app, staging directory or half-written blob is left in `cache`.
fn assert_no_app(cache: &Path, what: &str) {
    let store = cache.join("registry");
    if !store.exists() {
        return;
    }
    let apps: Vec<_> = std::fs::read_dir(store.join("apps")).unwrap().collect();
    assert!(apps.is_empty(), "{what}: {apps:?}");
    for entry in std::fs::read_dir(store.join("blobs/sha256")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            name.len() == 64 && !name.starts_with('.'),
            "{what}: left {name}"
        );
    }
}

/// A directory outside every cache, which each hostile name aims at.
fn outside(scratch: &Scratch) -> PathBuf {
    let dir = scratch.path("outside");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A relative path that climbs from anywhere below `/` to `target`.
fn climbing_to(target: &Path) -> String {
    format!(
        "{}{}",
        "../".repeat(64),
        target.display().to_string().trim_start_matches('/')
    )
}

fn setup(label: &str) -> Option<(&'static Registry, Scratch, Base)> {
    let registry = Registry::shared()?;
    let scratch = Scratch::new(label);
    let base = Base::push(registry, &scratch.0, &format!("hostile/{label}"));
    Some((registry, scratch, base))
}

#[test]
fn names_that_climb_out_of_the_app_are_refused_and_write_nothing_outside() {
    let Some((registry, scratch, base)) = setup("names") else {
        return;
    };
    let outside = outside(&scratch);
    let climbing = climbing_to(&outside.join("planted"));
    let absolute = outside.join("planted").display().to_string();
    let with_id = |id: &str| {
        let mut app = base.locked.clone();
        app["components"][0]["id"] = id.into();
        app["triggers"][0]["trigger_config"]["component"] = id.into();
        app["components"][0]["files"] = json!([crafted::file_inline("x.txt", b"planted")]);
        app
    };
    let with_file = |path: &str| {
        let mut app = base.locked.clone();
        app["components"][0]["files"] = json!([crafted::file_inline(path, b"planted")]);
        app
    };
    let not_relative = "not a relative path inside the component's files";
    let cases = [
        (
            "dotdot-id",
            with_id(&climbing),
            format!("component id {climbing:?} is not valid"),
        ),
        (
            "absolute-id",
            with_id(&absolute),
            format!("component id {absolute:?} is not valid"),
        ),
        (
            "climbing-file",
            with_file(&climbing),
            not_relative.to_string(),
        ),
        (
            "absolute-file",
            with_file(&absolute),
            not_relative.to_string(),
        ),
    ];
    for (tag, locked, reason) in cases {
        let reference = base.variant(tag, &locked, &[]);
        refused(&scratch, Some(registry), &reference, &[], &reason, &outside);
    }
}

#[test]
fn an_archive_with_a_link_is_refused_and_nothing_goes_through_it() {
    let Some((registry, scratch, base)) = setup("link") else {
        return;
    };
    let outside = outside(&scratch);
    let target = outside.display().to_string();
    let planted = b"planted through a link".repeat(10);
    let link = Entry::Symlink {
        path: "escape",
        target: &target,
    };
    let through = Entry::File {
        path: "escape/planted.txt",
        bytes: &planted,
    };
    let hard = Entry::HardLink {
        path: "escape",
        target: &target,
    };
    // A link and a file through it in one layer; a link planted by an
    // earlier layer and the file through it in a later one; a hard link.
    let cases = [
        ("link", vec![crafted::tar_gz(&[link, through])]),
        (
            "link-layers",
            vec![
                crafted::tar_gz(&[Entry::Symlink {
                    path: "escape",
                    target: &target,
                }]),
                crafted::tar_gz(&[Entry::File {
                    path: "escape/planted.txt",
                    bytes: &planted,
                }]),
            ],
        ),
        ("hard-link", vec![crafted::tar_gz(&[hard])]),
    ];
    let mut locked = base.locked.clone();
    locked["components"][0]["files"] =
        json!([crafted::file_by_digest("escape/planted.txt", &planted)]);
    for (tag, archives) in cases {
        let layers: Vec<(&str, Vec<u8>)> = archives
            .into_iter()
            .map(|archive| (crafted::ARCHIVE, archive))
            .collect();
        let reference = base.variant(tag, &locked, &layers);
        refused(
            &scratch,
            Some(registry),
            &reference,
            &[],
            "\"escape\" in the archive is a link",
            &outside,
        );
    }
}

#[test]
fn an_archive_that_inflates_past_its_bounds_stops_at_them_streaming() {
    let Some((registry, scratch, base)) = setup("bomb") else {
        return;
    };
    let outside = outside(&scratch);
    let size: u64 = 256 << 20;
    let archive = crafted::tar_gz(&[Entry::Zeros {
        path: "zeros.bin",
        size,
    }]);
    assert!(archive.len() < 1 << 20, "{} bytes", archive.len());
    let zeros = vec![0u8; usize::try_from(size).unwrap()];
    let mut locked = base.locked.clone();
    locked["components"][0]["files"] = json!([crafted::file_by_digest("zeros.bin", &zeros)]);
    drop(zeros);
    let reference = base.variant("bomb", &locked, &[(crafted::ARCHIVE, archive)]);
    let sixteen_mib = (16u64 << 20).to_string();
    for (flag, reason) in [
        ("--max-archive-file-size", "--max-archive-file-size"),
        ("--max-layer-size", "--max-layer-size"),
        ("--max-pull-size", "--max-pull-size"),
    ] {
        refused(
            &scratch,
            Some(registry),
            &reference,
            &[flag, &sixteen_mib],
            reason,
            &outside,
        );
    }
    // Within the defaults (which an operator sets), the same layer is
    // inflated to disk, still streaming: the peak stays far below its size.
    let cache = scratch.path("cache-default");
    let outcome = spinbench(
        &scratch,
        Some(registry),
        &[
            "registry",
            "pull",
            &reference,
            "--insecure",
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
    );
    assert!(outcome.ok, "{}", outcome.output);
    eprintln!(
        "pulled within the defaults (peak RSS {:?} KiB)",
        outcome.peak_kib
    );
    if let Some(peak) = outcome.peak_kib {
        assert!(
            peak < PEAK_KIB,
            "peak RSS {peak} KiB inflating {size} bytes"
        );
    }
}

/// A manifest naming a locked app of `locked` bytes (and a config), as JSON.
fn manifest_naming(locked: &[u8]) -> Vec<u8> {
    let config = br#"{"architecture":"wasm","os":"wasip1"}"#;
    serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": { "mediaType": "application/vnd.oci.image.config.v1+json",
                    "digest": sha256_digest(config), "size": config.len() },
        "layers": [{ "mediaType": crafted::LOCKED_APP,
                     "digest": sha256_digest(locked), "size": locked.len() }],
    }))
    .unwrap()
}

#[test]
fn a_registry_that_sends_past_its_sizes_is_cut_off_at_them() {
    let scratch = Scratch::new("fake-sizes");
    let outside = outside(&scratch);
    let locked = br#"{"spin_lock_version":0,"triggers":[],"components":[]}"#.to_vec();
    let digest = sha256_digest(&locked);
    let cases = [
        (
            "a manifest without end",
            Script {
                manifest: Body::Endless(b"{\"schemaVersion\": 2, \"pad\": \"".to_vec()),
                blobs: Vec::new(),
            },
            "--max-manifest-size",
        ),
        (
            "a manifest longer than it says is refused at once",
            Script {
                manifest: Body::Claims(1 << 30),
                blobs: Vec::new(),
            },
            "--max-manifest-size",
        ),
        (
            "a blob past its descriptor's size, without end",
            Script {
                manifest: Body::Exact(manifest_naming(&locked)),
                blobs: vec![(digest.clone(), Body::Endless(locked.clone()))],
            },
            "sends more than the",
        ),
        (
            "a blob that says it is longer than its descriptor",
            Script {
                manifest: Body::Exact(manifest_naming(&locked)),
                blobs: vec![(digest.clone(), Body::Claims(1 << 30))],
            },
            "sends more than the",
        ),
    ];
    for (what, script, reason) in cases {
        let fake = FakeRegistry::start(script);
        eprintln!("{what}");
        refused(
            &scratch,
            None,
            &fake.reference("app:1"),
            &[],
            reason,
            &outside,
        );
        // Two pulls read at most the bound and what sockets buffer.
        assert!(
            fake.sent() < 96 << 20,
            "{what}: the registry sent {} bytes",
            fake.sent()
        );
    }
}

#[test]
fn a_registry_that_never_finishes_is_cut_off_at_the_deadline() {
    let scratch = Scratch::new("fake-trickle");
    let outside = outside(&scratch);
    let locked = br#"{"spin_lock_version":0,"triggers":[],"components":[]}"#.to_vec();
    let fake = FakeRegistry::start(Script {
        manifest: Body::Exact(manifest_naming(&locked)),
        blobs: vec![(
            sha256_digest(&locked),
            Body::Trickle(Duration::from_millis(200)),
        )],
    });
    // One byte every 200 ms never trips a timeout between bytes; the pull's
    // own deadline ends it (the fake would go on for two minutes).
    refused(
        &scratch,
        None,
        &fake.reference("app:1"),
        &["--pull-timeout", "3"],
        "--pull-timeout",
        &outside,
    );
}

#[test]
fn the_shim_refuses_a_crafted_artifact_and_writes_nothing_on_the_node() {
    let missing = e2e::node::missing();
    if !missing.is_empty() {
        eprintln!("skipped: the shim's boundary needs {}", missing.join(", "));
        return;
    }
    let node = e2e::node::Node::start();
    let dir = node.scratch("crafted");
    let base = Base::push(node.registry, &dir, "hostile/node");
    // As root, outside the container, the precompile hook makes the app of
    // these layers: a component id that climbs from its working directory to
    // a directory of the node, and an absolute one.
    let outside = node.scratch("outside");
    for (tag, id) in [
        ("dotdot", climbing_to(&outside.join("planted"))),
        ("absolute", outside.join("planted").display().to_string()),
    ] {
        let mut locked = base.locked.clone();
        locked["components"][0]["id"] = id.as_str().into();
        locked["triggers"][0]["trigger_config"]["component"] = id.as_str().into();
        locked["components"][0]["files"] =
            json!([crafted::file_inline("x.txt", b"planted by the shim")]);
        base.variant(tag, &locked, &[]);
        let image = node.pull(&format!("hostile/node:{tag}"), true);
        let (status, log) = node.run_to_exit(tag, &image, &[]);
        assert!(!status.success(), "{tag}: {status}\n{log}");
        assert!(log.contains("is not valid"), "{tag}: {log}");
        assert_nothing_in(&outside);
        node.ctr_ok(&["container", "delete", tag]);
        assert_eq!(node.leftovers(tag), Vec::<String>::new(), "{tag}");
    }
    let shim_log = node.file("containerd.log");
    assert!(
        shim_log.contains("is not valid"),
        "the precompile hook says why: {}",
        shim_log
            .lines()
            .rev()
            .take(30)
            .collect::<Vec<_>>()
            .join("\n")
    );
}
