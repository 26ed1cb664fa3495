//! `spinbench serve`: the [`Host`] behind an HTTP/1.1 server (tokio + hyper).

use super::Host;
use super::front::spin_headers::ClientAddr;
use anyhow::{Context, Result};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_io_timeout::TimeoutStream;

/// Default `--header-read-timeout`.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default `--shutdown-grace`.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// Default `--response-write-timeout`: as long as a client gets for its head.
pub const DEFAULT_RESPONSE_WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default `--max-connections`: room for compare's 10,000 users with margin,
/// at a few KiB of buffers per idle connection.
pub const DEFAULT_MAX_CONNECTIONS: usize = 16_384;
/// Default `--max-header-bytes`: hyper's own default read buffer limit (~400 KiB).
pub const DEFAULT_MAX_HEADER_BYTES: usize = 8192 + 4096 * 100;

/// Scheduler ticks between polls for I/O and timer events (tokio's default is 61).
/// A busy guest yields at every epoch tick (10 ms), so each of its polls is one
/// scheduler tick: at 61, a worker running CPU-bound guests would look at new
/// connections and expired timers only every ~600 ms, and waiting requests
/// would time out behind them. At 4 it looks every ~40 ms at worst.
const EVENT_INTERVAL: u32 = 4;

#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub listen: SocketAddr,
    /// One stderr line per request (off by default: it costs throughput).
    pub log_requests: bool,
    /// A client has this long to send a complete request head, counted from
    /// its first byte, or on a kept-alive connection from the end of the
    /// previous response: both the slowloris guard and the idle keep-alive timeout.
    pub header_read_timeout: Duration,
    /// The largest request head (request line and headers) read; past it the
    /// connection gets a `431` and is closed. At least 8192 (hyper's minimum).
    pub max_header_bytes: usize,
    /// On SIGTERM/SIGINT, in-flight requests get this long to finish.
    pub shutdown_grace: Duration,
    /// A write to the client that makes no progress for this long (a client
    /// not reading its response) closes the connection, dropping the response
    /// and the guest behind it.
    pub response_write_timeout: Duration,
    /// Connections open at once; past it, new ones wait in the listen backlog.
    pub max_connections: usize,
    /// What stops the server (then in-flight requests get `shutdown_grace`):
    /// `None`, SIGTERM or SIGINT to the process; `Some`, a notification, for a
    /// host that is one of several in its process (the containerd shim's
    /// in-process design), where a signal is not its own.
    pub stop: Option<Arc<Notify>>,
}

impl ServeOptions {
    pub fn new(listen: SocketAddr) -> Self {
        Self {
            listen,
            log_requests: false,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            response_write_timeout: DEFAULT_RESPONSE_WRITE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            stop: None,
        }
    }
}

/// Serves `host` until SIGTERM or SIGINT, on a multi-threaded tokio runtime.
pub fn serve(host: Host, options: ServeOptions) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .event_interval(EVENT_INTERVAL)
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(run(Arc::new(host), options))
}

async fn run(host: Arc<Host>, options: ServeOptions) -> Result<()> {
    let listener = TcpListener::bind(options.listen)
        .await
        .with_context(|| format!("listening on {}", options.listen))?;
    let addr = listener.local_addr()?;
    host.listening_on(addr);
    let triggers = host.start_triggers().await?;
    crate::lines::stdout(&host.routes_listing(addr)).context("writing the routes to stdout")?;
    let graceful = GracefulShutdown::new();
    let connections = Arc::new(Semaphore::new(options.max_connections.max(1)));
    let mut backoff = AcceptBackoff::default();
    // A signal (or the host's stop notification), or a trigger that stopped (a Redis server gone: the app
    // stops, as `spin up` does).
    let stopped = Arc::new(std::sync::Mutex::new(None));
    let stop = options.stop.clone();
    let shutdown = {
        let stopped = stopped.clone();
        async move {
            let signal = async move {
                match stop {
                    Some(stop) => stop.notified().await,
                    None => shutdown_signal().await,
                }
            };
            tokio::select! {
                () = signal => {}
                error = triggers => {
                    *stopped.lock().expect("not poisoned") = Some(error);
                }
            }
        }
    };
    tokio::pin!(shutdown);
    loop {
        // Past the cap, the loop does not accept: new connections wait in the
        // kernel's listen backlog until one closes.
        let slot = tokio::select! {
            slot = connections.clone().acquire_owned() => slot.expect("never closed"),
            () = &mut shutdown => break,
        };
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, client)) => {
                    backoff.succeeded();
                    serve_connection(&host, &graceful, stream, client, slot, &options);
                }
                Err(error) => backoff.failed(&error).await,
            },
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    let grace = options.shutdown_grace;
    crate::err_line!("shutting down: letting in-flight requests finish (up to {grace:?})");
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        crate::err_line!("shutdown grace period over; dropping remaining connections");
    }
    match stopped.lock().expect("not poisoned").take() {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// Quiet, growing pauses while `accept` fails (out of descriptors, mostly):
/// one log line per episode, not one per attempt. Under a flood, a descriptor
/// freed now and then lets one `accept` through and starts a new episode at
/// once, so an episode is reported only when the last report is
/// [`AcceptBackoff::REPORT_EVERY`] old; the next report counts the ones between.
#[derive(Default)]
struct AcceptBackoff {
    /// Failed attempts in the current episode.
    failures: u32,
    /// Whether the current episode was reported (and so will report its end).
    reported: bool,
    last_report: Option<Instant>,
    /// Episodes ended since the last report without being reported.
    unreported_episodes: u32,
}

impl AcceptBackoff {
    const FIRST: Duration = Duration::from_millis(10);
    const MAX: Duration = Duration::from_secs(1);
    const REPORT_EVERY: Duration = Duration::from_secs(30);

    async fn failed(&mut self, error: &std::io::Error) {
        if self.failures == 0 {
            self.start_episode(error);
        }
        self.failures = self.failures.saturating_add(1);
        let pause = Self::FIRST
            .saturating_mul(1 << self.failures.min(7))
            .min(Self::MAX);
        tokio::time::sleep(pause).await;
    }

    fn start_episode(&mut self, error: &std::io::Error) {
        let due = self
            .last_report
            .is_none_or(|last| last.elapsed() >= Self::REPORT_EVERY);
        self.reported = due;
        if !due {
            return;
        }
        let since = match self.unreported_episodes {
            0 => String::new(),
            n => format!(" ({n} more short episodes since the last report)"),
        };
        super::logger::line(format!(
            "accept failed: {error}; retrying with back-off, quietly until it succeeds{since}"
        ));
        self.last_report = Some(Instant::now());
        self.unreported_episodes = 0;
    }

    fn succeeded(&mut self) {
        if self.failures == 0 {
            return;
        }
        if self.reported {
            super::logger::line(format!(
                "accepting again after {} failed attempts",
                self.failures
            ));
        } else {
            self.unreported_episodes = self.unreported_episodes.saturating_add(1);
        }
        self.failures = 0;
    }
}

fn serve_connection(
    host: &Arc<Host>,
    graceful: &GracefulShutdown,
    stream: TcpStream,
    client: SocketAddr,
    slot: OwnedSemaphorePermit,
    options: &ServeOptions,
) {
    let log_requests = options.log_requests;
    // Small responses must not wait for Nagle's algorithm.
    let _ = stream.set_nodelay(true);
    let mut stream = TimeoutStream::new(stream);
    stream.set_write_timeout(Some(options.response_write_timeout));
    let host = host.clone();
    let client_header = ClientAddr::new(client);
    let service = service_fn(move |request| {
        let host = host.clone();
        let client = client_header.clone();
        async move { Ok::<_, Infallible>(answer(&host, request, &client, log_requests).await) }
    });
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_read_timeout)
        .max_buf_size(options.max_header_bytes.max(8192))
        .keep_alive(true)
        .serve_connection(TokioIo::new(Box::pin(stream)), service);
    let connection = graceful.watch(connection);
    tokio::spawn(async move {
        let _slot = slot;
        // Clients that vanish or stall are routine for a server; not worth a log line
        // unless asked for.
        if let Err(error) = connection.await
            && log_requests
        {
            super::logger::line(format!("{client}: connection error: {error}"));
        }
    });
}

async fn answer(
    host: &Host,
    request: hyper::Request<hyper::body::Incoming>,
    client: &ClientAddr,
    log_requests: bool,
) -> hyper::Response<super::instance::Body> {
    let start = Instant::now();
    let line = log_requests.then(|| format!("{} {}", request.method(), request.uri()));
    let (response, component) = host.handle(request, client).await;
    if let Some(line) = line {
        // Through the log queue: a stalled stderr must not block the request.
        super::logger::line(format!(
            "{line} -> {} ({}) in {:.1?}",
            response.status().as_u16(),
            component.unwrap_or("no route"),
            start.elapsed()
        ));
    }
    response
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {},
                _ = tokio::signal::ctrl_c() => {},
            }
        }
        Err(error) => {
            crate::err_line!("warning: no SIGTERM handler ({error}); stop with Ctrl-C");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AcceptBackoff;

    #[test]
    fn back_to_back_accept_failure_episodes_are_reported_once() {
        let emfile = std::io::Error::from_raw_os_error(libc::EMFILE);
        let mut backoff = AcceptBackoff::default();
        for _ in 0..5 {
            backoff.start_episode(&emfile);
            backoff.failures = 1;
            backoff.succeeded();
        }
        assert!(backoff.last_report.is_some());
        assert_eq!(backoff.unreported_episodes, 4);
        backoff.last_report = backoff
            .last_report
            .and_then(|last| last.checked_sub(AcceptBackoff::REPORT_EVERY));
        backoff.start_episode(&emfile);
        assert!(backoff.reported);
        assert_eq!(backoff.unreported_episodes, 0);
    }
}
