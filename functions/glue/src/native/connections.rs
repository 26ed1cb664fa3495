//! Accepting and serving connections under the connection limits: at most
//! `max_connections` at once, a head within `header_read_timeout`, no response
//! write stalled longer than `body_read_timeout`, and an accept loop that waits
//! quietly when the process is out of file descriptors.

use super::Server;
use super::respond::respond;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::SemaphorePermit;
use tokio_io_timeout::TimeoutStream;

/// Accepts connections until the process ends. While `max_connections` are open
/// it accepts none: new clients wait in the kernel's listen backlog.
pub async fn accept_loop(server: &'static Server, listener: TcpListener) {
    let mut backoff = AcceptBackoff::default();
    loop {
        let slot = server
            .connection_slots
            .acquire()
            .await
            .expect("the semaphore is never closed");
        let stream = loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    backoff.succeeded();
                    break stream;
                }
                Err(error) => backoff.failed(error).await,
            }
        };
        serve_connection(server, stream, slot);
    }
}

fn serve_connection(server: &'static Server, stream: TcpStream, slot: SemaphorePermit<'static>) {
    // Small responses must not wait for Nagle's algorithm.
    let _ = stream.set_nodelay(true);
    // A client that stops reading its response would otherwise hold the connection,
    // and its slot, forever: a write pending this long fails and ends the connection.
    let mut stream = TimeoutStream::new(stream);
    stream.set_write_timeout(Some(server.limits.body_read_timeout));
    let io = TokioIo::new(Box::pin(stream));
    tokio::spawn(async move {
        let service = service_fn(move |req| respond(server, req));
        // Clients that vanish or stall are routine for a server: no log line.
        let _ = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(server.limits.header_read_timeout)
            .serve_connection(io, service)
            .await;
        drop(slot);
    });
}

/// How the accept loop waits after a failed accept. The usual cause is running out
/// of file descriptors (EMFILE), which lasts until connections close: retrying at
/// once would spin, since the pending connection stays in the backlog, and logging
/// each failure would flood stderr. So the wait doubles, from 10 ms to 1 s, and only
/// the first failure of a run and the recovery are logged.
#[derive(Default)]
struct AcceptBackoff {
    failures: u64,
}

impl AcceptBackoff {
    const FIRST: Duration = Duration::from_millis(10);
    const LONGEST: Duration = Duration::from_secs(1);

    async fn failed(&mut self, error: std::io::Error) {
        if self.failures == 0 {
            super::say(&format!(
                "accept failed: {error}; retrying with backoff until it succeeds"
            ));
        }
        let doublings = self.failures.min(7) as u32;
        self.failures += 1;
        let wait = (Self::FIRST * 2u32.pow(doublings)).min(Self::LONGEST);
        tokio::time::sleep(wait).await;
    }

    fn succeeded(&mut self) {
        if self.failures > 0 {
            super::say(&format!(
                "accepting again after {} failed accepts",
                self.failures
            ));
            self.failures = 0;
        }
    }
}
