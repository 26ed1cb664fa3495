//! The native host: one endpoint served over HTTP/1.1 by tokio and hyper, under the
//! same limits as `spinbench serve` ([`options`] lists them), so that the comparison
//! measures hosts that give the same guarantees.
//!
//! Requests are answered on tokio's worker threads; waits use tokio's timer, so a
//! thousand waiting requests cost a thousand small tasks, not a thousand threads.
//! A CPU-bound endpoint's handler runs on the blocking pool instead ([`compute`]).

// Lines leave whole, in one write ([`say`]).
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod body;
mod compute;
mod connections;
mod options;
mod respond;

use crate::Endpoint;
use compute::ComputePool;
use options::{Limits, Options};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// What every connection and request of the process shares.
struct Server {
    endpoint: &'static Endpoint,
    limits: Limits,
    /// One permit per open connection ([`Limits::max_connections`]).
    connection_slots: Semaphore,
    compute: ComputePool,
}

/// Entry point of every `<name>-native` binary.
pub fn main(endpoint: &'static Endpoint) -> ! {
    let mut args = std::env::args().skip(1).peekable();
    // `--plain-calls` times the logic without HTTP (`crate::plain`); it takes
    // its own arguments, none of the serving flags.
    if args.peek().map(String::as_str) == Some("--plain-calls") {
        args.next();
        let code = match crate::plain::main(endpoint, args) {
            Ok(()) => 0,
            Err(error) => {
                say(&format!("error: {error}"));
                2
            }
        };
        std::process::exit(code)
    }
    let code = match options::parse(args) {
        Ok(options) => match run(endpoint, options) {
            Ok(()) => 0,
            Err(error) => {
                say(&format!("error: {error}"));
                1
            }
        },
        Err(usage) => {
            say(&usage);
            2
        }
    };
    std::process::exit(code)
}

/// Writes `line` and its newline to stderr in one write: `eprintln!` writes its
/// pieces one by one, and another thread's line could land between them.
pub(crate) fn say(line: &str) {
    let _ = std::io::Write::write_all(
        &mut std::io::stderr().lock(),
        format!("{line}\n").as_bytes(),
    );
}

fn run(endpoint: &'static Endpoint, options: Options) -> std::io::Result<()> {
    // Lives as long as the process; connections and requests borrow it.
    let server: &'static Server = Box::leak(Box::new(Server {
        endpoint,
        limits: options.limits,
        connection_slots: Semaphore::new(options.limits.max_connections),
        compute: ComputePool::new(),
    }));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(compute::SLOTS)
        .build()?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(options.listen).await?;
        say(&format!(
            "serving {} on http://{}",
            endpoint.route,
            listener.local_addr()?
        ));
        tokio::select! {
            () = connections::accept_loop(server, listener) => {},
            () = shutdown_signal() => {},
        }
        Ok(())
    })
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler installs");
    tokio::select! {
        _ = term.recv() => {},
        _ = tokio::signal::ctrl_c() => {},
    }
}
