//! The harness's own promises: what a test starts is gone when the test
//! process is, however it ends, and two services started at once never share
//! a port.

use e2e::process::spawn_tied;
use std::process::Command;
use std::time::{Duration, Instant};

/// Set in the child run of this test binary that starts processes and aborts.
const ABORTING_CHILD: &str = "E2E_HARNESS_ABORTING_CHILD";

/// Runs in a child of [`what_a_test_starts_dies_with_it_even_when_it_aborts`]
/// only: starts a tied `sleep` (and a Redis, where installed), writes their
/// pids to the file it was given, and aborts: no unwinding, no `Drop`.
#[test]
fn aborting_child() {
    let Some(pids) = std::env::var_os(ABORTING_CHILD) else {
        return;
    };
    let mut sleep = Command::new("sleep");
    sleep.arg("300");
    let sleep = spawn_tied(sleep).unwrap();
    let mut started = vec![sleep.id()];
    let redis = e2e::brokers::redis();
    if let Some(redis) = &redis {
        started.push(redis.pid());
    }
    let text: Vec<String> = started.iter().map(u32::to_string).collect();
    std::fs::write(&pids, text.join("\n")).unwrap();
    std::process::abort();
}

#[test]
fn what_a_test_starts_dies_with_it_even_when_it_aborts() {
    let pids = tempfile::NamedTempFile::new().unwrap();
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "aborting_child", "--nocapture"])
        .env(ABORTING_CHILD, pids.path())
        .status()
        .unwrap();
    assert!(!status.success(), "the child aborts");
    let started: Vec<u32> = std::fs::read_to_string(pids.path())
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert!(!started.is_empty());
    let start = Instant::now();
    while started.iter().any(|pid| alive(*pid)) && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let alive: Vec<&u32> = started.iter().filter(|pid| alive(**pid)).collect();
    assert!(alive.is_empty(), "outlived the test process: {alive:?}");
}

#[test]
fn services_started_at_once_get_ports_of_their_own() {
    let threads: Vec<_> = (0..4)
        .map(|_| std::thread::spawn(e2e::brokers::redis))
        .collect();
    let services: Vec<_> = threads
        .into_iter()
        .filter_map(|t| t.join().unwrap())
        .collect();
    let mut ports: Vec<u16> = services.iter().map(|s| s.port).collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), services.len(), "{ports:?}");
}

/// Whether process `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}
