//! The benchmark file (spinbench.toml) is the one list of the function set:
//! no list of its names is left in runner/ or tests/, and `compare -f` on
//! another file measures what that file describes, reporting what cannot apply
//! as skipped with the reason.

use e2e::report as support;

use e2e::{functions, workspace_root};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Where `text` lists three or more of `names`: on one line (an array, a
/// default list), as `match` arms, or as path dependencies on their crates.
fn lists_of_names(text: &str, names: &[&str]) -> Vec<String> {
    let quoted = |line: &str| -> Vec<&str> {
        names
            .iter()
            .copied()
            .filter(|n| line.contains(&format!("\"{n}\"")))
            .collect()
    };
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if quoted(line).len() >= 3 {
            found.push(format!("line {}: {}", i + 1, line.trim()));
        }
    }
    let arms: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("=>"))
        .flat_map(|l| {
            let before = l.split("=>").next().unwrap_or("");
            quoted(before)
        })
        .collect();
    let mut distinct = arms.clone();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() >= 3 {
        found.push(format!("match arms on {distinct:?}"));
    }
    let crates = text
        .lines()
        .filter(|l| l.contains("path = \"../functions/"))
        .count();
    if crates >= 3 {
        found.push(format!("{crates} path dependencies on function crates"));
    }
    found
}

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                source_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs" || e == "toml") {
            out.push(path);
        }
    }
}

#[test]
fn the_detector_finds_lists_and_spares_single_names() {
    let names = ["alpha", "beta", "gamma", "delta"];
    let list = r#"const F: [&str; 4] = ["alpha", "beta", "gamma", "delta"];"#;
    assert_eq!(lists_of_names(list, &names).len(), 1);
    let arms = "match n {\n  \"alpha\" => 1,\n  \"beta\" => 2,\n  \"delta\" if q => 3,\n  _ => 0 }";
    assert_eq!(lists_of_names(arms, &names).len(), 1);
    let deps = "alpha = { path = \"../functions/alpha\" }\nbeta = { path = \"../functions/beta\" }\ngamma = { path = \"../functions/gamma\" }\n";
    assert_eq!(lists_of_names(deps, &names).len(), 1);
    let fine =
        "case(\"alpha\", \"GET\", \"/alpha\", 200),\ncase(\"beta\", \"POST\", \"/beta\", 200),";
    assert!(lists_of_names(fine, &names).is_empty());
}

#[test]
fn no_list_of_the_functions_is_left_outside_the_benchmark_file() {
    let names = functions();
    assert!(names.len() >= 6, "{names:?}");
    let root = workspace_root();
    let mut files = Vec::new();
    source_files(&root.join("runner"), &mut files);
    source_files(&root.join("tests/src"), &mut files);
    source_files(&root.join("tests/tests"), &mut files);
    let mut offenders = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for place in lists_of_names(&text, names) {
            offenders.push(format!("{}: {place}", file.display()));
        }
    }
    assert!(
        offenders.is_empty(),
        "lists of the function set outside spinbench.toml:\n{}",
        offenders.join("\n")
    );
}

/// Runs `spinbench compare` with `args` and returns its report, checked against the schema.
fn compare(args: &[&str], label: &str) -> Value {
    let report = e2e::compare(args, label);
    support::assert_valid_report(&report);
    report
}

#[test]
fn another_file_is_measured_and_what_cannot_apply_is_skipped_with_the_reason() {
    // The repository's manifest, one component, no native counterpart, no
    // WASIp3 manifest: native, its floor and wasm-p3 cannot apply.
    let dir = workspace_root().join(format!("target/e2e-benchfile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("spinbench.toml");
    std::fs::write(
        &file,
        "manifest = \"../../spin.toml\"\n\n[[component]]\nid = \"hello\"\nprobe = { path = \"/hello\" }\n",
    )
    .unwrap();
    let report = compare(
        &[
            "-f",
            dir.to_str().unwrap(),
            "--quick",
            "--hosts",
            "native,wasm,wasm-p3",
            "--measurements",
            "instance_cold_start,process_cold_start",
        ],
        "benchfile",
    );
    assert_eq!(report["plan"]["functions"], serde_json::json!(["hello"]));
    let skipped = |measurement, host| -> String {
        let rows = support::metrics(&report, measurement, host);
        assert!(!rows.is_empty(), "{measurement} {host}: no row");
        rows.iter()
            .map(|m| {
                m["skipped"]
                    .as_str()
                    .unwrap_or_else(|| panic!("not skipped: {m}"))
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    assert!(skipped("process_cold_start", "native").contains("no native command"));
    assert!(skipped("instance_cold_start", "native-fn").contains("no native command"));
    assert!(skipped("process_cold_start", "wasm-p3").contains("p3_manifest"));
    let wasm = support::metrics(&report, "instance_cold_start", "wasm");
    assert!(
        wasm.iter()
            .any(|m| m["summary"]["p50"].as_f64().is_some_and(|v| v > 0.0)),
        "wasm measured: {wasm:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An app that calls out and keeps state: the benchmark file starts the
/// upstream its outbound calls reach (`[[service]]`, here `hello-native`) and
/// names the runtime config file its key-value store needs; both probes fail
/// without them (the outbound one answers `502` when the upstream is not
/// there; the key-value app does not start without `cache` defined). The
/// service is stopped when the run ends.
#[test]
fn an_app_that_calls_out_is_measured_with_its_service_and_runtime_config() {
    let root = workspace_root();
    let dir = tempfile::tempdir().unwrap();
    let upstream = e2e::Server::free_addr();
    let outbound = root.join("target/wasm32-wasip2/release/outbound_app.wasm");
    let key_value =
        root.join("tests/apps/key-value/target/wasm32-wasip2/release/key_value_app.wasm");
    let manifest = format!(
        r#"spin_manifest_version = 2
[application]
name = "calls-out"
[[trigger.http]]
route = "/proxy"
component = "outbound"
[[trigger.http]]
route = "/..."
component = "key-value"
[component.outbound]
source = "{}"
allowed_outbound_hosts = ["http://{upstream}"]
[component.key-value]
source = "{}"
key_value_stores = ["default", "cache"]
"#,
        outbound.display(),
        key_value.display()
    );
    std::fs::write(dir.path().join("spin.toml"), manifest).unwrap();
    std::fs::write(
        dir.path().join("runtime-config.toml"),
        "[key_value_store.cache]\ntype = \"spin\"\npath = \"cache.db\"\n",
    )
    .unwrap();
    let benchmark = format!(
        r#"runtime_config = "runtime-config.toml"

[[service]]
command = "{} --listen {upstream}"
ready = "{upstream}"

[[component]]
id = "outbound"
probe = {{ path = "/proxy?http://{upstream}/hello" }}

[[component]]
id = "key-value"
probe = {{ path = "/cache" }}
"#,
        root.join("target/release/hello-native").display()
    );
    std::fs::write(dir.path().join("spinbench.toml"), benchmark).unwrap();

    let report = compare(
        &[
            "-f",
            dir.path().to_str().unwrap(),
            "--quick",
            "--hosts",
            "wasm",
            "--measurements",
            "instance_cold_start,process_cold_start",
        ],
        "calls-out",
    );
    for measurement in ["instance_cold_start", "process_cold_start"] {
        for function in ["outbound", "key-value"] {
            let measured = support::metrics(&report, measurement, "wasm")
                .into_iter()
                .filter(|m| m["function"] == function)
                .any(|m| m["summary"]["p50"].as_f64().is_some_and(|v| v > 0.0));
            assert!(measured, "{measurement} of {function} on wasm: {report}");
        }
    }
    assert!(
        std::net::TcpStream::connect(upstream).is_err(),
        "the service still listens on {upstream} after the run"
    );
}
