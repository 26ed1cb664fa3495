//! `[[service]]`: a local process the app's outbound calls reach (an HTTP API,
//! a database), started before the first measurement and stopped at the end,
//! as a benchmark of an app that calls out needs something to call.

use super::{At, CommandLine, FileError, raw, split_command};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// How long a service may take to accept connections, unless the file says.
const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    /// Run in the benchmark file's directory, with nothing filled in.
    pub command: CommandLine,
    /// A loopback address it accepts TCP connections on once ready.
    pub ready: SocketAddr,
    pub ready_timeout: Duration,
    /// Where `[[service]]` starts in the file, for messages about it.
    pub line: usize,
}

pub(super) fn service(
    s: &raw::Service,
    dir: &Path,
    at: At,
    line: usize,
) -> Result<Service, FileError> {
    let command = split_command(&s.command, dir, at)?;
    let ready = s
        .ready
        .get_ref()
        .parse::<SocketAddr>()
        .ok()
        .filter(|addr| addr.ip().is_loopback() && addr.port() != 0)
        .ok_or_else(|| {
            at(
                s.ready.span(),
                format!(
                    "ready {:?} is not a loopback address with a port (e.g. \"127.0.0.1:8081\"): \
                     a service runs on this machine only",
                    s.ready.get_ref()
                ),
            )
        })?;
    Ok(Service {
        command,
        ready,
        ready_timeout: s.ready_timeout.map_or(DEFAULT_READY_TIMEOUT, |t| t.0),
        line,
    })
}
