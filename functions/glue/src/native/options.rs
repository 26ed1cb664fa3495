//! The `<name>-native` command line: the same flags, with the same defaults, as
//! `spinbench serve`'s, so that both hosts are compared under the same limits.
//!
//! Parsed by hand rather than with clap: five flags do not need it, and the
//! comparison measures the native binaries' size.

use std::net::SocketAddr;
use std::time::Duration;

const DEFAULT_LISTEN: &str = "127.0.0.1:3000";

const USAGE: &str = "usage: <name>-native [--listen 127.0.0.1:PORT] [--request-timeout SECS] \
[--body-read-timeout SECS] [--header-read-timeout SECS] [--max-connections N]
  --listen               address to listen on [default: 127.0.0.1:3000]
  --request-timeout      wall-clock limit per request; past it, 504 [default: 30]
  --body-read-timeout    a request body that sends nothing for this long gets a 408; a
                         response the client does not read for this long is dropped [default: 10]
  --header-read-timeout  time to send a request head, also the idle keep-alive timeout [default: 10]
  --max-connections      connections served at once; more wait in the listen backlog [default: 16384]
SECS is a number of seconds (0.5), or with a unit (500ms, 30s).
   or: <name>-native --plain-calls ...  times the logic without HTTP (see glue's plain.rs)";

/// Everything the command line sets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    pub listen: SocketAddr,
    pub limits: Limits,
}

/// What a client may cost the server, each a flag of `spinbench serve` too.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// From the request head's arrival to the whole response produced; past it, `504`.
    pub request_timeout: Duration,
    /// Longest wait for the next piece of a request body (past it, `408`), and
    /// longest stall writing a response (past it, the connection is dropped).
    pub body_read_timeout: Duration,
    /// A client has this long to send a request head, counted from its first byte
    /// or, on a kept-alive connection, from the end of the previous response.
    pub header_read_timeout: Duration,
    /// Connections served at once; the next ones wait in the kernel's listen backlog.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(10),
            max_connections: 16_384,
        }
    }
}

/// Parses the arguments after the program name; the error is the message to print.
pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut listen = DEFAULT_LISTEN.to_string();
    let mut limits = Limits::default();
    while let Some(flag) = args.next() {
        if matches!(flag.as_str(), "-h" | "--help") {
            return Err(USAGE.to_string());
        }
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value (or is unknown)\n{USAGE}"))?;
        match flag.as_str() {
            "--listen" => listen = value,
            "--request-timeout" => limits.request_timeout = duration(&flag, &value)?,
            "--body-read-timeout" => limits.body_read_timeout = duration(&flag, &value)?,
            "--header-read-timeout" => limits.header_read_timeout = duration(&flag, &value)?,
            "--max-connections" => limits.max_connections = connections(&value)?,
            _ => return Err(format!("unknown argument {flag:?}\n{USAGE}")),
        }
    }
    let listen = listen
        .parse()
        .map_err(|_| format!("--listen {listen:?} is not an IP:PORT address\n{USAGE}"))?;
    Ok(Options { listen, limits })
}

/// `30`, `0.5`, `30s` or `500ms`: a positive, finite duration.
fn duration(flag: &str, value: &str) -> Result<Duration, String> {
    let (number, scale) = match value.strip_suffix("ms") {
        Some(millis) => (millis, 1e-3),
        None => (value.strip_suffix('s').unwrap_or(value), 1.0),
    };
    number
        .trim()
        .parse::<f64>()
        .ok()
        .and_then(|n| Duration::try_from_secs_f64(n * scale).ok())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            format!("{flag} {value:?} is not a positive duration (seconds, or 500ms, 30s)")
        })
}

/// At least one, and no more than tokio's semaphore can count.
fn connections(value: &str) -> Result<usize, String> {
    value
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=tokio::sync::Semaphore::MAX_PERMITS).contains(n))
        .ok_or_else(|| format!("--max-connections {value:?} is not a positive count"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_list(list: &[&str]) -> Result<Options, String> {
        parse(list.iter().map(std::string::ToString::to_string))
    }

    #[test]
    fn defaults_are_spinbench_serves() {
        let options = parse_list(&[]).unwrap();
        assert_eq!(options.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(options.limits, Limits::default());
        assert_eq!(options.limits.request_timeout, Duration::from_secs(30));
        assert_eq!(options.limits.max_connections, 16_384);
    }

    #[test]
    fn every_flag_is_read() {
        let options = parse_list(&[
            "--listen",
            "127.0.0.1:8080",
            "--request-timeout",
            "1",
            "--body-read-timeout",
            "500ms",
            "--header-read-timeout",
            "2.5s",
            "--max-connections",
            "4",
        ])
        .unwrap();
        assert_eq!(options.listen.port(), 8080);
        let limits = options.limits;
        assert_eq!(limits.request_timeout, Duration::from_secs(1));
        assert_eq!(limits.body_read_timeout, Duration::from_millis(500));
        assert_eq!(limits.header_read_timeout, Duration::from_millis(2500));
        assert_eq!(limits.max_connections, 4);
    }

    #[test]
    fn bad_values_are_refused_naming_the_flag() {
        for args in [
            &["--listen", "nope"][..],
            &["--bogus", "1"],
            &["--request-timeout"],
            &["--request-timeout", "0"],
            &["--request-timeout", "-1"],
            &["--request-timeout", "NaN"],
            &["--body-read-timeout", "10m"],
            &["--max-connections", "0"],
            &["--max-connections", "many"],
        ] {
            let error = parse_list(args).unwrap_err();
            assert!(error.contains(args[0]), "{args:?}: {error}");
        }
    }
}
