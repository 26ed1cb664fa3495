//! A real `redis-server` (Debian's) on a free loopback port, for the Redis
//! trigger's tests, and a publisher speaking Redis' protocol over a plain
//! TCP stream (one `PUBLISH`, its reply read).

use crate::Server;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` of this test, killed when dropped.
pub struct RedisServer {
    child: Child,
    pub addr: SocketAddr,
}

impl RedisServer {
    /// Starts one with no persistence, or `None` (after one "skipped" line)
    /// where `redis-server` is not installed.
    pub fn start() -> Option<RedisServer> {
        let addr = Server::free_addr();
        let port = addr.port().to_string();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port,
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(child) = child else {
            eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
            return None;
        };
        let server = RedisServer { child, addr };
        let start = Instant::now();
        while TcpStream::connect(addr).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(server)
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Publishes `payload` on `channel`; returns how many subscribers got it.
    pub fn publish(&self, channel: &str, payload: &[u8]) -> u64 {
        let mut stream = TcpStream::connect(self.addr).expect("connect to redis-server");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut command = Vec::new();
        command.extend_from_slice(b"*3\r\n$7\r\nPUBLISH\r\n");
        for part in [channel.as_bytes(), payload] {
            command.extend_from_slice(format!("${}\r\n", part.len()).as_bytes());
            command.extend_from_slice(part);
            command.extend_from_slice(b"\r\n");
        }
        stream.write_all(&command).unwrap();
        let mut reply = [0u8; 64];
        let n = stream.read(&mut reply).unwrap();
        let reply = String::from_utf8_lossy(&reply[..n]);
        reply
            .strip_prefix(':')
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("PUBLISH answered {reply:?}"))
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
