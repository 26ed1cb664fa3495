use super::*;
use crate::artifact::tests::{module, write_app as write_source_app};
use crate::store::Store;
use spinbench_host::manifest::Manifest;

/// A store holding `blobs`.
fn store_with(dir: &Path, blobs: &[&[u8]]) -> Store {
    let store = Store::open(&dir.join("store")).unwrap();
    for blob in blobs {
        store.write(Digest::of(blob), blob).unwrap();
    }
    store
}

#[test]
fn a_pushed_app_comes_back_as_the_same_app() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    std::fs::create_dir(&source).unwrap();
    write_source_app(&source);
    let locked = crate::lock::lock(&source.join("spin.toml"), None).unwrap();
    let artifact = crate::artifact::assemble(&locked, false).unwrap();
    let store = Store::open(&dir.path().join("store")).unwrap();
    for layer in &artifact.layers {
        store.write(Digest::of(&layer.data), &layer.data).unwrap();
    }
    let app_dir = dir.path().join("app");
    std::fs::create_dir(&app_dir).unwrap();
    write_app(&artifact.locked, &store, &app_dir).unwrap();

    let manifest = Manifest::load(&app_dir.join(MANIFEST_FILE)).unwrap();
    spinbench_host::manifest::hosting::check(&manifest).unwrap();
    assert_eq!(manifest.application.name(), "pinned");
    assert_eq!(manifest.application.version(), Some("1.2.3"));
    assert_eq!(manifest.http_base(), "/base");
    let routes: Vec<String> = manifest
        .http_routes()
        .iter()
        .map(|r| r.route.clone())
        .collect();
    assert_eq!(routes, ["/a/...", "/b", "/static"]);
    assert_eq!(
        manifest.trigger.http[1].wagi().unwrap().argv,
        "${SCRIPT_NAME}"
    );
    assert!(manifest.variables["token"].required);
    assert_eq!(
        manifest.variables["greeting"].default.as_deref(),
        Some("hi")
    );
    let a = &manifest.component["a"];
    assert_eq!(a.environment["MODE"], "test");
    assert_eq!(a.variables["message"], "{{ greeting }}");
    assert_eq!(a.sqlite_databases, ["default"]);
    assert_eq!(a.allowed_outbound_hosts.len(), 3);
    // The same wasm for a and b, kept once by digest.
    let wasm = std::fs::read(manifest.source_path(a).unwrap()).unwrap();
    assert_eq!(wasm, module(1, 300));
    assert_eq!(
        manifest.source_path(a),
        manifest.source_path(&manifest.component["b"])
    );
    // Files at the places the guest saw them (under the component's index,
    // never its id), the excluded one absent.
    let files = app_dir.join("files/0");
    assert_eq!(
        std::fs::read(files.join("www/small.txt")).unwrap(),
        b"small"
    );
    assert_eq!(
        std::fs::read(files.join("www/sub/large.bin"))
            .unwrap()
            .len(),
        1000
    );
    assert!(!files.join("www/skip.tmp").exists());
}

fn locked(json: &serde_json::Value) -> LockedApp {
    LockedApp::from_json(&serde_json::to_vec(json).unwrap()).unwrap()
}

/// A locked app written as Spin 4.0.2 writes one for an app with a route,
/// an inline file and a component served from the blobs.
fn spin_written(wasm: &[u8]) -> serde_json::Value {
    serde_json::json!({
        "spin_lock_version": 0,
        "metadata": { "name": "from-spin", "trigger": { "type": "http" }, "triggers": {} },
        "triggers": [{ "id": "hello-http-trigger", "trigger_type": "http",
                       "trigger_config": { "component": "hello", "route": "/hello" } }],
        "components": [{
            "id": "hello",
            "metadata": { "allowed_outbound_hosts": [] },
            "source": { "content_type": "application/wasm", "digest": Digest::of(wasm).to_string() },
            "files": [{ "inline": "aGk", "path": "greeting.txt" }],
        }],
    })
}

#[test]
fn a_locked_app_as_spin_writes_it_is_served_from_the_blobs() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = module(3, 200);
    let store = store_with(dir.path(), &[&wasm]);
    let app_dir = dir.path().join("app");
    std::fs::create_dir(&app_dir).unwrap();
    write_app(&locked(&spin_written(&wasm)), &store, &app_dir).unwrap();
    let manifest = Manifest::load(&app_dir.join(MANIFEST_FILE)).unwrap();
    assert_eq!(manifest.http_routes()[0].route, "/hello");
    let hello = &manifest.component["hello"];
    assert_eq!(
        std::fs::read(manifest.source_path(hello).unwrap()).unwrap(),
        wasm
    );
    assert_eq!(
        std::fs::read(app_dir.join("files/0/greeting.txt")).unwrap(),
        b"hi"
    );
}

/// A change made to a locked app.
type Change = fn(&mut serde_json::Value);

#[test]
fn what_cannot_be_served_or_placed_is_refused_in_one_line() {
    let wasm = module(3, 200);
    let cases: [(&str, Change); 12] = [
        // A dependency pushed uncomposed whose wasm the blobs lack.
        ("cannot find", |app| {
            let digest = Digest::of(b"absent dependency").to_string();
            app["components"][0]["dependencies"] = serde_json::json!({ "a:b/c": {
                "source": { "content_type": "application/wasm", "digest": digest } } });
        }),
        ("not a relative path", |app| {
            app["components"][0]["files"][0]["path"] = "../escape".into();
        }),
        ("cannot find", |app| {
            app["components"][0]["source"]["digest"] = Digest::of(b"absent").to_string().into();
        }),
        ("not its digest", |app| {
            app["components"][0]["files"][0]["digest"] = Digest::of(b"other").to_string().into();
        }),
        ("component id \"../../escape\" is not valid", |app| {
            app["components"][0]["id"] = "../../escape".into();
        }),
        ("component id \"/tmp/abs\" is not valid", |app| {
            app["components"][0]["id"] = "/tmp/abs".into();
        }),
        (
            "names component \"other\", which the app does not have",
            |app| {
                app["triggers"][0]["trigger_config"]["component"] = "other".into();
            },
        ),
        (
            "trigger \"hello-http-trigger\": component id \"../x\"",
            |app| {
                app["triggers"][0]["trigger_config"]["component"] = "../x".into();
            },
        ),
        ("appears twice", |app| {
            let copy = app["components"][0].clone();
            app["components"].as_array_mut().unwrap().push(copy);
        }),
        ("store label \"../kv\"", |app| {
            app["components"][0]["metadata"]["key_value_stores"] = serde_json::json!(["../kv"]);
        }),
        ("ai model \"../../models\"", |app| {
            app["components"][0]["metadata"]["ai_models"] = serde_json::json!(["../../models"]);
        }),
        ("listed twice", |app| {
            let copy = app["components"][0]["files"][0].clone();
            app["components"][0]["files"]
                .as_array_mut()
                .unwrap()
                .push(copy);
        }),
    ];
    for (expected, change) in cases {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with(dir.path(), &[&wasm]);
        let mut json = spin_written(&wasm);
        change(&mut json);
        let app_dir = dir.path().join("app");
        std::fs::create_dir(&app_dir).unwrap();
        let error = format!(
            "{:#}",
            write_app(&locked(&json), &store, &app_dir).unwrap_err()
        );
        assert!(error.contains(expected), "{expected}: {error}");
        assert!(!error.contains('\n'), "{error}");
    }
}

#[test]
fn no_name_from_the_locked_app_becomes_a_path() {
    // Ids and file paths as Spin allows them, some of which would be
    // surprising as file names: the app directory holds only the manifest,
    // wasm by digest and files by index.
    let dir = tempfile::tempdir().unwrap();
    let wasm = module(3, 200);
    let store = store_with(dir.path(), &[&wasm]);
    let mut json = spin_written(&wasm);
    json["components"][0]["id"] = "SPIN-TOML".into();
    json["triggers"][0]["trigger_config"]["component"] = "SPIN-TOML".into();
    json["components"][0]["files"][0]["path"] = "wasm/deep/x.txt".into();
    let app_dir = dir.path().join("app");
    std::fs::create_dir(&app_dir).unwrap();
    write_app(&locked(&json), &store, &app_dir).unwrap();
    let mut names: Vec<String> = walk(&app_dir);
    names.sort();
    let wasm_name = format!("wasm/{}.wasm", Digest::of(&wasm).hex());
    assert_eq!(
        names,
        [
            "files",
            "files/0",
            "files/0/wasm",
            "files/0/wasm/deep",
            "files/0/wasm/deep/x.txt",
            "spin.toml",
            "wasm",
            wasm_name.as_str(),
        ]
    );
    let manifest = Manifest::load(&app_dir.join(MANIFEST_FILE)).unwrap();
    assert!(manifest.component.contains_key("SPIN-TOML"));
}

/// Every path under `dir`, relative to it.
fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            out.push(path.strip_prefix(dir).unwrap().display().to_string());
            if path.is_dir() {
                pending.push(path);
            }
        }
    }
    out
}

#[test]
fn service_chaining_required_is_served_with_its_allow_list() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = module(3, 200);
    let store = store_with(dir.path(), &[&wasm]);
    let mut json = spin_written(&wasm);
    json["spin_lock_version"] = 1.into();
    json["must_understand"] = serde_json::json!(["component_host_requirements"]);
    json["components"][0]["metadata"]["allowed_outbound_hosts"] =
        serde_json::json!(["http://back.spin.internal"]);
    json["components"][0]["host_requirements"] =
        serde_json::json!({ "local_service_chaining": "required" });
    let app_dir = dir.path().join("app");
    std::fs::create_dir(&app_dir).unwrap();
    write_app(&locked(&json), &store, &app_dir).unwrap();
    let manifest = Manifest::load(&app_dir.join(MANIFEST_FILE)).unwrap();
    spinbench_host::manifest::hosting::check(&manifest).unwrap();
    assert_eq!(
        manifest.component["hello"].allowed_outbound_hosts,
        ["http://back.spin.internal"]
    );
}
