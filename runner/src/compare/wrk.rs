//! wrk, a second load generator, as a check on oha's throughput: each scenario
//! oha read from its summary is run once more with wrk (Debian's `wrk`, 4.1.0:
//! github.com/wg/wrk), same users as connections, against the same server.
//! Two generators that differ in their own cost per request reach different
//! rates when the generator, not the server, is what runs out of CPU; where
//! they agree, the figure is the server's. Read from wrk's text summary
//! ([`WrkSummary::parse`]); its method, headers and body come from a Lua script.
//! The check runs in two halves, one before oha's run and one after it
//! ([`half_duration`]), so that a machine whose speed drifts while oha runs
//! moves both generators' figures alike.

use super::hosts;
use super::pin::Cpus;
use super::scenarios::Scenario;
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// wrk's two runs per scenario and host together are at most this long: a
/// check, not a second measurement, so that it adds minutes, not a second full run.
pub const MAX_DURATION: Duration = Duration::from_secs(6);
/// A request unanswered this long counts as a timeout (wrk's default is 2 s,
/// shorter than a 16 MiB `sha1` request may take on a loaded machine).
const REQUEST_TIMEOUT: &str = "30s";

/// What wrk's summary says of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct WrkSummary {
    /// Complete responses (any status).
    pub requests: u64,
    /// How long the run took, by wrk's clock.
    pub seconds: f64,
    /// Responses with a status of 400 or above ("Non-2xx or 3xx responses").
    pub bad_status: u64,
    /// Connect, read, write errors and timeouts.
    pub socket_errors: u64,
}

impl WrkSummary {
    /// Reads wrk's summary, e.g.:
    ///
    /// ```text
    ///   624 requests in 1.00s, 1.60MB read
    ///   Non-2xx or 3xx responses: 3
    ///   Socket errors: connect 0, read 3, write 0, timeout 0
    /// Requests/sec:    622.80
    /// ```
    pub fn parse(text: &str) -> Result<WrkSummary> {
        let line = text
            .lines()
            .map(str::trim)
            .find(|l| l.contains(" requests in "))
            .with_context(|| format!("no \"N requests in T\" line in wrk's output: {text:?}"))?;
        let mut words = line.split_whitespace();
        let requests: u64 = words
            .next()
            .and_then(|n| n.parse().ok())
            .with_context(|| format!("wrk's line {line:?}"))?;
        let took = words
            .nth(2)
            .map(|t| t.trim_end_matches(','))
            .with_context(|| format!("wrk's line {line:?}"))?;
        let seconds = parse_time(took).with_context(|| format!("wrk's time {took:?}"))?;
        let bad_status = match text
            .lines()
            .find_map(|l| l.trim().strip_prefix("Non-2xx or 3xx responses:"))
        {
            Some(n) => n.trim().parse().context("wrk's non-2xx count")?,
            None => 0,
        };
        let socket_errors = match text
            .lines()
            .find_map(|l| l.trim().strip_prefix("Socket errors:"))
        {
            // connect 0, read 3, write 0, timeout 0
            Some(errors) => errors
                .split(',')
                .map(|kind| {
                    kind.split_whitespace()
                        .nth(1)
                        .and_then(|n| n.parse::<u64>().ok())
                        .with_context(|| format!("wrk's socket errors {errors:?}"))
                })
                .sum::<Result<u64>>()?,
            None => 0,
        };
        if seconds <= 0.0 {
            bail!("wrk ran for {took}");
        }
        Ok(WrkSummary {
            requests,
            seconds,
            bad_status,
            socket_errors,
        })
    }

    /// Answers with a status below 400 per second (oha's figure counts `200`s;
    /// the functions answer nothing in between).
    pub fn ok_rate(&self) -> f64 {
        self.requests.saturating_sub(self.bad_status) as f64 / self.seconds
    }

    /// Bad answers and socket errors.
    pub fn errors(&self) -> u64 {
        self.bad_status + self.socket_errors
    }

    /// Two runs read as one: their counts and times summed.
    pub fn and(&self, other: &WrkSummary) -> WrkSummary {
        WrkSummary {
            requests: self.requests + other.requests,
            seconds: self.seconds + other.seconds,
            bad_status: self.bad_status + other.bad_status,
            socket_errors: self.socket_errors + other.socket_errors,
        }
    }
}

/// A time as wrk prints it: `1.00s`, `850.00ms`, `12.00us`, `1.50m`, `2.00h`.
fn parse_time(text: &str) -> Option<f64> {
    let digits = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(digits);
    let number: f64 = number.parse().ok()?;
    let scale = match unit {
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return None,
    };
    Some(number * scale)
}

/// wrk's path, or why the check is skipped.
pub fn find() -> Result<PathBuf, String> {
    hosts::on_path("wrk")
}

/// How long each of wrk's two runs for a `load_duration` scenario lasts: half
/// of it, both together up to [`MAX_DURATION`], in whole seconds of at least one
/// (wrk takes no fractions).
pub fn half_duration(load_duration: Duration) -> Duration {
    let half = load_duration.min(MAX_DURATION).as_secs_f64() / 2.0;
    Duration::from_secs(half.round().max(1.0) as u64)
}

/// A Lua string literal of `bytes`: printable ASCII as it is, every other
/// byte (and `"`, `\`) as a decimal escape, so no value can end the string.
fn lua_string(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for &b in bytes {
        if (b.is_ascii_graphic() || b == b' ') && b != b'"' && b != b'\\' {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\{b}"));
        }
    }
    out.push('"');
    out
}

/// The Lua script that makes wrk send `scenario`'s request: its method and
/// headers, and its body read from `body` (the file oha sends with `-D`).
pub fn script(scenario: &Scenario, body: Option<&Path>) -> String {
    let request = &scenario.request;
    let mut lua = format!("wrk.method = {}\n", lua_string(request.method.as_bytes()));
    for (name, value) in &request.headers {
        lua.push_str(&format!(
            "wrk.headers[{}] = {}\n",
            lua_string(name.as_bytes()),
            lua_string(value.as_bytes())
        ));
    }
    if let Some(path) = body {
        lua.push_str(&format!(
            "local file = assert(io.open({}, \"rb\"))\nwrk.body = file:read(\"*a\")\nfile:close()\n",
            lua_string(path.as_os_str().as_encoded_bytes())
        ));
    }
    lua
}

/// One wrk run of `scenario` against `base` for `run_for`, on `generator`'s
/// CPUs (`threads` threads, at most one per user); `script_path` is where its
/// Lua script is written.
pub fn run(
    base: &str,
    scenario: &Scenario,
    run_for: Duration,
    body: Option<&Path>,
    script_path: &Path,
    generator: Option<&Cpus>,
    threads: usize,
) -> Result<WrkSummary> {
    let wrk = find().map_err(anyhow::Error::msg)?;
    std::fs::write(script_path, script(scenario, body))
        .with_context(|| format!("writing {}", script_path.display()))?;
    let mut cmd = Command::new(wrk);
    cmd.args([
        "-t",
        &threads.clamp(1, scenario.users.max(1)).to_string(),
        "-c",
        &scenario.users.to_string(),
        "-d",
        &format!("{}s", run_for.as_secs().max(1)),
        "--timeout",
        REQUEST_TIMEOUT,
        "-s",
    ])
    .arg(script_path)
    .arg(format!("{base}{}", scenario.request.target))
    .stdin(Stdio::null());
    super::pin::apply(&mut cmd, generator).context("pinning wrk")?;
    let out = super::group::output(&mut cmd).context("running wrk")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "wrk failed ({}): {} {}",
            out.status,
            stdout.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    WrkSummary::parse(&stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// wrk 4.1.0 (Debian's 4.1.0-3+b2) against a server answering 404s.
    const NOT_FOUND: &str = "Running 1s test @ http://127.0.0.1:18777/nonexistent
  1 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     4.22ms    3.49ms  25.86ms   82.99%
    Req/Sec     1.03k   292.37     1.60k    72.73%
  1130 requests in 1.10s, 574.01KB read
  Non-2xx or 3xx responses: 1130
Requests/sec:   1027.32
Transfer/sec:    521.85KB
";

    /// The same wrk against a server that closed every other connection and
    /// answered the rest after 300 ms.
    const SOCKET_ERRORS: &str = "Running 2s test @ http://127.0.0.1:18778/
  1 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   302.56ms    2.36ms 304.61ms  100.00%
    Req/Sec     9.00      0.00     9.00    100.00%
  4 requests in 2.01s, 160.00B read
  Socket errors: connect 0, read 3, write 0, timeout 0
Requests/sec:      1.99
Transfer/sec:      79.68B
";

    /// A clean run, all `200`s.
    const CLEAN: &str = "Running 1s test @ http://127.0.0.1:18777/
  1 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     6.39ms    3.12ms  19.58ms   69.35%
    Req/Sec   625.60    123.48     0.95k    90.00%
  624 requests in 1.00s, 1.60MB read
Requests/sec:    622.80
Transfer/sec:      1.60MB
";

    #[test]
    fn reads_wrk_summaries() {
        let clean = WrkSummary::parse(CLEAN).unwrap();
        assert_eq!(
            clean,
            WrkSummary {
                requests: 624,
                seconds: 1.0,
                bad_status: 0,
                socket_errors: 0
            }
        );
        assert_eq!((clean.ok_rate(), clean.errors()), (624.0, 0));
        let not_found = WrkSummary::parse(NOT_FOUND).unwrap();
        assert_eq!((not_found.requests, not_found.bad_status), (1130, 1130));
        assert_eq!(not_found.ok_rate(), 0.0);
        let errors = WrkSummary::parse(SOCKET_ERRORS).unwrap();
        assert_eq!((errors.requests, errors.socket_errors), (4, 3));
        assert!((errors.ok_rate() - 4.0 / 2.01).abs() < 1e-9);
        assert!(WrkSummary::parse("unable to connect to 127.0.0.1:1 Connection refused").is_err());
        assert!(WrkSummary::parse("  12 requests in 0.00s, 1KB read").is_err());
        assert!(WrkSummary::parse("  12 requests in soon, 1KB read").is_err());
    }

    #[test]
    fn reads_wrk_times() {
        assert_eq!(parse_time("1.10s"), Some(1.1));
        assert_eq!(parse_time("850.00ms"), Some(0.85));
        assert_eq!(parse_time("1.50m"), Some(90.0));
        assert_eq!(parse_time("12.00us"), Some(12e-6));
        assert_eq!(parse_time("3.00d"), None);
        assert_eq!(parse_time("s"), None);
    }

    #[test]
    fn runs_are_bounded_whole_seconds() {
        assert_eq!(half_duration(Duration::from_secs(10)) * 2, MAX_DURATION);
        // (the scenario's duration in ms, each half in s)
        for (load_ms, half_s) in [(4000, 2), (1000, 1), (200, 1), (5400, 3)] {
            assert_eq!(
                half_duration(Duration::from_millis(load_ms)),
                Duration::from_secs(half_s),
                "{load_ms} ms"
            );
        }
    }

    /// Two halves read as one run: counts and times add up, so the rate is
    /// their requests over their time together, not a mean of two rates.
    #[test]
    fn two_runs_read_as_one() {
        let run = |requests, seconds, bad_status, socket_errors| WrkSummary {
            requests,
            seconds,
            bad_status,
            socket_errors,
        };
        let both = run(300, 3.0, 10, 1).and(&run(100, 2.0, 0, 2));
        assert_eq!(both, run(400, 5.0, 10, 3));
        assert_eq!((both.ok_rate(), both.errors()), (78.0, 13));
    }

    /// The request is oha's: method, headers and the body file; nothing in a
    /// value can break out of its Lua string.
    #[test]
    fn the_script_sends_the_scenarios_request() {
        let f = super::super::scenarios::tests::function(
            "[[component]]\nid = \"echo\"\nprobe = { path = \"/echo\" }\n[[component.load]]\nusers = 16\nrequest = { method = \"POST\", path = \"/echo\", body = \"{}\", headers = { content-type = \"application/json\", x-odd = \"a\\\"b\\\\c\\n\" } }\n",
            "echo",
        );
        let scenario = &super::super::scenarios::scenarios(&f, 2, false)[0];
        let lua = script(scenario, Some(Path::new("/tmp/x/echo.body")));
        assert!(lua.contains("wrk.method = \"POST\"\n"), "{lua}");
        assert!(
            lua.contains("wrk.headers[\"content-type\"] = \"application/json\"\n"),
            "{lua}"
        );
        assert!(
            lua.contains("wrk.headers[\"x-odd\"] = \"a\\34b\\92c\\10\"\n"),
            "{lua}"
        );
        assert!(
            lua.contains("io.open(\"/tmp/x/echo.body\", \"rb\")"),
            "{lua}"
        );
        let get = script(scenario, None);
        assert!(!get.contains("wrk.body"), "{get}");
    }
}
