//! The cache's checks, on tiny components compiled by an on-demand engine.

use super::*;
use std::os::unix::fs::PermissionsExt;

/// An empty component whose custom section `name` makes its bytes unique.
fn component(name: u8) -> Vec<u8> {
    let mut wasm = b"\0asm\x0d\0\x01\0".to_vec();
    wasm.extend_from_slice(&[0, 2, 1, name]);
    wasm
}

fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("spinbench-cache-test")
        .tempdir()
        .unwrap()
}

fn origin(engine: &Engine, wasm: &[u8], cache: &CacheDir) -> Origin {
    load(engine, wasm, Path::new("test.wasm"), Some(cache))
        .unwrap()
        .origin
}

fn cached_file(engine: &Engine, wasm: &[u8], cache: &CacheDir) -> PathBuf {
    let stem = Trailer::expected(engine, wasm).file_stem();
    cache.0.join(format!("{stem}.cwasm"))
}

#[test]
fn a_stored_component_loads_from_the_cache() {
    let engine = Engine::default();
    let dir = temp_dir();
    let cache = CacheDir::open(&dir.path().join("new")).unwrap();
    let mode = std::fs::metadata(&cache.0).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "created private");
    let wasm = component(b'a');
    assert_eq!(origin(&engine, &wasm, &cache), Origin::Compiled);
    assert_eq!(origin(&engine, &wasm, &cache), Origin::LoadedFromCache);
    let mode = std::fs::metadata(cached_file(&engine, &wasm, &cache))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "written private");
}

/// The attack: one component's cache file copied over another's.
#[test]
fn a_file_compiled_from_other_wasm_is_recompiled_and_replaced() {
    let engine = Engine::default();
    let dir = temp_dir();
    let cache = CacheDir::open(dir.path()).unwrap();
    let (a, b) = (component(b'a'), component(b'b'));
    origin(&engine, &a, &cache);
    origin(&engine, &b, &cache);
    std::fs::copy(
        cached_file(&engine, &a, &cache),
        cached_file(&engine, &b, &cache),
    )
    .unwrap();
    assert_eq!(origin(&engine, &b, &cache), Origin::Compiled);
    assert_eq!(origin(&engine, &b, &cache), Origin::LoadedFromCache);
}

#[test]
fn truncated_or_corrupted_files_are_recompiled() {
    let engine = Engine::default();
    let dir = temp_dir();
    let cache = CacheDir::open(dir.path()).unwrap();
    let wasm = component(b'c');
    origin(&engine, &wasm, &cache);
    let file = cached_file(&engine, &wasm, &cache);
    let good = std::fs::read(&file).unwrap();
    let mut trailer_flipped = good.clone();
    *trailer_flipped.last_mut().unwrap() ^= 1;
    // A byte of the code itself: only the code's hash can tell.
    let mut code_flipped = good.clone();
    code_flipped[good.len() / 2] ^= 1;
    let damaged: [&[u8]; 5] = [
        &good[..10],
        &good[..good.len() - 1],
        &trailer_flipped,
        &code_flipped,
        b"",
    ];
    for bytes in damaged {
        std::fs::write(&file, bytes).unwrap();
        assert_eq!(
            origin(&engine, &wasm, &cache),
            Origin::Compiled,
            "{} bytes",
            bytes.len()
        );
        assert_eq!(std::fs::read(&file).unwrap(), good, "replaced");
    }
}

#[test]
fn a_directory_others_can_write_is_not_used() {
    let dir = temp_dir();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    assert!(CacheDir::open(dir.path()).is_none());
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o720)).unwrap();
    assert!(CacheDir::open(dir.path()).is_none());
}

#[test]
fn a_file_others_can_write_is_not_loaded() {
    let engine = Engine::default();
    let dir = temp_dir();
    let cache = CacheDir::open(dir.path()).unwrap();
    let wasm = component(b'd');
    origin(&engine, &wasm, &cache);
    let file = cached_file(&engine, &wasm, &cache);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_eq!(origin(&engine, &wasm, &cache), Origin::Compiled);
}

/// Only root can hand a file to another user; elsewhere this test has nothing to do.
#[test]
fn a_directory_or_file_owned_by_someone_else_is_not_used() {
    if super::euid() != 0 {
        crate::err_line!("skipping: only root can chown");
        return;
    }
    let nobody = 65534;
    let engine = Engine::default();
    let dir = temp_dir();
    let cache = CacheDir::open(dir.path()).unwrap();
    let wasm = component(b'e');
    origin(&engine, &wasm, &cache);
    let file = cached_file(&engine, &wasm, &cache);
    std::os::unix::fs::chown(&file, Some(nobody), None).unwrap();
    assert_eq!(origin(&engine, &wasm, &cache), Origin::Compiled);
    std::os::unix::fs::chown(dir.path(), Some(nobody), None).unwrap();
    assert!(CacheDir::open(dir.path()).is_none());
}

#[test]
fn the_file_name_depends_on_the_wasm_and_is_stable() {
    let engine = Engine::default();
    let stem = |wasm: &[u8]| Trailer::expected(&engine, wasm).file_stem();
    assert_eq!(stem(b"one"), stem(b"one"));
    assert_ne!(stem(b"one"), stem(b"two"));
    assert_eq!(stem(b"one").len(), 64);
}

#[test]
fn trailers_round_trip() {
    let trailer = Trailer {
        wasm: [1; 32],
        engine: [2; 32],
        code: [3; 32],
        code_len: 0x0102_0304,
    };
    assert_eq!(Trailer::parse(&trailer.to_bytes()).unwrap(), trailer);
    let mut foreign = trailer.to_bytes();
    foreign[0] ^= 1;
    assert!(Trailer::parse(&foreign).is_err());
}
