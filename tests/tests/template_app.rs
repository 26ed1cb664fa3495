//! Any Spin HTTP app, served: a component written the way `spin new http-rust`
//! writes it (tests/template-app), with the manifest keys a user's app has, is
//! served by `spinbench serve -f <dir>` with its variable; the template's
//! key-value example counts in Spin's default store; its LLM example starts
//! and is denied its model; a component importing what the runner lacks is
//! refused at start in one line; `compare -f` measures
//! it against its native counterpart from its benchmark file.

use e2e::report as support;

use e2e::{Server, artifact, get, workspace_root};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn serve_args(app: &str) -> Vec<String> {
    let cache = workspace_root().join("target/e2e-cache");
    vec![
        "serve".into(),
        "-f".into(),
        workspace_root().join(app).display().to_string(),
        "--cache-dir".into(),
        cache.display().to_string(),
    ]
}

fn template_app(start: fn(&str, &std::path::Path, &[&str]) -> Server) -> Server {
    artifact("wasm32-wasip2/release/template_hello.wasm");
    let args = serve_args("tests/template-app");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    start("template-app", &artifact("release/spinbench"), &args)
}

#[test]
fn the_template_app_is_served_with_its_variable() {
    let server = template_app(Server::start);
    let answer = get(&server.url("/anything/below"));
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(answer.content_type, "text/plain");
    // The manifest's `[variables] greeting` default, through the component's
    // `{{ greeting }}` variable and spin-sdk's `variables::get`.
    assert_eq!(answer.text(), "Hello from a Spin variable");
}

#[test]
fn routes_are_printed_the_way_spin_up_prints_them() {
    let server = template_app(Server::start);
    let base = format!("http://{}", server.addr);
    let log = server.log();
    let expected = format!(
        "\nServing {base}\nAvailable Routes:\n  template-hello: {base} (wildcard)\n    \
         Answers every path with the greeting variable.\n"
    );
    assert!(log.contains(&expected), "{log}");
}

#[test]
fn the_listen_address_is_read_from_spin_http_listen_addr() {
    let server = template_app(Server::start_with_listen_env);
    assert_eq!(get(&server.url("/")).status, 200);
}

#[test]
fn an_application_variable_is_overridden_from_the_environment() {
    artifact("wasm32-wasip2/release/template_hello.wasm");
    let args = serve_args("tests/template-app");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let spinbench = artifact("release/spinbench");
    let server = Server::start_configured("template-app", &spinbench, &args, |command, addr| {
        command
            .arg("--listen")
            .arg(addr.to_string())
            .env("SPIN_VARIABLE_GREETING", "Hello from the environment");
    });
    assert_eq!(get(&server.url("/")).text(), "Hello from the environment");
}

/// `fermyon:spin/key-value@2.0.0` through spin-sdk 5: the default store, in
/// the state directory, keeps the count across requests.
#[test]
fn the_template_key_value_app_counts_in_the_default_store() {
    artifact("wasm32-wasip2/release/template_kv.wasm");
    let state = tempfile::tempdir().unwrap();
    let mut args = serve_args("tests/template-app/kv");
    args.extend(["--state-dir".into(), state.path().display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start("template-kv", &artifact("release/spinbench"), &args);
    for n in 1..=3 {
        let answer = get(&server.url("/"));
        assert_eq!(answer.status, 200, "{}", answer.text());
        assert_eq!(answer.text(), format!("request {n}"));
    }
    assert!(state.path().join("sqlite_key_value.db").is_file());
}

/// `fermyon:spin/llm@2.0.0` is linked and denied, as `spin up` denies a model
/// the manifest's `ai_models` does not list: the app starts and the call fails.
#[test]
fn the_template_llm_app_starts_and_its_model_is_denied() {
    artifact("wasm32-wasip2/release/template_llm.wasm");
    let args = serve_args("tests/template-app/llm");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start("template-llm", &artifact("release/spinbench"), &args);
    let answer = get(&server.url("/"));
    assert_eq!(answer.status, 500, "{}", answer.text());
    // The guest's error reaches the log through the log queue: wait for it.
    let denied = "The component does not have access to use 'llama2-chat'";
    let start = Instant::now();
    while !server.log().contains(denied) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The same component, its import renamed to a version no Spin serves (the
/// name is the same length, so the binary stays valid).
fn component_importing_llm_9(dir: &std::path::Path) -> std::path::PathBuf {
    let wasm = std::fs::read(artifact("wasm32-wasip2/release/template_llm.wasm")).unwrap();
    let (from, to) = (b"fermyon:spin/llm@2.0.0", b"fermyon:spin/llm@9.0.0");
    let at = wasm
        .windows(from.len())
        .position(|w| w == from)
        .expect("template_llm.wasm imports fermyon:spin/llm@2.0.0");
    let mut renamed = wasm.clone();
    renamed[at..at + to.len()].copy_from_slice(to);
    let manifest = dir.join("spin.toml");
    std::fs::write(dir.join("llm9.wasm"), renamed).unwrap();
    std::fs::write(
        &manifest,
        "spin_manifest_version = 2\n[application]\nname = \"llm9\"\n\
         [[trigger.http]]\nroute = \"/...\"\ncomponent = \"llm9\"\n\
         [component.llm9]\nsource = \"llm9.wasm\"\n",
    )
    .unwrap();
    manifest
}

#[test]
fn a_component_importing_what_the_runner_lacks_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = component_importing_llm_9(dir.path());
    let mut child = Command::new(artifact("release/spinbench"))
        .args(["serve", "-f"])
        .arg(&manifest)
        .args(["--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spinbench starts");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_mins(1) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("spinbench kept running instead of refusing the component");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!status.success(), "exited with {status}: {stderr}");
    assert!(
        output.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        [
            "Error: component \"llm9\" imports `fermyon:spin/llm@9.0.0`, \
             which spinbench serve does not provide; `spin up` runs this app"
        ],
        "{stderr}"
    );
}

/// Every duration flag takes Spin's forms (`300ms`, `1s`) as well as bare
/// seconds, and the WASIp3 reuse flags carry Spin's names; `-f` takes a file too.
#[test]
fn duration_flags_take_units_and_reuse_flags_spins_names() {
    artifact("wasm32-wasip2/release/misbehaving.wasm");
    let manifest = workspace_root().join("tests/misbehaving/spin.toml");
    let cache = workspace_root().join("target/e2e-cache");
    let server = Server::start(
        "spin-flags",
        &artifact("release/spinbench"),
        &[
            "serve",
            "-f",
            manifest.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
            "--request-timeout",
            "300ms",
            "--queue-timeout",
            "1s",
            "--header-read-timeout",
            "10",
            "--shutdown-grace",
            "0.5",
            "--idle-instance-timeout",
            "2s",
            "--max-instance-reuse-count",
            "4",
            "--max-instance-concurrent-reuse-count",
            "2",
        ],
    );
    let start = Instant::now();
    let answer = get(&server.url("/misbehave/loop"));
    assert_eq!(answer.status, 504, "{}", answer.text());
    // 300 ms, not the 30 s default: the unit was read.
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

/// `compare -f` on the app's benchmark file (tests/template-app/spinbench.toml)
/// measures the component with its variable (a wasm host given the component
/// alone must still hand it the app's variables) beside its native
/// counterpart, and leaves nothing in the app's directory.
#[test]
fn the_template_app_is_compared_with_its_native_counterpart() {
    artifact("wasm32-wasip2/release/template_hello.wasm");
    artifact("release/template-hello-native");
    // Files an earlier, killed run may have left are not this run's.
    let before = spinbench_files();
    let report = e2e::compare(
        &[
            "-f",
            "tests/template-app",
            "--quick",
            "--measurements",
            "process_cold_start,load",
        ],
        "template-app",
    );
    support::assert_valid_report(&report);
    assert_eq!(
        report["plan"]["functions"],
        serde_json::json!(["template-hello"])
    );
    for host in ["native", "wasm"] {
        for (measurement, name) in [("process_cold_start", "first_200"), ("load", "throughput")] {
            support::assert_measured(&report, measurement, host, name);
        }
    }
    let left: Vec<_> = spinbench_files()
        .into_iter()
        .filter(|name| !before.contains(name))
        .collect();
    assert!(left.is_empty(), "left in the app's directory: {left:?}");
}

/// compare's one-component manifests in the template app's directory.
fn spinbench_files() -> Vec<String> {
    std::fs::read_dir(workspace_root().join("tests/template-app"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".spinbench"))
        .collect()
}
