//! The native floor: a function's logic called as a plain Rust function, no
//! HTTP. The runner links no function; it asks the function's glue native
//! binary (`plain_calls = true` in the benchmark file) to time its own logic
//! with `--plain-calls` and reads one sample in µs per line. Only our glue
//! binaries answer that flag, so another app's functions get no floor.

use super::http::Request;
use super::{Function, Paths};
use std::process::{Command, Stdio};

/// `calls` timed plain calls of `f`'s logic on `request` (after the binary's
/// own warm-up), in µs; or why there is no floor for `f`.
pub fn time_calls(
    paths: &Paths,
    f: &Function,
    request: &Request,
    status: u16,
    calls: usize,
) -> Result<Vec<f64>, String> {
    let native = f.native()?;
    if !native.plain_calls {
        return Err(format!(
            "no in-process floor: {:?}'s native command is not a glue binary (plain_calls)",
            f.name
        ));
    }
    let program = &native.command.program;
    if !program.is_file() {
        return Err(format!("{} not found (build it first)", program.display()));
    }
    let mut cmd = Command::new(program);
    cmd.arg("--plain-calls")
        .arg(calls.to_string())
        .args(["--method", &request.method, "--target", &request.target])
        .args(["--status", &status.to_string()]);
    if let Some(ct) = request.content_type() {
        cmd.args(["--content-type", ct]);
    }
    let body = paths.work.join(format!("{}.plain-body", f.name));
    if !request.body.is_empty() {
        std::fs::write(&body, &request.body).map_err(|e| format!("{}: {e}", body.display()))?;
        cmd.arg("--body-file").arg(&body);
    }
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running {}: {e}", program.display()))?;
    let _ = std::fs::remove_file(&body);
    if !out.status.success() {
        return Err(format!(
            "{} --plain-calls failed: {}",
            program.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    parse_samples(&String::from_utf8_lossy(&out.stdout), calls)
}

fn parse_samples(stdout: &str, expected: usize) -> Result<Vec<f64>, String> {
    let samples = stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.trim().parse::<f64>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("--plain-calls printed a non-number: {e}"))?;
    if samples.len() != expected {
        return Err(format!(
            "--plain-calls printed {} samples, not {expected}",
            samples.len()
        ));
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_one_sample_per_line() {
        assert_eq!(parse_samples("1.5\n2.25\n", 2).unwrap(), [1.5, 2.25]);
        assert!(parse_samples("1.5\n", 2).unwrap_err().contains("not 2"));
        assert!(parse_samples("1.5\nx\n", 2).is_err());
    }
}
