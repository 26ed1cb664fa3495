//! The node: the function set in containers on a real containerd (>= 1.7.7) from
//! a real registry (Debian's docker-registry), under spinbench's containerd shim
//! (`io.containerd.spinbench.v1`), as Spin's OCI artifact (`spinbench registry
//! push`) and as an image with files; each test with a containerd of its own
//! (`e2e::node`: its own state and socket, stopped and removed afterwards). The containers use the host's network, listening
//! on a free loopback port (`SPIN_HTTP_LISTEN_ADDR`): a pod's own network is
//! the CNI's, which is not the shim's concern.
//!
//! Where the machine cannot run containers (not root, no containerd >= 1.7.7,
//! runc, docker-registry, or no shim built: `make build` builds it where protoc
//! and libseccomp are), each node test says "skipped" with what is missing.
//! `.ci/run` installs all of it. The other tests need none of it: what
//! deploy/local-node.sh says when a tool is missing, and `load --url`.

use e2e::apps::{built_function_set, one_component_app};
use e2e::contract::cases;
use e2e::node::{self, Node};
use e2e::registry::hello_app;
use e2e::report as support;
use e2e::{Server, artifact, on_path, workspace_root};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Whether this machine can run the node; says why not if it cannot.
fn node_can_run(test: &str) -> bool {
    let missing = node::missing();
    if !missing.is_empty() {
        eprintln!("skipped: {test} needs {}", missing.join(", "));
    }
    missing.is_empty()
}

/// The function set (spin.toml) pushed as an image with files and pulled.
fn function_set_files_image(node: &Node) -> String {
    let manifest = built_function_set();
    node.push_and_pull("files_image.py", &[&manifest], "spinbench:files", true)
}

/// The function set pushed as Spin's OCI artifact and pulled.
fn function_set_artifact(node: &Node) -> String {
    node.push_artifact_and_pull(&built_function_set(), "spinbench:artifact")
}

#[test]
fn the_function_set_answers_its_contract_in_a_container_and_stops_on_sigterm() {
    if !node_can_run("the function set in a container") {
        return;
    }
    let node = Node::start();
    let image = function_set_artifact(&node);
    let mut container = node.run("functions", &image, &[]);
    let runner = Server::runner(&[]);
    // The same host in and out of a container: the same answer to every case.
    for case in cases() {
        let from_container = case.send_to(&container.url(""));
        let from_runner = case.send_to(&runner.url(""));
        assert_eq!(
            from_container.status,
            case.expect,
            "{}: {}",
            case.describe(),
            from_container.text()
        );
        assert_eq!(from_container, from_runner, "{}", case.describe());
    }
    // The host's lines are the container's stdout and stderr (what `ctr run`
    // shows), and its components were compiled outside it, by the precompile hook.
    let log = container.log();
    assert!(log.contains("Available Routes:"), "{log}");
    for id in e2e::functions() {
        assert!(
            log.contains(&format!("{id}: loaded from cache")),
            "{id}:\n{log}"
        );
    }
    assert!(!log.contains("compiled in"), "{log}");

    // SIGTERM (`ctr task kill`'s default): in-flight requests get the host's grace
    // (10 s, within Kubernetes' default 30 s), then the task exits 0.
    let slow = {
        let url = container.url("/io?ms=1500");
        std::thread::spawn(move || e2e::get(&url))
    };
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    node.ctr_ok(&["task", "kill", "functions"]);
    assert_eq!(
        slow.join().unwrap().status,
        200,
        "the in-flight request finished"
    );
    let stopped = container.wait_for_exit(Duration::from_secs(15));
    assert!(
        stopped.is_some_and(|s| s.success()),
        "{stopped:?}: {}",
        container.log()
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert!(
        container.log().contains("shutting down"),
        "{}",
        container.log()
    );
    node.ctr_ok(&["container", "delete", "functions"]);
    assert_eq!(node.leftovers("functions"), Vec::<String>::new());
}

#[test]
fn killed_and_deleted_containers_leave_nothing_behind() {
    if !node_can_run("kill and delete") {
        return;
    }
    let node = Node::start();
    let image = function_set_files_image(&node);
    let container = node.run("killed", &image, &[]);
    assert_eq!(e2e::get(&container.url("/hello")).status, 200);
    let pid = node.task_pid("killed").expect("a running task");
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    assert!(
        !node.leftovers("killed").is_empty(),
        "what is looked for is there while it runs"
    );
    node.ctr_ok(&["task", "kill", "--signal", "SIGKILL", "killed"]);
    let start = Instant::now();
    while node.task_pid("killed").is_some() && start.elapsed() < Duration::from_secs(10) {
        // `ctr run` deletes the task once it has exited; until then, retry.
        let _ = node.ctr(&["task", "delete", "killed"]);
        std::thread::sleep(Duration::from_millis(100));
    }
    node.ctr_ok(&["container", "delete", "killed"]);
    assert_eq!(node.leftovers("killed"), Vec::<String>::new());
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
}

#[test]
fn bad_images_exit_non_zero_with_the_reason_while_others_carry_on() {
    if !node_can_run("bad images") {
        return;
    }
    let node = Node::start();
    let image = function_set_files_image(&node);
    // A good container, limited to 256 MiB: the shim bounds its pool by it.
    let good = node.run(
        "good",
        &image,
        &["--memory-limit", &(256u64 << 20).to_string()],
    );
    assert!(
        good.log()
            .contains("memory limit 256 MiB: up to 11 instances of at most 16 MiB"),
        "{}",
        good.log()
    );
    let bad = bad_images(&node);
    for (id, image, extra, reason) in &bad {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let (status, log) = node.run_to_exit(id, image, &extra);
        assert!(!status.success(), "{id}: {status}\n{log}");
        assert!(log.contains(reason), "{id}: no {reason:?} in:\n{log}");
        node.ctr_ok(&["container", "delete", id]);
        assert_eq!(node.leftovers(id), Vec::<String>::new(), "{id}");
        // containerd and the good container carry on.
        assert!(node.ctr(&["version"]).status.success());
        assert_eq!(e2e::get(&good.url("/hello")).status, 200, "after {id}");
    }
}

#[test]
fn an_artifact_is_precompiled_once_and_its_containers_compile_nothing() {
    if !node_can_run("precompile") {
        return;
    }
    let node = Node::start();
    let image = node.push_artifact_and_pull(
        &hello_app(&node.scratch("hello-app"), "deploy"),
        "hello:artifact",
    );
    for (run, id) in ["first", "second"].iter().enumerate() {
        let mut container = node.run(id, &image, &[]);
        assert_eq!(e2e::get(&container.url("/hello")).status, 200);
        let log = container.log();
        assert!(
            log.contains("hello: loaded from cache"),
            "start {run}:\n{log}"
        );
        assert!(!log.contains("compiled in"), "start {run}:\n{log}");
        node.ctr_ok(&["task", "kill", id]);
        assert!(container.wait_for_exit(Duration::from_secs(15)).is_some());
        node.ctr_ok(&["container", "delete", id]);
        // From the first start on, every layer of the image is labelled with
        // its precompiled content for this shim: the library compiles an
        // image again only when a layer lacks the label.
        for layer in layers_of(&node, &image) {
            let labels = content_labels(&node, &layer);
            assert!(
                labels.contains("runwasi.io/precompiled/spinbench/"),
                "start {run}: {layer}: {labels}"
            );
        }
    }
}

#[test]
fn the_wasip3_flavour_runs_in_a_container() {
    if !node_can_run("the WASIp3 flavour") {
        return;
    }
    for wasm in ["hello_p3", "echo_p3"] {
        artifact(&format!("p3/wasm32-wasip2/release/{wasm}.wasm"));
    }
    let node = Node::start();
    let manifest = workspace_root().join("spin-p3.toml");
    let image = node.push_artifact_and_pull(&manifest, "spinbench:p3");
    let container = node.run("p3", &image, &[]);
    let runner = Server::runner_with(&manifest, &[]);
    for case in cases().iter().filter(|c| c.on_own_route()) {
        let from_container = case.send_to(&container.url(""));
        assert_eq!(
            from_container,
            case.send_to(&runner.url("")),
            "{}",
            case.describe()
        );
    }
    let log = container.log();
    assert!(log.contains("hello: loaded from cache"), "{log}");
    assert!(log.contains("WASIp3, instances reused"), "{log}");
}

/// The layer digests of `image`'s manifest, read from containerd's content store.
fn layers_of(node: &Node, image: &str) -> Vec<String> {
    let list = node.ctr_ok(&["image", "ls"]);
    let digest = list
        .lines()
        .find(|l| l.split_whitespace().next() == Some(image))
        .and_then(|l| l.split_whitespace().find(|w| w.starts_with("sha256:")))
        .unwrap_or_else(|| panic!("{image} not in:\n{list}"))
        .to_string();
    let manifest: Value = serde_json::from_str(&node.ctr_ok(&["content", "get", &digest])).unwrap();
    manifest["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["digest"].as_str().unwrap().to_string())
        .collect()
}

/// The labels of content `digest` (`ctr content ls`'s last column).
fn content_labels(node: &Node, digest: &str) -> String {
    node.ctr_ok(&["content", "ls"])
        .lines()
        .find(|l| l.starts_with(digest))
        .unwrap_or_default()
        .to_string()
}

/// An artifact's manifest with the layers of `media_type` left out, put as `tag`
/// of `repository` and pulled: the layers are there, the app is not whole.
fn artifact_without(node: &Node, repository: &str, media_type: &str, tag: &str) -> String {
    let (status, body) = node
        .registry
        .get(&format!("/v2/{repository}/manifests/artifact"), true)
        .expect("the registry answers");
    assert_eq!(status, 200);
    let mut manifest: Value = serde_json::from_slice(&body).unwrap();
    let layers = manifest["layers"].as_array_mut().unwrap();
    layers.retain(|l| l["mediaType"] != media_type);
    let bytes = serde_json::to_vec(&manifest).unwrap();
    let manifest_type = "application/vnd.oci.image.manifest.v1+json";
    node.registry
        .put_manifest(repository, tag, manifest_type, &bytes);
    node.pull(&format!("{repository}:{tag}"), true)
}

/// Images the shim must refuse, each with what its log must say.
fn bad_images(node: &Node) -> Vec<(String, String, Vec<String>, &'static str)> {
    let hello = artifact("wasm32-wasip2/release/hello.wasm");
    node.push_artifact_and_pull(
        &hello_app(&node.scratch("hello-app"), "deploy"),
        "hello:artifact",
    );
    let wasm_layer = "application/vnd.wasm.content.layer.v1+wasm";
    let no_wasm = artifact_without(node, "hello", wasm_layer, "no-wasm");
    // Not a Spin app: an image of one data file, no spin.toml.
    let notes = node.scratch("notes").join("notes.txt");
    std::fs::write(&notes, "not an app\n").unwrap();
    let not_spin = node.push_and_pull("native_image.py", &[&notes], "notes:1", true);
    // An app the host refuses: a trigger type Spin does not build in.
    let cron = app_dir(
        node,
        "cron",
        "[[trigger.cron]]\ncron_expression = \"1/2 * * * * *\"\ncomponent = \"hello\"\n",
        &std::fs::read(&hello).unwrap(),
    );
    let cron = node.push_and_pull("files_image.py", &[&cron], "cron:1", true);
    // A component that is not wasm.
    let junk = app_dir(
        node,
        "junk",
        "[[trigger.http]]\nroute = \"/hello\"\ncomponent = \"hello\"\n",
        b"not wasm",
    );
    let junk = node.push_and_pull("files_image.py", &[&junk], "junk:1", true);
    vec![
        (
            "no-wasm".into(),
            no_wasm,
            vec![],
            "the artifact has no such layer",
        ),
        ("not-spin".into(), not_spin, vec![], "not a Spin app"),
        ("refused".into(), cron, vec![], "[[trigger.cron]]"),
        ("junk".into(), junk, vec![], "is not a component"),
        // A memory limit that cannot hold the host and two instances.
        (
            "small".into(),
            image_of_good(node),
            vec!["--memory-limit".into(), (64u64 << 20).to_string()],
            "memory limit (64 MiB)",
        ),
    ]
}

fn image_of_good(node: &Node) -> String {
    node.registry.reference("spinbench:files")
}

/// A one-component app directory: spin.toml with `trigger`, its `hello.wasm` `wasm`.
fn app_dir(node: &Node, name: &str, trigger: &str, wasm: &[u8]) -> PathBuf {
    one_component_app(&node.scratch(name), name, trigger, wasm)
}

#[test]
fn local_node_sh_measures_hello_as_wasm_and_native_containers_and_leaves_nothing() {
    if !node_can_run("deploy/local-node.sh") {
        return;
    }
    let results = results_dir("node");
    // Few starts and requests: this checks the path, not the figures.
    let output = Command::new(workspace_root().join("deploy/local-node.sh"))
        .args(["--runs", "2", "--running", "2", "--requests", "500"])
        .arg("--results-dir")
        .arg(&results)
        .output()
        .expect("deploy/local-node.sh runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let md = stdout
        .lines()
        .find_map(|l| l.strip_prefix("node figures: "))
        .unwrap_or_else(|| panic!("no `node figures:` line in:\n{stdout}"));
    let dir = workspace_root().join(md).parent().unwrap().to_path_buf();
    let node: Value =
        serde_json::from_slice(&std::fs::read(dir.join("node.json")).unwrap()).unwrap();
    for runtime in ["spinbench", "spinbench-files", "native"] {
        let r = &node[runtime];
        assert_eq!(
            r["start_ms"].as_array().map(Vec::len),
            Some(2),
            "{runtime}: {r}"
        );
        for key in ["pss_kib", "pss_with_shim_kib", "cpu_us_per_request"] {
            assert!(
                r[key].as_f64().is_some_and(|v| v > 0.0),
                "{runtime}.{key}: {r}"
            );
        }
        assert_eq!(r["requests"], 500, "{runtime}: {r}");
        assert_eq!(r["errors"], 0, "{runtime}: {r}");
        assert_eq!(r["left_behind"], serde_json::json!([]), "{runtime}: {r}");
    }
    if on_path("containerd-shim-spin-v2").is_none() {
        let skipped = node["spin"]["skipped"].as_str().unwrap_or_default();
        assert!(skipped.contains("not on PATH"), "{}", node["spin"]);
    }
    let md = std::fs::read_to_string(dir.join("node.md")).unwrap();
    assert!(md.contains("| `ctr run` to the first `200`"), "{md}");
    // Every process of the run was stopped by the script.
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|p| std::fs::read(p.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("/tmp/spinbench-node."))
        .collect();
    assert!(left.is_empty(), "processes outlived the script: {left:?}");
}

#[test]
fn local_node_sh_names_what_is_missing_and_starts_nothing() {
    let output = Command::new(workspace_root().join("deploy/local-node.sh"))
        .args(["--manifest", "no-such-spin.toml"])
        .output()
        .expect("deploy/local-node.sh runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no-such-spin.toml: a Spin manifest v2 (--manifest)"),
        "{stderr}"
    );
}

fn results_dir(label: &str) -> PathBuf {
    workspace_root().join(format!(
        "target/e2e-results/deploy-{label}-{}",
        std::process::id()
    ))
}

/// The report a run wrote (the path after its `report: ` line), and its directory.
fn report_of(output: &Output) -> (Value, PathBuf) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("report: "))
        .unwrap_or_else(|| panic!("no `report:` line in:\n{stdout}"));
    let path = workspace_root().join(line.trim());
    let report = serde_json::from_slice(&std::fs::read(&path).expect("report.json"))
        .expect("report.json is JSON");
    support::assert_valid_report(&report);
    (report, path.parent().unwrap().to_path_buf())
}

#[test]
fn load_url_names_what_served_it() {
    if on_path("oha").is_none() {
        eprintln!("skipped: oha is not on PATH (make setup installs it)");
        return;
    }
    let server = Server::runner(&[]);
    let results = results_dir("load-url");
    let output = load_url(
        &server.url(""),
        &results,
        &["--host-version", "containerd=containerd 1.7.24"],
    );
    assert!(output.status.success(), "{output:?}");
    let (report, dir) = report_of(&output);
    assert_eq!(
        report["versions"]["host"],
        serde_json::json!({ "containerd": "containerd 1.7.24" })
    );
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("Served by (as `--host-version` named it): containerd: containerd 1.7.24."),
        "{md}"
    );
    // A value that is not NAME=VERSION is refused before any load is sent.
    let bad = load_url(&server.url(""), &results, &["--host-version", "containerd"]);
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("expected NAME=VERSION"),
        "{bad:?}"
    );
}

fn load_url(url: &str, results: &Path, extra: &[&str]) -> Output {
    Command::new(artifact("release/spinbench"))
        .current_dir(workspace_root())
        .args(["load", "--url", url, "--quick", "--functions", "hello"])
        .arg("--results-dir")
        .arg(results)
        .args(extra)
        .output()
        .expect("spinbench load runs")
}
