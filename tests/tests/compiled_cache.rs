//! The compiled-code cache runs only code compiled from the component being
//! served: the issue's attack (one component's cache file copied over
//! another's) and a damaged file are recompiled and replaced, and a cache
//! directory others can write is not used at all.

use e2e::{Answer, Server, artifact, send};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A manifest serving one function at its own route.
fn one_component(dir: &Path, function: &str) -> PathBuf {
    let wasm = artifact(&format!("wasm32-wasip2/release/{function}.wasm"));
    let manifest = dir.join(format!("{function}.toml"));
    std::fs::write(
        &manifest,
        format!(
            "spin_manifest_version = 2\n[application]\nname = \"{function}\"\n\
             [[trigger.http]]\nroute = \"/{function}\"\ncomponent = \"{function}\"\n\
             [component.{function}]\nsource = \"{}\"\n",
            wasm.display()
        ),
    )
    .unwrap();
    manifest
}

fn serve(manifest: &Path, cache: &Path) -> Server {
    Server::start(
        "spinbench",
        &artifact("release/spinbench"),
        &[
            "serve",
            "--manifest",
            manifest.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
    )
}

fn echo(server: &Server) -> Answer {
    send(
        "POST",
        &server.url("/echo"),
        Some("application/json"),
        br#"{"FirstName":"Still","LastName":"Echo","Age":1}"#,
    )
}

fn assert_echo(answer: &Answer, when: &str) {
    assert_eq!(answer.status, 200, "{when}: {}", answer.text());
    assert_eq!(
        answer.text(),
        r#"{"firstName":"Stillx","lastName":"Echox","age":11}"#,
        "{when}"
    );
}

/// The one `.cwasm` file in `cache`.
fn only_file(cache: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(cache)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "cwasm"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.into_iter().next().unwrap()
}

#[test]
fn a_cache_file_swapped_for_another_components_is_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let (hello_cache, echo_cache) = (dir.path().join("hello"), dir.path().join("echo"));
    let hello = one_component(dir.path(), "hello");
    let echo_manifest = one_component(dir.path(), "echo");
    drop(serve(&hello, &hello_cache));
    let server = serve(&echo_manifest, &echo_cache);
    assert_echo(&echo(&server), "compiled");
    drop(server);
    let echo_file = only_file(&echo_cache);
    let good = std::fs::read(&echo_file).unwrap();
    // The attack: hello's code under echo's name.
    std::fs::copy(only_file(&hello_cache), &echo_file).unwrap();
    let server = serve(&echo_manifest, &echo_cache);
    assert_echo(&echo(&server), "after the swap");
    assert!(server.log().contains("is not usable"), "{}", server.log());
    drop(server);
    // Damaged copies of echo's own file: truncated, one flipped byte.
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0xff;
    for (what, bytes) in [
        ("truncated", &good[..good.len() / 2]),
        ("corrupted", &flipped[..]),
    ] {
        std::fs::write(&echo_file, bytes).unwrap();
        let server = serve(&echo_manifest, &echo_cache);
        assert_echo(&echo(&server), what);
        assert!(
            server.log().contains("is not usable"),
            "{what}: {}",
            server.log()
        );
    }
    // Replaced each time: the next start loads it.
    let server = serve(&echo_manifest, &echo_cache);
    assert!(
        server.log().contains("echo: loaded from cache"),
        "{}",
        server.log()
    );
    assert_echo(&echo(&server), "loaded from the replaced file");
}

#[test]
fn a_cache_directory_others_can_write_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    let manifest = one_component(dir.path(), "echo");
    let server = serve(&manifest, &cache);
    assert!(
        server.log().contains("not using the compiled-code cache"),
        "{}",
        server.log()
    );
    assert_echo(&echo(&server), "without the cache");
    assert_eq!(
        std::fs::read_dir(&cache).unwrap().count(),
        0,
        "written anyway"
    );
}

#[test]
fn a_new_cache_directory_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("a/b");
    let manifest = one_component(dir.path(), "hello");
    drop(serve(&manifest, &cache));
    for created in [dir.path().join("a"), cache.clone()] {
        let mode = std::fs::metadata(&created).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{}", created.display());
    }
    let mode = std::fs::metadata(only_file(&cache))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}
