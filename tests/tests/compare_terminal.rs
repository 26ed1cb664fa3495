//! What `spinbench compare` writes where (issue 42): the hosts' own lines
//! (`instance limits: …`, `hello: compiled in …`, their stderr) go to the
//! run's `hosts.log`, named in the report, not to the terminal; `-v` brings
//! them back. Progress on a non-terminal is plain whole lines.

use e2e::{artifact, workspace_root};
use std::path::Path;
use std::process::{Command, Output};

/// One short run: hello's process starts on native and wasm.
fn compare(results: &Path, extra: &[&str]) -> Output {
    let output = Command::new(artifact("release/spinbench"))
        .current_dir(workspace_root())
        .args([
            "compare",
            "--quick",
            "--functions",
            "hello",
            "--hosts",
            "native,wasm",
        ])
        .args(["--measurements", "process_cold_start", "--results-dir"])
        .arg(results)
        .args(extra)
        .output()
        .expect("spinbench compare runs");
    assert!(output.status.success(), "{output:?}");
    output
}

/// A line every wasm host start writes (host/src/instance/limits.rs).
const HOST_LINE: &str = "instance limits: ";

fn terminal(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn host_lines_go_to_the_log_and_v_brings_them_back() {
    let results = tempfile::tempdir().unwrap();
    let quiet = compare(&results.path().join("quiet"), &[]);
    let shown = terminal(&quiet);
    assert!(
        !shown.contains(HOST_LINE),
        "host lines on the terminal:\n{shown}"
    );
    // Not a terminal: progress as plain lines, each whole.
    assert!(
        shown
            .lines()
            .any(|l| l.contains("steps") || l.starts_with('[')),
        "no progress lines:\n{shown}"
    );
    let log_line = shown
        .lines()
        .find_map(|l| l.strip_prefix("hosts' output: "))
        .unwrap_or_else(|| panic!("the log is not named:\n{shown}"));
    let log = std::fs::read_to_string(log_line.trim()).unwrap();
    assert!(
        log.contains(HOST_LINE),
        "the log lacks the hosts' lines:\n{log}"
    );
    assert!(
        log.contains("==> start-hello-wasm: "),
        "no header per start:\n{log}"
    );

    let verbose = compare(&results.path().join("verbose"), &["-v"]);
    let shown = terminal(&verbose);
    assert!(
        shown.contains(HOST_LINE),
        "-v did not show the host lines:\n{shown}"
    );
}
