//! Redis and Mosquitto, as the outbound tests and the Redis trigger's tests
//! start them: Debian's `redis-server` and `mosquitto` on a leased loopback
//! port ([`crate::service`]), each asked in its own protocol whether it serves.

use crate::service::{Recipe, Service};
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;

/// A `redis-server` with no persistence, or `None` (after a "skipped" line)
/// where it is not installed.
pub fn redis() -> Option<Service> {
    let program = installed("redis-server", "redis-server")?;
    let command = |port: u16, dir: &Path| {
        let mut command = Command::new(&program);
        command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--dir"])
            .arg(dir);
        command
    };
    let recipe = Recipe {
        name: "redis",
        command: &command,
        ready: &|port, _| answers(port, b"PING\r\n", b"+PONG\r\n"),
    };
    Some(Service::start(&recipe, tempfile::tempdir().unwrap()))
}

/// A `mosquitto` that takes anonymous clients, or `None` (after a "skipped"
/// line) where it is not installed.
pub fn mosquitto() -> Option<Service> {
    let program = installed("mosquitto", "mosquitto")?;
    let command = |port: u16, dir: &Path| {
        let config = dir.join("mosquitto.conf");
        std::fs::write(
            &config,
            format!("listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"),
        )
        .expect("mosquitto.conf");
        let mut command = Command::new(&program);
        command.arg("-c").arg(config);
        command
    };
    // MQTT 3.1.1: CONNECT with a clean session, client id "ready"; CONNACK, accepted.
    let connect = [
        0x10, 17, 0, 4, b'M', b'Q', b'T', b'T', 4, 0x02, 0, 60, 0, 5, b'r', b'e', b'a', b'd', b'y',
    ];
    let recipe = Recipe {
        name: "mosquitto",
        command: &command,
        ready: &|port, _| answers(port, &connect, &[0x20, 2, 0, 0]),
    };
    Some(Service::start(&recipe, tempfile::tempdir().unwrap()))
}

/// `program`'s path on `PATH` (or /usr/sbin), or `None` after a "skipped" line.
fn installed(program: &str, package: &str) -> Option<std::path::PathBuf> {
    let found = crate::on_path(program).or_else(|| {
        let sbin = Path::new("/usr/sbin").join(program);
        sbin.is_file().then_some(sbin)
    });
    if found.is_none() {
        eprintln!("skipped: {program} is not installed (Debian: apt-get install {package})");
    }
    found
}

/// Whether the server on `port` answers `question` with `answer`.
fn answers(port: u16, question: &[u8], answer: &[u8]) -> bool {
    let Some(mut stream) = crate::service::dial(port) else {
        return false;
    };
    let mut got = vec![0; answer.len()];
    stream.write_all(question).is_ok() && stream.read_exact(&mut got).is_ok() && got == answer
}
