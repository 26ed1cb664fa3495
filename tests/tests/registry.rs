//! Spin's registry path against a real registry (`e2e::registry`: Debian's
//! `docker-registry` on loopback, with a user and password): the function set
//! pushed as Spin 4.0.2's artifact, pulled into an empty cache and served by
//! reference with every function's contract answered; a second start
//! downloads nothing; every bad reference or artifact fails in one line with
//! no app left in the cache; credentials found where Spin finds them. Skipped
//! (with a line saying so) only where `docker-registry` is not installed.

use e2e::contract::{Natives, cases, meets_contract};
use e2e::registry::{PASSWORD, Registry, USER, hello_app};
use e2e::{Scratch, Server, artifact, functions, run_command_to_exit, workspace_root};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Where spinbench looks for credentials: `docker` (a Docker config folder)
/// or none, and an empty config home (no login file) unless given.
struct Env {
    docker_config: Option<PathBuf>,
    config_home: PathBuf,
    path: Option<String>,
}

impl Env {
    fn in_scratch(scratch: &Scratch, docker_config: Option<PathBuf>) -> Env {
        let config_home = scratch.path("config-home");
        std::fs::create_dir_all(&config_home).unwrap();
        Env {
            docker_config,
            config_home,
            path: None,
        }
    }

    fn apply(&self, command: &mut Command) {
        let empty = self.config_home.join("no-docker");
        command
            .env(
                "DOCKER_CONFIG",
                self.docker_config.as_ref().unwrap_or(&empty),
            )
            .env("XDG_CONFIG_HOME", &self.config_home);
        if let Some(path) = &self.path {
            command.env("PATH", path);
        }
    }
}

/// The shared registry, a scratch folder, and an environment whose Docker
/// config holds the registry's credentials; `None` (skipped) without a registry.
fn setup(label: &str) -> Option<(&'static Registry, Scratch, Env)> {
    let registry = Registry::shared()?;
    let scratch = Scratch::new(label);
    let env = Env::in_scratch(&scratch, Some(registry.docker_config(&scratch.0)));
    Some((registry, scratch, env))
}

/// [`setup`], then `hello_app` (labelled `label`) pushed to `repository:1`:
/// the registry, scratch, environment, and the pushed reference.
fn setup_with_hello(
    label: &str,
    repository: &str,
) -> Option<(&'static Registry, Scratch, Env, String)> {
    let (registry, scratch, env) = setup(label)?;
    let manifest = hello_app(&scratch.path("app"), label);
    let reference = registry.reference(&format!("{repository}:1"));
    push(&env, &manifest, &reference);
    Some((registry, scratch, env, reference))
}

/// `spinbench args...` to its end (within two minutes): exit success and output.
fn spinbench(env: &Env, args: &[&str], stdin: Option<&str>) -> (bool, String) {
    let mut command = Command::new(artifact("release/spinbench"));
    command.args(args);
    env.apply(&mut command);
    let (status, output) =
        run_command_to_exit(command, stdin.map(str::as_bytes), Duration::from_mins(2))
            .unwrap_or_else(|| panic!("spinbench {args:?} ran over two minutes"));
    (status.success(), output)
}

/// Pushes `manifest` to `reference`, panicking on failure; returns the output.
fn push(env: &Env, manifest: &Path, reference: &str) -> String {
    let (ok, output) = spinbench(
        env,
        &[
            "registry",
            "push",
            "--insecure",
            "-f",
            manifest.to_str().unwrap(),
            reference,
        ],
        None,
    );
    assert!(ok, "push {reference}: {output}");
    output
}

/// The digest of the wasm of the app `hello_app` wrote at `manifest`.
fn hello_digest(manifest: &Path) -> String {
    e2e::sha256_digest(&std::fs::read(manifest.with_file_name("hello.wasm")).unwrap())
}

/// `serve -f <reference> --insecure --cache-dir <cache>`.
fn serve_args(reference: &str, cache: &Path) -> Vec<String> {
    let cache = cache.to_str().unwrap();
    ["serve", "-f", reference, "--insecure", "--cache-dir", cache]
        .map(String::from)
        .to_vec()
}

/// `serve -f reference` with a cache of its own, in the environment's credentials.
fn serve_by_reference(env: &Env, reference: &str, cache: &Path, label: &str) -> Server {
    let args = serve_args(reference, cache);
    Server::start_configured(
        label,
        &artifact("release/spinbench"),
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        |command, addr| {
            command.arg("--listen").arg(addr.to_string());
            env.apply(command);
        },
    )
}

/// The registry's JSON at `path` (authorized).
fn registry_json(registry: &Registry, path: &str) -> (Value, Vec<u8>) {
    let (status, body) = registry.get(path, true).expect("the registry answers");
    assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
    (serde_json::from_slice(&body).unwrap(), body)
}

/// What was pushed to `repository:tag` is Spin 4.0.2's artifact of the
/// function set: an OCI image config labelled with the locked app's layer,
/// one wasm layer per function, the locked app last, Spin's annotations.
fn assert_spins_artifact(registry: &Registry, repository: &str, tag: &str) {
    let (manifest, _) = registry_json(registry, &format!("/v2/{repository}/manifests/{tag}"));
    assert_eq!(manifest["schemaVersion"], 2);
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.oci.image.config.v1+json"
    );
    let layers = manifest["layers"].as_array().unwrap();
    let (locked_layer, wasm_layers) = layers.split_last().unwrap();
    assert_eq!(
        locked_layer["mediaType"],
        "application/vnd.fermyon.spin.application.v1+config"
    );
    assert!(
        wasm_layers
            .iter()
            .all(|l| l["mediaType"] == "application/vnd.wasm.content.layer.v1+wasm")
    );
    assert_eq!(
        wasm_layers.len(),
        functions().len(),
        "one layer per distinct wasm"
    );
    assert_eq!(
        manifest["annotations"]["org.opencontainers.image.title"],
        "spinbench"
    );
    assert_eq!(
        manifest["annotations"]["org.opencontainers.image.version"],
        "0.1.0"
    );
    let (config, _) = registry_json(
        registry,
        &format!(
            "/v2/spinbench/blobs/{}",
            manifest["config"]["digest"].as_str().unwrap()
        ),
    );
    assert_eq!(config["architecture"], "wasm");
    assert_eq!(config["os"], "wasip1");
    assert_eq!(
        config["config"]["Labels"]["com.fermyon.spin.lockedAppDigest"],
        locked_layer["digest"]
    );
    let (locked, _) = registry_json(
        registry,
        &format!(
            "/v2/spinbench/blobs/{}",
            locked_layer["digest"].as_str().unwrap()
        ),
    );
    assert_eq!(locked["spin_lock_version"], 0);
    assert_eq!(locked["metadata"]["name"], "spinbench");
    for component in locked["components"].as_array().unwrap() {
        assert_eq!(component["source"]["content_type"], "application/wasm");
        let digest = &component["source"]["digest"];
        assert!(
            wasm_layers.iter().any(|l| &l["digest"] == digest),
            "{component}"
        );
    }
    let routes: Vec<&str> = locked["triggers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["trigger_config"]["route"].as_str().unwrap())
        .collect();
    for f in functions() {
        assert!(
            routes.contains(&format!("/{f}").as_str()),
            "{f}: {routes:?}"
        );
    }
}

#[test]
fn the_function_set_is_pushed_pulled_into_an_empty_cache_and_served_by_reference() {
    let Some((registry, scratch, env)) = setup("function-set") else {
        return;
    };
    let reference = registry.reference("spinbench:0.1.0");
    let pushed = push(&env, &workspace_root().join("spin.toml"), &reference);
    assert!(pushed.contains("with digest sha256:"), "{pushed}");

    assert_spins_artifact(registry, "spinbench", "0.1.0");

    // Pulled into an empty cache and served: every function's contract.
    let cache = scratch.path("cache");
    let before = registry.blob_downloads();
    let server = serve_by_reference(&env, &reference, &cache, "registry-serve");
    assert!(
        server.log().contains("blobs downloaded"),
        "{}",
        server.log()
    );
    assert!(registry.blob_downloads() > before);
    let natives = Natives::start();
    let base = format!("http://{}", server.addr);
    for case in cases() {
        meets_contract("serve -f <reference>", &case, &base, &natives);
    }
    drop(server);

    // A second start downloads no blob.
    let before = registry.blob_downloads();
    let again = serve_by_reference(&env, &reference, &cache, "registry-serve-again");
    assert!(
        again.log().contains("nothing downloaded"),
        "{}",
        again.log()
    );
    assert_eq!(e2e::get(&again.url("/hello")).status, 200);
    assert_eq!(registry.blob_downloads(), before, "{}", registry.log());
}

/// `serve -f reference` with a fresh cache: must fail with one `Error:` line
/// containing `expected`, and leave no app, nor anything half-written, in the cache.
fn refused(env: &Env, reference: &str, expected: &str, scratch: &Scratch) {
    let cache = scratch.path(&format!("cache-{}", Server::free_addr().port()));
    let mut args = serve_args(reference, &cache);
    args.extend(["--listen".to_string(), "127.0.0.1:0".to_string()]);
    let (ok, output) = spinbench(
        env,
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        None,
    );
    assert!(!ok, "{reference}: started:\n{output}");
    let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{reference}: {output}");
    eprintln!("refused {reference}: {}", lines[0]);
    assert!(lines[0].starts_with("Error: "), "{reference}: {output}");
    assert!(
        lines[0].contains(expected),
        "{reference}: expected {expected:?} in {output}"
    );
    let store = cache.join("registry");
    if store.exists() {
        let apps: Vec<_> = std::fs::read_dir(store.join("apps")).unwrap().collect();
        assert!(apps.is_empty(), "{reference}: {apps:?}");
        for entry in std::fs::read_dir(store.join("blobs/sha256")).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(
                name.len() == 64 && !name.starts_with('.'),
                "{reference}: left {name}"
            );
        }
    }
}

#[test]
fn bad_references_and_artifacts_fail_in_one_line_leaving_no_app_in_the_cache() {
    let Some((registry, scratch, env, _)) = setup_with_hello("refusals", "refusals/hello") else {
        return;
    };

    refused(
        &env,
        &registry.reference("refusals/hello:absent"),
        "no such repository or tag",
        &scratch,
    );
    refused(
        &env,
        &registry.reference("refusals/absent:1"),
        "no such repository or tag",
        &scratch,
    );
    let closed = Server::free_addr();
    refused(&env, &format!("{closed}/hello:1"), "cannot reach", &scratch);
    let anonymous = Env::in_scratch(&scratch, None);
    refused(
        &anonymous,
        &registry.reference("refusals/hello:1"),
        "401 Unauthorized",
        &scratch,
    );

    // Not a Spin app: a plain image whose one layer is a tar.
    let layer = registry.put_blob("refusals/image", b"not a tar, but a layer all the same");
    let config = registry.put_blob(
        "refusals/image",
        br#"{"architecture":"amd64","os":"linux"}"#,
    );
    let image = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": { "mediaType": "application/vnd.oci.image.config.v1+json", "digest": config, "size": 37 },
        "layers": [{ "mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer, "size": 35 }],
    });
    registry.put_manifest(
        "refusals/image",
        "1",
        "application/vnd.oci.image.manifest.v1+json",
        image.to_string().as_bytes(),
    );
    refused(
        &env,
        &registry.reference("refusals/image:1"),
        "not a Spin application",
        &scratch,
    );

    // A layer whose bytes the registry changed: its digest does not match.
    let corrupt = hello_app(&scratch.path("corrupt"), "corrupt");
    push(&env, &corrupt, &registry.reference("refusals/corrupt:1"));
    let blob = registry.blob_file(&hello_digest(&corrupt));
    let original = std::fs::read(&blob).unwrap();
    let mut changed = original.clone();
    changed[100] ^= 0xff;
    std::fs::write(&blob, &changed).unwrap();
    let mismatch = std::panic::catch_unwind(|| {
        refused(
            &env,
            &registry.reference("refusals/corrupt:1"),
            "does not match its digest",
            &scratch,
        );
    });
    std::fs::write(&blob, &original).unwrap();
    mismatch.unwrap();

    // A manifest naming a layer the registry lacks (for that repository).
    let missing = hello_app(&scratch.path("missing"), "missing");
    push(&env, &missing, &registry.reference("refusals/missing:1"));
    std::fs::remove_dir_all(registry.layer_link("refusals/missing", &hello_digest(&missing)))
        .unwrap();
    refused(
        &env,
        &registry.reference("refusals/missing:1"),
        "lacks this layer",
        &scratch,
    );

    // Not a reference and not a file either.
    refused(
        &env,
        "no-such-dir/spin.toml",
        "no-such-dir/spin.toml",
        &scratch,
    );
}

#[test]
fn credentials_come_from_dockers_helpers_and_spinbench_login() {
    let Some((registry, scratch, _, reference)) =
        setup_with_hello("credentials", "credentials/hello")
    else {
        return;
    };
    let pull = |env: &Env| {
        let cache = scratch.path(&format!("cache-{}", Server::free_addr().port()));
        spinbench(
            env,
            &[
                "registry",
                "pull",
                "--insecure",
                "--cache-dir",
                cache.to_str().unwrap(),
                &reference,
            ],
            None,
        )
    };

    // A credential helper named for the registry in Docker's config.
    let helpers = scratch.path("helpers");
    std::fs::create_dir_all(&helpers).unwrap();
    let helper = helpers.join("docker-credential-spinbench-test");
    std::fs::write(
        &helper,
        format!(
            "#!/bin/sh\nread -r server\necho '{{\"ServerURL\":\"'\"$server\"'\",\"Username\":\"{USER}\",\"Secret\":\"{PASSWORD}\"}}'\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&helper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let docker = scratch.path("docker-helper");
    std::fs::create_dir_all(&docker).unwrap();
    let config = serde_json::json!({ "credHelpers": { registry.host(): "spinbench-test" } });
    std::fs::write(docker.join("config.json"), config.to_string()).unwrap();
    let mut with_helper = Env::in_scratch(&scratch, Some(docker));
    with_helper.path = Some(format!(
        "{}:{}",
        helpers.display(),
        std::env::var("PATH").unwrap_or_default()
    ));
    let (ok, output) = pull(&with_helper);
    assert!(ok, "with a credential helper: {output}");

    // `spinbench registry login`: a wrong password is refused and not kept;
    // the right one is kept and used.
    let home = scratch.path("login-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut logged = Env::in_scratch(&scratch, None);
    logged.config_home = home.clone();
    let login = |password: &str| {
        spinbench(
            &logged,
            &[
                "registry",
                "login",
                "--insecure",
                "-u",
                USER,
                "--password-stdin",
                &registry.host(),
            ],
            Some(&format!("{password}\n")),
        )
    };
    let (ok, output) = login("wrong");
    assert!(!ok, "{output}");
    assert!(output.contains("401 Unauthorized"), "{output}");
    assert!(!home.join("spinbench/registry-auth.json").exists());
    let (ok, output) = pull(&logged);
    assert!(
        !ok && output.contains("401 Unauthorized"),
        "before the login: {output}"
    );
    let (ok, output) = login(PASSWORD);
    assert!(ok, "{output}");
    let (ok, output) = pull(&logged);
    assert!(ok, "after the login: {output}");
}

#[test]
fn pull_writes_an_app_directory_that_serve_reads_like_any_other() {
    let Some((_, scratch, env, reference)) = setup_with_hello("pull-into", "pulled/hello") else {
        return;
    };
    let out = scratch.path("out");
    let cache = scratch.path("cache");
    let pull_into_out = || {
        spinbench(
            &env,
            &[
                "registry",
                "pull",
                "--insecure",
                "--cache-dir",
                cache.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
                &reference,
            ],
            None,
        )
    };
    let (ok, output) = pull_into_out();
    assert!(ok, "{output}");
    let server = Server::start(
        "registry-pulled-dir",
        &artifact("release/spinbench"),
        &[
            "serve",
            "-f",
            out.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
    );
    let hello = e2e::get(&server.url("/hello"));
    assert_eq!(
        (hello.status, hello.text().as_str()),
        (200, "Hello, World!")
    );
    // A second pull into the same directory is refused: it is not empty.
    let (ok, output) = pull_into_out();
    assert!(!ok && output.contains("is not empty"), "{output}");
}
