//! `spinbench compare` measures a host as its whole process tree and leaves no
//! process behind. The host here is a native server started through a shell
//! wrapper that stays alive as its parent and waits, as `spin up` does with
//! its `spin trigger http` child: the wrapper itself uses next to no CPU or
//! memory, so figures of the wrapper alone would read as near zero.
//!
//! Every process the run starts inherits a marker in its environment, so the
//! tests can find any of them left running, whoever its parent is by then.

use e2e::{artifact, workspace_root};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const MARK: &str = "SPINBENCH_E2E_TREE_MARK";

/// A scratch directory with the wrapper script, unique to this test.
fn scratch(test: &str) -> PathBuf {
    let dir = workspace_root().join(format!("target/e2e-tree/{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Stays alive as the parent of the server it starts.
    std::fs::write(dir.join("wrap.sh"), "#!/bin/sh\n\"$@\" &\nwait\n").unwrap();
    dir
}

/// `spinbench compare` with `args`, marked, writing its report under `dir`.
fn compare(dir: &Path, test: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(artifact("release/spinbench"));
    cmd.current_dir(workspace_root())
        .env(MARK, mark(test))
        .arg("compare")
        .args(args)
        .arg("--results-dir")
        .arg(dir.join("results"));
    cmd
}

fn mark(test: &str) -> String {
    format!("{}-{test}", std::process::id())
}

/// Running (not zombie) processes carrying this test's marker: (pid, command line).
fn marked(test: &str) -> Vec<(u32, String)> {
    let needle = format!("{MARK}={}", mark(test));
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let carries = environ
            .split(|b| *b == 0)
            .any(|var| var == needle.as_bytes());
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'));
        if carries && !zombie {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push((pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")));
        }
    }
    found
}

/// Fails if any process of the run is still running a moment after it ended
/// (SIGKILLed processes take a moment to go).
fn assert_none_left(test: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut left = marked(test);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left = marked(test);
    }
    // Clean up after a failure, so one failing test does not leave servers.
    for (pid, _) in &left {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert!(left.is_empty(), "processes left running: {left:#?}");
}

fn report_of(stdout: &str) -> Value {
    let line = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("report: "))
        .unwrap_or_else(|| panic!("no `report:` line in:\n{stdout}"));
    serde_json::from_slice(&std::fs::read(workspace_root().join(line.trim())).unwrap()).unwrap()
}

fn find<'a>(
    report: &'a Value,
    measurement: &str,
    function: &str,
    host: &str,
    metric: &str,
    k: Option<u64>,
) -> &'a Value {
    report["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| {
            m["measurement"] == measurement
                && m["function"] == function
                && m["host"] == host
                && m["metric"] == metric
                && m["k"].as_u64() == k
        })
        .unwrap_or_else(|| panic!("no {measurement} {function} {host} {metric} k={k:?}"))
}

fn p50(m: &Value) -> f64 {
    m["summary"]["p50"]
        .as_f64()
        .unwrap_or_else(|| panic!("no figure: {m}"))
}

/// The share of `m` counted in processes whose command starts with `program`.
fn share_of(m: &Value, program: &str) -> f64 {
    m["processes"]
        .as_array()
        .unwrap_or_else(|| panic!("no processes listed: {m}"))
        .iter()
        .filter(|p| p["command"].as_str().unwrap().starts_with(program))
        .map(|p| p["share"].as_f64().unwrap())
        .sum()
}

/// CPU under load and memory with K live requests of the wrapped host are its
/// child's: of the order of the same server run directly, counted in the
/// child's process, not the wrapper's near zero. Then nothing is left running.
#[test]
fn a_wrapped_host_is_measured_as_its_process_tree() {
    let test = "tree";
    let dir = scratch(test);
    let wrapped = format!(
        "wrapped=sh {}/wrap.sh {{native}} --listen {{addr}}",
        dir.display()
    );
    let output = compare(
        &dir,
        test,
        &[
            "--quick",
            "--functions",
            "cpu,io",
            "--hosts",
            "native,wrapped",
            "--measurements",
            "memory,load",
            "--command-host",
            &wrapped,
        ],
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "compare failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_none_left(test);
    let report = report_of(&stdout);

    // CPU under load: the child's, comparable with the same server run directly.
    let cpu = find(&report, "load", "cpu", "wrapped", "server_cpu", None);
    let native_cpu = p50(find(&report, "load", "cpu", "native", "server_cpu", None));
    assert!(
        p50(cpu) > 0.25 * native_cpu && p50(cpu) > 0.05,
        "wrapped {} cores vs native {native_cpu}",
        p50(cpu)
    );
    let native = |f: &str| {
        artifact(&format!("release/{f}-native"))
            .display()
            .to_string()
    };
    assert!(share_of(cpu, &native("cpu")) > 0.9, "{cpu}");
    assert!(share_of(cpu, "sh ") < 0.1, "{cpu}");

    // Memory: the tree's, and K live requests grow the child.
    let idle = find(&report, "memory", "io", "wrapped", "idle_pss", None);
    let native_idle = p50(find(&report, "memory", "io", "native", "idle_pss", None));
    assert!(
        p50(idle) > 0.9 * native_idle,
        "{idle} vs native {native_idle}"
    );
    assert!(share_of(idle, &native("io")) > 0.5, "{idle}");
    let k = 100;
    let per_instance = find(
        &report,
        "memory",
        "io",
        "wrapped",
        "pss_per_instance",
        Some(k),
    );
    let native_per_instance = p50(find(
        &report,
        "memory",
        "io",
        "native",
        "pss_per_instance",
        Some(k),
    ));
    assert!(
        p50(per_instance) > 0.25 * native_per_instance && p50(per_instance) > 0.0,
        "wrapped {per_instance} vs native {native_per_instance}"
    );
    assert!(
        share_of(per_instance, &native("io")) > 0.9,
        "{per_instance}"
    );
    let held = find(
        &report,
        "memory",
        "io",
        "wrapped",
        "live_requests_held",
        Some(k),
    );
    assert_eq!(p50(held), k as f64);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A host that fails (here: its child serves another function, so the probe
/// gets a 404) is reported as failed, and its child is stopped with it.
#[test]
fn a_host_that_fails_leaves_no_process() {
    let test = "fails";
    let dir = scratch(test);
    let hello = artifact("release/hello-native");
    let broken = format!(
        "broken=sh {}/wrap.sh {} --listen {{addr}}",
        dir.display(),
        hello.display()
    );
    let output = compare(
        &dir,
        test,
        &[
            "--quick",
            "--functions",
            "io",
            "--hosts",
            "broken",
            "--measurements",
            "load",
            "--command-host",
            &broken,
        ],
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "compare failed:\n{stdout}");
    assert_none_left(test);
    let report = report_of(&stdout);
    let throughput = find(&report, "load", "io", "broken", "throughput", Some(100));
    let why = throughput["skipped"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("failed") && why.contains("404"),
        "{throughput}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Ctrl-C (SIGINT to `spinbench compare` alone, as when it runs in the
/// background) while a wrapped host is under load: compare exits 130 and
/// stops the host's tree and oha.
#[test]
fn ctrl_c_stops_every_process_the_run_started() {
    let test = "ctrl-c";
    let dir = scratch(test);
    let wrapped = format!(
        "wrapped=sh {}/wrap.sh {{native}} --listen {{addr}}",
        dir.display()
    );
    let mut child: Child = compare(
        &dir,
        test,
        &[
            "--functions",
            "cpu",
            "--hosts",
            "wrapped",
            "--measurements",
            "load",
            "--duration",
            "60",
            "--command-host",
            &wrapped,
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    // Wait until the load runs: the wrapper, its server and oha are up.
    let native = artifact("release/cpu-native").display().to_string();
    let deadline = Instant::now() + Duration::from_mins(1);
    loop {
        let running = marked(test);
        let has = |program: &str| running.iter().any(|(_, c)| c.starts_with(program));
        if has(&native) && has("sh ") && running.iter().any(|(_, c)| c.contains("oha ")) {
            break;
        }
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            assert_none_left(test);
            panic!("the load never started: {running:#?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            assert_none_left(test);
            panic!("compare did not exit on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130), "{status}");
    assert_none_left(test);
    let _ = std::fs::remove_dir_all(&dir);
}
