//! The sandbox against a hostile app author: tests/apps/hostile is granted the
//! default SQLite database and key-value store, a `files` mount, one variable
//! and a short `allowed_outbound_hosts` list naming one granted listener, and
//! attacks every grant from the inside (one route per attack). Around the
//! host, this test listens where the component must not reach: a TCP port, a
//! UDP port and a Unix socket, and it keeps a directory outside the state
//! directory that no file may appear in. For every attack it asserts that the
//! component was refused, that nothing reached a forbidden listener, that no
//! file appeared outside the state directory, that the host's peak RSS stayed
//! bounded, that a runaway query stopped at its deadline and the host went back
//! to idle CPU, and that the host still serves. docs/security.md names it.

use e2e::{Answer, Scratch, Server, artifact, get, get_within, serve_until_exit};
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const WASM: &str = "wasm32-wasip2/release/hostile_app.wasm";

/// The host's peak RSS after every attack: the SQLite heap budget (256 MiB per
/// instance, all its connections together), the instance's memory and the
/// host's own, with room; the attacks drove it to ~2 GiB before SQLite was
/// bounded.
const PEAK_RSS_KIB: u64 = 768 << 10;

/// Where the component must not reach, each counting what arrived.
struct Forbidden {
    tcp: u16,
    udp: u16,
    socket: PathBuf,
    arrivals: Arc<AtomicUsize>,
}

impl Forbidden {
    fn start(scratch: &Scratch) -> Forbidden {
        let arrivals = Arc::new(AtomicUsize::new(0));
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        // The same port on IPv6 loopback, where the machine has it.
        let tcp6 = TcpListener::bind(("::1", port)).ok();
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let udp_port = udp.local_addr().unwrap().port();
        let socket = scratch.path("forbidden.sock");
        let unix = UnixListener::bind(&socket).unwrap();
        for listener in [Some(tcp), tcp6].into_iter().flatten() {
            let counted = arrivals.clone();
            std::thread::spawn(move || {
                for _ in listener.incoming() {
                    counted.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
        let counted = arrivals.clone();
        std::thread::spawn(move || {
            for _ in unix.incoming() {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        });
        let counted = arrivals.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 64];
            while udp.recv_from(&mut buffer).is_ok() {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        });
        Forbidden {
            tcp: port,
            udp: udp_port,
            socket,
            arrivals,
        }
    }

    fn arrivals(&self) -> usize {
        self.arrivals.load(Ordering::SeqCst)
    }
}

/// The granted listener: an HTTP server that redirects every request to the
/// forbidden port.
fn granted_redirecting_to(forbidden: u16) -> u16 {
    redirecting(TcpListener::bind("127.0.0.1:0").unwrap(), forbidden)
}

/// `listener` answering every request with a redirect to the forbidden port.
fn redirecting(listener: TcpListener, forbidden: u16) -> u16 {
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut reader = BufReader::new(&stream);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let _ = (&stream).write_all(
                format!(
                    "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{forbidden}/\r\n\
                     content-length: 0\r\nconnection: close\r\n\r\n"
                )
                .as_bytes(),
            );
        }
    });
    port
}

/// The hostile app in `dir`: its manifest, granting what the module doc says,
/// and `assets/` (with `extra` files or links made by the caller).
fn write_app(dir: &Path, granted: u16) -> PathBuf {
    std::fs::create_dir_all(dir.join("assets")).unwrap();
    std::fs::write(dir.join("assets/a.txt"), "inside").unwrap();
    let hosts: Vec<String> = ["http", "tcp", "udp", "redis", "mqtt", "postgres", "mysql"]
        .iter()
        .map(|scheme| format!("\"{scheme}://127.0.0.1:{granted}\""))
        .collect();
    let manifest = dir.join("spin.toml");
    std::fs::write(
        &manifest,
        format!(
            "spin_manifest_version = 2\n[application]\nname = \"hostile\"\n\
             [variables]\ngranted = {{ default = \"yes\" }}\nsecret = {{ default = \"hidden\" }}\n\
             [[trigger.http]]\nroute = \"/...\"\ncomponent = \"hostile\"\n\
             [component.hostile]\nsource = {:?}\n\
             sqlite_databases = [\"default\"]\nkey_value_stores = [\"default\"]\n\
             files = [{{ source = \"assets\", destination = \"/assets\" }}]\n\
             environment = {{ GIVEN = \"1\" }}\n\
             allowed_outbound_hosts = [{}]\n\
             [component.hostile.variables]\ngranted = \"{{{{ granted }}}}\"\n",
            artifact(WASM).display(),
            hosts.join(", ")
        ),
    )
    .unwrap();
    manifest
}

/// Every file under `dir`, by path.
fn files_under(dir: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(path);
            } else {
                found.insert(path);
            }
        }
    }
    found
}

/// The tries of one attack that got through, with the whole report.
fn escapes(attack: &str, answer: &Answer) -> (Vec<Value>, String) {
    let report = answer.text();
    assert_eq!(answer.status, 200, "{attack}: {report}");
    let parsed: Value = serde_json::from_str(&report).unwrap();
    let tries = parsed["tries"].as_array().unwrap().clone();
    assert!(!tries.is_empty(), "no tries: {report}");
    let escaped = tries.into_iter().filter(|t| t["escaped"] == true).collect();
    (escaped, report)
}

/// The status field of /proc/<pid>/status named `key`, in KiB.
fn status_kib(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The process's user and system CPU so far, in clock ticks (1/100 s).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name (which may hold spaces) in parentheses.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
fn a_hostile_component_reaches_nothing_it_was_not_granted() {
    let scratch = Scratch::new("sandbox");
    let forbidden = Forbidden::start(&scratch);
    let granted = granted_redirecting_to(forbidden.tcp);
    let manifest = write_app(&scratch.path("app"), granted);
    let state = scratch.path("state");
    let outside = scratch.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "host file").unwrap();
    std::os::unix::fs::symlink("a.txt", scratch.path("app/assets/link-in")).unwrap();
    let before = files_under(&scratch.0);
    let mut server = Server::runner_with(
        &manifest,
        &[
            "--state-dir",
            state.to_str().unwrap(),
            "--request-timeout",
            "5",
        ],
    );
    let kv = state.join("sqlite_key_value.db");
    let attacks = [
        format!(
            "/sqlite/attach?path={}&kv={}",
            outside.join("made.db").display(),
            kv.display()
        ),
        "/sqlite/functions".to_string(),
        "/sqlite/memory".to_string(),
        "/files".to_string(),
        format!("/http?granted={granted}&forbidden={}", forbidden.tcp),
        format!(
            "/sockets?granted={granted}&forbidden={}&udp={}",
            forbidden.tcp, forbidden.udp
        ),
        format!(
            "/stores?granted={granted}&forbidden={}&socket={}",
            forbidden.tcp,
            forbidden.socket.display()
        ),
        "/key-value".to_string(),
        "/variables".to_string(),
    ];
    for attack in &attacks {
        let answer = get_within(&server.url(attack), Duration::from_mins(1))
            .unwrap_or_else(|e| panic!("{attack}: {e}\n{}", server.log()));
        let (escaped, report) = escapes(attack, &answer);
        assert!(
            escaped.is_empty(),
            "{attack} got through: {escaped:?}\n{report}"
        );
        assert_eq!(
            forbidden.arrivals(),
            0,
            "{attack} reached a forbidden listener"
        );
        assert_eq!(get(&server.url("/ok")).status, 200, "after {attack}");
    }
    // Only the component's own environment.
    let env = get(&server.url("/env")).json();
    assert_eq!(env, serde_json::json!({"GIVEN": "1"}));
    // Floods of stdout and stderr are answered and held in bounded memory.
    assert_eq!(get(&server.url("/stdout?mib=64")).status, 200);
    // A runaway query: the request ends at its deadline, and so does the query.
    let started = Instant::now();
    let runaway = get_within(&server.url("/sqlite/runaway"), Duration::from_secs(30)).unwrap();
    assert_eq!(runaway.status, 504, "{}", runaway.text());
    assert!(started.elapsed() < Duration::from_secs(15));
    std::thread::sleep(Duration::from_secs(1));
    let ticks = cpu_ticks(server.pid());
    std::thread::sleep(Duration::from_secs(2));
    let spent = cpu_ticks(server.pid()) - ticks;
    assert!(
        spent < 50,
        "the host kept {spent} ticks of CPU busy in 2 s of idle"
    );
    let peak = status_kib(server.pid(), "VmHWM:");
    eprintln!("sandbox: peak RSS {peak} KiB, {spent} ticks of CPU in 2 s after the runaway query");
    assert!(peak < PEAK_RSS_KIB, "peak RSS {peak} KiB");
    assert_eq!(
        get(&server.url("/ok")).status,
        200,
        "after the runaway query"
    );
    assert!(server.is_alive());
    // No file appeared or changed outside the state directory.
    let after: BTreeSet<PathBuf> = files_under(&scratch.0)
        .into_iter()
        .filter(|path| !path.starts_with(&state))
        .collect();
    let before: BTreeSet<PathBuf> = before
        .into_iter()
        .filter(|p| !p.starts_with(&state))
        .collect();
    assert_eq!(after, before, "files appeared outside the state directory");
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "host file"
    );
    assert_eq!(forbidden.arrivals(), 0);
}

/// Makes a link (symbolic or hard) at the second path to the first.
type MakeLink = fn(&Path, &Path) -> std::io::Result<()>;

#[test]
fn an_app_whose_files_link_out_of_it_is_refused_at_start() {
    let scratch = Scratch::new("sandbox-links");
    let outside = scratch.path("outside.txt");
    std::fs::write(&outside, "host file").unwrap();
    let links: [(&str, MakeLink); 2] = [
        ("symbolic", |from, to| std::os::unix::fs::symlink(from, to)),
        ("hard", |from, to| std::fs::hard_link(from, to)),
    ];
    for (label, link) in links {
        let dir = scratch.path(label);
        let manifest = write_app(&dir, 9);
        link(&outside, &dir.join("assets/out")).unwrap();
        let (status, log) = serve_until_exit(&manifest, &[]).expect("the app was served");
        assert!(!status.success(), "{label}: {log}");
        assert!(log.contains("outside"), "{label}: {log}");
        assert!(!log.contains("host file"), "{label}: {log}");
    }
}

/// Counts the connections that arrive at `listener`.
fn counted(listener: TcpListener) -> Arc<AtomicUsize> {
    let arrivals = Arc::new(AtomicUsize::new(0));
    let counting = arrivals.clone();
    std::thread::spawn(move || {
        for _ in listener.incoming() {
            counting.fetch_add(1, Ordering::SeqCst);
        }
    });
    arrivals
}

/// Listeners on 127.0.0.1 and 127.0.0.2 with one port, the kernel's pick
/// (picked again while another process holds it on 127.0.0.2).
fn twin_listeners() -> (TcpListener, TcpListener) {
    for _ in 0..20 {
        let first = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = first.local_addr().unwrap().port();
        if let Ok(second) = TcpListener::bind(("127.0.0.2", port)) {
            return (first, second);
        }
    }
    panic!("no port free on both 127.0.0.1 and 127.0.0.2 in 20 picks");
}

/// An outbound address is read once: tests/apps/hostile's `/addresses`
/// spells Redis, MQTT, MySQL, PostgreSQL and HTTP addresses that the
/// allow-list reads as the granted `127.0.0.1:G` and the client crate as
/// `127.0.0.1:F` or `127.0.0.2:G` (docs/security.md, "Parse once"), and TCP
/// connections to those two places however the guest spells them
/// (IPv4-mapped, scope ids, names). Each is refused, the ones read two ways
/// saying so, or reaches the granted listener only; nothing arrives at
/// either forbidden place.
#[test]
fn a_hostile_component_s_addresses_reach_only_what_the_allow_list_read() {
    let scratch = Scratch::new("sandbox-addresses");
    let forbidden = Forbidden::start(&scratch);
    let (granted, elsewhere) = twin_listeners();
    let granted = redirecting(granted, forbidden.tcp);
    let elsewhere = counted(elsewhere);
    let manifest = write_app(&scratch.path("app"), granted);
    let state = scratch.path("state");
    let mut server = Server::runner_with(&manifest, &["--state-dir", state.to_str().unwrap()]);
    let attack = format!("/addresses?granted={granted}&forbidden={}", forbidden.tcp);
    let answer = get_within(&server.url(&attack), Duration::from_mins(2))
        .unwrap_or_else(|e| panic!("{attack}: {e}\n{}", server.log()));
    let (escaped, report) = escapes(&attack, &answer);
    assert!(escaped.is_empty(), "got through: {escaped:?}\n{report}");
    assert_eq!(forbidden.arrivals(), 0, "reached 127.0.0.1:F\n{report}");
    assert_eq!(
        elsewhere.load(Ordering::SeqCst),
        0,
        "reached 127.0.0.2:G\n{report}"
    );
    let parsed: Value = serde_json::from_str(&report).unwrap();
    for attempt in parsed["tries"].as_array().unwrap() {
        let (label, outcome) = (
            attempt["try"].as_str().unwrap(),
            attempt["outcome"].as_str().unwrap(),
        );
        let read_apart = ["#@", "?@", "=@", " @"];
        if read_apart.iter().any(|spelling| label.contains(spelling)) {
            assert!(
                outcome.contains("read two ways") || outcome.contains("not a host name"),
                "{label}: refused without the reason: {outcome}"
            );
        }
    }
    assert_eq!(get(&server.url("/ok")).status, 200);
    assert!(server.is_alive());
}
