//! deploy/local-node.sh, the node below SpinKube on this machine: a registry and
//! containerd on loopback, the app pushed, pulled and run under the Spin containerd
//! shim, then `spinbench load --url` against it. The whole path runs when its tools
//! are here (root, containerd >= 1.7.7, ctr, docker-registry, the shim on PATH or
//! as CONTAINERD_SHIM_SPIN); otherwise it is skipped with a line saying what is
//! missing, and the test passes: CI has none of them. The two other tests need
//! none of them: what the script says when a tool is missing, and `load --url`
//! naming what served it.

use e2e::report as support;

use e2e::{Server, artifact, on_path, workspace_root};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    workspace_root().join("deploy/local-node.sh")
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

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

/// What the full path needs and this machine lacks.
fn missing_for_the_node() -> Vec<String> {
    let mut missing: Vec<String> = ["containerd", "ctr", "docker-registry", "curl", "oha"]
        .into_iter()
        .filter(|tool| on_path(tool).is_none())
        .map(String::from)
        .collect();
    let shim = std::env::var_os("CONTAINERD_SHIM_SPIN")
        .map(PathBuf::from)
        .or_else(|| on_path("containerd-shim-spin-v2"));
    if !shim.is_some_and(|s| s.is_file()) {
        missing.push("containerd-shim-spin-v2 (on PATH or as CONTAINERD_SHIM_SPIN)".into());
    }
    if !is_root() {
        missing.push("root".into());
    }
    missing
}

#[test]
fn the_app_runs_under_containerd_and_the_spin_shim_and_is_measured() {
    let missing = missing_for_the_node();
    if !missing.is_empty() {
        eprintln!(
            "skipped: deploy/local-node.sh needs {} (deploy/README.md says how to get each)",
            missing.join(", ")
        );
        return;
    }
    artifact("release/spinbench");
    artifact("wasm32-wasip2/release/hello.wasm");
    let results = results_dir("node");
    let output = Command::new(script())
        .arg("--results-dir")
        .arg(&results)
        .args(["--", "--quick", "--functions", "hello,echo"])
        .output()
        .expect("deploy/local-node.sh runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "local-node.sh failed:\n{stdout}\n{stderr}"
    );
    let (report, dir) = report_of(&output);
    // The report names what served the URL: the shim, containerd and the registry.
    let host = &report["versions"]["host"];
    let named = |key: &str, word: &str| {
        let v = host[key].as_str().unwrap_or_default();
        assert!(v.contains(word), "versions.host.{key} = {v:?}");
    };
    named("shim", "spin");
    named("containerd", "containerd");
    named("registry", "distribution");
    // Beside it, what `load --url` cannot see: the shim's start and its processes.
    let node = std::fs::read_to_string(dir.join("local-node.md")).expect("local-node.md");
    assert!(
        node.contains("to the first `200` of `GET /hello` (ms) | "),
        "{node}"
    );
    assert!(!node.contains("processes before the load | 0 |"), "{node}");

    // Every scenario was answered under the shim, without errors.
    let load = support::metrics(&report, "load", "remote");
    for f in ["hello", "echo"] {
        let throughput = load
            .iter()
            .find(|m| m["function"] == f && m["metric"] == "throughput")
            .unwrap_or_else(|| panic!("no throughput for {f}"));
        assert!(throughput["skipped"].is_null(), "{throughput}");
        assert!(throughput["summary"]["p50"].as_f64().unwrap() > 0.0);
        let errors = load
            .iter()
            .find(|m| m["function"] == f && m["metric"] == "errors")
            .unwrap_or_else(|| panic!("no errors row for {f}"));
        assert_eq!(errors["summary"]["p50"], 0.0, "{errors}");
    }
    // Stopped by PID: no process is left with the run's containerd socket.
    assert!(
        left_behind().is_empty(),
        "processes outlived the script: {:?}",
        left_behind()
    );
}

/// Processes still holding a /tmp/spinbench-node.* path on their command line.
fn left_behind() -> Vec<String> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|p| std::fs::read(p.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("/tmp/spinbench-node."))
        .collect()
}

#[test]
fn a_missing_shim_is_named_with_how_to_get_it() {
    // An executable that is not there: the script refuses before it starts anything.
    let output = Command::new(script())
        .env(
            "CONTAINERD_SHIM_SPIN",
            "/nonexistent/containerd-shim-spin-v2",
        )
        .output()
        .expect("deploy/local-node.sh runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.trim_start().starts_with("containerd-shim-spin-v2:"))
        .unwrap_or_else(|| panic!("the shim is not named:\n{stderr}"));
    assert!(
        line.contains("cargo build --release -p containerd-shim-spin-v2"),
        "{line}"
    );
    assert!(line.contains("CONTAINERD_SHIM_SPIN"), "{line}");
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
