//! A component that holds what it should not: tests/apps/hostile's `/hoard`
//! routes take as much of one host resource as the host lets them (SQLite
//! memory over many connections, sockets, a listing of keys), and the host
//! must hold each to the operator's ceiling, refuse the rest with a reason
//! the guest can read, keep its own memory bounded, and keep serving.
//! docs/limits.md and docs/security.md name each test.

use e2e::{Answer, Scratch, Server, artifact, get, get_within};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const WASM: &str = "wasm32-wasip2/release/hostile_app.wasm";

/// The hostile component granted `default` SQLite and key-value (in memory:
/// the host runs without a state directory) and TCP to one loopback port
/// (so that it may create sockets at all).
fn write_app(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let manifest = dir.join("spin.toml");
    std::fs::write(
        &manifest,
        format!(
            "spin_manifest_version = 2\n[application]\nname = \"hoarder\"\n\
             [[trigger.http]]\nroute = \"/...\"\ncomponent = \"hoarder\"\n\
             [component.hoarder]\nsource = {:?}\n\
             sqlite_databases = [\"default\"]\nkey_value_stores = [\"default\"]\n\
             allowed_outbound_hosts = [\"tcp://127.0.0.1:9\"]\n",
            artifact(WASM).display()
        ),
    )
    .unwrap();
    manifest
}

fn serve(scratch: &Scratch, flags: &[&str]) -> Server {
    let manifest = write_app(&scratch.path("app"));
    let mut args = vec!["--state-dir", "", "--request-timeout", "60"];
    args.extend_from_slice(flags);
    Server::runner_with(&manifest, &args)
}

/// Each try's outcome (`Ok` when the host let it through), in order.
fn tries(what: &str, answer: &Answer) -> Vec<Result<String, String>> {
    let report = answer.text();
    assert_eq!(answer.status, 200, "{what}: {report}");
    let parsed: Value = serde_json::from_str(&report).unwrap();
    parsed["tries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let outcome = t["outcome"].as_str().unwrap().to_string();
            if t["escaped"] == true {
                Ok(outcome)
            } else {
                Err(outcome)
            }
        })
        .collect()
}

/// The peak resident set (`VmHWM`) of `server`, in MiB.
fn peak_mib(server: &Server) -> u64 {
    std::fs::read_to_string(format!("/proc/{}/status", server.pid()))
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap()
        >> 10
}

/// 48 in-memory databases of 64 MiB each (3 GiB asked): the instance's
/// connections share one SQLite heap of `--max-sqlite-memory` (256 MiB), so
/// at most four fill; the rest fail with "out of memory", those past
/// `--max-sqlite-connections` (32) cannot even open, and the host's peak RSS
/// stays near the budget. (With a budget per connection, as before, 48 such
/// databases took the host to 8 GiB.) A second instance, at the same time,
/// has a budget of its own, and `/ok` answers throughout.
#[test]
fn sqlite_memory_is_bounded_across_an_instances_connections() {
    let scratch = Scratch::new("hoard-sqlite");
    let server = serve(&scratch, &[]);
    let hoard = std::thread::spawn({
        let url = server.url("/hoard/sqlite?dbs=48&mib=64");
        move || get_within(&url, Duration::from_mins(2)).unwrap()
    });
    let second = get_within(
        &server.url("/hoard/sqlite?dbs=1&mib=64"),
        Duration::from_mins(2),
    )
    .unwrap();
    assert!(tries("second", &second)[0].is_ok(), "{}", second.text());
    let answer = hoard.join().unwrap();
    let tries = tries("hoard", &answer);
    let filled = tries.iter().filter(|t| t.is_ok()).count();
    assert!((1..=4).contains(&filled), "{filled} filled: {tries:?}");
    let out_of_memory = tries
        .iter()
        .filter(|t| matches!(t, Err(e) if e.contains("out of memory")))
        .count();
    let no_connection = tries
        .iter()
        .filter(|t| matches!(t, Err(e) if e.contains("--max-sqlite-connections")))
        .count();
    assert_eq!(no_connection, 48 - 32, "{tries:?}");
    assert_eq!(filled + out_of_memory + no_connection, 48, "{tries:?}");
    let peak = peak_mib(&server);
    eprintln!("48 databases of 64 MiB: {filled} filled, host peak RSS {peak} MiB");
    assert!(peak < 700, "peak RSS {peak} MiB");
    assert_eq!(get(&server.url("/ok")).status, 200);
}

/// Sockets past `--max-instance-sockets` are refused (`new-socket-limit`),
/// each instance counted apart, and the host serves on.
#[test]
fn sockets_past_the_instance_cap_are_refused() {
    let scratch = Scratch::new("hoard-sockets");
    for (flags, cap) in [(&[][..], 16), (&["--max-instance-sockets", "4"][..], 4)] {
        let server = serve(&scratch, flags);
        for _ in 0..2 {
            let answer = get(&server.url("/hoard/sockets?count=40"));
            let tries = tries("sockets", &answer);
            let created = tries.iter().filter(|t| t.is_ok()).count();
            assert_eq!(created, cap, "{flags:?}: {tries:?}");
            assert!(
                tries[cap..]
                    .iter()
                    .all(|t| matches!(t, Err(e) if e.contains("new-socket-limit"))),
                "{flags:?}: {tries:?}"
            );
        }
        assert_eq!(get(&server.url("/ok")).status, 200);
    }
}

/// A listing of keys counts against what the host may hold for the instance
/// as it is read (`--max-held-memory`), not after: 2,000 keys of 1,000 bytes
/// are past 1 MiB, and the listing is refused naming the flag.
#[test]
fn a_key_listing_past_what_the_host_holds_is_refused_while_read() {
    let scratch = Scratch::new("hoard-keys");
    let server = serve(&scratch, &["--max-held-memory", "1"]);
    let answer = get_within(
        &server.url("/hoard/keys?keys=2000&len=1000"),
        Duration::from_mins(1),
    )
    .unwrap();
    let tries = tries("keys", &answer);
    assert!(
        matches!(tries.last(), Some(Err(e)) if e.contains("--max-held-memory")),
        "{tries:?}"
    );
    // Within it, the same listing is answered.
    let server = serve(&scratch, &[]);
    let answer = get(&server.url("/hoard/keys?keys=2000&len=100"));
    assert!(
        matches!(tries_last(&answer), Ok(listed) if listed.contains("2000")),
        "{}",
        answer.text()
    );
}

fn tries_last(answer: &Answer) -> Result<String, String> {
    tries("listing", answer).pop().unwrap()
}

/// tests/apps/parker (WASIp3), served without a state directory.
fn serve_parker(flags: &[&str]) -> Server {
    let app = e2e::built_app(
        "tests/apps/parker",
        "../../../target/p3/wasm32-wasip2/release/parker_p3.wasm",
    );
    let mut args = vec!["--state-dir", "", "--request-timeout", "60"];
    args.extend_from_slice(flags);
    Server::runner_with(&app.join("spin.toml"), &args)
}

fn refused_naming(tries: &[Result<String, String>], flag: &str) -> usize {
    tries
        .iter()
        .filter(|t| matches!(t, Err(e) if e.contains(flag)))
        .count()
}

/// A WASIp3 guest that runs queries and never reads their rows parks them
/// in the host: they count against `--max-held-memory` (8 MiB here) until
/// read or dropped, so of 32 results of 1 MiB at most 8 are parked and the
/// rest refused naming the flag. When the request ends its results go, and
/// the reused instance can park as many again.
#[test]
fn results_a_wasip3_guest_never_reads_are_held_to_its_ceiling() {
    let server = serve_parker(&["--max-held-memory", "8"]);
    for round in 0..2 {
        let answer = get_within(
            &server.url("/park/results?queries=32&kib=1024"),
            Duration::from_mins(1),
        )
        .unwrap();
        let tries = tries("park results", &answer);
        let parked = tries.iter().filter(|t| t.is_ok()).count();
        assert!((1..=8).contains(&parked), "round {round}: {tries:?}");
        assert_eq!(
            parked + refused_naming(&tries, "--max-held-memory"),
            32,
            "round {round}: {tries:?}"
        );
    }
    assert_eq!(get(&server.url("/ok")).status, 200);
}

/// Statements a WASIp3 guest sends all at once wait for the SQLite threads
/// (one here) with their arguments held by the host: 16 of 512 KiB against
/// `--max-held-memory 2` (each statement counting long enough that the
/// first is still running when the last is sent): at most four wait, one
/// runs, and the rest are refused naming the flag.
#[test]
fn statements_in_flight_at_once_are_held_to_the_ceiling() {
    let server = serve_parker(&["--max-held-memory", "2", "--sqlite-threads", "1"]);
    let answer = get_within(
        &server.url("/park/arguments?queries=16&kib=512&steps=3000000"),
        Duration::from_mins(2),
    )
    .unwrap();
    let tries = tries("park arguments", &answer);
    let ran = tries.iter().filter(|t| t.is_ok()).count();
    assert!((1..=5).contains(&ran), "{tries:?}");
    assert_eq!(
        ran + refused_naming(&tries, "--max-held-memory"),
        16,
        "{tries:?}"
    );
    assert_eq!(get(&server.url("/ok")).status, 200);
}
