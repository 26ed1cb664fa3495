//! `spinbench compare --quick` end to end: it runs every measurement on every
//! function, and its report has the documented shape and sane values. Its speed
//! figures are not asserted: they belong in the report, not in a test.

use e2e::report as support;

use e2e::{artifact, workspace_root};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn spinbench(args: &[&str]) -> Output {
    Command::new(artifact("release/spinbench"))
        .current_dir(workspace_root())
        .args(args)
        .output()
        .expect("spinbench runs")
}

fn run_quick_compare(results: &Path) -> (Value, PathBuf) {
    let exports = results.join("exports");
    let (json, md) = (exports.join("report.json"), exports.join("report.md"));
    // The function set; the file's hellos from the Python and JavaScript apps
    // each compile for a minute per empty-cache start, and polyglot.rs measures them.
    let functions = e2e::functions().join(",");
    let (report, report_path) = e2e::compare_into(
        results,
        &[
            "--quick",
            "--functions",
            &functions,
            "--export-json",
            json.to_str().unwrap(),
            "--export-markdown",
            md.to_str().unwrap(),
        ],
    );
    // The exports are the same report.
    let exported: Value =
        serde_json::from_slice(&std::fs::read(exports.join("report.json")).unwrap()).unwrap();
    assert_eq!(exported, report, "--export-json");
    let md = std::fs::read_to_string(exports.join("report.md")).unwrap();
    assert!(
        md.starts_with("# spinbench compare"),
        "--export-markdown: {md}"
    );
    (report, report_path.parent().unwrap().to_path_buf())
}

#[test]
fn quick_compare_reports_every_function_on_native_and_wasm() {
    let results = workspace_root().join(format!("target/e2e-results/{}", std::process::id()));
    let (report, dir) = run_quick_compare(&results);
    assert_eq!(report["schema"], "spinbench-report/1");
    support::assert_valid_report(&report);
    assert!(report["machine"]["cores"].as_u64().unwrap() >= 1);

    let functions: BTreeSet<&str> = e2e::functions().iter().copied().collect();
    for measurement in [
        "load",
        "process_cold_start",
        "instance_cold_start",
        "build_and_size",
    ] {
        for host in ["native", "wasm"] {
            let found: BTreeSet<&str> = support::metrics(&report, measurement, host)
                .iter()
                .filter(|m| m["skipped"].is_null())
                .map(|m| m["function"].as_str().unwrap())
                .collect();
            // instance cold start has no "native" server host: its floor is native-fn.
            if measurement == "instance_cold_start" && host == "native" {
                continue;
            }
            assert_eq!(found, functions, "{measurement} on {host}");
        }
    }

    assert_summaries_ordered(&report);
    assert_load_served(&report, functions.len());
    assert_pinning_recorded(&report);
    assert_cpu_per_request(&report);
    assert_second_generator(&report);
    assert_installed_hosts_measured(&report, &functions);

    assert!(!report["ratios"].as_array().unwrap().is_empty());
    assert!(dir.join("report.md").exists());
    let charts = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "svg")
        })
        .count();
    assert!(charts >= 3, "only {charts} SVG charts in {}", dir.display());

    diff_against_itself_and_a_faster_baseline(&dir.join("report.json"), &results);
}

fn assert_summaries_ordered(report: &Value) {
    for metric in report["metrics"].as_array().unwrap() {
        let Some(summary) = metric["summary"].as_object() else {
            assert!(
                metric["skipped"].is_string() || metric["limit"].is_string(),
                "neither summary nor skip reason nor limit: {metric}"
            );
            continue;
        };
        let (min, p50, max) = (&summary["min"], &summary["p50"], &summary["max"]);
        let (min, p50, max) = (
            min.as_f64().unwrap(),
            p50.as_f64().unwrap(),
            max.as_f64().unwrap(),
        );
        assert!(
            min >= 0.0 && min <= p50 && p50 <= max,
            "unordered summary: {metric}"
        );
    }
}

fn assert_load_served(report: &Value, functions: usize) {
    // Load: every request answered, and something was served. A scenario that
    // runs in full runs only (io at 10,000 users) is reported as skipped.
    let mut served = 0;
    for m in support::metrics(report, "load", "wasm") {
        let Some(p50) = m["summary"]["p50"].as_f64() else {
            assert!(
                m["skipped"].is_string(),
                "neither figure nor skip reason: {m}"
            );
            continue;
        };
        if m["metric"] == "errors" {
            assert_eq!(p50, 0.0, "errors under load: {m}");
        }
        if m["metric"] == "throughput" {
            assert!(p50 > 0.0, "{m}");
            served += 1;
        }
    }
    assert!(served >= functions, "a throughput for every function");
}

/// `--pin auto` (the default): with 2 or more CPUs, the server and the
/// generators got disjoint, non-empty CPU sets; with one, nothing was pinned.
fn assert_pinning_recorded(report: &Value) {
    let pinning = &report["plan"]["pinning"];
    assert_eq!(pinning["mode"], "auto", "{pinning}");
    let cpus = |key: &str| -> Option<Vec<u64>> {
        pinning[key]
            .as_array()
            .map(|a| a.iter().map(|c| c.as_u64().unwrap()).collect())
    };
    match (cpus("server_cpus"), cpus("generator_cpus")) {
        (Some(server), Some(generator)) => {
            assert!(!server.is_empty() && !generator.is_empty(), "{pinning}");
            assert!(
                server.iter().all(|c| !generator.contains(c)),
                "overlapping: {pinning}"
            );
            assert!(server.len() >= generator.len(), "{pinning}");
        }
        (None, None) => assert_eq!(report["machine"]["cores"], 1, "not pinned: {pinning}"),
        _ => panic!("one side pinned: {pinning}"),
    }
    assert!(pinning["note"].as_str().is_some_and(|n| !n.is_empty()));
}

/// Every load scenario with a throughput on native and wasm has a server CPU
/// per request: a positive figure, or (a light scenario whose server used less
/// than one 10 ms clock tick) skipped for that reason; hello and echo, which
/// keep the server busy, always have a figure.
fn assert_cpu_per_request(report: &Value) {
    for host in ["native", "wasm"] {
        let rows = support::metrics(report, "load", host);
        for throughput in rows
            .iter()
            .filter(|m| m["metric"] == "throughput" && m["summary"].is_object())
        {
            let function = throughput["function"].as_str().unwrap();
            let per_request = rows
                .iter()
                .find(|m| {
                    m["metric"] == "server_cpu_per_request"
                        && m["function"] == function
                        && m["k"] == throughput["k"]
                })
                .unwrap_or_else(|| panic!("no server_cpu_per_request for {function} on {host}"));
            assert_eq!(per_request["unit"], "us");
            // Its kernel share, beside it, is a part of it.
            let kernel = rows
                .iter()
                .find(|m| {
                    m["metric"] == "server_kernel_cpu_per_request"
                        && m["function"] == function
                        && m["k"] == throughput["k"]
                })
                .unwrap_or_else(|| panic!("no kernel share for {function} on {host}"));
            if let (Some(part), Some(whole)) = (
                kernel["summary"]["p50"].as_f64(),
                per_request["summary"]["p50"].as_f64(),
            ) {
                assert!(part >= 0.0 && part <= whole, "{kernel} of {per_request}");
            }
            if let Some(us) = per_request["summary"]["p50"].as_f64() {
                assert!(us > 0.0 && us.is_finite(), "{per_request}");
            } else {
                assert!(
                    !["hello", "echo"].contains(&function),
                    "no CPU per request for {function} on {host}: {per_request}"
                );
                assert!(
                    per_request["skipped"]
                        .as_str()
                        .is_some_and(|s| s.contains("resolution")),
                    "{per_request}"
                );
            }
        }
    }
    assert!(
        report["ratios"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["metric"] == "server_cpu_per_request" && r["host"] == "wasm"),
        "no wasm/native ratio of CPU per request"
    );
}

/// With wrk on PATH, hello was measured once more with it on native and wasm
/// (its rate, the server's CPU per request under it); without, a warning
/// says the check was skipped.
fn assert_second_generator(report: &Value) {
    let wrk = Command::new("sh")
        .args(["-c", "command -v wrk"])
        .output()
        .is_ok_and(|o| o.status.success());
    let warned = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("`wrk` not on PATH"));
    assert_eq!(warned, !wrk, "{}", report["warnings"]);
    if !wrk {
        return;
    }
    assert!(report["versions"]["wrk"].is_string());
    for host in ["native", "wasm"] {
        let rows = support::metrics(report, "load", host);
        let of = |metric: &str| {
            rows.iter()
                .find(|m| m["function"] == "hello" && m["metric"] == metric)
                .and_then(|m| m["summary"]["p50"].as_f64())
                .unwrap_or_else(|| panic!("no {metric} for hello on {host}"))
        };
        assert!(of("throughput_wrk") > 0.0);
        assert!(of("server_cpu_per_request_wrk") > 0.0);
    }
}

fn assert_installed_hosts_measured(report: &Value, functions: &BTreeSet<&str>) {
    // Hosts that are not installed are reported as skipped, never faked; those
    // that are have a figure (or their limit) for every function, measured
    // over their whole process tree.
    for (host, program) in [
        ("spin", "spin"),
        ("wasmtime-serve", "wasmtime"),
        ("wasmtime-serve-tuned", "wasmtime"),
    ] {
        let on_path = Command::new("sh")
            .args(["-c", &format!("command -v {program}")])
            .output()
            .is_ok_and(|o| o.status.success());
        let rows = support::metrics(report, "load", host);
        if !on_path {
            assert!(
                rows.iter().all(|m| m["skipped"].is_string()),
                "{host} not skipped"
            );
            continue;
        }
        let measured: BTreeSet<&str> = rows
            .iter()
            .filter(|m| {
                m["metric"] == "throughput" && (m["summary"].is_object() || m["limit"].is_string())
            })
            .map(|m| m["function"].as_str().unwrap())
            .collect();
        assert_eq!(&measured, functions, "load on {host}");
        for m in rows.iter().filter(|m| m["metric"] == "server_cpu") {
            let cpu = m["summary"]["p50"].as_f64().unwrap();
            assert!(cpu > 0.0, "{host} used no CPU: {m}");
            assert!(
                m["processes"].as_array().is_some_and(|p| !p.is_empty()),
                "{m}"
            );
        }
    }
}

/// `spinbench diff`: a report against itself passes any gate; against a
/// baseline whose instance cold start was half as long, a 20 % gate on that
/// figure fails with exit code 3, and a gate on another figure does not.
fn diff_against_itself_and_a_faster_baseline(report: &Path, scratch: &Path) {
    let report_arg = report.to_str().unwrap();
    let same = spinbench(&["diff", report_arg, report_arg, "--fail-above", "0"]);
    assert!(
        same.status.success(),
        "{}",
        String::from_utf8_lossy(&same.stderr)
    );
    let same_stdout = String::from_utf8_lossy(&same.stdout);
    assert!(same_stdout.contains("| 1.00x |"));
    assert!(
        same_stdout.contains("| server_cpu_per_request (us) |"),
        "diff shows CPU per request: {same_stdout}"
    );

    let mut faster: Value = serde_json::from_slice(&std::fs::read(report).unwrap()).unwrap();
    halve(&mut faster, "instance_cold_start", "total");
    let baseline = scratch.join("faster-baseline.json");
    std::fs::write(&baseline, serde_json::to_vec(&faster).unwrap()).unwrap();
    let baseline_arg = baseline.to_str().unwrap();
    let gated = spinbench(&[
        "diff",
        baseline_arg,
        report_arg,
        "--fail-above",
        "20",
        "--fail-on",
        "instance_cold_start.total",
    ]);
    let stderr = String::from_utf8_lossy(&gated.stderr);
    assert_eq!(gated.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("regressed") && stderr.contains("instance_cold_start"),
        "{stderr}"
    );
    let other = spinbench(&[
        "diff",
        baseline_arg,
        report_arg,
        "--fail-above",
        "20",
        "--fail-on",
        "build_and_size",
    ]);
    assert!(
        other.status.success(),
        "{}",
        String::from_utf8_lossy(&other.stderr)
    );
}

/// Halves the median of every figure of `measurement`'s `metric` and drops its spread.
fn halve(report: &mut Value, measurement: &str, metric: &str) {
    for m in report["metrics"].as_array_mut().unwrap() {
        if m["measurement"] == measurement && m["metric"] == metric && m["summary"].is_object() {
            let p50 = m["summary"]["p50"].as_f64().unwrap();
            m["summary"]["p50"] = (p50 / 2.0).into();
            m["summary"]["mad"] = 0.0.into();
        }
    }
}

/// `compare --baseline`: a run held against a baseline with components half
/// their size fails the gate on binary size, with exit code 3.
#[test]
fn compare_against_a_baseline_gates_on_a_chosen_figure() {
    let results = workspace_root().join(format!(
        "target/e2e-results/baseline-{}",
        std::process::id()
    ));
    let results_arg = results.to_str().unwrap().to_string();
    // Both runs: hello's build and size only.
    let hello_size = [
        "compare",
        "--quick",
        "--functions",
        "hello",
        "--measurements",
        "build_and_size",
        "--results-dir",
        &results_arg,
    ];
    let first_json = format!("{results_arg}/first.json");
    let first = spinbench(&[&hello_size[..], &["--export-json", &first_json]].concat());
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let mut smaller: Value =
        serde_json::from_slice(&std::fs::read(results.join("first.json")).unwrap()).unwrap();
    support::assert_valid_report(&smaller);
    halve(&mut smaller, "build_and_size", "binary_size");
    let baseline = results.join("smaller.json");
    std::fs::write(&baseline, serde_json::to_vec(&smaller).unwrap()).unwrap();
    let gated = spinbench(
        &[
            &hello_size[..],
            &[
                "--baseline",
                baseline.to_str().unwrap(),
                "--fail-above",
                "10",
                "--fail-on",
                "build_and_size.binary_size",
            ],
        ]
        .concat(),
    );
    let stdout = String::from_utf8_lossy(&gated.stdout);
    let stderr = String::from_utf8_lossy(&gated.stderr);
    assert_eq!(gated.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(stdout.contains("2.00x *"), "the ratio, marked: {stdout}");
    assert!(stderr.contains("binary_size"), "{stderr}");
}

/// `make build` fills `spinbench serve`'s compiled-code cache (`compare
/// --precompile`), and a `--quick` run after it compiles nothing: every start
/// of its hosts loads from that cache, and build and size times loads, not a
/// compile (full runs only). A fresh cache directory of the test's own, so
/// what is counted is this run's.
#[test]
fn a_quick_run_after_make_build_compiles_nothing() {
    let results = workspace_root().join(format!(
        "target/e2e-results/precompiled-{}",
        std::process::id()
    ));
    let cache_home = results.join("xdg-cache");
    let run = |args: &[&str]| {
        let output = Command::new(artifact("release/spinbench"))
            .current_dir(workspace_root())
            .env("XDG_CACHE_HOME", &cache_home)
            .args(args)
            .output()
            .expect("spinbench runs");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        );
        assert!(output.status.success(), "{args:?}:\n{stdout}\n{stderr}");
        (stdout, stderr)
    };
    let functions = "hello,echo";
    let (stdout, stderr) = run(&["compare", "--precompile", "--functions", functions]);
    // hello and echo, each as WASIp2 and WASIp3.
    assert!(stdout.contains(": 4 compiled"), "{stdout}\n{stderr}");
    assert_eq!(stderr.matches(" compiled in ").count(), 4, "{stderr}");

    let (stdout, _) = run(&[
        "compare",
        "--quick",
        "--functions",
        functions,
        "--hosts",
        "native,wasm,wasm-p3",
        "--measurements",
        "build_and_size,process_cold_start,load",
        "--results-dir",
        results.to_str().unwrap(),
    ]);
    let report_path = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("report: "))
        .unwrap_or_else(|| panic!("no `report:` line in:\n{stdout}"));
    let report_path = workspace_root().join(report_path.trim());
    let hosts_log =
        std::fs::read_to_string(report_path.parent().unwrap().join("hosts.log")).unwrap();
    assert_eq!(
        hosts_log.matches(" compiled in ").count(),
        0,
        "a quick run compiled:\n{hosts_log}"
    );
    assert!(
        hosts_log.matches(" loaded from cache in ").count() >= 4,
        "{hosts_log}"
    );

    let report: Value = serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    for function in ["hello", "echo"] {
        let of = |name: &str| {
            support::metrics(&report, "build_and_size", "wasm")
                .into_iter()
                .find(|m| m["function"] == function && m["metric"] == name)
                .unwrap_or_else(|| panic!("{function} {name}"))
        };
        let compile = of("compile");
        assert!(
            compile["skipped"]
                .as_str()
                .is_some_and(|why| why.starts_with("full runs only")),
            "{compile}"
        );
        assert!(of("cache_load")["skipped"].is_null());
    }
}
